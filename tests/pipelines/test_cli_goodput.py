"""``relia goodput`` (issue #16 §5) over a hand-made warehouse.

The schema is the real one (``warehouse.init``); the three goodput marts are then replaced by
views over hand-made rows with the contract's column names (docs/goodput.md §3 to §5), so the
command is tested against those names whatever the real views compute. Expected figures are
worked out by hand in the comments.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines import warehouse
from pipelines.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]

# --- the ledger: three jobs, hand-made (seconds; every category sums to wall_s) --------------
# j1   8 GPUs, ml,     wall 10,000 = 8,000 + 500 + 500 + 0 + 1,000 + 0     goodput 0.8, measured
# j2  64 GPUs, ml,     wall 36,000 = 27,000 + 1,800 + 3,600 + 1,800 + 1,800 + 0  goodput 0.75
# j3 512 GPUs, vision, wall  7,200 = 3,600 + 360 + 1,440 + 600 + 300 + 900  goodput 0.5, estimated
JOBS = [
    # job_id_raw, name, account, n_gpus, start (h after t0), wall, productive, checkpoint,
    # wasted, restart, startup, other, n_interruptions, causes, estimated
    ("1001", "pretrain_a", "ml", 8, 0, 10_000, 8_000, 500, 500, 0, 1_000, 0, 0, [], False),
    (
        "1002",
        "sft_chat",
        "ml",
        64,
        5,
        36_000,
        27_000,
        1_800,
        3_600,
        1_800,
        1_800,
        0,
        1,
        ["gpu"],
        False,
    ),
    (
        "1003",
        "vit_train",
        "vision",
        512,
        30,
        7_200,
        3_600,
        360,
        1_440,
        600,
        300,
        900,
        1,
        ["nic"],
        True,
    ),
]


def _sql(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(_sql(v) for v in value) + "]::varchar[]"
    if isinstance(value, float) and not math.isfinite(value):
        return f"'{value}'::double"
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value!r}::double"
    return repr(value)


def _view(con: duckdb.DuckDBPyConnection, name: str, columns: list[str], rows: list[tuple]) -> None:
    """``create or replace view name as select * from (values ...) t(columns)``."""
    values = ",\n".join("(" + ", ".join(_sql(v) for v in row) + ")" for row in rows)
    if rows:
        body = f"select * from (values {values}) as t({', '.join(columns)})"
    else:
        body = "select " + ", ".join(f"null::double as {c}" for c in columns) + " where false"
    con.execute(f"create or replace view {name} as {body}")


def job_view(con: duckdb.DuckDBPyConnection) -> None:
    """``fct_job_goodput`` with the contract's columns (§3), over :data:`JOBS`."""
    rows = []
    for (
        raw,
        name,
        account,
        gpus,
        start_h,
        wall,
        prod,
        ckpt,
        wasted,
        restart,
        startup,
        other,
        n_int,
        causes,
        estimated,
    ) in JOBS:
        rows.append(
            (
                raw,
                raw,
                name,
                account,
                "alice",
                gpus,
                "2026-03-02 00:00:00+00",
                start_h,
                wall,  # first start: t0 + start_h
                1 + n_int,
                n_int,
                causes,
                float(wall),
                float(prod),
                float(ckpt),
                float(wasted),
                float(restart),
                float(restart) / 3,
                float(restart) / 3,
                0.0,
                float(restart) / 3,
                float(startup),
                float(other),
                prod / wall,
                gpus * wall / 3600.0,
                not estimated,
                estimated,
                not estimated,
                300.0,
                300.0,
                3600.0,
                60.0,
            )
        )
    columns = [
        "job_id_raw",
        "job_id",
        "job_name",
        "account",
        "user_name",
        "n_gpus",
        "t0",
        "start_h",
        "wall",
        "n_attempts",
        "n_interruptions",
        "interruption_causes",
        "wall_s",
        "productive_s",
        "checkpoint_s",
        "wasted_s",
        "restart_s",
        "detect_s",
        "reschedule_s",
        "reload_s",
        "warmup_s",
        "startup_s",
        "other_s",
        "goodput",
        "gpu_hours",
        "measured",
        "estimated",
        "reload_known",
        "assumed_startup_s",
        "assumed_restart_s",
        "assumed_checkpoint_interval_s",
        "assumed_checkpoint_s",
    ]
    _view(con, "ledger_values", columns, rows)
    con.execute(
        """
        create or replace view fct_job_goodput as
        select
            job_id_raw, job_id, job_name, account, user_name, n_gpus,
            t0::timestamptz + to_hours(start_h) as first_start_ts,
            t0::timestamptz + to_hours(start_h) + to_seconds(wall) as last_end_ts,
            n_attempts, n_interruptions, interruption_causes, wall_s, productive_s, checkpoint_s,
            wasted_s, restart_s, detect_s, reschedule_s, reload_s, warmup_s, startup_s, other_s,
            goodput, gpu_hours, measured, estimated, reload_known, assumed_startup_s,
            assumed_restart_s, assumed_checkpoint_interval_s, assumed_checkpoint_s
        from ledger_values
        """
    )


