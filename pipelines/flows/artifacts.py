"""Prefect artifacts of the flows: the rows and markdown they publish, and the publishing.

Every artifact has a key stable per flow and kind (:data:`KEYS`): Prefect versions the artifacts
of one key, so this week's table sits next to last week's in the UI. The row builders are pure
and return JSON-safe values (a NaN or an infinite bound becomes ``None``); the ``publish_*``
functions create the artifacts and must run inside a flow or task run, which they attach to.
What they publish is terminal-safe, as the CLI's output: every text (cells, descriptions, the
headline markdown) passes through :func:`pipelines.runtime.text.printable`.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from prefect import artifacts

from pipelines import warehouse
from pipelines.analysis.goodput_summary import BACKTEST_COLUMNS
from pipelines.runtime.jsonsafe import json_ready
from pipelines.runtime.settings import DEFAULT_LOCK_TIMEOUT_S
from pipelines.runtime.text import printable_values

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from pipelines.analysis.project import SweepResult

KEYS = {
    "ingest_counts": "ingest-counts",
    "ingest_quarantine": "ingest-quarantine",
    "ingest_files_counts": "ingest-files-counts",
    "ingest_files_quarantine": "ingest-files-quarantine",
    "fit_mtbf": "fit-mtbf",
    "fit_replacement": "fit-replacement",
    "fit_mttr": "fit-mttr",
    "whatif_ranking": "whatif-ranking",
    "whatif_table": "whatif-table",
    "backtest": "backtest-goodput",
    "weekly_report": "weekly-report",
    "weekly_headline": "weekly-report-headline",
}
"""Artifact keys by flow and kind (lowercase letters, digits and dashes, as Prefect requires)."""


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime | date) else str(value)


def json_safe(value: Any) -> Any:
    """Return ``value`` with only JSON types.

    NaN and infinities become None, dates ISO strings, paths and anything else unknown their
    ``str`` (:func:`pipelines.runtime.jsonsafe.json_ready`).
    """
    return json_ready(value, _plain)


def inert(value: Any) -> Any:
    """Return ``value`` with every string in it made printable (line breaks kept)."""
    return printable_values(value, lines=True)


def create_table_artifact(*, key: str, table: list[dict[str, Any]], description: str) -> None:
    """Create Prefect's table artifact with its cells and description made printable."""
    artifacts.create_table_artifact(key=key, table=inert(table), description=inert(description))


def create_link_artifact(*, key: str, link: str, link_text: str, description: str) -> None:
    """Create Prefect's link artifact with its text and description made printable."""
    artifacts.create_link_artifact(
        key=key, link=link, link_text=inert(link_text), description=inert(description)
    )


def create_markdown_artifact(*, key: str, markdown: str, description: str) -> None:
    """Create Prefect's markdown artifact with its markdown and description made printable."""
    artifacts.create_markdown_artifact(
        key=key, markdown=inert(markdown), description=inert(description)
    )


# --- ingest ---------------------------------------------------------------------------------

_COUNTS = (
    ("read", "n_read"),
    ("loaded", "n_loaded"),
    ("quarantined", "n_quarantined"),
    ("ignored", "n_ignored"),
    ("held", "n_held"),
)


