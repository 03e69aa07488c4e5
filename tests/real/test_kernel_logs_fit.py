"""Acceptance: public kernel logs with real Xid lines and nothing else; `relia fit` counts them.

The two captures of ``tests/sql/samples/kernel_real`` (leptonai/gpud test data, provenance in its
README; the same lines as ``shared/real/nvidia-xid-dmesg-samples``) go through ``relia ingest``
and ``relia fit`` with no ticket, no inventory and no job.

Expected, by hand from the lines and NVIDIA's Xid catalog (``sql/seeds/dim_xid.csv``):

- ``xe9680-a.log``: five ``Xid 119`` lines (GSP RPC timeout: ``is_failure`` and ``stops_job``,
  class ``gsp``) on ``PCI:0000:9b:00`` at 16:24:18, 16:24:24, 16:24:30, 16:27:12 and 16:30:13 on
  23 Feb 2025: gaps of 6, 6, 162 and 181 s, all within ``incident_gap_s`` (600 s), so one run,
  one failure of class gsp;
- ``h100-b.log``: sixteen ``Xid 13`` (graphics exception) and one ``Xid 43`` (channel reset):
  application errors in the catalog (``is_failure`` false), no failure.

So one failure, of class ``gsp``. Kernel logs do not say how many GPUs a node has; given with
``relia ingest --gpus-per-node 8``, the GPUs are units at risk and the failure ends a gsp life.
Without it the failure is still a failure event, outside the lives (no GPU unit to end), and
``relia fit`` says so: one failure of gsp left out of the rates, and the option that counts it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
LOGS = sorted((REPO / "tests" / "sql" / "samples" / "kernel_real").glob("*.log"))


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


def test_the_catalog_reads_the_codes_as_the_derivation_says() -> None:
    with (REPO / "sql" / "seeds" / "dim_xid.csv").open() as handle:
        catalog = {int(r["xid"]): r for r in csv.DictReader(handle)}
    assert (catalog[119]["component_class"], catalog[119]["is_failure"]) == ("gsp", "true")
    assert catalog[119]["stops_job"] == "true"
    assert catalog[13]["is_failure"] == catalog[43]["is_failure"] == "false"
    assert [p.name for p in LOGS] == ["h100-b.log", "xe9680-a.log"]


def test_relia_fit_counts_the_kernel_logs_failure(tmp_path: Path) -> None:
    db = str(tmp_path / "relia.duckdb")
    _cli("ingest", "--source", "kernel", "--gpus-per-node", "8", *map(str, LOGS), "--db", db)
    fitted = json.loads(_cli("fit", "--db", db, "--json"))
    failures = {r["component_class"]: r["n_failures"] for r in fitted["fits"]}
    print("failures per class:", {c: n for c, n in failures.items() if n})
    assert {c: n for c, n in failures.items() if n} == {"gsp": 1}
    assert {"gpu", "gpu_memory", "nvlink", "pcie", "nic"} <= set(failures)  # at risk, no failure
    with duckdb.connect(db, read_only=True) as con:
        stored = con.execute(
            "select component_class, n_failures, unit_level from rpt_class_rates "
            "where run_id = $id and n_failures > 0",
            {"id": fitted["run_id"]},
        ).fetchall()
    assert stored == [("gsp", 1, "gpu")]


def test_without_the_gpu_count_the_failure_is_an_event_outside_the_lives(tmp_path: Path) -> None:
    db = str(tmp_path / "relia.duckdb")
    _cli("ingest", "--source", "kernel", *map(str, LOGS), "--db", db)
    fitted = json.loads(_cli("fit", "--db", db, "--json"))
    assert not any(r["n_failures"] for r in fitted["fits"])
    # not dropped silently: the run names the failure its rates leave out, and why
    assert fitted["failures_outside_lives"] == [
        {"component_class": "gsp", "unit_level": "gpu", "reason": "gpus_unknown", "n_failures": 1}
    ]
    said = runner.invoke(app, ["fit", "--db", db])
    assert said.exit_code == 0, said.output
    note = " ".join(said.stderr.split())
    assert "1 failure event of the window ends no life and is not in the rates (gsp 1)" in note
    assert "relia ingest --gpus-per-node N" in note
    with duckdb.connect(db, read_only=True) as con:
        events = con.execute(
            "select host, component_class, in_lives from fct_failure_events"
        ).fetchall()
    assert events == [("xe9680-a", "gsp", False)]


@pytest.mark.parametrize("name", ["dmesg-with-xid-119.log", "dmesg.decode.iso.log"])
def test_the_samples_hold_the_shared_captures_lines(name: str) -> None:
    """The committed excerpts are the shared captures' Xid lines (provenance kept)."""
    shared = REPO.parent / "shared" / "real" / "nvidia-xid-dmesg-samples" / name
    if not shared.is_file():
        pytest.fail(f"real data not found (expected ../shared/real beside the repo): {shared}")
    mine = "xe9680-a.log" if "119" in name else "h100-b.log"
    xid = [line for line in shared.read_text().splitlines() if "NVRM: Xid" in line]
    here = [
        line
        for line in (REPO / "tests" / "sql" / "samples" / "kernel_real" / mine)
        .read_text()
        .splitlines()
        if "NVRM: Xid" in line
    ]
    assert here == xid
