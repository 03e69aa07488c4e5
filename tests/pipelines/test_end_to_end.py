"""End to end on a synthetic fleet: the views reproduce the generator's ground truth exactly."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING

import pytest

from pipelines import ingest, warehouse

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

RAW_TABLES = [
    "raw_slurm_jobs",
    "raw_xid_events",
    "raw_inventory",
    "raw_fleet",
    "raw_repairs",
    "raw_node_events",  # written by default since node events are what every Slurm cluster keeps
]


@pytest.fixture
def con(fleet: tuple[Path, Path, dict]) -> duckdb.DuckDBPyConnection:
    with warehouse.connect(fleet[0], read_only=True) as con:
        yield con


def test_window_is_the_generated_one(con: duckdb.DuckDBPyConnection, fleet: tuple) -> None:
    truth = fleet[2]
    start, end = con.execute("select * from stg_observation_window").fetchone()
    assert start == datetime.fromisoformat(truth["window_start"])
    assert end == datetime.fromisoformat(truth["window_end"])


def test_failures_and_lives_per_class_match_truth(
    con: duckdb.DuckDBPyConnection, fleet: tuple
) -> None:
    truth = fleet[2]["lives_by_class"]
    rows = con.execute(
        "select component_class, count(*), count(*) filter (where failed), "
        "sum(epoch(observed_to_ts - observed_from_ts))::bigint "
        "from int_replacement_lives group by component_class"
    ).fetchall()
    observed = {cls: {"n_lives": n, "n_failed": f, "exposure_s": s} for cls, n, f, s in rows}
    assert {cls: observed[cls] for cls in truth} == truth
    # classes the generator never fails (gsp, storage, ...) are at risk but never fail
    assert all(v["n_failed"] == 0 for cls, v in observed.items() if cls not in truth)


def test_exposure_hours_equal_exit_minus_entry(con: duckdb.DuckDBPyConnection) -> None:
    gap = con.execute(
        "select max(abs((exit_h - entry_h) * 3600 - epoch(observed_to_ts - observed_from_ts))) "
        "from int_replacement_lives"
    ).fetchone()[0]
    assert gap < 1e-6


def test_left_truncation_and_censoring_present(con: duckdb.DuckDBPyConnection) -> None:
    n_truncated, n_censored = con.execute(
        "select count(*) filter (where entry_h > 0), count(*) filter (where not failed) "
        "from int_replacement_lives"
    ).fetchone()
    assert n_truncated > 0
    assert n_censored > 0


def test_interruptions_by_cause_match_truth(con: duckdb.DuckDBPyConnection, fleet: tuple) -> None:
    truth = fleet[2]
    expected = {
        (r["cause_class"], r["attribution"]): r["n"] for r in truth["interruptions_by_cause"]
    }
    observed = dict(
        ((cause, attribution), n)
        for cause, attribution, n in con.execute(
            "select cause_class, attribution, count(*) from int_job_interruptions group by all"
        ).fetchall()
    )
    assert observed == expected
    assert (
        expected.get(("ambiguous", "ambiguous"), 0)
        >= sum(r["deliberately_ambiguous"] for r in truth["interruptions"])
        > 0
    )


def test_each_interruption_and_restart_overhead_match(
    con: duckdb.DuckDBPyConnection, fleet: tuple
) -> None:
    truth = {
        (r["job_id_raw"], r["attempt"]): (
            r["cause_class"],
            r["attribution"],
            r["restart_overhead_s"],
        )
        for r in fleet[2]["interruptions"]
    }
    rows = con.execute(
        "select job_id_raw, attempt, cause_class, attribution, restart_overhead_s "
        "from int_job_interruptions"
    ).fetchall()
    observed = {
        (job, attempt): (cause, attribution, None if overhead is None else int(overhead))
        for job, attempt, cause, attribution, overhead in rows
    }
    assert observed == truth


def test_every_row_is_loaded_or_quarantined(con: duckdb.DuckDBPyConnection, fleet: tuple) -> None:
    truth = fleet[2]
    assert (
        con.execute(
            "select count(*) from raw_ingest_files where n_read <> n_loaded + n_quarantined"
        ).fetchone()[0]
        == 0
    )
    quarantined = dict(
        con.execute("select target_table, count(*) from raw_quarantine group by all").fetchall()
    )
    assert {t: quarantined.get(t, 0) for t in RAW_TABLES} == truth["expected_quarantine"]
    for table in RAW_TABLES:
        loaded = con.execute(f"select count(*) from {table}").fetchone()[0]
        assert loaded == truth["expected_rows"][table], table
    reasons = con.execute("select count(*) from raw_quarantine where reason = ''").fetchone()[0]
    assert reasons == 0


def _table_fingerprints(db: Path) -> dict[str, tuple[int, int]]:
    with warehouse.connect(db, read_only=True) as con:
        out = {}
        for table in [*RAW_TABLES, "raw_quarantine", "raw_ingest_files"]:
            frame = con.sql(
                f"select * exclude (loaded_at) from {table}"
                if table in ("raw_quarantine", "raw_ingest_files")
                else f"select * from {table}"
            ).pl()
            out[table] = (frame.height, int(frame.hash_rows(seed=0).sum()))
        for view in ["int_component_lives", "int_job_interruptions", "int_incidents"]:
            frame = con.sql(f"select * from {view}").pl()
            out[view] = (
                frame.height,
                int(
                    frame.select([c for c in frame.columns if frame.schema[c].is_nested() is False])
                    .hash_rows(seed=0)
                    .sum()
                ),
            )
    return out


def test_reingesting_the_same_folder_changes_nothing(fleet: tuple) -> None:
    db, landing, _ = fleet
    before = _table_fingerprints(db)
    counts = ingest.ingest(db, ingest.discover([landing]))
    assert all(c.skipped for c in counts)
    assert _table_fingerprints(db) == before


def test_the_same_bytes_under_another_name_are_loaded_once(fleet: tuple, tmp_path: Path) -> None:
    db, landing, _ = fleet
    copy = tmp_path / "slurm" / "renamed.txt"
    copy.parent.mkdir()
    copy.write_bytes(next((landing / "slurm").iterdir()).read_bytes())
    before = _table_fingerprints(db)
    [counts] = ingest.ingest(db, ingest.discover([copy]))
    assert counts.skipped
    assert _table_fingerprints(db) == before


def test_ground_truth_file_is_written(fleet: tuple) -> None:
    truth = json.loads((fleet[1] / "ground_truth.json").read_text())
    assert Counter(r["cause_class"] for r in truth["interruptions"]) == Counter(
        r["cause_class"] for r in fleet[2]["interruptions"]
    )
