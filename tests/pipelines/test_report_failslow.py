"""The report section "Fail-slow beside fail-stop" and its slowdown plot (docs/goodput.md §7).

A small fleet is generated with fail-slow on (``relia synth --training-logs --slow-preset
published``), ingested and reported once for the module. Every figure the section shows is
checked against a direct query of the warehouse written here (the view's arithmetic done again in
the test, never by the report's code). A copy whose episodes are blamed on GPUs shows the
projection and the repeatedly slow units; the shared fleet, which has no training logs, shows the
one-line notes instead of the plot.
"""

from __future__ import annotations

import base64
import itertools
import math
import re
import shutil
from html import unescape
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

from pipelines import ingest, warehouse
from pipelines.report import SECTIONS, build_report
from pipelines.report.failslow import fail_slow_figure, read_fail_slow

if TYPE_CHECKING:
    from pathlib import Path

    from pipelines.report import ReportResult

pytestmark = pytest.mark.slow

SYNTH = [
    *("synth", "--nodes", "16", "--days", "21", "--seed", "3", "--start", "2026-03-02"),
    *("--training-logs", "--slow-preset", "published"),
]
BUCKET = """
case when n_gpus <= 8 then '1-8' when n_gpus <= 64 then '9-64' when n_gpus <= 512 then '65-512'
     when n_gpus <= 4096 then '513-4096' else '4097+' end
"""
ORDER = ("1-8", "9-64", "65-512", "513-4096", "4097+")
# the roll-up done again from the ledger: one row per group, the table's columns in its order
CAUSES = """
select {key} as key,
    count(*) as n_jobs,
    sum(n_gpus * wall_s) / 3600 as gpu_hours,
    count(*) filter (where slow_measured) as n_slow_measured,
    count(*) filter (where slow_s > 0) as n_slow_jobs,
    sum(n_gpus * (wasted_s + restart_s)) / sum(n_gpus * wall_s) as failstop,
    avg((wasted_s + restart_s) / wall_s) as failstop_jobs,
    sum(n_gpus * (wasted_s + restart_s)) / 3600 as failstop_gpu_h,
    sum(n_gpus * slow_s) filter (where slow_measured)
        / sum(n_gpus * wall_s) filter (where slow_measured) as failslow,
    avg(slow_s / wall_s) filter (where slow_measured) as failslow_jobs,
    sum(n_gpus * slow_s) filter (where slow_measured) / 3600 as failslow_gpu_h
from fct_job_goodput
where wall_s > 0 and n_gpus > 0
group by all
"""
EPISODES = """
select count(*) from int_slow_episodes as e
inner join fct_job_goodput as j on e.job_id_raw = j.job_id_raw
where j.slow_measured and j.n_gpus > 0
"""


def _section(html: str, anchor: str = "failslow") -> str:
    start = html.index(f'<section id="{anchor}">')
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


def _para(section: str, element_id: str) -> str:
    """The text of the element with ``element_id`` up to its paragraph's end."""
    start = section.index(f'id="{element_id}"')
    return _text(section[section.index(">", start) + 1 :].split("</p>", 1)[0])


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _expected_rows(con: duckdb.DuckDBPyConnection, key: str) -> list[list[str]]:
    rows = con.execute(CAUSES.format(key=key)).fetchall()
    return [
        [
            str(r[0]),
            *(_num(v) for v in r[1:5]),  # jobs, GPU-hours, with step times, straggling
            *(_pct(v) for v in r[5:7]),  # fail-stop: share of the GPU-hours, mean per job
            _num(r[7], 1),  # and its GPU-hours
            *(_pct(v) for v in r[8:10]),  # fail-slow: the same
            _num(r[10], 1),
        ]
        for r in rows
    ]


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    row = con.execute(sql).fetchone()
    assert row is not None
    return row[0]