FLEET_COLUMNS = [
    "dimension",
    "value",
    "n_jobs",
    "gpu_hours",
    "goodput_gpu_hours",
    "goodput_jobs",
    "productive_share",
    "checkpoint_share",
    "wasted_share",
    "restart_share",
    "startup_share",
    "other_share",
    "n_measured",
    "n_estimated",
]


def fleet_row(dimension: str, value: str, jobs: list[tuple]) -> tuple:
    """One ``rpt_fleet_goodput`` row computed here from :data:`JOBS` (contract §4)."""
    gpu_s = sum(j[3] * j[5] for j in jobs)
    shares = [sum(j[3] * j[k] for j in jobs) / gpu_s for k in range(6, 12)]
    return (
        dimension,
        value,
        len(jobs),
        gpu_s / 3600.0,
        shares[0],
        sum(j[6] / j[5] for j in jobs) / len(jobs),
        *shares,
        sum(not j[14] for j in jobs),
        sum(j[14] for j in jobs),
    )


def fleet_view(con: duckdb.DuckDBPyConnection) -> None:
    """``rpt_fleet_goodput`` in a scrambled order (the command sorts it)."""
    j1, j2, j3 = JOBS
    rows = [
        fleet_row("iso_week", "2026-W10", [j1, j2, j3]),
        fleet_row("account", "vision", [j3]),
        fleet_row("gpu_bucket", "65-512", [j3]),
        fleet_row("gpu_bucket", "9-64", [j2]),
        fleet_row("account", "ml", [j1, j2]),
        fleet_row("all", "all", [j1, j2, j3]),
        fleet_row("gpu_bucket", "1-8", [j1]),
    ]
    _view(con, "rpt_fleet_goodput", FLEET_COLUMNS, rows)


BACKTEST_COLUMNS = [
    "bucket",
    "period",
    "n_jobs",
    "interruptions_observed",
    "interruptions_expected",
    "oe_ratio",
    "oe_lo",
    "oe_hi",
    "goodput_measured",
    "goodput_predicted",
    "goodput_predicted_lo",
    "goodput_predicted_hi",
]
# O/E intervals by hand (Garwood, 95 %): O = 1, E = 0.5: lo = chi2(0.025; 2) / 2 / 0.5 = 0.0506,
# hi = chi2(0.975; 4) / 2 / 0.5 = 11.14. The 65-512 bucket expected nothing: O/E is 0/0 (NaN)
# with an open upper bound (infinity), which strict JSON and CSV must carry as null / empty.
BACKTEST = [
    ("all", "all", 2, 1, 0.5, 2.0, 0.0506, 11.14, 0.6, 0.7, 0.6, 0.8),
    ("65-512", "all", 1, 0, 0.0, float("nan"), 0.0, float("inf"), 0.5, 0.6, 0.5, 0.7),
    ("9-64", "second half", 1, 1, 0.5, 2.0, 0.0506, 11.14, 0.75, 0.8, 0.7, 0.85),
    ("9-64", "all", 1, 1, 0.5, 2.0, 0.0506, 11.14, 0.75, 0.8, 0.7, 0.85),
]


def backtest_view(con: duckdb.DuckDBPyConnection, rows: list[tuple] | None = None) -> None:
    """``rpt_projection_backtest`` with an extra column the command must not print."""
    columns = [*BACKTEST_COLUMNS, "interruptions_unattributed"]
    data = BACKTEST if rows is None else rows
    _view(con, "rpt_projection_backtest", columns, [(*r, 0) for r in data])


