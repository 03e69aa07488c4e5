"""The committed data samples load, every view builds, keys are unique and counts match."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipelines import ingest, warehouse

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "landing"


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    db = tmp_path_factory.mktemp("samples") / "relia.duckdb"
    ingest.ingest(db, ingest.discover([SAMPLES]))
    con = duckdb.connect(str(db), read_only=True)
    yield con
    con.close()


@pytest.mark.parametrize(
    ("view", "key"),
    [
        ("stg_slurm_jobs", "job_id, coalesce(step, ''), start_ts"),
        ("stg_repairs", "ticket_id"),
        ("stg_fleet", "node"),
        ("int_incidents", "incident_id"),
        ("int_job_attempts", "job_id_raw, attempt"),
        ("int_job_interruptions", "job_id_raw, attempt"),
        ("int_component_lives", "unit_id, component_class"),
    ],
)
def test_view_keys_are_unique(con: duckdb.DuckDBPyConnection, view: str, key: str) -> None:
    n_rows, n_keys = con.execute(
        f"select count(*), count(distinct ({key})) from {view}"
    ).fetchall()[0]
    assert n_rows > 0
    assert n_rows == n_keys


def test_every_view_builds_and_answers(con: duckdb.DuckDBPyConnection) -> None:
    for path in warehouse.view_files():
        con.execute(f"select count(*) from {path.stem}").fetchall()


def test_samples_match_their_ground_truth(con: duckdb.DuckDBPyConnection) -> None:
    truth = json.loads((SAMPLES / "ground_truth.json").read_text())
    failures = dict(
        con.execute(
            "select component_class, count(*) from int_component_lives where failed group by 1"
        ).fetchall()
    )
    assert failures == {k: v for k, v in truth["failures_by_class"].items() if v}
    quarantined = dict(
        con.execute("select target_table, count(*) from raw_quarantine group by 1").fetchall()
    )
    assert quarantined == {k: v for k, v in truth["expected_quarantine"].items() if v}
