"""`relia whatif --simulate` and the sweep file's `simulate:` key, end to end (#13 part 3).

The CLI runs in-process (no Prefect run), so the what-if flow's function evaluates the grid with
``models.auto_sweep``; the Dask fan-out of the same points is in tests/hardening/test_scale_out.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import models.goodput
from pipelines.analysis import project
from pipelines.cli import app

HAND_RATES = Path(__file__).resolve().parents[2] / "data_samples/sweeps/hand_rates.yaml"
N_POINTS = 3 * 2 * 2  # hand_rates.yaml: n_gpus x checkpoint_s x reschedule_s


def _sweep_file(tmp_path: Path, **keys: Any) -> Path:
    spec = yaml.safe_load(HAND_RATES.read_text())
    spec.update(keys)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _whatif(sweep_file: Path, out: Path, *extra: str) -> tuple[dict[str, Any], pl.DataFrame]:
    result = CliRunner().invoke(app, ["whatif", str(sweep_file), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout) if "--json" in extra else {"output": result.stdout}
    return payload, pl.read_parquet(out / "whatif.parquet")


def test_load_sweep_reads_simulate_and_seed(tmp_path: Path) -> None:
    assert project.load_sweep(HAND_RATES).simulate == 0
    spec = project.load_sweep(_sweep_file(tmp_path, simulate=500, seed=9))
    assert (spec.simulate, spec.seed) == (500, 9)
    for bad in (-1, 2.5, "many", True):
        with pytest.raises(ValueError, match="simulate"):
            project.load_sweep(_sweep_file(tmp_path, simulate=bad))


def test_whatif_without_simulate_is_analytical(tmp_path: Path) -> None:
    payload, table = _whatif(HAND_RATES, tmp_path, "--json")
    assert payload["n_monte_carlo"] == 0
    assert payload["simulate_trials"] == 0
    assert set(table["method"]) == {"analytical"}
    assert table["goodput_se"].is_null().all()


def test_whatif_simulate_flag_evaluates_every_point_with_its_error(tmp_path: Path) -> None:
    _, analytical = _whatif(HAND_RATES, tmp_path / "analytical", "--json")
    payload, table = _whatif(HAND_RATES, tmp_path / "mc", "--simulate", "60", "--json")
    assert payload["n_points"] == payload["n_monte_carlo"] == N_POINTS
    assert payload["simulate_trials"] == 60
    assert set(table["method"]) == {"monte_carlo"}
    assert (table["n_trials"] == 60).all()
    assert (table["goodput_se"] > 0).all()
    assert table.columns == analytical.columns
    # exponential rates: the Monte Carlo goodput sits near the analysis (window edges aside,
    # 5 SE at 60 trials covers both)
    z = (table["goodput"] - analytical["goodput"]) / table["goodput_se"]
    assert (z.abs() < 5.0).all(), z.to_list()
    assert (
        Path(tmp_path / "mc" / "whatif.csv")
        .read_text()
        .splitlines()[0]
        .endswith("goodput_se,n_trials,method")
    )


def test_whatif_yaml_simulate_key_with_seed_and_the_flag_overriding_it(tmp_path: Path) -> None:
    sweep_file = _sweep_file(tmp_path, simulate=30, seed=3)
    first, table = _whatif(sweep_file, tmp_path / "a", "--json")
    assert (first["n_monte_carlo"], first["simulate_trials"]) == (N_POINTS, 30)
    _, again = _whatif(sweep_file, tmp_path / "b", "--json")
    assert_frame_equal(again, table)  # the same seed, the same table
    flagged, more = _whatif(sweep_file, tmp_path / "c", "--simulate", "40", "--json")
    assert flagged["simulate_trials"] == 40
    assert (more["n_trials"] == 40).all()
    text, _ = _whatif(sweep_file, tmp_path / "d")
    assert f"{N_POINTS} of the scenarios by Monte Carlo (30 trials each" in " ".join(
        text["output"].split()
    )


def test_whatif_switches_points_with_a_large_error_bound_to_monte_carlo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = models.goodput._project_arrays

    def with_bound(s: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out = original(s, *args, **kwargs)
        over = kwargs.get("over", args[0] if args else {})
        n_gpus = np.asarray(over.get("n_gpus", s.n_gpus), dtype=float)
        out["goodput_error_bound"] = np.where(n_gpus > 100_000, 0.05, 0.001) * out["goodput"]
        return out

    monkeypatch.setattr(models.goodput, "_project_arrays", with_bound)
    payload, table = _whatif(HAND_RATES, tmp_path / "json", "--json")
    at_scale = table["n_gpus"] > 100_000
    assert payload["n_monte_carlo"] == int(at_scale.sum()) == 4
    assert payload["simulate_trials"] == 0
    assert table.filter(at_scale)["method"].unique().to_list() == ["monte_carlo"]
    assert table.filter(~at_scale)["method"].unique().to_list() == ["analytical"]
    assert (table.filter(at_scale)["n_trials"] == 1000).all()
    text, _ = _whatif(HAND_RATES, tmp_path / "text")
    assert "4 of the scenarios by Monte Carlo (on their own" in " ".join(text["output"].split())
