"""Render the weekly report (Jinja2 HTML and a markdown headline) and build it end to end.

:func:`render_html` is pure: Jinja2 with autoescape on, so every string that came from
telemetry, such as host names, job names or quarantined lines, is escaped. The page has no
script and loads nothing: images are inline ``data:`` URIs and the style sheet is inline.
:func:`build_report` does the I/O: it reads the warehouse, renders, and writes
``<reports_dir>/<ISO week>.html``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from pipelines.report.containers import SECTIONS
from pipelines.report.data import read_report_data
from pipelines.report.figures import probability_figure_key, report_figures
from pipelines.report.format import (
    fmt_headline,
    fmt_hours,
    fmt_interval,
    fmt_minutes,
    fmt_num,
    fmt_pct,
    fmt_pct_points,
    fmt_sig,
    fmt_time,
)
from pipelines.report.period import DEFAULT_TARGET_GPUS, MIN_AT_RISK, MIN_PLOT_FAILURES
from pipelines.runtime.errors import WarehouseMissingError
from pipelines.runtime.settings import DEFAULT_LOCK_TIMEOUT_S

if TYPE_CHECKING:
    import polars as pl

    from pipelines.report.containers import Replacements, ReportData, ReportHeadline

log = logging.getLogger(__name__)

TEMPLATE = "report.html.j2"
METHOD_WORDS = {
    "observed_rate": "observed rate",
    "chi_square_bound": "one-sided bound",
    "model_average": "model average",
    "weibayes_lr": "Weibayes",
    "chi_square": "chi-square",
}
"""How the report names a headline's or a lifetime mean's method."""
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class ReportResult:
    """What :func:`build_report` produced.

    Attributes
    ----------
    path
        The HTML file written.
    markdown
        The headline tables as markdown (for a Prefect artifact).
    seconds
        Wall time of the whole build.
    headline
        The headline figures (see :func:`pipelines.report.data.read_report_data`).
    """

    path: Path
    markdown: str
    seconds: float
    headline: ReportHeadline


# --------------------------------------------------------------------------------------------
# HTML and markdown
# --------------------------------------------------------------------------------------------
def _printable(value: object) -> object:
    """Return every value the template prints, made safe to show.

    Every value the template prints, without escape sequences or control characters
    (telemetry text; :func:`pipelines.runtime.text.printable`); already-safe markup stays markup.
    """
    from markupsafe import Markup

    from pipelines.runtime.text import printable

    if isinstance(value, Markup):
        return Markup(printable(str(value), lines=True))
    if isinstance(value, str):
        return printable(value, lines=True)
    return value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # the template is .html.j2, which select_autoescape would not match
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_printable,
    )
    env.filters.update(
        num=fmt_num,
        sig=fmt_sig,
        pct=fmt_pct,
        pct_points=fmt_pct_points,
        hours=fmt_hours,
        headline=fmt_headline,
        interval=fmt_interval,
        time=fmt_time,
        minutes=fmt_minutes,
    )
    return env


# Jinja template rows: a dict is the edge
def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dicts() if frame.height else []


# Jinja template rows: a dict is the edge
def _class_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """Return the class table's rows, each with ``family_has_shape`` (is a shape shown)."""
    from models.families import FAMILY_REGISTRY  # numpy and scipy: only when a page is rendered

    rows = _rows(frame)
    for row in rows:
        family = FAMILY_REGISTRY.get(str(row.get("family")))
        row["family_has_shape"] = family is None or family.has_shape  # a stored unknown name too
    return rows


