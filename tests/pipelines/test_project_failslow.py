"""Fail-slow knobs through ``relia project`` and the what-if sweep file.

The fail-stop output without them is held by the golden CLI tests; here, with them: the
``--slow-*`` and ``--straggler-*`` options reach the model, the fail-slow block and JSON keys
appear, and ``straggler_detect_s`` in a sweep file is ranked with the other knobs exactly as
projecting each scenario gives.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from models import LogNormalLaw, Scenario, SlowLaws, project
from pipelines.analysis import project as project_mod
from pipelines.cli import app

if TYPE_CHECKING:
    from pathlib import Path

LAW = SlowLaws(1e-5, LogNormalLaw(1800.0, 1.0), LogNormalLaw(0.3, 0.8))
SLOW = (
    "--slow-rate-per-gpu-h",
    "1e-5",
    "--slow-duration-median-s",
    "1800",
    "--slow-duration-sigma",
    "1",
    "--slow-excess-median",
    "0.3",
    "--slow-excess-sigma",
    "0.8",
)


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["project", "--gpus", "16384", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_project_json_carries_the_fail_slow_figures() -> None:
    out = json.loads(
        _run(*SLOW, "--straggler-detect-s", "600", "--straggler-evict", "planned", "--json")
    )
    expected = project(
        Scenario(
            n_gpus=16_384, slow_laws=(LAW,), straggler_detect_s=600.0, straggler_evict="planned"
        )
    )
    for key in ("goodput", "goodput_fail_stop", "slow_share", "slowdown", "expected_evictions"):
        assert out[key] == pytest.approx(expected[key])  # type: ignore[literal-required]
    for key in ("lost_gpu_h_fail_slow", "lost_gpu_h_slow", "lost_gpu_h_eviction"):
        assert out[key] == pytest.approx(expected[key])  # type: ignore[literal-required]
    assert out["scenario"]["straggler_detect_s"] == 600.0
    assert out["scenario"]["slow_laws"][0]["rate_per_unit_h"] == 1e-5


def test_project_prints_the_fail_slow_block_only_when_set() -> None:
    plain = _run("--straggler-detect-s", "600")
    assert "fail-slow" not in plain
    assert "slow_share" not in plain
    slow = _run(*SLOW)
    assert "fail-slow" in slow
    for key in ("goodput_fail_stop", "slow_share", "slowdown", "lost_gpu_h_fail_slow"):
        assert key in slow


def test_project_json_without_fail_slow_has_none_of_it() -> None:
    out = json.loads(_run("--json"))
    assert not {k for k in out if "slow" in k or "evict" in k}
    assert not {k for k in out["scenario"] if "slow" in k or "straggler" in k}


def test_a_slow_law_with_no_duration_is_one_line() -> None:
    result = CliRunner().invoke(app, ["project", "--slow-rate-per-gpu-h", "1e-5"])
    assert result.exit_code == 2
    assert "--slow-duration-median-s" in result.output
    assert "Traceback" not in result.output


def test_sweep_file_ranks_straggler_detection_as_projected(tmp_path: Path) -> None:
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        "base:\n"
        "  straggler_evict: planned\n"
        "  slow_laws: {unit: gpu, rate_per_unit_h: 1e-5, duration: {median_s: 1800, sigma: 1},\n"
        "              excess: {median: 0.3, sigma: 0.8}}\n"
        "grid:\n"
        "  n_gpus: [16384]\n"
        "  straggler_detect_s: [null, 3600, 600, 60]\n"
        "  checkpoint_s: [60, 10]\n"
        "  hot_spares: [0, 16]\n"
        "  failure_domain_gpus: [8, 72]\n"
        "samples: 0\n"
    )
    spec = project_mod.load_sweep(sweep_file)
    assert spec.grid["straggler_detect_s"] == [None, 3600.0, 600.0, 60.0]
    assert spec.base["slow_laws"] == (LAW,)
    result = project_mod.run_sweep(spec, db_path=None, out_dir=tmp_path / "out")
    baseline = Scenario(
        n_gpus=16_384, slow_laws=(LAW,), straggler_evict="planned", checkpoint_s=60.0
    )
    base = project(baseline)["goodput"]
    gains = {g["knob"]: g for g in result["gains"]}
    assert set(gains) == {"straggler_detect_s", "checkpoint_s", "hot_spares", "failure_domain_gpus"}
    for knob, values in spec.grid.items():
        if knob == "n_gpus":
            continue
        direct = [project(replace(baseline, **{knob: v}))["goodput"] for v in values]
        assert gains[knob]["goodputs"] == pytest.approx(direct, rel=1e-12)
        assert gains[knob]["gain"] == pytest.approx(max(direct) - base, rel=1e-12, abs=1e-15)
    order = [g["knob"] for g in result["gains"]]
    assert order == sorted(order, key=lambda k: -gains[k]["gain"])
    assert result["baseline"]["slow_laws"][0]["unit"] == "gpu"