def ingest_count_rows(counts: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return one row per source of an ingest run's counts.

    Each row has the files seen, files new in this run, and the new files' rows read, loaded,
    quarantined, ignored and held (a skipped file's counts are its earlier load's).
    """
    rows: dict[str, dict[str, Any]] = {}
    for c in counts:
        row = rows.setdefault(
            str(c["source"]),
            {"source": str(c["source"]), "files": 0, "new_files": 0} | {k: 0 for k, _ in _COUNTS},
        )
        row["files"] += 1
        if c["skipped"]:
            continue
        row["new_files"] += 1
        for name, field in _COUNTS:
            row[name] += int(c.get(field) or 0)
    return [rows[s] for s in sorted(rows)]


def quarantine_reasons(
    db_path: Path, paths: list[str], since: datetime, lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> list[dict[str, Any]]:
    """Rows quarantined from ``paths`` at or after ``since``, by table, stage and reason."""
    if not paths:
        return []
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=lock_timeout_s) as con:
        frame = warehouse.query(
            con,
            "select target_table, stage, reason, count(*) as n_rows from raw_quarantine "
            "where source_file in (select unnest($paths)) and loaded_at >= $since "
            "group by all order by n_rows desc, target_table, stage, reason",
            {"paths": paths, "since": since},
        )
    return json_safe(frame.to_dicts())  # type: ignore[no-any-return]


def publish_ingest(
    counts: list[dict[str, Any]],
    db_path: Path,
    since: datetime,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    flow: str = "ingest",
) -> None:
    """Publish the ingest run's counts per source and the reasons its new rows were quarantined.

    ``flow`` is ``ingest`` (``ingest-telemetry``, the landing folder on a schedule) or
    ``ingest_files`` (``ingest-files``, files given by hand): each has its own keys.
    """
    new = [c for c in counts if not c["skipped"]]
    create_table_artifact(
        key=KEYS[f"{flow}_counts"],
        table=ingest_count_rows(counts),
        description=f"Files and rows per source: {len(counts)} files, {len(new)} new.",
    )
    paths = sorted({str(c["path"]) for c in new if c.get("n_quarantined")})
    reasons = quarantine_reasons(db_path, paths, since, lock_timeout_s)
    create_table_artifact(
        key=KEYS[f"{flow}_quarantine"],
        table=reasons,
        description=f"Rows quarantined by this run, by reason: "
        f"{sum(r['n_rows'] for r in reasons)} rows from {len(paths)} files.",
    )


# --- fit ------------------------------------------------------------------------------------

_RATE_COLUMNS = (
    ("component_class", "component_class"),
    ("cohort", "cohort"),
    ("unit_level", "unit_level"),
    ("n_units", "n_units"),
    ("n_failures", "n_failures"),
    ("exposure_h", "exposure_h"),
    ("node_days", "node_days"),
    ("gpu_hours", "gpu_hours"),
    ("rate_per_1000_node_days", "rate_per_1000_node_days"),
    ("rate_lo_per_1000_node_days", "rate_lo_per_1000_node_days"),
    ("rate_hi_per_1000_node_days", "rate_hi_per_1000_node_days"),
    ("rate_per_1e6_gpu_h", "rate_per_1e6_gpu_h"),
    ("rate_lo_per_1e6_gpu_h", "rate_lo_per_1e6_gpu_h"),
    ("rate_hi_per_1e6_gpu_h", "rate_hi_per_1e6_gpu_h"),
    ("mtbf_h", "headline_mtbf_h"),
    ("mtbf_lo_h", "headline_mtbf_lo_h"),
    ("mtbf_hi_h", "headline_mtbf_hi_h"),
    ("method", "headline_method"),
    ("trend", "trend_verdict"),
    ("beta", "crow_amsaa_beta"),
    ("beta_lo", "crow_amsaa_beta_lo"),
    ("beta_hi", "crow_amsaa_beta_hi"),
)
"""Artifact column and ``rpt_class_rates`` column of a lifetime or replacement run's rates."""

_LIFETIME_COLUMNS = (
    ("family", "family"),
    ("shape", "shape"),
    ("lifetime_mtbf_h", "lifetime_mtbf_h"),
    ("lifetime_mtbf_lo_h", "lifetime_mtbf_lo_h"),
    ("lifetime_mtbf_hi_h", "lifetime_mtbf_hi_h"),
    ("lifetime_method", "lifetime_method"),
    ("lifetime_extrapolated", "lifetime_extrapolated"),
)
"""The chosen lifetime fit beside the rates (``fit_results``): a model, not the headline."""

_REPAIR_COLUMNS = (
    ("component_class", "component_class"),
    ("cohort", "cohort"),
    ("n_repairs", "n_units"),
    ("n_repaired", "n_failures"),
    ("repair_h", "exposure_h"),
    ("mttr_h", "headline_mtbf_h"),
    ("mttr_lo_h", "headline_mtbf_lo_h"),
    ("mttr_hi_h", "headline_mtbf_hi_h"),
    ("method", "headline_method"),
    ("extrapolated", "headline_extrapolated"),
    ("family", "family"),
    ("shape", "shape"),
)
"""Artifact column and ``fit_results`` column of a repair (MTTR) run."""

HOURS_PER_YEAR = 8766.0


def fit_rows(results: pl.DataFrame, quantity: str = "repair_time") -> list[dict[str, Any]]:
    """Return one row per class x cohort of a repair run (its chosen family's row).

    Repairs, closed repairs, the headline MTTR, its bounds, method, the chosen family.
    ``None`` stands for a missing number or an unbounded interval end. Lifetime and
    replacement runs publish their rates (:func:`rate_rows`).
    """
    del quantity  # only repair runs publish their fit rows
    columns = [(name, col) for name, col in _REPAIR_COLUMNS if col in results.columns]
    chosen = results.filter(pl.col("chosen")).sort(
        "n_failures", "component_class", "cohort", descending=[True, False, False]
    )
    frame = chosen.select([pl.col(col).alias(name) for name, col in columns])
    return json_safe(frame.to_dicts())  # type: ignore[no-any-return]


def rate_rows(
    rates: pl.DataFrame, results: pl.DataFrame | None = None, quantity: str = "lifetime"
) -> list[dict[str, Any]]:
    """Return one row per class x cohort of a run's rates, as ``rpt_class_rates`` stores them.

    The failures (a replacement run: ``n_replacements``), the exposure, the rates per 1000
    node-days and per million GPU-hours with their exact bounds, ``unit_years`` and the
    observed AFR (``afr_observed_pct``, % per unit-year, with its bounds), the headline MTBF
    (``mtbf_h``, bounds, ``method``) and the trend (verdict, Crow-AMSAA beta and bounds); then,
    from ``results`` (the run's ``fit_results``), the chosen lifetime fit as such
    (``family``, ``shape``, ``lifetime_*``). Most failures first. ``None`` stands for a missing
    number or an open interval end (with no failure the MTBF has only its lower bound;
    ``method`` ``chi_square_bound`` says so). A replacement run's names say replacements
    (:func:`pipelines.analysis.headline.replacement_names`).
    """
    from pipelines.analysis.headline import replacement_names

    frame = rates.sort(
        "n_failures", "component_class", "cohort", descending=[True, False, False]
    ).select(
        *[pl.col(col).alias(name) for name, col in _RATE_COLUMNS],
        (pl.col("exposure_h") / HOURS_PER_YEAR).alias("unit_years"),
        *[
            (pl.col(f"rate{part}_per_h") * HOURS_PER_YEAR * 100.0).alias(f"afr_observed{part}_pct")
            for part in ("", "_lo", "_hi")
        ],
    )
    if results is not None and results.height:
        present = [(name, col) for name, col in _LIFETIME_COLUMNS if col in results.columns]
        lifetime = results.filter(pl.col("chosen")).select(
            "component_class", "cohort", *[pl.col(col).alias(name) for name, col in present]
        )
        frame = frame.join(lifetime, on=["component_class", "cohort"], how="left")
    rows: list[dict[str, Any]] = json_safe(frame.to_dicts())
    return [replacement_names(r) for r in rows] if quantity == "replacement" else rows


def fit_key(quantity: str) -> str:
    """``fit-mtbf`` (lifetime), ``fit-replacement`` (replacement) or ``fit-mttr`` (repair)."""
    if quantity == "repair_time":
        return KEYS["fit_mttr"]
    return KEYS["fit_replacement"] if quantity == "replacement" else KEYS["fit_mtbf"]


def publish_fit(outcome: Mapping[str, Any], by: list[str] | None = None) -> None:
    """Publish the fit run's table, one row per class x cohort.

    A lifetime or replacement run publishes its rates (:func:`rate_rows`: the
    ``rpt_class_rates`` rows the CLI and the report read), a repair run its MTTR fits.
    """
    quantity = outcome["quantity"]
    split = f" by {', '.join(by)}" if by else ""
    where = f"fit run {outcome['run_id']} on {outcome['lives']}{split}"
    if quantity == "repair_time":
        table = fit_rows(outcome["results"], quantity)
        description = f"MTTR per class, {where} (hours; null: missing or unbounded)."
    else:
        table = rate_rows(outcome["rates"], outcome["results"], quantity)
        what = (
            "Replacements per class (replace tickets; replacement AFR, MTBR)"
            if quantity == "replacement"
            else "Interruption rates and headline MTBF per class (every job-stopping failure)"
        )
        description = (
            f"{what}, {where}: exact 95 % intervals; hours; null: missing, or an open end "
            "(no failure: the MTBF's one-sided lower bound alone)."
        )
    create_table_artifact(key=fit_key(quantity), table=table, description=description)


# --- back-test ------------------------------------------------------------------------------


def backtest_rows(buckets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return a back-test run's rows per bucket and period, JSON-safe, in the view's columns."""
    return [{k: json_safe(row.get(k)) for k in BACKTEST_COLUMNS} for row in buckets]


def publish_backtest(run_id: str, buckets: Iterable[Mapping[str, Any]], min_gpus: int) -> None:
    """Publish a back-test run's table: observed vs expected interruptions, goodput."""
    create_table_artifact(
        key=KEYS["backtest"],
        table=backtest_rows(buckets),
        description=f"Back-test run {run_id} of the goodput projection on the jobs of "
        f"{min_gpus} GPUs or more (O/E with exact Poisson intervals; null: none expected).",
    )


# --- what-if --------------------------------------------------------------------------------


def ranking_rows(gains: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the knob ranking (:func:`pipelines.analysis.project.run_sweep`'s gains), JSON-safe."""
    return [json_safe(dict(g)) for g in gains]


def file_uri(path: str | Path) -> str:
    """``file://`` URI of ``path`` (made absolute)."""
    return Path(path).resolve().as_uri()


def publish_what_if(result: SweepResult) -> None:
    """Publish the knob ranking of a sweep and a link to its table."""
    best: Mapping[str, object] = result.get("best_knob") or {}
    create_table_artifact(
        key=KEYS["whatif_ranking"],
        table=ranking_rows(result["gains"]),
        description=f"Goodput gain per knob at {result['target_gpus']} GPUs, fit run "
        f"{result['fit_run_id']}; best: {best.get('knob', 'none')}.",
    )
    create_link_artifact(
        key=KEYS["whatif_table"],
        link=file_uri(result["table"]),
        link_text="whatif.parquet",
        description=f"The sweep's table: {result['n_points']} scenarios.",
    )


# --- weekly report --------------------------------------------------------------------------


def publish_report(path: Path, markdown: str, week: str) -> None:
    """Publish a link to the report's HTML and its headline tables as markdown."""
    create_link_artifact(
        key=KEYS["weekly_report"],
        link=file_uri(path),
        link_text=Path(path).name,
        description=f"Weekly reliability report {week}.",
    )
    create_markdown_artifact(
        key=KEYS["weekly_headline"],
        markdown=markdown,
        description=f"Weekly reliability report {week}: {path}",
    )
