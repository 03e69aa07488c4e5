"""Acceptance: the InfiniteHBD trace's fault rate projected back onto its own fleet (issue #25).

The real trace (``shared/real/infinitehbd-gpu-fault-trace``: node faults of 400 servers over 349
days, StepFun, SIGCOMM 2025) goes through the CLI as a user would run it: ``relia ingest
--source fault_log --mapping data_samples/mappings/infinitehbd.yaml``, ``relia fit --lives
int_fault_lives --dataset infinitehbd`` (the failure process of the trace's units: every fault,
one unit per server and class) and ``relia project --from-fits RUN --gpus 3200 --gpus-per-node 8
--job-days 349`` (a job holding the 400 servers for the trace's 349 days).

- The 95 % interval of the expected interruptions holds the trace's faults (584, counted here
  from ``fault_trace.json``: its ``fault_start`` events).
- The hardware share of the projected interruptions matches the trace's (298 of 584 faults are
  at its ``Hardware Failure`` level, counted here from the trace): a relia class is hardware when
  ``dim_component_class`` files it under ``hardware`` or ``infrastructure`` (a failed part,
  inside the server or the fabric's cables and switches, as the trace's Hardware level counts its
  "Parameter Plane Cable" faults). Tolerance: the trace's share is itself a sample of 584 faults,
  with standard error ``sqrt(p (1 - p) / 584)``; the shares must agree within 1.96 of it.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
HBD = REPO.parent / "shared" / "real" / "infinitehbd-gpu-fault-trace"
MAPPING = REPO / "data_samples" / "mappings" / "infinitehbd.yaml"
SERVERS, GPUS_PER_SERVER, DAYS = 400, 8, 349
PHYSICAL = ("hardware", "infrastructure")


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


@pytest.fixture(scope="module")
def trace() -> list[dict[str, Any]]:
    path = HBD / "fault_trace.json"
    if not path.is_file():
        pytest.fail(f"real data not found (expected ../shared/real beside the repo): {path}")
    return [e for e in json.loads(path.read_text()) if e["event_type"] == "fault_start"]


@pytest.fixture(scope="module")
def projection(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = str(tmp_path_factory.mktemp("hbd") / "relia.duckdb")
    source = ("--source", "fault_log", "--mapping", str(MAPPING))
    _cli("ingest", *source, str(HBD / "fault_trace.json"), "--db", db, "--json")
    lives = ("--lives", "int_fault_lives", "--dataset", "infinitehbd")
    run_id = json.loads(_cli("fit", *lives, "--db", db, "--json"))["run_id"]
    gpus = ("--gpus", str(SERVERS * GPUS_PER_SERVER), "--gpus-per-node", str(GPUS_PER_SERVER))
    days = ("--job-days", str(DAYS))
    out = json.loads(_cli("project", "--from-fits", run_id, *gpus, *days, "--db", db, "--json"))
    assert (out["fit_run_id"], out["rate_lives"]) == (run_id, "int_fault_lives")
    return dict(out)


def test_the_projected_interval_covers_the_traces_faults(
    trace: list[dict[str, Any]], projection: dict[str, Any]
) -> None:
    n = len(trace)
    lo, hi = projection["expected_interruptions_lo"], projection["expected_interruptions_hi"]
    expected = projection["expected_interruptions"]
    print(f"trace {n} faults; projected {expected:.1f} ({lo:.1f}-{hi:.1f})")
    assert n == 584  # the trace README's count, read from the file above
    assert all(
        v["units"] == SERVERS for v in projection["expected_interruptions_by_class"].values()
    )
    assert lo <= n <= hi


def test_the_hardware_share_matches_the_traces(
    trace: list[dict[str, Any]], projection: dict[str, Any]
) -> None:
    n = len(trace)
    p_trace = sum(e["fault_type"]["Level"] == "Hardware Failure" for e in trace) / n
    with (REPO / "sql" / "seeds" / "dim_component_class.csv").open() as handle:
        category = {r["component_class"]: r["category"] for r in csv.DictReader(handle)}
    by_class = projection["expected_interruptions_by_class"]
    total = sum(v["expected"] for v in by_class.values())
    hardware = sum(v["expected"] for c, v in by_class.items() if category[c] in PHYSICAL)
    p_projected = hardware / total
    tolerance = 1.96 * math.sqrt(p_trace * (1 - p_trace) / n)
    print(f"hardware share: trace {p_trace:.4f}, projected {p_projected:.4f} (+-{tolerance:.4f})")
    assert abs(p_projected - p_trace) <= tolerance