@pytest.fixture
def goodput_db(tmp_path: Path) -> Path:
    db = tmp_path / "relia.duckdb"
    with warehouse.connect(db) as con:
        warehouse.init(con)
        job_view(con)
        fleet_view(con)
        backtest_view(con)
    return db


def _strict_loads(text: str) -> Any:
    def refuse(constant: str) -> None:
        msg = f"not strict JSON: {constant}"
        raise ValueError(msg)

    return json.loads(text, parse_constant=refuse)


def _csv(text: str) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert reader.fieldnames, text
    for row in rows:
        assert None not in row, row
        assert not {v.strip().lower() for v in row.values()} & {"nan", "inf", "-inf", "none"}
    return list(reader.fieldnames), rows


def _invoke(*args: str) -> str:
    result = runner.invoke(app, ["goodput", "--stored", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_goodput_json_has_jobs_fleet_backtest(goodput_db: Path) -> None:
    payload = _strict_loads(_invoke("--db", str(goodput_db), "--json"))
    assert payload == _strict_loads(_invoke("--db", str(goodput_db), "--format", "json"))
    assert set(payload) == {
        *("jobs", "fleet", "backtest", "backtest_classes", "logs", "backtest_missing"),
        "slow_missing",
    }
    assert payload["backtest_classes"] == []  # the hand-made run has no per-class rows
    assert payload["backtest_missing"] is None  # --stored: nothing was run, nothing was missing
    jobs = payload["jobs"]
    assert [j["job_id_raw"] for j in jobs] == ["1001", "1002", "1003"]  # by first start
    assert [j["goodput"] for j in jobs] == pytest.approx([0.8, 0.75, 0.5])
    assert jobs[1]["interruption_causes"] == ["gpu"]
    assert [j["estimated"] for j in jobs] == [False, False, True]
    assert jobs[0]["first_start_ts"].startswith("2026-03-02 00:00:00")
    # fleet: all first, buckets small to large, then accounts and weeks
    order = [(r["dimension"], r["value"]) for r in payload["fleet"]]
    assert order == [
        ("all", "all"),
        ("gpu_bucket", "1-8"),
        ("gpu_bucket", "9-64"),
        ("gpu_bucket", "65-512"),
        ("account", "ml"),
        ("account", "vision"),
        ("iso_week", "2026-W10"),
    ]
    fleet_all = payload["fleet"][0]
    assert list(fleet_all) == FLEET_COLUMNS
    # (8 x 8,000 + 64 x 27,000 + 512 x 3,600) / (8 x 10,000 + 64 x 36,000 + 512 x 7,200)
    # = 3,635,200 / 6,070,400; the mean of 0.8, 0.75 and 0.5 is 0.68333
    assert fleet_all["goodput_gpu_hours"] == pytest.approx(3_635_200 / 6_070_400)
    assert fleet_all["goodput_jobs"] == pytest.approx(0.683333, abs=1e-6)
    assert fleet_all["gpu_hours"] == pytest.approx(6_070_400 / 3600)
    assert (fleet_all["n_measured"], fleet_all["n_estimated"]) == (2, 1)
    # backtest: the contract's fields and the verdict, buckets small to large then all;
    # NaN/inf -> null
    backtest = payload["backtest"]
    assert all(list(r) == [*BACKTEST_COLUMNS, "verdict"] for r in backtest)
    assert [(r["bucket"], r["period"]) for r in backtest] == [
        ("9-64", "all"),
        ("9-64", "second half"),
        ("65-512", "all"),
        ("all", "all"),
    ]
    assert backtest[2]["oe_ratio"] is None
    assert backtest[2]["oe_hi"] is None
    assert backtest[2]["oe_lo"] == 0.0
    assert backtest[0]["oe_hi"] == pytest.approx(11.14)
    # issue #25: 65-512 expected nothing, so its prediction has no interval (not 50 % to 70 %)
    assert backtest[2]["verdict"] == "nothing expected"
    nothing = backtest[2]
    assert (nothing["goodput_predicted_lo"], nothing["goodput_predicted_hi"]) == (None, None)
    assert backtest[2]["goodput_predicted"] == pytest.approx(0.6)
    assert [r["verdict"] for r in backtest if r["bucket"] != "65-512"] == ["as predicted"] * 3


def test_goodput_min_gpus_filters_the_job_list(goodput_db: Path) -> None:
    payload = _strict_loads(_invoke("--db", str(goodput_db), "--json", "--min-gpus", "64"))
    assert [j["job_id_raw"] for j in payload["jobs"]] == ["1002", "1003"]
    assert len(payload["fleet"]) == 7  # the roll-up is over every job
    none = _strict_loads(_invoke("--db", str(goodput_db), "--json", "--min-gpus", "513"))
    assert none["jobs"] == []
    bad = runner.invoke(app, ["goodput", "--stored", "--db", str(goodput_db), "--min-gpus", "-1"])
    assert bad.exit_code == 2


@pytest.mark.parametrize("table", ["jobs", "fleet", "backtest"])
def test_goodput_csv_per_table(goodput_db: Path, table: str) -> None:
    payload = _strict_loads(_invoke("--db", str(goodput_db), "--json"))
    header, rows = _csv(_invoke("--db", str(goodput_db), "--format", "csv", "--table", table))
    assert len(rows) == len(payload[table])
    if table == "fleet":
        assert header == FLEET_COLUMNS
        assert rows[0]["n_jobs"] == "3"
        assert float(rows[1]["goodput_gpu_hours"]) == pytest.approx(0.8)  # bucket 1-8: j1
    elif table == "backtest":
        assert header == [*BACKTEST_COLUMNS, "verdict"]
        assert rows[2]["bucket"] == "65-512"
        assert rows[2]["oe_ratio"] == ""  # NaN is an empty field
        assert rows[2]["oe_hi"] == ""
        assert float(rows[0]["oe_lo"]) == pytest.approx(0.0506)
    else:
        assert header[:3] == ["job_id_raw", "job_id", "job_name"]
        assert [r["job_id_raw"] for r in rows] == ["1001", "1002", "1003"]
        assert json.loads(rows[2]["interruption_causes"]) == ["nic"]
        assert [r["estimated"] for r in rows] == ["False", "False", "True"]
        assert float(rows[1]["productive_s"]) == 27_000


def test_goodput_table_shows_both_weightings_side_by_side(
    goodput_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from pipelines.cli import goodput as goodput_cli
    from pipelines.cli import render

    screen = Console(width=250, record=True)
    monkeypatch.setattr(render, "console", screen)
    monkeypatch.setattr(goodput_cli, "console", screen)
    result = runner.invoke(
        app, ["goodput", "--stored", "--db", str(goodput_db), "--min-gpus", "64"]
    )
    assert result.exit_code == 0, result.output
    text = screen.export_text()
    lines = text.splitlines()

    def row(*cells: str) -> list[str]:
        found = [
            ln
            for ln in lines
            if all(re.search(rf"(^|\s|│){re.escape(c)}(\s|│|$)", ln) for c in cells)
        ]
        assert found, f"no row with {cells} in\n{text}"
        return found

    # all: 3 jobs, 1,686 GPU-hours, 59.9 % GPU-hour weighted next to 68.3 % job weighted,
    # 2 measured and 1 estimated
    assert row("all", "3", "1,686", "59.9 %", "68.3 %", "2", "1")
    assert row("1-8", "1", "22", "80.0 %", "80.0 %")
    # shares of bucket 9-64 (j2): 75.0, 5.0, 10.0, 5.0, 5.0, 0.0 %
    assert row("9-64", "75.0 %", "5.0 %", "10.0 %", "0.0 %")
    # back-test: 9-64 second half, 1 observed, 0.5 expected, O/E 2, 0.0506 to 11.1
    assert row("9-64", "second half", "1", "0.5", "2", "0.0506 to 11.1", "75.00 %", "80.00 %")
    # nothing expected: the interval column says so instead of 50.00 % to 70.00 % (issue #25)
    [nothing] = row("65-512", "> 0", "nothing expected", "50.00 %", "60.00 %")
    assert nothing.count("nothing expected") == 2
    assert "70.00 %" not in nothing
    assert len(row("0.0506 to 11.1", "as predicted")) == 3
    assert "2 ledger jobs with at least 64 GPUs, 1 estimated" in " ".join(text.split())


def test_goodput_without_backtest_says_it_was_not_run(
    goodput_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with warehouse.connect(goodput_db) as con:
        backtest_view(con, rows=[])
    result = runner.invoke(
        app, ["goodput", "--stored", "--db", str(goodput_db)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert "back-test: not run yet" in " ".join(result.stdout.split())
    text = _invoke("--db", str(goodput_db), "--format", "csv", "--table", "backtest")
    assert text == ",".join([*BACKTEST_COLUMNS, "verdict"]) + "\n"  # the header alone
    assert _strict_loads(_invoke("--db", str(goodput_db), "--json"))["backtest"] == []


def test_goodput_with_an_empty_ledger_says_so(goodput_db: Path) -> None:
    with warehouse.connect(goodput_db) as con:
        _view(con, "fct_job_goodput", ["job_id_raw", "n_gpus", "first_start_ts", "estimated"], [])
        _view(con, "rpt_fleet_goodput", FLEET_COLUMNS, [])
        backtest_view(con, rows=[])
    result = runner.invoke(
        app, ["goodput", "--stored", "--db", str(goodput_db)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "no realised goodput yet: no training logs" in text
    assert "where the GPU-hours went" not in text  # no empty tables
    assert "back-test: not run yet" in text
    assert "0 ledger jobs, 0 estimated" in text
    payload = _strict_loads(_invoke("--db", str(goodput_db), "--json"))
    assert payload == {
        "jobs": [],
        "fleet": [],
        "backtest": [],
        "backtest_classes": [],
        "logs": [],
        "backtest_missing": None,
        "slow_missing": None,  # no roll-up: "no realised goodput yet" says it all
    }
    header = _invoke("--db", str(goodput_db), "--format", "csv", "--table", "jobs")
    assert header == "job_id_raw,n_gpus,first_start_ts,estimated\n"


def test_goodput_names_missing_views_in_one_line(goodput_db: Path) -> None:
    with warehouse.connect(goodput_db) as con:
        con.execute("drop view rpt_projection_backtest")
        con.execute("drop view rpt_fleet_goodput")
    result = runner.invoke(app, ["goodput", "--stored", "--db", str(goodput_db), "--json"])
    assert result.exit_code == 1
    shown = result.output.strip()
    assert len(shown.splitlines()) == 1, shown
    assert shown.startswith("error:")
    assert "rpt_fleet_goodput, rpt_projection_backtest" in shown
    assert "fct_job_goodput" not in shown.split("has no", 1)[1]
    assert result.stdout == ""  # nothing half-printed


def test_goodput_on_no_warehouse_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["goodput", "--stored", "--db", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: no warehouse at")
    assert not (tmp_path / "none.duckdb").exists()


def test_goodput_queries_read_marts_only() -> None:
    """Like the summary's (tests/test_layering.py): no raw_, stg_ or int_ relation in a query."""
    below = re.compile(r"\b(?:raw|stg|int)_[a-z0-9_]+\b")
    for path in (REPO / "pipelines/analysis/goodput_summary.py", REPO / "pipelines/cli/goodput.py"):
        assert not below.findall(path.read_text()), path


# --- fail-slow beside fail-stop (docs/goodput.md §4, §7) ------------------------------------
# slow_s: j1 0 s and j2 1,800 s (both slow-measured), j3 estimated (null, not measured).
# GPU-seconds: j1 8 x 10,000 = 80,000; j2 64 x 36,000 = 2,304,000; j3 512 x 7,200 = 3,686,400;
# all 6,070,400. Fail-stop (wasted + restart): j1 500, j2 5,400, j3 2,040 s.
SLOW_COLUMNS = [
    "slow_share",
    "failstop_share",
    "failslow_share",
    "failstop_share_jobs",
    "failslow_share_jobs",
    "failstop_gpu_hours",
    "failslow_gpu_hours",
    "n_slow_measured",
    "n_slow_jobs",
]
SLOW_ALL = (
    64 * 1_800 / 6_070_400,  # slow_share 1.9 %
    (8 * 500 + 64 * 5_400 + 512 * 2_040) / 6_070_400,  # 1,394,080 / 6,070,400 = 23.0 %
    64 * 1_800 / (80_000 + 2_304_000),  # 115,200 / 2,384,000 = 4.8 %
    (500 / 10_000 + 5_400 / 36_000 + 2_040 / 7_200) / 3,  # (0.05 + 0.15 + 0.2833) / 3 = 16.1 %
    (0 + 1_800 / 36_000) / 2,  # 2.5 %
    1_394_080 / 3600,
    115_200 / 3600,
    2,
    1,
)
SLOW_J2 = (0.05, 0.15, 0.05, 0.15, 0.05, 64 * 5_400 / 3600, 32.0, 1, 1)
SLOW_J3 = (0.0, 2_040 / 7_200, None, 2_040 / 7_200, None, 512 * 2_040 / 3600, None, 0, 0)


def slow_views(con: duckdb.DuckDBPyConnection, *, measured: bool = True) -> None:
    """The ledger with ``slow_s`` and ``slow_measured``, and a roll-up with the fail-slow columns.

    ``measured=False``: no job has step times (every ``slow_s`` null, ``n_slow_measured`` 0).
    """
    j1, j2, j3 = JOBS
    con.execute("create table ledger_base as select * from fct_job_goodput")
    slow = "case job_id_raw when '1001' then 0.0 when '1002' then 1800.0 end"
    flag = "job_id_raw <> '1003'"
    if not measured:
        slow, flag = "null::double", "false"
    con.execute(
        f"create or replace view fct_job_goodput as select *, {slow} as slow_s, "
        f"{flag} as slow_measured from ledger_base"
    )
    rows = [
        (*fleet_row("gpu_bucket", "65-512", [j3]), *SLOW_J3),
        (*fleet_row("all", "all", [j1, j2, j3]), *SLOW_ALL),
        (*fleet_row("gpu_bucket", "9-64", [j2]), *SLOW_J2),
    ]
    if not measured:
        unmeasured = (0.0, SLOW_ALL[1], None, SLOW_ALL[3], None, SLOW_ALL[5], None, 0, 0)
        rows = [(*fleet_row("all", "all", [j1, j2, j3]), *unmeasured)]
    _view(con, "rpt_fleet_goodput", [*FLEET_COLUMNS, *SLOW_COLUMNS], rows)


def _screen(db: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from rich.console import Console

    from pipelines.cli import goodput as goodput_cli
    from pipelines.cli import render

    screen = Console(width=250, record=True)
    monkeypatch.setattr(render, "console", screen)
    monkeypatch.setattr(goodput_cli, "console", screen)
    result = runner.invoke(app, ["goodput", "--stored", "--db", str(db)])
    assert result.exit_code == 0, result.output
    return screen.export_text()


def test_goodput_shows_fail_slow_beside_fail_stop(
    goodput_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with warehouse.connect(goodput_db) as con:
        slow_views(con)
    lines = _screen(goodput_db, monkeypatch).splitlines()
    [title] = [ln for ln in lines if "badput by cause" in ln]
    assert "fail-stop" in title
    assert "fail-slow" in title

    def cells(marker: str) -> list[str]:
        [line] = [ln for ln in lines if marker in ln]
        return [c.strip() for c in re.split(r"\s{2,}|│", line.strip(" │")) if c.strip()]

    # all: fail-stop 23.0 %, fail-slow 4.8 % (of the slow-measured jobs' GPU-hours), job means
    # 16.1 % and 2.5 %, slow share 1.9 % of all GPU-hours, 2 of 3 jobs measured, 1 slow
    all_row = cells("2 of 3")
    assert all_row[:2] == ["all", "all"]
    assert all_row[-7:] == ["23.0 %", "4.8 %", "16.1 %", "2.5 %", "1.9 %", "2 of 3", "1"], all_row
    # 65-512: j3 is estimated: no fail-slow figure, never a 0.0 %
    j3_cells = cells("0 of 1")
    assert j3_cells[:2] == ["gpu_bucket", "65-512"]
    assert j3_cells[-7:] == ["28.3 %", "-", "28.3 %", "-", "-", "0 of 1", "-"], j3_cells
    assert not any("fail-slow: not measured" in ln for ln in lines)
    payload = _strict_loads(_invoke("--db", str(goodput_db), "--json"))
    assert payload["slow_missing"] is None
    fleet_all = payload["fleet"][0]
    assert list(fleet_all) == [*FLEET_COLUMNS, *SLOW_COLUMNS]
    assert fleet_all["failslow_share"] == pytest.approx(115_200 / 2_384_000)
    assert (fleet_all["n_slow_measured"], fleet_all["n_slow_jobs"]) == (2, 1)
    assert [(j["slow_s"], j["slow_measured"]) for j in payload["jobs"]] == [
        (0.0, True),
        (1800.0, True),
        (None, False),
    ]
    header, rows = _csv(_invoke("--db", str(goodput_db), "--format", "csv", "--table", "fleet"))
    assert header == [*FLEET_COLUMNS, *SLOW_COLUMNS]
    assert rows[0]["n_slow_measured"] == "2"
    header, rows = _csv(_invoke("--db", str(goodput_db), "--format", "csv", "--table", "jobs"))
    assert [r["slow_s"] for r in rows] == ["0.0", "1800.0", ""]


def test_goodput_without_slow_measured_jobs_says_so_in_one_line(
    goodput_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with warehouse.connect(goodput_db) as con:
        slow_views(con, measured=False)
    lines = _screen(goodput_db, monkeypatch).splitlines()
    said = [ln for ln in lines if ln.startswith("fail-slow: not measured")]
    assert said == [
        "fail-slow: not measured: none of the 3 ledger jobs has its slow time measured "
        "(fct_job_goodput.slow_measured): training logs with step times (Megatron-LM, "
        "torchtitan) would supply it"
    ]
    [all_row] = [ln for ln in lines if "0 of 3" in ln]
    assert "23.0 %" in all_row  # fail-stop is still there
    assert "0.0 %" not in all_row  # the slow share is not shown as a silent zero
    payload = _strict_loads(_invoke("--db", str(goodput_db), "--json"))
    assert payload["slow_missing"] == said[0].removeprefix("fail-slow: not measured: ")


def test_goodput_on_a_roll_up_made_before_fail_slow_says_so(goodput_db: Path) -> None:
    payload = _strict_loads(_invoke("--db", str(goodput_db), "--json"))
    assert payload["slow_missing"].startswith("rpt_fleet_goodput predates fail-slow")


def test_goodput_back_tests_the_jobs_of_at_least_min_gpus(
    fleet: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    """On a real (synthetic) warehouse, ``--min-gpus`` sets which jobs the back-test covers.

    65 GPUs and up is the buckets from ``65-512`` on (64 GPUs is the top of ``9-64``).
    """
    db = tmp_path / "relia.duckdb"
    shutil.copy(fleet[0], db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        (n_big,) = con.execute(
            "select count(*) from fct_job_goodput where n_gpus >= 65"
        ).fetchone() or (0,)
    finally:
        con.close()
    assert n_big > 0
    payload = _strict_loads(_invoke_live("--db", str(db), "--json", "--min-gpus", "65"))
    rows = {(r["bucket"], r["period"]): r for r in payload["backtest"]}
    assert {bucket for bucket, _ in rows} <= {"65-512", "513-4096", "4097+", "all"}
    con = duckdb.connect(str(db), read_only=True)
    try:
        (min_gpus, n_jobs) = con.execute(
            "select min_gpus, n_jobs from backtest_runs order by created_at desc limit 1"
        ).fetchone() or (0, 0)
    finally:
        con.close()
    assert (min_gpus, n_jobs) == (65, n_big)
    assert all(job["n_gpus"] >= 65 for job in payload["jobs"])


def _invoke_live(*args: str) -> str:
    result = runner.invoke(app, ["goodput", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_goodput_lists_training_logs_it_could_not_tie(tmp_path: Path) -> None:
    """A log whose job the warehouse does not hold is untied, listed and never used."""
    from pipelines import ingest

    landing = tmp_path / "landing"
    (landing / "training").mkdir(parents=True)
    shutil.copy(REPO / "data_samples" / "training" / "slurm-4242.out", landing / "training")
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    payload = _strict_loads(_invoke("--db", str(db), "--json"))
    assert [
        (r["source_file"].rsplit("/", 1)[-1], r["tie"], r["job_id"]) for r in payload["logs"]
    ] == [("slurm-4242.out", "none", "4242")]
    assert payload["jobs"] == []
    result = runner.invoke(app, ["goodput", "--stored", "--db", str(db)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "training logs: 1; tied by job id 0, by host and time 0; ambiguous 0 and untied 1" in (
        result.output
    )
    assert "none: " in result.output
    assert "slurm-4242.out" in result.output