@pytest.fixture(scope="module")
def slow_fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ReportResult]:
    """A generated fleet with fail-slow on, ingested and reported."""
    from typer.testing import CliRunner

    from pipelines.cli import app

    root = tmp_path_factory.mktemp("failslow-report")
    landing = root / "landing"
    result = CliRunner().invoke(app, [*SYNTH, "--out", str(landing)])
    assert result.exit_code == 0, result.output
    db = root / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    return db, build_report(db, week=None, reports_dir=root / "reports")


def test_badput_split_and_coverage_match_the_ledger(
    slow_fleet: tuple[Path, ReportResult],
) -> None:
    db, report = slow_fleet
    section = _section(report.path.read_text(encoding="utf-8"))
    with duckdb.connect(str(db), read_only=True) as con:
        by_bucket = sorted(_expected_rows(con, BUCKET), key=lambda r: ORDER.index(r[0]))
        [fleet] = _expected_rows(con, "'fleet'")
        by_week = sorted(_expected_rows(con, "strftime(last_end_ts, '%G-W%V')"))
        n_jobs, n_measured, n_slow = con.execute(
            "select count(*), count(*) filter (where slow_measured), "
            "count(*) filter (where slow_s > 0) from fct_job_goodput "
            "where wall_s > 0 and n_gpus > 0"
        ).fetchone() or (0, 0, 0)
        n_episodes = _one(con, EPISODES)
    assert n_measured > 0
    assert n_slow > 0
    assert _rows(section, "failslow-bucket-table") == [*by_bucket, fleet]
    assert _rows(section, "failslow-week-table") == by_week
    lede = _para(section, "failslow-lede")
    assert f"fail-stop {fleet[5]} of the GPU-hours ({fleet[7]} GPU-hours" in lede
    assert f"fail-slow {fleet[8]} of the GPU-hours of the jobs with step times" in lede
    coverage = _para(section, "failslow-coverage")
    assert f"for {n_measured} of {n_jobs} jobs ({_pct(n_measured / n_jobs)})" in coverage
    assert f"{n_slow} of them ran slower" in coverage
    assert f"({n_episodes} slow episodes)" in coverage


def test_slowdown_plot_matches_the_ledger(slow_fleet: tuple[Path, ReportResult]) -> None:
    from scipy import stats

    db, report = slow_fleet
    with duckdb.connect(str(db), read_only=True) as con:
        per_job = con.execute(
            f"select {BUCKET} as bucket, n_gpus, slow_s / (productive_s + slow_s) "
            "from fct_job_goodput where slow_measured and n_gpus > 0 "
            "and productive_s + slow_s > 0"
        ).fetchall()
    with warehouse.connect(db, read_only=True) as con:
        section = read_fail_slow(con, report.headline["week"])
    expected = []
    for bucket in ORDER:
        jobs = [(n, share) for b, n, share in per_job if b == bucket]
        if not jobs:
            continue
        shares = [share for _, share in jobs]
        mean = sum(shares) / len(shares)
        sd = math.sqrt(sum((s - mean) ** 2 for s in shares) / (len(shares) - 1))
        half = stats.t.ppf(0.975, len(shares) - 1) * sd / math.sqrt(len(shares))
        x = math.exp(sum(math.log(n) for n, _ in jobs) / len(jobs))
        lo, hi = max(0.0, mean - half), mean + half
        expected.append((bucket, len(jobs), x, 1 / (1 - mean), 1 / (1 - lo), 1 / (1 - hi)))
    assert len(expected) >= 2
    fig = fail_slow_figure(section)
    assert fig is not None
    [ax] = fig.axes
    assert ax.get_xscale() == "log"
    [points] = ax.containers  # the measured points' error bars
    xy = points.lines[0].get_xydata()
    assert xy[:, 0] == pytest.approx([e[2] for e in expected], rel=1e-9)
    assert xy[:, 1] == pytest.approx([e[3] for e in expected], rel=1e-9)
    [bars] = points.lines[2]
    ends = [(seg[0][1], seg[1][1]) for seg in bars.get_segments()]
    assert [v for end in ends for v in end] == pytest.approx(
        [v for e in expected for v in (e[4], e[5])], rel=1e-9
    )
    labels = [t.get_text() for t in ax.texts]
    assert labels == [f"{e[0]}: {e[1]} jobs" for e in expected]
    # the page carries the same plot as an inline PNG
    html_section = _section(report.path.read_text(encoding="utf-8"))
    [uri] = re.findall(r'<img src="data:image/png;base64,([^"]+)"', html_section)
    assert base64.b64decode(uri).startswith(b"\x89PNG\r\n\x1a\n")
    assert 'id="failslow-plot-none"' not in html_section


