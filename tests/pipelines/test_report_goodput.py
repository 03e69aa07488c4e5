"""The report section "Realised goodput and how well the model predicted it" (issue #16 §5).

The goodput marts are views over hand-made rows with the contract's column names (the helpers
of test_cli_goodput.py), on the hand-made warehouse for the section's data and on a copy of the
shared synthetic fleet for the whole report. Expected figures are worked out by hand there.
"""

from __future__ import annotations

import math
import re
import shutil
from datetime import UTC, datetime
from html import unescape
from typing import TYPE_CHECKING

import duckdb
import pytest
from test_cli_goodput import JOBS, backtest_view, fleet_row, fleet_view, job_view

from pipelines import warehouse
from pipelines.report import SECTIONS, build_report, default_week
from pipelines.report.goodput import (
    calibration_figure,
    oe_verdict,
    read_realised_goodput,
    realised_figures,
    realised_goodput_figure,
)

if TYPE_CHECKING:
    from pathlib import Path

    from pipelines.report import ReportResult

GOODPUT_VIEWS = ("fct_job_goodput", "rpt_fleet_goodput", "rpt_projection_backtest")


def _drop_goodput_views(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the goodput marts (the real ones exist once their SQL is merged)."""
    for name in GOODPUT_VIEWS:
        con.execute(f"drop view if exists {name}")


@pytest.fixture
def hand_db(tmp_path: Path) -> Path:
    db = tmp_path / "relia.duckdb"
    with warehouse.connect(db) as con:
        warehouse.init(con)
        job_view(con)
        fleet_view(con)
        backtest_view(con)
    return db


def test_oe_verdict_reads_the_interval_against_one() -> None:
    row = {"interruptions_expected": 4.0, "oe_lo": 1.2, "oe_hi": 3.0}
    assert oe_verdict(row) == "more than predicted"
    assert oe_verdict(row | {"oe_lo": 0.2, "oe_hi": 0.9}) == "fewer than predicted"
    assert oe_verdict(row | {"oe_lo": 0.5, "oe_hi": 1.5}) == "as predicted"
    assert oe_verdict(row | {"oe_lo": 1.0, "oe_hi": 2.0}) == "as predicted"  # 1 on the bound
    assert oe_verdict(row | {"interruptions_expected": 0.0}) == "nothing expected"
    assert oe_verdict(row | {"oe_lo": None, "oe_hi": math.inf}) == "nothing expected"


def test_section_data_from_the_marts(hand_db: Path) -> None:
    with warehouse.connect(hand_db, read_only=True) as con:
        section = read_realised_goodput(con, "2026-W10")
    assert section["missing"] == []
    assert section["has_ledger"]
    assert section["has_backtest"]
    assert (section["n_jobs"], section["n_measured"], section["n_estimated"]) == (3, 2, 1)
    assert [r["value"] for r in section["buckets"]] == ["1-8", "9-64", "65-512"]
    # the report week's ISO-week row: all three jobs, 3,635,200 / 6,070,400 by GPU-hours
    assert section["week"]["goodput_gpu_hours"] == pytest.approx(3_635_200 / 6_070_400)
    # j3, the estimated job, with the contract's default assumptions
    assert section["assumptions"] == [
        {
            "assumed_startup_s": 300.0,
            "assumed_restart_s": 300.0,
            "assumed_checkpoint_interval_s": 3600.0,
            "assumed_checkpoint_s": 60.0,
            "n_jobs": 1,
        }
    ]
    verdicts = {(r["bucket"], r["period"]): r["verdict"] for r in section["backtest"]}
    assert verdicts == {
        ("9-64", "all"): "as predicted",  # 0.0506 to 11.14 covers 1
        ("9-64", "second half"): "as predicted",
        ("65-512", "all"): "nothing expected",  # E = 0
        ("all", "all"): "as predicted",
    }
    with warehouse.connect(hand_db, read_only=True) as con:
        assert read_realised_goodput(con, "2026-W11")["week"] is None


def test_section_counts_training_logs_it_could_not_tie(hand_db: Path) -> None:
    with warehouse.connect(hand_db) as con:
        assert read_realised_goodput(con, "2026-W10")["untied"] == {"ambiguous": 0, "none": 0}
        # two logs of jobs the warehouse does not hold: each is tied to no job
        for n, name in enumerate(("training/slurm-9901.out", "training/slurm-9902.out"), 1):
            con.execute(
                "insert into raw_training_events (source_file, line_no, job_id, event, framework,"
                " step, ts, ts_inferred) values ($f, 1, $j, 'step', 'torchtitan', 10,"
                " timestamptz '2026-03-02 10:00:00+00', false)",
                {"f": name, "j": f"990{n}"},
            )
        assert read_realised_goodput(con, "2026-W10")["untied"] == {"ambiguous": 0, "none": 2}


def test_section_data_without_the_marts(tmp_path: Path) -> None:
    db = tmp_path / "relia.duckdb"
    with warehouse.connect(db) as con:
        warehouse.init(con)
        _drop_goodput_views(con)
        section = read_realised_goodput(con, "2026-W10")
    assert section["missing"] == list(GOODPUT_VIEWS)
    assert not section["has_ledger"]
    assert not section["has_backtest"]
    assert realised_figures(section) == {}


def test_figures_plot_the_rows(hand_db: Path) -> None:
    with warehouse.connect(hand_db, read_only=True) as con:
        section = read_realised_goodput(con, "2026-W10")
    fig = realised_goodput_figure(section)
    assert fig is not None
    left, right = fig.axes
    # two bars per row (3 buckets and the fleet): GPU-hour weighted, then job weighted
    widths = [round(p.get_width(), 6) for p in left.patches]
    gpu_weighted = [80.0, 75.0, 50.0, round(100 * 3_635_200 / 6_070_400, 6)]
    assert widths[:4] == gpu_weighted
    assert widths[4:] == [80.0, 75.0, 50.0, round(100 * (0.8 + 0.75 + 0.5) / 3, 6)]
    # the stacked shares of every row add up to 100 %
    ends: dict[float, float] = {}
    for patch in right.patches:
        y = round(patch.get_y(), 6)
        ends[y] = max(ends.get(y, 0.0), patch.get_x() + patch.get_width())
    assert sorted(ends.values()) == pytest.approx([100.0] * 4)
    calibration = calibration_figure(section)
    assert calibration is not None
    oe_axes = calibration.axes[1]
    assert [t.get_text() for t in oe_axes.get_xticklabels()] == ["9-64", "65-512", "all"]
    assert [line.get_ydata()[0] for line in oe_axes.lines if line.get_linestyle() == ":"] == [1.0]


# --------------------------------------------------------------------------------------------
# The whole report, on a copy of the shared synthetic fleet
# --------------------------------------------------------------------------------------------
def _window(db: Path) -> tuple[datetime, datetime]:
    with duckdb.connect(str(db), read_only=True) as con:
        start, end = con.sql(
            "select window_start, window_end from stg_observation_window"
        ).fetchall()[0]
    return start.astimezone(UTC), end.astimezone(UTC)


def _section(html: str) -> str:
    start = html.index('<section id="realised">')
    return html[start : html.index("</section>", start)]


def _text(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _rows(section: str, table_id: str) -> list[list[str]]:
    table = section[section.index(f'id="{table_id}"') :]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    return [
        [_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


@pytest.fixture(scope="module")
def fleet_copy(fleet: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("realised")
    db = root / "relia.duckdb"
    shutil.copy(fleet[0], db)
    with duckdb.connect(str(db)) as con:  # other tests store fit runs in the shared warehouse
        con.execute("delete from fit_results")
        con.execute("delete from fit_runs")
    with warehouse.connect(db) as con:
        # the tests put hand-made marts in the place of the views: the ingest's snapshots (tables
        # under the views' names) become views again first
        warehouse.dematerialize(con)
    return db


@pytest.fixture(scope="module")
def with_marts(fleet_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> ReportResult:
    week = default_week(*_window(fleet_copy))
    with warehouse.connect(fleet_copy) as con:
        job_view(con)
        fleet_view(con)
        backtest_view(con)
        # the report week's roll-up row: j2 alone ended in it (hand-made)
        con.execute("create or replace table fleet_rows as select * from rpt_fleet_goodput")
        row = fleet_row("iso_week", week, [JOBS[1]])
        con.execute(f"insert into fleet_rows values ({', '.join('?' for _ in row)})", list(row))
        con.execute("create or replace view rpt_fleet_goodput as select * from fleet_rows")
        # one more row whose interval lies above 1: O = 6, E = 2 (Garwood: 1.10 to 6.53)
        con.execute(
            "create or replace table backtest_rows as select * from rpt_projection_backtest"
        )
        con.execute(
            "insert into backtest_rows values "
            "('1-8', 'second half', 4, 6, 2.0, 3.0, 1.10, 6.53, 0.8, 0.9, 0.85, 0.95, 0)"
        )
        con.execute("create or replace view rpt_projection_backtest as select * from backtest_rows")
    return build_report(fleet_copy, week=week, reports_dir=tmp_path_factory.mktemp("reports"))


def test_report_section_shows_the_ledger_and_the_backtest(with_marts: ReportResult) -> None:
    html = with_marts.path.read_text(encoding="utf-8")
    number = [anchor for anchor, _ in SECTIONS].index("realised") + 1
    section = _section(html)
    assert (
        f'<span class="no">{number}.</span>Realised goodput and how well the model predicted it'
        in section
    )
    lede = _text(section[section.index('id="realised-lede"') :].split("</p>", 1)[0])
    # all: 3 jobs, 6,070,400 / 3,600 = 1,686 GPU-hours, 59.9 % by GPU-hours, 68.3 % by job
    assert "3 finished jobs" in lede
    assert "1,686 GPU-hours" in lede
    assert "59.9 %" in lede
    assert "68.3 %" in lede
    # the report week's row: j2 alone, 75 %
    assert f"Jobs that ended in {with_marts.headline['week']}: 75.0 % by GPU-hours" in lede
    estimated = _text(section[section.index('id="realised-estimated"') :].split("</p>", 1)[0])
    assert "1 of 3 jobs have no training log" in estimated
    assert (
        "start-up 300 s, restart 300 s, a checkpoint every 3,600 s of compute taking 60 s"
        in estimated
    )
    assert "2 jobs are measured" in estimated
    rows = _rows(section, "realised-table")
    assert [r[0] for r in rows] == ["1-8", "9-64", "65-512", "fleet"]
    # 9-64 (j2): 1 job, 640 GPU-hours, 75 % both ways, shares 75 / 5 / 10 / 5 / 5 / 0 %
    assert rows[1] == [
        "9-64",
        "1",
        "640",
        "75.0 %",
        "75.0 %",
        "75.0 %",
        "5.0 %",
        "10.0 %",
        "5.0 %",
        "5.0 %",
        "0.0 %",
        "1",
        "0",
    ]
    backtest = _rows(section, "backtest-table")
    assert [(r[0], r[1]) for r in backtest] == [
        ("1-8", "second half"),
        ("9-64", "all"),
        ("9-64", "second half"),
        ("65-512", "all"),
        ("all", "all"),
    ]
    assert backtest[0][3:8] == ["6", "2", "3", "1.1 – 6.53", "more than predicted"]
    assert backtest[3][5:8] == ["–", "> 0", "nothing expected"]
    assert backtest[1][8:] == ["75.00 %", "80.00 %", "70.00 % – 85.00 %"]
    highlighted = re.findall(
        r'<tr class="hl"><td>([^<]+)</td>', section[section.index('id="backtest-table"') :]
    )
    assert highlighted == ["1-8"]
    images = re.findall(r'<img src="(data:image/png;base64,[^"]+)"', section)
    assert len(images) == 2
    assert "realised goodput (by GPU-hours, by job) | 59.9 %, 68.3 % (1 of 3 jobs estimated)" in (
        with_marts.markdown
    )


@pytest.mark.usefixtures("with_marts")  # the hand-made marts this test edits
def test_report_section_with_every_job_estimated(fleet_copy: Path, tmp_path: Path) -> None:
    """No training log at all: the section says so and names no measured job."""
    db = tmp_path / "relia.duckdb"
    shutil.copy(fleet_copy, db)
    with warehouse.connect(db) as con:
        con.execute("create or replace table fleet_rows as select * from rpt_fleet_goodput")
        con.execute("delete from fleet_rows where dimension <> 'all'")
        con.execute(
            "update fleet_rows set n_measured = $m, n_estimated = $e",
            {"m": 0, "e": len(JOBS)},
        )
        con.execute("create or replace view rpt_fleet_goodput as select * from fleet_rows")
        con.execute("create or replace table ledger_rows as select * from fct_job_goodput")
        con.execute("update ledger_rows set estimated = true, measured = false")
        con.execute(
            "update ledger_rows set assumed_startup_s = 300.0, assumed_restart_s = 300.0, "
            "assumed_checkpoint_interval_s = 3600.0, assumed_checkpoint_s = 60.0"
        )
        con.execute("create or replace view fct_job_goodput as select * from ledger_rows")
    result = build_report(db, week=None, reports_dir=tmp_path / "reports")
    section = _section(result.path.read_text(encoding="utf-8"))
    note = _text(section[section.index('id="realised-estimated"') :].split("</p>", 1)[0])
    assert "> No training logs: all 3 jobs are estimated from the scheduler alone" in note
    assert "(3 jobs)" in note
    assert "measured from training logs" not in note
    assert _rows(section, "realised-table") == [
        [
            "fleet",
            "3",
            "1,686",
            "59.9 %",
            "68.3 %",
            "59.9 %",
            "5.0 %",
            "16.0 %",
            "7.0 %",
            "4.6 %",
            "7.6 %",
            "0",
            "3",
        ]
    ]


def test_report_section_without_the_marts(fleet_copy: Path, tmp_path: Path) -> None:
    db = tmp_path / "relia.duckdb"
    shutil.copy(fleet_copy, db)
    with warehouse.connect(db) as con:
        _drop_goodput_views(con)
    result = build_report(db, week=None, reports_dir=tmp_path / "reports")
    html = result.path.read_text(encoding="utf-8")
    section = _text(_section(html))
    assert "No realised goodput yet: no training logs" in section
    assert (
        "this warehouse has no fct_job_goodput, rpt_fleet_goodput, rpt_projection_backtest"
        in section
    )
    assert "Back-test not run yet" in section
    assert "<img" not in _section(html)
    for anchor, _ in SECTIONS:
        assert f'<section id="{anchor}">' in html
    assert "realised goodput" not in result.markdown


@pytest.mark.slow
def test_report_section_in_headless_chromium(with_marts: ReportResult, tmp_path: Path) -> None:
    """The section's heading, images and tables as a real browser lays them out."""
    from test_report_browser import check_page, chromium

    with chromium(tmp_path) as driver:
        page = check_page(driver, with_marts.path)
        state = driver.script(
            "const s = document.querySelector('#realised');"
            "const imgs = Array.from(s.querySelectorAll('img'));"
            "const cs = getComputedStyle(s);"
            "const right = s.getBoundingClientRect().right - parseFloat(cs.paddingRight);"
            "return [imgs.length, imgs.filter(i => i.complete && i.naturalWidth > 0).length,"
            " Array.from(s.querySelectorAll('table')).map("
            "  t => [t.id, Math.round(t.getBoundingClientRect().right - right)]),"
            " s.querySelectorAll('#backtest-table tbody tr').length]"
        )
        shot = driver.element_png("#realised")
    (tmp_path / "realised.png").write_bytes(shot)
    number = [anchor for anchor, _ in SECTIONS].index("realised") + 1
    assert f"{number}.Realised goodput and how well the model predicted it" in page.headings
    assert page.errors == []
    assert page.n_broken_images == 0
    assert page.n_resources == 0
    n_images, n_loaded, tables, n_backtest = state
    assert (n_images, n_loaded) == (2, 2)
    assert tables == [["realised-table", tables[0][1]], ["backtest-table", tables[1][1]]]
    assert all(over <= 0 for _, over in tables), tables  # no table wider than the section
    assert n_backtest == 5
    assert shot.startswith(b"\x89PNG\r\n\x1a\n")
