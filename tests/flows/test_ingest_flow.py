"""The ``ingest-telemetry`` flow, run for real under a Prefect test harness."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines import warehouse
from synth import SynthConfig, synthesize

pytestmark = [pytest.mark.prefect, pytest.mark.slow]


def test_ingest_flow_loads_a_landing_folder_once(prefect_harness: None, tmp_path: Path) -> None:
    from pipelines.flows.ingest_telemetry import ingest_telemetry

    landing = tmp_path / "landing"
    truth = synthesize(
        landing, SynthConfig(nodes=8, days=10, seed=1, start=datetime(2026, 5, 4, tzinfo=UTC))
    )
    db = tmp_path / "relia.duckdb"
    first = ingest_telemetry(landing_dir=landing, db_path=db)
    assert first
    assert not any(c["skipped"] for c in first)
    second = ingest_telemetry(landing_dir=landing, db_path=db)
    assert all(c["skipped"] for c in second)
    with warehouse.connect(db, read_only=True) as con:
        n_jobs = con.execute("select count(*) from raw_slurm_jobs").fetchone()[0]
        failures = dict(
            con.execute(
                "select component_class, count(*) from int_component_lives where failed group by 1"
            ).fetchall()
        )
    assert n_jobs == truth["expected_rows"]["raw_slurm_jobs"]
    assert failures == {k: v for k, v in truth["failures_by_class"].items() if v}


def test_load_task_logic_runs_without_orchestration(tmp_path: Path) -> None:
    from pipelines.flows.ingest_telemetry import find_landing_files, load_files

    landing = tmp_path / "landing"
    synthesize(
        landing, SynthConfig(nodes=4, days=7, seed=2, start=datetime(2026, 5, 4, tzinfo=UTC))
    )
    files = find_landing_files.fn(landing)
    counts = load_files.fn(tmp_path / "db.duckdb", files, 5.0)
    assert len(counts) == len(files)
    assert sum(c["n_quarantined"] for c in counts) > 0  # the generator's hostile lines


def test_ingest_flow_refuses_a_link_out_of_the_landing_root(
    prefect_harness: None, tmp_path: Path
) -> None:
    from pipelines.flows.ingest_telemetry import ingest_telemetry

    secret = tmp_path / "shadow"
    secret.write_text("root:$6$hash:19000:0:99999:7:::\n")
    landing = tmp_path / "landing"
    (landing / "kernel").mkdir(parents=True)
    (landing / "kernel" / "kern.log").symlink_to(secret)
    (landing / "kernel" / "gpu0001.log").write_text(
        "2026-06-01T02:09:50.376060+00:00 gpu0001 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, "
        "name=x, GPU has fallen off the bus.\n"
    )
    db = tmp_path / "relia.duckdb"
    counts = ingest_telemetry(landing_dir=landing, db_path=db)  # refused alone (issue 26)
    outcomes = {Path(str(c["path"])).name: c["status"] for c in counts}
    assert outcomes == {
        "kern.log": "refused: resolves outside the landing root",
        "gpu0001.log": "loaded",
    }
    with warehouse.connect(db, read_only=True) as con:
        n_hash = con.execute(
            "select count(*) from raw_quarantine where raw like '%$6$hash%'"
        ).fetchone()[0]
        n_xid = con.execute("select count(*) from raw_xid_events").fetchone()[0]
    assert (n_hash, n_xid) == (0, 1)
    again = ingest_telemetry(landing_dir=landing, db_path=db)
    assert len(again) == 2
    allowed = ingest_telemetry(landing_dir=landing, db_path=db, allow_outside_root=True)
    assert {Path(str(c["path"])).name for c in allowed} == {"shadow", "gpu0001.log"}
    from pipelines.flows.ingest_telemetry import ingest_paths_flow  # relia ingest --tracked

    [named] = ingest_paths_flow(paths=[landing / "kernel" / "kern.log"], db_path=db)
    assert named["status"] == "refused: resolves outside the landing root"
