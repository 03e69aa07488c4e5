"""Projections and what-if sweeps driven by warehouse fits and by hand-given rates."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from models.exceptions import FewFailuresWarning
from pipelines import fit, project
from pipelines.cli import app

HOURS_PER_DAY = 24.0


@pytest.fixture(scope="module")
def fit_run(fleet: tuple[Path, Path, dict]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        return fit.run_fit(fleet[0])["run_id"]


def _true_interruptions(truth: dict, *, n_gpus: int, gpus_per_node: int, days: float) -> float:
    """Failures a job on ``n_gpus`` sees in ``days`` under the generator's true MTBFs."""
    per_h = 0.0
    for spec in truth["classes"].values():
        units = n_gpus if spec["level"] == "gpu" else n_gpus / gpus_per_node
        per_h += units / spec["mtbf_h"]
    return per_h * days * HOURS_PER_DAY


def test_projection_from_fits_covers_the_true_interruption_rate(fleet: tuple, fit_run: str) -> None:
    db, _, truth = fleet
    n_gpus = truth["n_gpus"]
    result = project.run_projection(
        db, {"n_gpus": n_gpus, "gpus_per_node": 8, "job_days": 30.0}, fit_run=fit_run,
        n_samples=4000, seed=1,
    )  # fmt: skip
    assert result["fit_run_id"] == fit_run
    # the projection counts interruptions over the job's wall time, which restarts stretch
    wall_days = result["daly_wall_time_h"] / HOURS_PER_DAY
    expected = _true_interruptions(truth, n_gpus=n_gpus, gpus_per_node=8, days=wall_days)
    lo, hi = result["expected_interruptions_lo"], result["expected_interruptions_hi"]
    assert lo <= expected <= hi
    assert lo < result["expected_interruptions"] < hi
    assert result["measured_restart"]["n"] > 0
    assert "steady state" in result["fleet_age_assumption"]


def test_measured_restart_sets_the_rescheduling_wait(fleet: tuple, fit_run: str) -> None:
    result = project.run_projection(fleet[0], {"n_gpus": 1024}, fit_run="latest", n_samples=0)
    measured = result["measured_restart"]["median_s"]
    assert result["scenario"]["reschedule_s"] == pytest.approx(
        max(0.0, measured - result["scenario"]["detect_s"])
    )


def test_hand_rates_reproduce_metas_projection() -> None:
    result = project.run_projection(
        None, {"n_gpus": 16_384, "node_failures_per_1000_node_days": 6.5}, n_samples=0
    )
    assert round(result["mtti_h"], 1) == 1.8


def test_whatif_sweep_writes_table_and_plots(tmp_path: Path) -> None:
    sweep_file = Path(__file__).resolve().parents[2] / "data_samples/sweeps/hand_rates.yaml"
    spec = project.load_sweep(sweep_file)
    result = project.run_sweep(spec, db_path=None, out_dir=tmp_path)
    table = pl.read_parquet(tmp_path / "whatif.parquet")
    assert table.height == result["n_points"] == 3 * 2 * 2
    assert (tmp_path / "whatif.csv").exists()
    assert len(result["plots"]) == 2
    assert all(Path(p).stat().st_size > 10_000 for p in result["plots"])
    gains = [g["gain"] for g in result["gains"]]
    assert gains == sorted(gains, reverse=True)
    assert result["best_knob"]["knob"] in {"checkpoint_s", "reschedule_s"}
    at_target = table.filter(pl.col("n_gpus") == spec.target_gpus)
    assert at_target["goodput"].max() > at_target["goodput"].min()


def test_project_cli_prints_the_documented_json_keys() -> None:
    result = CliRunner().invoke(
        app,
        ["project", "--gpus", "16384", "--gpus-per-node", "8",
         "--node-failures-per-1000-node-days", "6.5", "--checkpoint-s", "300",
         "--restart-s", "600", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    for key in ("mtti_h", "young_interval_min", "daly_interval_min", "ettr", "goodput"):
        assert isinstance(payload[key], float)
    assert payload["young_interval_min"] == pytest.approx((2 * 300 * 1.8028846 * 3600) ** 0.5 / 60)


def test_project_cli_drain_knobs_reach_the_model() -> None:
    """A perfect, free warning of every failure leaves no rework and no restart (only drains)."""
    common = ["project", "--gpus", "16384", "--node-failures-per-1000-node-days", "6.5",
              "--checkpoint-s", "300", "--restart-s", "600", "--json"]  # fmt: skip
    runner = CliRunner()
    plain = json.loads(runner.invoke(app, common).stdout)
    warned = runner.invoke(app, [*common, "--drain-recall", "1", "--drain-migration-s", "0"])
    assert warned.exit_code == 0, warned.output
    drained = json.loads(warned.stdout)
    assert drained["lost_gpu_h_rework"] == pytest.approx(0.0, abs=1e-6)
    assert drained["lost_gpu_h_restart"] == pytest.approx(0.0, abs=1e-6)
    assert drained["expected_drains"] == pytest.approx(plain["expected_interruptions"], rel=0.05)
    assert drained["goodput"] > plain["goodput"]
    noisy = json.loads(
        runner.invoke(app, [*common, "--drain-recall", "1", "--drain-precision", "0.2"]).stdout
    )
    # precision 0.2: four false alarms per real failure warned of
    assert noisy["expected_false_alarms"] == pytest.approx(4 * noisy["expected_interruptions"])
    assert noisy["goodput"] < drained["goodput"]


def test_a_bad_sweep_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "sweep.yaml"
    bad.write_text("grid: {n_gpus: []}\n")
    with pytest.raises(ValueError, match="non-empty list"):
        project.load_sweep(bad)


def test_a_chosen_family_without_a_finite_mean_falls_back_to_the_exponential_row() -> None:
    from models import rates_from_fits

    rows = {
        "component_class": ["network", "network", "power", "power", "fans"],
        "cohort": ["all"] * 5,
        "unit_level": ["node"] * 5,
        "family": ["loglogistic", "exponential", "weibull", "exponential", "exponential"],
        "n_failures": [40, 40, 26, 26, 0],
        "shape": [0.8, 1.0, 1.3, 1.0, 1.0],
        "mtbf_h": [float("inf"), 79_826.0, 120_000.0, 125_879.0, float("nan")],
        "mtbf_lo_h": [float("nan"), 60_000.0, 90_000.0, 88_000.0, 50_000.0],
        "mtbf_hi_h": [float("inf"), 110_000.0, 160_000.0, 190_000.0, float("inf")],
        "chosen": [True, False, True, False, True],
    }
    picked = project.projection_fits(pl.DataFrame(rows)).sort("component_class")
    assert picked.select("component_class", "family").rows() == [
        ("network", "exponential"),
        ("power", "weibull"),
    ]
    rates = {r.component_class: r.mtbf_h for r in rates_from_fits(picked)}
    assert rates == {"network": 79_826.0, "power": 120_000.0}