def render_html(data: ReportData, figures: dict[str, str]) -> str:
    """Render the report page.

    Parameters
    ----------
    data
        What :func:`pipelines.report.data.read_report_data` returned.
    figures
        Figure name -> PNG data URI (:func:`report_figures`); a missing figure is skipped.

    Returns
    -------
    str
        A complete HTML document with inline style and images, no script and no external URL.
    """
    for uri in figures.values():
        if not uri.startswith("data:image/png;base64,"):
            msg = "figures must be PNG data URIs (see png_data_uri); no external images"
            raise ValueError(msg)
    template = _environment().get_template(TEMPLATE)
    return template.render(
        data=data,
        period=data.period,
        headline=data.headline,
        sections=SECTIONS,
        min_at_risk=MIN_AT_RISK,
        figures={k: Markup(v) for k, v in figures.items()},
        probability_key=probability_figure_key,
        min_plot_failures=MIN_PLOT_FAILURES,
        classes=_class_rows(data.classes),
        causes=_rows(data.causes),
        restart=_rows(data.restart),
        interruptions=_rows(data.interruptions),
        nodes=_rows(data.nodes),
        targets=_rows(data.goodput_targets),
        knobs=_rows(data.knobs),
        files=_rows(data.files),
        quarantine=_rows(data.quarantine),
        samples=_rows(data.quarantine_samples),
        checks=_rows(data.checks),
        failing_checks=[c for c in _rows(data.checks) if c["n_failed"]],
        replacements=data.replacements,
        methods=METHOD_WORDS,
    )


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(data: ReportData) -> str:
    """Return the headline, per-class failures and goodput at the target scales as markdown."""
    headline_rows = _headline_rows(data)
    class_rows = _class_table_rows(data)
    parts = [
        f"# Weekly reliability report {data.period.week}",
        f"Week {data.period.week_start:%Y-%m-%d} to {data.period.last_day:%Y-%m-%d} (UTC); "
        f"observation window {data.period.window_start:%Y-%m-%d} to "
        f"{data.period.window_end:%Y-%m-%d}. {data.fit.note}",
        _md_table(["metric", "value"], headline_rows),
        "## Failures by component class",
    ]
    if class_rows:
        parts.append(
            _md_table(
                [
                    "class",
                    "this week",
                    "trailing mean",
                    "failures in fit",
                    "per 1000 node-days (95 %)",
                    "MTBF per unit",
                    "95 % CI",
                    "method",
                    "trend",
                ],
                class_rows,
            )
        )
    if not any(r["failures_fit"] for r in _rows(data.classes)):
        parts.append(_no_failure_line(data))
    parts += ["## Replacements (repair tickets)", _replacement_markdown(data.replacements)]
    return "\n\n".join(parts) + "\n"


def _headline_rows(data: ReportData) -> list[list[str]]:
    """Return the headline table's rows (metric, value) in words."""
    h = data.headline
    trailing = h["failures_trailing_mean"]
    headline_rows = [
        ["fleet in service", f"{fmt_num(h['n_nodes'])} nodes, {fmt_num(h['n_gpus'])} GPUs"],
        ["GPU-hours observed (week)", fmt_num(h["gpu_hours_week"])],
        [
            "failures (week)",
            f"{h['failures_week']} (trailing {h['trailing_weeks']}-week mean "
            f"{fmt_num(trailing, 1)})"
            if h["trailing_weeks"]
            else f"{h['failures_week']} (no earlier full week to compare)",
        ],
        [
            "job interruptions (week)",
            f"{h['interruptions_week']} "
            f"(trailing mean {fmt_num(h['interruptions_trailing_mean'], 1)})",
        ],
        [
            "fleet MTBF (window to week end)",
            f"{fmt_hours(h['fleet_mtbf_h'])} "
            f"(95 % CI {fmt_interval(h['fleet_mtbf_lo_h'], h['fleet_mtbf_hi_h'])})",
        ],
        ["trend", str(data.trend.get("verdict", "n/a"))],
    ]
    headline_rows += [
        [
            f"projected goodput at {g['n_gpus']:,} GPUs",
            f"{fmt_pct(g['goodput'])} "
            f"(95 % {fmt_interval(g['goodput_lo'], g['goodput_hi'], 'pct')})",
        ]
        for g in h["goodput"]
    ]
    if data.scenario.get("missing"):
        headline_rows.append(["projected goodput", f"none: {data.scenario['missing']}"])
    realised = data.realised
    fleet = realised.get("all")
    if realised.get("has_ledger") and fleet is not None:  # a ledger has its fleet row
        headline_rows.append(
            [
                "realised goodput (by GPU-hours, by job)",
                f"{fmt_pct(fleet['goodput_gpu_hours'])}, {fmt_pct(fleet['goodput_jobs'])} "
                f"({realised['n_estimated']} of {realised['n_jobs']} jobs estimated)",
            ]
        )
    return headline_rows


