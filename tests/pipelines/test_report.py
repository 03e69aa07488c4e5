"""The weekly reliability report on a small synthetic warehouse.

The shared ``fleet`` warehouse (tests/pipelines/conftest.py) is copied and given two more files
in the real formats, a sacct dump and a journald kernel log, whose job name and host name are
markup. The report must carry every section, show headline figures that an independent SQL
query reproduces, and show the markup as text: no ``<script`` tag anywhere in the page.
"""

from __future__ import annotations

import re
import shutil
import warnings
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import TYPE_CHECKING

import duckdb
import pytest

from pipelines import ingest
from pipelines.report import (
    SECTIONS,
    ReportResult,
    build_report,
    default_week,
    render_html,
    report_period,
    week_monday,
)

if TYPE_CHECKING:
    from pathlib import Path

MARKUP = "<script>alert(1)</script>"
HOST = "zz-markup-node"
"""The markup job's host: a host name must be one (a hostile one is quarantined, issue 26)."""
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts"
)


def _stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S")


def _window(db: Path) -> tuple[datetime, datetime]:
    with duckdb.connect(str(db), read_only=True) as con:
        start, end = con.sql(
            "select window_start, window_end from stg_observation_window"
        ).fetchall()[0]
    return start.astimezone(UTC), end.astimezone(UTC)


