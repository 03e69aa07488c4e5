"""Prefect artifacts of the flows: the rows and markdown they publish, and the publishing.

Every artifact has a key stable per flow and kind (:data:`KEYS`): Prefect versions the artifacts
of one key, so this week's table sits next to last week's in the UI. The row builders are pure
and return JSON-safe values (a NaN or an infinite bound becomes ``None``); the ``publish_*``
functions create the artifacts and must run inside a flow or task run, which they attach to.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)

from pipelines import warehouse
from pipelines.goodput_summary import BACKTEST_COLUMNS
from pipelines.jsonsafe import json_ready
from pipelines.settings import DEFAULT_LOCK_TIMEOUT_S

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

KEYS = {
    "ingest_counts": "ingest-counts",
    "ingest_quarantine": "ingest-quarantine",
    "ingest_files_counts": "ingest-files-counts",
    "ingest_files_quarantine": "ingest-files-quarantine",
    "fit_mtbf": "fit-mtbf",
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
    ``str`` (:func:`pipelines.jsonsafe.json_ready`).
    """
    return json_ready(value, _plain)


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

_FIT_COLUMNS = {
    "lifetime": (
        ("component_class", "component_class"),
        ("cohort", "cohort"),
        ("n_units", "n_units"),
        ("n_failures", "n_failures"),
        ("unit_years", "unit_years"),
        ("afr_observed_pct", "afr_observed_pct"),
        ("afr_observed_lo_pct", "afr_observed_lo_pct"),
        ("afr_observed_hi_pct", "afr_observed_hi_pct"),
        ("mtbf_h", "headline_mtbf_h"),
        ("mtbf_lo_h", "headline_mtbf_lo_h"),
        ("mtbf_hi_h", "headline_mtbf_hi_h"),
        ("method", "headline_method"),
        ("extrapolated", "headline_extrapolated"),
        ("rmst_h", "headline_rmst_h"),
        ("family", "family"),
        ("shape", "shape"),
    ),
    "repair_time": (
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
    ),
}
"""Artifact column and ``fit_results`` column, for a lifetime (MTBF) and a repair (MTTR) run."""


def fit_rows(results: pl.DataFrame, quantity: str = "lifetime") -> list[dict[str, Any]]:
    """Return one row per class x cohort of a fit run (its chosen family's row).

    Each row has failures, unit-years, observed AFR and bounds, the headline MTBF, its bounds,
    method and extrapolated flag, the chosen family; for a repair run repairs, closed repairs and
    the headline MTTR instead. ``None`` stands for a missing number or an unbounded interval end.
    """
    columns = [(name, col) for name, col in _FIT_COLUMNS[quantity] if col in results.columns]
    chosen = results.filter(pl.col("chosen")).sort(
        "n_failures", "component_class", "cohort", descending=[True, False, False]
    )
    frame = chosen.select([pl.col(col).alias(name) for name, col in columns])
    return json_safe(frame.to_dicts())  # type: ignore[no-any-return]


def fit_key(quantity: str) -> str:
    """``fit-mtbf`` for a lifetime run, ``fit-mttr`` for a repair run."""
    return KEYS["fit_mttr"] if quantity == "repair_time" else KEYS["fit_mtbf"]


def publish_fit(outcome: Mapping[str, Any], by: list[str] | None = None) -> None:
    """Publish the fit run's table, one row per class x cohort."""
    what = "MTTR" if outcome["quantity"] == "repair_time" else "MTBF"
    create_table_artifact(
        key=fit_key(outcome["quantity"]),
        table=fit_rows(outcome["results"], outcome["quantity"]),
        description=f"{what} per class, fit run {outcome['run_id']} on {outcome['lives']}"
        + (f" by {', '.join(by)}" if by else "")
        + " (hours; null: missing or unbounded).",
    )


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
    """Return the knob ranking (``gains`` of :func:`pipelines.project.run_sweep`), JSON-safe."""
    return [json_safe(dict(g)) for g in gains]


def file_uri(path: str | Path) -> str:
    """``file://`` URI of ``path`` (made absolute)."""
    return Path(path).resolve().as_uri()


def publish_what_if(result: Mapping[str, Any]) -> None:
    """Publish the knob ranking of a sweep and a link to its table."""
    best = result.get("best_knob") or {}
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