def test_projection_and_units_say_what_is_missing(slow_fleet: tuple[Path, ReportResult]) -> None:
    db, report = slow_fleet
    html = report.path.read_text(encoding="utf-8")
    section = _section(html)
    with duckdb.connect(str(db), read_only=True) as con:
        n_episodes = _one(con, EPISODES)
        n_blamed = _one(con, EPISODES + " and e.attribution <> 'unattributed'")
        n_units = _one(con, "select count(*) from rpt_slow_units")
    assert n_episodes >= 2
    if n_blamed:  # attribution made: the fit and the units are checked on the blamed copy below
        assert f"none of the {n_episodes} slow episodes is blamed" not in _text(html)
        return
    note = _para(section, "failslow-projection-none")
    assert note.startswith(
        f"No projection: none of the {n_episodes} slow episodes is blamed on a GPU or node"
    )
    assert "straggler reports" in note
    assert "DCGM SM clocks" in note
    assert n_units == 0
    nodes = _text(_section(html, "nodes"))
    assert (
        f"No repeatedly slow unit: none of the {n_episodes} slow episodes is blamed on a node "
        "or GPU yet: per-rank straggler reports" in nodes
    )


@pytest.fixture(scope="module")
def blamed(
    slow_fleet: tuple[Path, ReportResult], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, ReportResult]:
    """A copy whose episodes are each blamed on GPU ``attempt % 2`` of node ``episode_no % 3``."""
    root = tmp_path_factory.mktemp("failslow-blamed")
    db = root / "relia.duckdb"
    shutil.copy(slow_fleet[0], db)
    with duckdb.connect(str(db)) as con:
        con.execute("create table original_episodes as select * from int_slow_episodes")
        con.execute(
            "create or replace table int_slow_episodes as select * replace ("
            "'per_rank' as attribution, 'node-' || (episode_no % 3) as blamed_host, "
            "cast(attempt % 2 as integer) as blamed_gpu) from original_episodes"
        )
    return db, build_report(db, week=None, reports_dir=root / "reports")


def test_projection_from_blamed_episodes(blamed: tuple[Path, ReportResult]) -> None:
    db, report = blamed
    with duckdb.connect(str(db), read_only=True) as con:
        n_fitted = _one(con, EPISODES + " and e.end_ts > e.start_ts and e.slowdown > 1")
        gpu_hours = _one(
            con,
            "select sum(n_gpus * (productive_s + slow_s)) / 3600 from fct_job_goodput "
            "where slow_measured and n_gpus > 0",
        )
        units = con.execute(
            "select blamed_host, blamed_gpu, count(*) from int_slow_episodes "
            "group by all having count(*) >= 2 order by all"
        ).fetchall()
    with warehouse.connect(db, read_only=True) as con:
        section = read_fail_slow(con, report.headline["week"])
    fit = section["fit"]
    assert fit is not None
    assert fit.missing is None
    assert (fit.unit, fit.n_fitted) == ("gpu", n_fitted)
    assert fit.rate_per_unit_h == pytest.approx(n_fitted / gpu_hours, rel=1e-12)
    assert fit.rate_lo_per_unit_h < fit.rate_per_unit_h < fit.rate_hi_per_unit_h
    sizes = [p.n_gpus for p in fit.curve]
    slowdowns = [p.slowdown for p in fit.curve]
    assert sizes[0] == 1
    assert sizes[-1] == 100_000
    assert all(b >= a for a, b in itertools.pairwise(slowdowns))  # rises with N
    assert slowdowns[-1] > slowdowns[0]
    for p in fit.curve:
        assert p.slowdown_lo is not None
        assert p.slowdown_hi is not None
        assert p.slowdown_lo <= p.slowdown * (1 + 1e-9)
        assert p.slowdown <= p.slowdown_hi * (1 + 1e-9)
    fig = fail_slow_figure(section)
    assert fig is not None
    [ax] = fig.axes
    [line] = [ln for ln in ax.lines if ln.get_label() == "projected (rank-pace model)"]
    assert list(line.get_xdata()) == sizes
    assert list(line.get_ydata()) == slowdowns
    assert len(ax.collections) >= 1  # the band
    html = report.path.read_text(encoding="utf-8")
    text = _text(_section(html))
    assert (
        f"Projection: {n_fitted} episodes blamed on a GPU over {gpu_hours:,.0f} GPU-hours" in text
    )
    assert 'id="failslow-projection-none"' not in _section(html)
    shown = _rows(_section(html, "nodes"), "slow-units-table")
    assert sorted((r[0], int(r[1]), int(r[2])) for r in shown) == [tuple(u) for u in units]