def write_markup_landing(root: Path, week_start: datetime) -> None:
    """A sacct dump whose job name is markup and a kernel log of its host, failing in the week.

    The job runs a day and a half on its host and fails a minute after that host logs
    Xid 79 (GPU fallen off the bus), so it is a hardware-confirmed interruption of the week; a
    truncated sacct line goes to quarantine with its raw text.
    """
    start = week_start + timedelta(days=1)
    end = start + timedelta(hours=36)
    (root / "slurm").mkdir(parents=True)
    (root / "kernel").mkdir(parents=True)
    job = (
        f"990001|990001|{MARKUP}|batch|ml|mallory|1|billing=64,cpu=64,gres/gpu=8,mem=1000G,"
        f"node=1|{HOST}|{_stamp(start - timedelta(hours=1))}|{_stamp(start)}|{_stamp(end)}|"
        "1-12:00:00|FAILED|1:0|0"
    )
    truncated = f"990002|990002|{MARKUP}|batch"
    (root / "slurm" / "sacct_zz_markup.txt").write_text(f"{SACCT_HEADER}\n{job}\n{truncated}\n")
    xid_ts = (end - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    (root / "kernel" / "zz-markup.log").write_text(
        f"{xid_ts} {HOST} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, "
        "GPU has fallen off the bus.\n"
    )


@pytest.fixture(scope="module")
def markup_db(fleet: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shared fleet warehouse with the markup files ingested."""
    source_db, _landing, _truth = fleet
    root = tmp_path_factory.mktemp("report")
    db = root / "relia.duckdb"
    shutil.copy(source_db, db)
    with duckdb.connect(str(db)) as con:  # other tests store fit runs in the shared warehouse
        con.execute("delete from fit_results")
        con.execute("delete from fit_runs")
    week = default_week(*_window(db))
    write_markup_landing(
        root / "markup", datetime.combine(week_monday(week), datetime.min.time(), UTC)
    )
    counts = ingest.ingest(db, ingest.discover([root / "markup"]))
    assert sum(c.n_quarantined for c in counts) == 1
    return db


@pytest.fixture(scope="module")
def report(markup_db: Path, tmp_path_factory: pytest.TempPathFactory) -> ReportResult:
    return build_report(markup_db, week=None, reports_dir=tmp_path_factory.mktemp("reports"))


@pytest.fixture(scope="module")
def html(report: ReportResult) -> str:
    return report.path.read_text(encoding="utf-8")


class _Outline(HTMLParser):
    """Section ids and their ``h2`` texts, and every tag name seen."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, str] = {}
        self.tags: set[str] = set()
        self._section: str | None = None
        self._in_h2 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "section":
            self._section = dict(attrs).get("id")
            if self._section:
                self.sections[self._section] = ""
        if tag == "h2":
            self._in_h2 = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._in_h2 = False

    def handle_data(self, data: str) -> None:
        if self._in_h2 and self._section:
            self.sections[self._section] += data


def _shown(html: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>([^<]+)<', html)
    assert match, f"no element {element_id!r} in the report"
    return match.group(1).strip()


def test_report_writes_week_file(report: ReportResult, markup_db: Path) -> None:
    week = default_week(*_window(markup_db))
    assert report.path.name == f"{week}.html"
    assert report.headline["week"] == week
    assert report.seconds > 0
    assert "| fleet in service |" in report.markdown
    assert f"# Weekly reliability report {week}" in report.markdown


def test_report_has_every_section(html: str) -> None:
    outline = _Outline()
    outline.feed(html)
    for number, (anchor, title) in enumerate(SECTIONS, start=1):
        assert anchor in outline.sections, f"section {anchor} missing"
        assert outline.sections[anchor].strip() == f"{number}.{title}"
        assert f'href="#{anchor}"' in html
    assert outline.tags.isdisjoint({"script", "iframe", "object", "embed", "link"})
    assert 'src="http' not in html
    assert "url(http" not in html
    assert html.count('src="data:image/png;base64,') >= 4
    for text in ("Fleet MTBF", "Goodput at 16,384 GPUs", "Goodput at 100,000 GPUs", "Kaplan-Meier"):
        assert text in html
    assert "Laplace" in html
    assert "Crow-AMSAA" in html
    assert "Great Expectations checks" in html


def test_report_states_its_assumptions(html: str) -> None:
    assumptions = html[html.index('id="assumptions"') :]
    assumptions = assumptions[: assumptions.index("</div>")]
    assert "fleet age <strong>steady state</strong>" in assumptions
    assert "observation window" in html
    assert "Fits: computed for this report" in assumptions  # the copy has no stored fit run


def test_headline_matches_independent_sql(html: str, report: ReportResult, markup_db: Path) -> None:
    week = report.headline["week"]
    w0, w1 = _window(markup_db)
    period = report_period(w0, w1, week)
    params = {"ws": period.week_start, "we": period.week_end, "w1": w1}
    with duckdb.connect(str(markup_db), read_only=True) as con:
        con.execute("set TimeZone = 'UTC'")
        # nodes: the fleet register's in service in the week, and every host another source
        # names (the markup host only ran a job and logged an Xid): in service all along
        n_nodes = con.execute(
            """
            with named as (
                select host as node from raw_xid_events
                union select unnest(nodes) from raw_slurm_jobs
                union select host from raw_inventory
                union select node from raw_repairs
            )
            select count(*) from (
                select node from raw_fleet
                where installed_ts < $we and (removed_ts is null or removed_ts > $ws)
                union
                select node from named where node not in (select node from raw_fleet)
            )
            """,
            {"ws": period.week_start, "we": period.week_end},
        ).fetchall()[0][0]
        # failures: the failure events that end a unit's life, in the week (data contract §5)
        n_failures = con.execute(
            "select count(*) from fct_failure_events "
            "where in_lives and failed_ts >= $ws and failed_ts < $we",
            {"ws": period.week_start, "we": period.week_end},
        ).fetchall()[0][0]
        n_trailing = con.execute(
            "select count(*) from fct_failure_events "
            "where in_lives and failed_ts >= $ts and failed_ts < $ws",
            {"ts": period.trailing_start, "ws": period.week_start},
        ).fetchall()[0][0]
        # GPU-hours: every GPU unit's time in service in the week, less its time down: from each
        # of its failures to the failure's end (still open: the window end; end unknown: none)
        # and over its planned replacements (opened to closed)
        gpu_hours = con.execute(
            """
            with service as (
                select sum(greatest(epoch(least(coalesce(fleet.removed_ts, $w1), $we, $w1)
                                          - greatest(coalesce(fleet.installed_ts, $ws), $ws)),
                                    0)) / 3600 as h
                from int_fleet_gpus as gpus
                inner join int_fleet_nodes as fleet on gpus.node = fleet.node
            ),
            down as (
                select e.host, e.slot, e.failed_ts as from_ts,
                    case e.end_status when 'open' then $w1 when 'ended' then e.ended_ts
                        else e.failed_ts end as to_ts
                from int_failure_events as e
                where e.dataset is null and e.unit_level = 'gpu'
                union all
                select r.node, r.slot, r.opened_ts, coalesce(r.closed_ts, $w1)
                from stg_repairs as r where r.action = 'planned_replace'
            ),
            repair as (
                select sum(greatest(epoch(least(down.to_ts, $we, $w1)
                                          - greatest(down.from_ts, $ws)), 0)) / 3600 as h
                from down
                inner join int_fleet_gpus as gpus
                    on down.host = gpus.node and down.slot = gpus.slot
            )
            select service.h - coalesce(repair.h, 0) from service, repair
            """,
            params,
        ).fetchall()[0][0]

    assert _shown(html, "kpi-nodes") == f"{n_nodes:,}"
    assert _shown(html, "kpi-failures") == str(n_failures)
    assert _shown(html, "kpi-failures-trailing") == f"{n_trailing / period.n_trailing_weeks:,.1f}"
    shown_gpu_hours = float(_shown(html, "kpi-gpu-hours").replace(",", ""))
    assert shown_gpu_hours == pytest.approx(gpu_hours, abs=0.5)
    assert n_nodes > 0
    assert gpu_hours > 0


def test_report_escapes_markup_from_telemetry(html: str) -> None:
    assert "<script" not in html.lower()
    assert MARKUP not in html
    interruptions = html[html.index('id="week-interruptions"') :]
    interruptions = interruptions[: interruptions.index("</table>")]
    assert ESCAPED in interruptions  # the job name
    assert HOST in interruptions  # the suspect host
    samples = html[html.index('id="quarantine-samples"') :]
    assert ESCAPED in samples[: samples.index("</table>")]


def test_report_uses_a_stored_fit_run(markup_db: Path, tmp_path: Path) -> None:
    from models.exceptions import FewFailuresWarning
    from pipelines.analysis.fit import run_fit

    db = tmp_path / "fitted.duckdb"
    shutil.copy(markup_db, db)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)  # classes with no failure: bounds
        run_id = run_fit(db)["run_id"]
    result = build_report(db, week=None, reports_dir=tmp_path / "reports")
    page = result.path.read_text(encoding="utf-8")
    assert f"stored fit run {run_id}" in page
    assert f"stored fit run {run_id}" in result.markdown


def test_report_reads_the_projection_the_project_stage_stored(
    markup_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fit and project stages first: the report reads their outputs, and gets what it would
    have computed itself."""
    import json

    from polars.testing import assert_frame_equal

    from pipelines import warehouse
    from pipelines.report import read_report_data
    from pipelines.report.inputs import fit_for_report, project_for_report, refresh_inputs

    db = tmp_path / "refreshed.duckdb"
    shutil.copy(markup_db, db)
    with warnings.catch_warnings(), warehouse.connect(db) as con:
        warnings.simplefilter("ignore")
        warehouse.apply_schema(con)
        fit_run_id = fit_for_report(con)
        computed = read_report_data(con, target_gpus=(1024,))
        projection = project_for_report(con, target_gpus=(1024,))

        def refuse(*_: object, **__: object) -> None:
            raise AssertionError("the report projected although a projection was stored")

        with monkeypatch.context() as patch:
            patch.setattr("pipelines.report.inputs.goodput_projection", refuse)
            stored = read_report_data(con, target_gpus=(1024,))
        assert refresh_inputs(con, target_gpus=(1024,))["fit_run_id"] == fit_run_id
    assert projection is not None
    assert stored.fit.run_id == computed.fit.run_id == fit_run_id
    for name in ("goodput_curve", "goodput_targets", "knobs"):
        assert_frame_equal(getattr(stored, name), getattr(computed, name))
    assert json.dumps(stored.headline["goodput"]) == json.dumps(computed.headline["goodput"])
    assert json.dumps(stored.scenario) == json.dumps(computed.scenario, default=str)
    assert stored.notes == computed.notes


def test_report_reads_rates_a_run_stored_without_them(markup_db: Path, tmp_path: Path) -> None:
    """A matching run stored by an older relia (no fit_rates rows) gets its rates computed."""
    from models.exceptions import FewFailuresWarning
    from pipelines import warehouse
    from pipelines.analysis.fit import read_rates, run_fit
    from pipelines.report import read_report_data

    db = tmp_path / "older.duckdb"
    shutil.copy(markup_db, db)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        run_id = run_fit(db)["run_id"]
    with warehouse.connect(db) as con:
        stored = read_rates(con, run_id)
        con.execute("delete from fit_rates where run_id = $id", {"id": run_id})
    with warnings.catch_warnings(), warehouse.connect(db, read_only=True) as con:
        warnings.simplefilter("ignore")
        data = read_report_data(con, target_gpus=(1024,))
    assert data.fit.run_id == run_id
    assert f"Run {run_id} stored no interruption rates" in data.fit.note
    shown = {r["component_class"]: r for r in data.classes.to_dicts()}
    assert set(shown) == set(stored["component_class"])
    for row in stored.iter_rows(named=True):
        got = shown[row["component_class"]]
        assert got["n_failures"] == row["n_failures"]
        assert got["headline_method"] == row["headline_method"]
        for column in ("headline_mtbf_h", "headline_mtbf_lo_h", "headline_mtbf_hi_h"):
            if row[column] is None:  # an open end: null, computed or stored
                assert got[column] is None, column
            else:
                assert got[column] == pytest.approx(row[column], rel=1e-12), column


@pytest.mark.slow
def test_report_on_a_ticketless_fleet_counts_failures_not_tickets(tmp_path: Path) -> None:
    """The issue's ticket-less fleet: failures from telemetry; replacements said to be absent."""
    from tests.pipelines.missing_data_warehouses import build

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        db = build("ticketless", tmp_path)
        result = build_report(db, week=None, reports_dir=tmp_path / "reports")
    page = " ".join(result.path.read_text(encoding="utf-8").split())
    with duckdb.connect(str(db), read_only=True) as con:
        [(n_events,)] = con.execute(
            "select count(*) from fct_failure_events e, stg_observation_window w "
            "where e.dataset is null and e.failed_ts >= w.window_start and e.failed_ts < $asof",
            {
                "asof": min(
                    report_period(*_window(db), result.headline["week"]).as_of, _window(db)[1]
                )
            },
        ).fetchall()
    assert n_events > 0
    assert result.headline["failure_events_to_date"] == n_events
    assert "No unit has failed" not in page
    assert "No replacement counts: the warehouse has no repair tickets" in page
    assert "## Replacements (repair tickets)" in result.markdown
    assert "the warehouse has no repair tickets" in result.markdown


def test_report_for_an_earlier_week(markup_db: Path, report: ReportResult, tmp_path: Path) -> None:
    earlier = week_monday(report.headline["week"]) - timedelta(days=14)
    week = f"{earlier.isocalendar().year}-W{earlier.isocalendar().week:02d}"
    result = build_report(markup_db, week=week, reports_dir=tmp_path)
    assert result.path.name == f"{week}.html"
    assert MARKUP not in result.path.read_text(encoding="utf-8")


@pytest.mark.parametrize("week", ["2020-W01", "2026-30", "2026-W54"])
def test_report_refuses_bad_weeks(markup_db: Path, tmp_path: Path, week: str) -> None:
    with pytest.raises(ValueError, match="week"):
        build_report(markup_db, week=week, reports_dir=tmp_path)


def test_render_html_refuses_external_images(report: ReportResult, markup_db: Path) -> None:
    from pipelines import warehouse
    from pipelines.report import read_report_data

    with warehouse.connect(markup_db, read_only=True) as con:
        data = read_report_data(con, week=report.headline["week"], target_gpus=(1024,))
    with pytest.raises(ValueError, match="data URIs"):
        render_html(data, {"goodput": "https://example.org/plot.png"})


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "week"),
    [
        (_utc(2026, 6, 1), _utc(2026, 7, 31), "2026-W30"),  # window ends on a Friday
        (_utc(2026, 6, 1), _utc(2026, 7, 6), "2026-W27"),  # ends on a Monday: W27 is full
        (_utc(2026, 6, 3), _utc(2026, 6, 6), "2026-W23"),  # shorter than a week
        (_utc(2025, 12, 1), _utc(2026, 1, 5), "2026-W01"),  # ISO year differs from the date's
    ],
)
def test_default_week_is_the_last_full_week(start: datetime, end: datetime, week: str) -> None:
    assert default_week(start, end) == week


def test_report_period_trailing_weeks_stay_in_window() -> None:
    period = report_period(_utc(2026, 6, 3), _utc(2026, 7, 31), "2026-W26")
    assert period.week_start == _utc(2026, 6, 22)
    assert period.n_trailing_weeks == 2  # 06-08 and 06-15; the week of 06-01 is cut by W0
    assert period.trailing_start == _utc(2026, 6, 8)
    assert period.last_day == _utc(2026, 6, 28)
    assert report_period(_utc(2026, 6, 1), _utc(2026, 7, 31), None).week == "2026-W30"


@pytest.mark.slow
def test_report_on_a_sparse_warehouse(tmp_path: Path) -> None:
    from synth import SynthConfig, synthesize

    landing = tmp_path / "landing"
    synthesize(landing, SynthConfig(nodes=3, days=9, seed=1, start=_utc(2026, 5, 6)))
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    result = build_report(db, week=None, reports_dir=tmp_path / "reports")
    page = result.path.read_text(encoding="utf-8")
    assert result.headline["week"] == "2026-W20"  # no full week: the one holding the window end
    assert result.headline["trailing_weeks"] == 0
    for anchor, _title in SECTIONS:
        assert f'<section id="{anchor}">' in page
    assert "only partly inside the observation window" in page
    assert "no earlier full week" in result.markdown


def test_report_ranks_knobs_as_relia_whatif_does(
    markup_db: Path, html: str, tmp_path: Path
) -> None:
    """Issue #13: the report's knob ranking is `relia whatif` on the report's own baseline (which
    it prints, spare pool included), gain for gain, and names the same best knob."""
    import json

    import polars as pl
    import yaml
    from typer.testing import CliRunner

    from pipelines.cli import app
    from pipelines.report import read_report_data

    with duckdb.connect(str(markup_db), read_only=True) as con:
        data = read_report_data(con)
    knobs = data.knobs
    for held in data.scenario["knob_baselines"]:
        n_gpus = held["n_gpus"]
        assert f"Baseline held at {n_gpus:,} GPUs: {held['held']}" in " ".join(html.split())
        sweep_file = tmp_path / f"report_{n_gpus}.yaml"
        sweep_file.write_text(yaml.safe_dump(held["sweep"]))
        out = CliRunner().invoke(
            app, ["whatif", str(sweep_file), "--out", str(tmp_path / str(n_gpus)), "--json"]
        )
        assert out.exit_code == 0, out.output
        result = json.loads(out.stdout)
        rows = knobs.filter((pl.col("n_gpus") == n_gpus) & pl.col("knob_name").is_not_null())
        shown = dict(zip(rows["knob_name"], rows["gain"], strict=True))
        assert shown == pytest.approx({g["knob"]: g["gain"] for g in result["gains"]}, abs=1e-9)
        best = rows.sort("gain", descending=True, maintain_order=True).row(0, named=True)
        if result["best_knob"] is None:
            assert best["gain"] == 0
        else:
            assert best["knob_name"] == result["best_knob"]["knob"]
        assert result["baseline"]["hot_spares"] == held["sweep"]["base"]["hot_spares"] >= 1