def _class_table_rows(data: ReportData) -> list[list[str]]:
    """Return the failures-by-class table's rows, one per component class."""
    return [
        [
            str(r["component_class"]),
            str(r["failures_week"]),
            fmt_num(r["failures_trailing_mean"], 1),
            str(r["failures_fit"]),
            _rate_cell(r, "per_1000_node_days"),
            fmt_headline(r["headline_mtbf_h"], r["headline_mtbf_lo_h"]),
            fmt_interval(r["headline_mtbf_lo_h"], r["headline_mtbf_hi_h"])
            if r["n_failures"]
            else "one-sided",
            METHOD_WORDS.get(str(r["headline_method"]), str(r["headline_method"])),
            str(r["trend_verdict"] or "–"),
        ]
        for r in _rows(data.classes)
    ]


def _replacement_markdown(replacements: Replacements) -> str:
    """Return the replacements per class as markdown, or the line saying there are none."""
    rows = replacements.get("rows") or []
    if not rows:
        missing = replacements.get("missing", "no replacement counts")
        return f"No replacement counts: {missing}; {replacements.get('supply', '')}".strip()
    return _md_table(
        ["class", "replacements", "unit-years", "replacement AFR", "95 % CI"],
        [
            [
                str(r["component_class"]),
                str(r["n_replacements"]),
                fmt_num(r["unit_years"], 1),
                fmt_pct_points(r["replacement_afr_pct"], 2),
                fmt_interval(
                    r["replacement_afr_lo_pct"], r["replacement_afr_hi_pct"], "pct_points"
                ),
            ]
            for r in rows
        ],
    )


def _rate_cell(row: dict[str, Any], scale: str) -> str:
    """``2.85 (1.05 – 6.21)``: a rate of ``row`` on ``scale`` with its exact 95 % bounds."""
    lo, hi = row[f"rate_lo_{scale}"], row[f"rate_hi_{scale}"]
    return f"{fmt_sig(row[f'rate_{scale}'])} ({fmt_interval(lo, hi, 'sig')})"


def _no_failure_line(data: ReportData) -> str:
    """Return the line said when no class of the fit has a failure (or there is no fit)."""
    if data.classes.height == 0:
        return f"No class table: {data.fit.note}"
    events = data.headline.get("failure_events_to_date", 0)
    if events:
        return (
            f"No failure in the fit, but {events} failure event(s) in the window to the week "
            "end, on no unit the fit follows; each MTBF is its one-sided 95 % lower bound (≥)."
        )
    return (
        "No component class has failed in the fit window: each MTBF is its one-sided 95 % "
        "lower bound (≥), the answer with no failure."
    )


# --------------------------------------------------------------------------------------------
# The build
# --------------------------------------------------------------------------------------------
def build_report(
    db_path: Path,
    *,
    week: str | None,
    reports_dir: Path,
    target_gpus: tuple[int, ...] = DEFAULT_TARGET_GPUS,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
) -> ReportResult:
    """Read the warehouse, render the report and write ``<reports_dir>/<ISO week>.html``.

    The report reads the fit run and goodput projection that the fit and project stages stored
    (:func:`pipelines.report.inputs.refresh_inputs`, run first by the ``weekly-report`` flow;
    callers with a writable warehouse should run it before this). The warehouse is opened
    read-only, so when those inputs are missing (no stored fit run matching the lives, or no
    projection for this fit run, week and targets) the report computes them in memory, says so in
    its assumptions ("Fits: computed for this report ..."), and stores nothing.

    Parameters
    ----------
    db_path
        The DuckDB warehouse (opened read-only).
    week
        ISO week ``YYYY-Www``; ``None`` takes the last full week of the observation window.
    reports_dir
        Folder for the HTML file (created if needed).
    target_gpus
        Job scales the goodput projection is reported at.
    lock_timeout_s
        How long to wait for a writer (an ingest) to release the warehouse.

    Returns
    -------
    ReportResult
        The file written, the markdown headline, the build time and the headline figures.

    Raises
    ------
    WarehouseMissingError
        When ``db_path`` does not exist.
    ValueError
        On an empty warehouse or a week outside the observation window.
    """
    from pipelines import warehouse

    started = time.perf_counter()
    if not Path(db_path).exists():
        raise WarehouseMissingError(db_path)
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=lock_timeout_s) as con:
        data = read_report_data(con, week=week, target_gpus=target_gpus)
    html = render_html(data, report_figures(data))
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = reports_dir / f"{data.period.week}.html"
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    seconds = time.perf_counter() - started
    log.info("report %s written to %s in %.1f s", data.period.week, path, seconds)
    return ReportResult(
        path=path, markdown=render_markdown(data), seconds=seconds, headline=data.headline
    )