def test_without_training_logs_the_plot_is_one_line(
    fleet: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    db = tmp_path / "relia.duckdb"
    shutil.copy(fleet[0], db)
    with duckdb.connect(str(db), read_only=True) as con:
        n_jobs = _one(con, "select count(*) from fct_job_goodput where wall_s > 0 and n_gpus > 0")
        assert _one(con, "select count(*) from fct_job_goodput where slow_measured") == 0
    html = build_report(db, week=None, reports_dir=tmp_path / "reports").path.read_text(
        encoding="utf-8"
    )
    section = _section(html)
    assert "<img" not in section
    note = _para(section, "failslow-plot-none")
    assert note == (
        f"No slowdown plot: none of the {n_jobs:,} ledger jobs has its slow time measured "
        "(fct_job_goodput.slow_measured): training logs with step times (Megatron-LM, "
        "torchtitan) would supply it."
    )
    assert 'id="failslow-projection"' not in section
    fleet_row = _rows(section, "failslow-bucket-table")[-1]
    assert fleet_row[0] == "fleet"
    assert fleet_row[3] == "0"  # no job with step times
    assert fleet_row[8:] == ["–", "–", "–"]  # no fail-slow figure, never a 0.0 %
    nodes = _text(_section(html, "nodes"))
    assert "No repeatedly slow unit: no job has its slow time measured: training logs" in nodes


def test_section_in_headless_chromium(
    slow_fleet: tuple[Path, ReportResult], tmp_path: Path
) -> None:
    """The section's heading, plot and tables as a real browser lays them out."""
    from test_report_browser import check_page, chromium

    with chromium(tmp_path) as driver:
        page = check_page(driver, slow_fleet[1].path)
        state = driver.script(
            "const s = document.querySelector('#failslow');"
            "const imgs = Array.from(s.querySelectorAll('img'));"
            "const cs = getComputedStyle(s);"
            "const right = s.getBoundingClientRect().right - parseFloat(cs.paddingRight);"
            "return [imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight]),"
            " Array.from(s.querySelectorAll('table')).map("
            "  t => [t.id, Math.round(t.getBoundingClientRect().right - right)])]"
        )
        shot = driver.element_png("#failslow")
    (tmp_path / "failslow.png").write_bytes(shot)
    number = [anchor for anchor, _ in SECTIONS].index("failslow") + 1
    assert f"{number}.Fail-slow beside fail-stop" in page.headings
    for n, (_anchor, title) in enumerate(SECTIONS, start=1):
        assert f"{n}.{title}" in page.headings
    assert page.errors == []
    assert page.n_broken_images == 0
    assert page.n_resources == 0
    images, tables = state
    assert len(images) == 1
    [(complete, width, height)] = images
    assert complete
    assert width > 600
    assert height > 250
    assert [t[0] for t in tables] == ["failslow-bucket-table", "failslow-week-table"]
    assert all(over <= 0 for _, over in tables), tables  # no table wider than the section
    assert shot.startswith(b"\x89PNG\r\n\x1a\n")
