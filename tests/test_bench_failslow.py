"""``bench/bench_failslow.py`` runs end to end at a tiny size, and the steps it times still exist.

The benchmark wraps ingest functions with timers through ``getattr``/``setattr`` (no import check
sees a renamed one) and runs its children as ``python -m bench.bench_failslow``: a module split
would only show up as a crash of ``make bench``. Times are printed, never asserted.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_failslow import EPISODE_VIEWS, PHASES, SNAPSHOT

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("module", "name"), [*(t for targets in PHASES.values() for t in targets), SNAPSHOT]
)
def test_timed_failslow_steps_exist(module: str, name: str) -> None:
    assert callable(getattr(importlib.import_module(module), name))


@pytest.mark.slow
def test_bench_failslow_runs_on_a_tiny_fleet(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.bench_failslow",
            *("--nodes", "4", "--days", "7", "--landing", str(landing)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[0].startswith("fleet: 4 nodes x 8 GPUs = 32 GPUs, 7 days")
    for step in (
        "DuckDB read_csv, whole lines",
        "DuckDB read_text, whole files",
        "Python line loop",
        *(f"  {view} (SQL to a table)" for view in EPISODE_VIEWS),
        "episode detection (the two views)",
        "ingest of the training logs, episodes incl.",
    ):
        assert any(line.startswith(step) for line in lines), step
    # every baseline counted the same logs: read_csv's lines are the line loop's
    rows = {
        name: int(line[44:].split()[1].replace(",", ""))
        for line in lines
        for name in ("DuckDB read_csv, whole lines", "Python line loop")
        if line.startswith(name)
    }
    assert rows["DuckDB read_csv, whole lines"] == rows["Python line loop"] > 0
    # the landing was kept (--landing) and holds the logs the benchmark read
    assert any((landing / "training").iterdir())
