"""Straggler report lines through the real ingest and the training views: a line that gives
several rows is still one line (loaded, quarantined, re-read), and the views that tie logs to
attempts keep their rows (docs/goodput.md §1-§2).

The files are the real slices of tests/pipelines/sources/samples/failslow/ and .../training/
(provenance in their READMEs); lines marked "edited" are a real line with one value changed.
Every count below is read off the lines by hand.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines import ingest, warehouse
from pipelines.ingest.sources.training import parse

SOURCES = Path(__file__).parent / "sources" / "samples"
FAILSLOW = SOURCES / "failslow"
TRAINING = SOURCES / "training"

# file -> (lines loaded, rows, lines ignored), read off the slices
FILES = {
    "megatron_core_straggler_readme.log": (3, 14 + 4 + 4, 0),
    "savanna_hsd_straggler_line.log": (1, 14, 0),
    "nvrx_megatron_bridge_2114_two_ranks.log": (4, 4, 6),
    "nvrx_megatron_bridge_docs_warnings.log": (2, 6, 0),
}


def _line(name: str, n: int) -> str:
    return (FAILSLOW / name).read_text().splitlines()[n - 1]


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    folder = tmp_path / "landing" / "training"
    folder.mkdir(parents=True)
    for name in FILES:
        shutil.copyfile(FAILSLOW / name, folder / name)
    readme = "megatron_core_straggler_readme.log"
    bad = [
        # the Bottom 4 list, before any printed time: loads (ts null)
        _line(readme, 2),
        # the min/max line dated 2099 (edited): 14 rows that all fail the time range check
        _line(readme, 1).replace("[2024-03-14", "[2099-03-14"),
        # savanna's line with rank "3O" for MxRtt (edited): a parse reject
        _line("savanna_hsd_straggler_line.log", 1).replace("1570.32ms/30", "1570.32ms/3O"),
    ]
    (folder / "bad.log").write_text("\n".join(bad) + "\n")
    return folder.parent


def test_a_report_line_counts_once_loaded_or_quarantined(landing: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([landing]))}
    for name, (lines, _, ignored) in FILES.items():
        c = counts[name]
        assert (c.n_read, c.n_loaded, c.n_quarantined, c.n_ignored) == (lines, lines, 0, ignored)
    bad = counts["bad.log"]
    assert (bad.n_read, bad.n_loaded, bad.n_quarantined, bad.n_ignored) == (3, 1, 2, 0)
    for c in counts.values():
        assert c.n_read == c.n_loaded + c.n_quarantined + c.n_held
    n_rows = sum(rows for _, rows, _ in FILES.values()) + 4  # bad.log's Bottom list
    with warehouse.connect(db, read_only=True) as con:
        assert con.execute("select count(*) from raw_training_events").fetchone() == (n_rows,)
        assert con.execute("select count(*) from stg_training_events").fetchone() == (n_rows,)
        quarantined = con.execute(
            "select line_no, stage from raw_quarantine where source_file like '%bad.log' "
            "order by line_no"
        ).fetchall()
        events = con.execute(
            "select distinct event, framework from stg_training_events order by all"
        ).fetchall()
    assert quarantined == [(2, "validate"), (3, "parse")]
    assert events == [("straggler", "megatron"), ("straggler", "nvrx")]


def test_rows_loaded_twice_are_kept_once_per_figure_and_rank(landing: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    with warehouse.connect(db) as con:
        before = con.execute(
            "select source_file, line_no, metric, rank, value from stg_training_events order by all"
        ).fetchall()
        # the same log re-read under the same path: every row twice
        con.execute("insert into raw_training_events select * from raw_training_events")
        warehouse.create_views(con)
        after = con.execute(
            "select source_file, line_no, metric, rank, value from stg_training_events order by all"
        ).fetchall()
    assert after == before
    assert len(before) == sum(rows for _, rows, _ in FILES.values()) + 4


def _warehouse(logs: dict[str, bytes]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    for path, data in logs.items():
        parsed = parse(data, source_file=path)
        assert parsed.rejects.height == 0
        con.register("incoming", parsed.rows.to_arrow())
        con.execute("insert into raw_training_events by name select * from incoming")
        con.unregister("incoming")
    warehouse.create_views(con)
    return con


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    return warehouse.query(con, sql).to_dicts()


def test_per_rank_torchtitan_lines_stay_one_step_each() -> None:
    # torchtitan_1287_steps.log's steps 200 and 210 as rank 0 prints them, and the same lines
    # as rank 1 would (the [rank1]: tag): one step row per (attempt, step), from two lines
    lines = (TRAINING / "torchtitan_1287_steps.log").read_text().splitlines()
    steps = [lines[1], lines[4]]
    text = "\n".join([*steps, *(s.replace("[rank0]:", "[rank1]:", 1) for s in steps)]) + "\n"
    con = _warehouse({"training/titan.log": text.encode()})
    raw = con.execute("select line_no, step, rank from raw_training_events order by 1").fetchall()
    assert raw == [(1, 200, 0), (2, 210, 0), (3, 200, 1), (4, 210, 1)]
    events = _rows(
        con,
        "select step, n_lines, line_no from int_training_events where event = 'step' order by 1",
    )
    assert events == [
        {"step": 200, "n_lines": 2, "line_no": 1},
        {"step": 210, "n_lines": 2, "line_no": 2},
    ]


def test_straggler_rows_leave_the_training_events_as_they_were() -> None:
    # a real Megatron log, alone and followed by NVRx's two warning lines (no time printed: the
    # attempt's bounds stay), six rows
    log = (TRAINING / "megatron_lm_1570_date_prefix.log").read_bytes()
    warnings = (FAILSLOW / "nvrx_megatron_bridge_docs_warnings.log").read_bytes()
    plain = _warehouse({"training/mcore.log": log})
    reported = _warehouse({"training/mcore.log": log + warnings})
    query = "select * from int_training_events order by all"
    assert _rows(reported, query) == _rows(plain, query)
    assert _rows(reported, query)  # the log has step rows
    attempts = "select attempt, start_ts, end_ts, n_lines from int_training_log_attempts order by 1"
    before, after = _rows(plain, attempts), _rows(reported, attempts)
    assert [{**row, "n_lines": row["n_lines"] + 2} for row in before] == after  # lines, not rows
    ties = (
        "select source_file, job_id, host, framework, first_ts, last_ts from int_training_log_ties"
    )
    assert _rows(reported, ties) == _rows(plain, ties)


def test_a_read_that_starts_inside_a_report_takes_the_earlier_reads_time() -> None:
    # the README report's min/max line in one read, its Bottom/Top lines in the next: the
    # second read's rows have no time; staging gives them line 1's (inferred)
    lines = (FAILSLOW / "megatron_core_straggler_readme.log").read_text().splitlines()
    path = "training/mcore.log"
    first = parse((lines[0] + "\n").encode(), source_file=path).rows
    rest = parse(("\n".join(lines[1:]) + "\n").encode(), source_file=path).rows
    assert rest["ts"].null_count() == rest.height == 8
    rest = rest.with_columns(line_no=rest["line_no"] + 1)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    for rows in (first, rest):
        con.register("incoming", rows.to_arrow())
        con.execute("insert into raw_training_events by name select * from incoming")
        con.unregister("incoming")
    warehouse.create_views(con)
    got = con.execute(
        "select line_no, count(*), min(ts) = max(ts), bool_and(ts_inferred), "
        "strftime(min(ts), '%Y-%m-%d %H:%M:%S') from stg_training_events group by 1 order by 1"
    ).fetchall()
    stamp = "2024-03-14 23:07:56"
    assert got == [
        (1, 14, True, False, stamp),
        (2, 4, True, True, stamp),
        (3, 4, True, True, stamp),
    ]
