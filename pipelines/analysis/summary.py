"""The fleet summary behind ``relia summary`` and ``relia demo``: rows read from the marts.

:func:`fleet_summary` reads ``rpt_fleet_summary`` (failures: every job-stopping failure, from
the failure events), ``rpt_replacements_by_class`` (replacements from repair tickets, apart),
``rpt_interruptions_by_cause`` and ``rpt_ingest_quality`` (never the raw lineage tables: the
view is the one home of that SQL);
:func:`outcomes_by_source` sums ``relia ingest``'s per-file rows per source and outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

__all__ = ["fleet_summary", "outcomes_by_source", "replacement_rows"]

_FLEET = (
    "select component_class, units_at_risk, n_failures, n_failure_events, "
    "round(exposure_h, 1) as exposure_h, round(naive_mtbf_h, 0) as naive_mtbf_h, "
    "n_interruptions from rpt_fleet_summary"
)
_REPLACEMENTS = (
    "select component_class, unit_level, n_units, n_replacements, exposure_h, unit_years, "
    "n_repair_tickets from rpt_replacements_by_class"
)
_CAUSES = (
    "select cause_class, attribution, n_interruptions, "
    "round(gpu_hours_interrupted, 1) as gpu_hours_interrupted, median_restart_overhead_s "
    "from rpt_interruptions_by_cause"
)
# rpt_ingest_quality has one row per (source, target table) and quarantine reason of that
# table: a (source, target table) repeats its file counts on each of its reasons, and a reason
# repeats for each source loading its table, hence the ``distinct`` before summing or listing
# (a reason of a table no recorded file loads comes with a null source)
_FILES = (
    "with per_table as (select distinct source, target_table, n_files, n_read, n_loaded, "
    "n_quarantined from rpt_ingest_quality where source is not null) "
    "select source, sum(n_files)::bigint as n_files, sum(n_read)::bigint as n_read, "
    "sum(n_loaded)::bigint as n_loaded, sum(n_quarantined)::bigint as n_quarantined "
    "from per_table group by source order by source"
)
_QUARANTINE = (
    "select distinct target_table, stage, reason, n_rows_with_reason::bigint as n_rows "
    "from rpt_ingest_quality where reason is not null "
    "order by n_rows desc, target_table, stage, reason"
)


def fleet_summary(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict[str, Any]]]:
    """Return the fleet summary of the warehouse, one list of rows per table.

    Parameters
    ----------
    con
        A connection to the warehouse (read-only will do), opened by the caller.

    Returns
    -------
    dict
        ``failures_by_class`` (component_class, units_at_risk, n_failures: failed lives of the
        failure process, every job-stopping failure whatever fixed it; n_failure_events: the
        failure events in the window, also those on units with no lives; exposure_h,
        naive_mtbf_h, n_interruptions), ``replacements_by_class`` (component_class,
        n_replacements from replace tickets, unit_years, and the replacement AFR in % per
        unit-year with its exact Poisson bounds ``replacement_afr_pct``,
        ``replacement_afr_lo_pct``, ``replacement_afr_hi_pct``; empty when the warehouse has
        no repair ticket), ``interruptions_by_cause`` (cause_class, attribution,
        n_interruptions, gpu_hours_interrupted, median_restart_overhead_s), ``quarantine``
        (target_table, stage, reason, n_rows; most rows first) and ``files`` (source, n_files,
        n_read, n_loaded, n_quarantined; by source).
    """
    from pipelines import warehouse

    fleet = warehouse.query(con, _FLEET)
    replacements = warehouse.query(con, _REPLACEMENTS)
    causes = warehouse.query(con, _CAUSES)
    quarantine = warehouse.query(con, _QUARANTINE)
    files = warehouse.query(con, _FILES)
    return {
        "failures_by_class": fleet.to_dicts(),
        "replacements_by_class": replacement_rows(replacements.to_dicts()),
        "interruptions_by_cause": causes.to_dicts(),
        "quarantine": quarantine.to_dicts(),
        "files": files.to_dicts(),
    }


# JSON/table rows of relia summary: dicts are the edge
def replacement_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return replacements per class with the replacement AFR; none without repair tickets.

    Parameters
    ----------
    rows
        ``rpt_replacements_by_class`` rows (component_class, n_replacements, exposure_h,
        unit_years, n_repair_tickets, ...).

    Returns
    -------
    list of dict
        Per class: component_class, n_replacements, unit_years (one decimal) and the
        replacement AFR (% per unit-year) ``replacement_afr_pct`` with the exact Poisson
        bounds ``replacement_afr_lo_pct`` / ``replacement_afr_hi_pct`` (three decimals;
        :func:`pipelines.analysis.headline.replacement_afr`); an empty list when the warehouse holds
        no repair ticket.
    """
    from pipelines.analysis.headline import replacement_afr

    return [
        {
            "component_class": r["component_class"],
            "n_replacements": r["n_replacements"],
            "unit_years": round(r["unit_years"], 1),
            "replacement_afr_pct": round(r["replacement_afr_pct"], 3),
            "replacement_afr_lo_pct": round(r["replacement_afr_lo_pct"], 3),
            "replacement_afr_hi_pct": round(r["replacement_afr_hi_pct"], 3),
        }
        for r in replacement_afr(rows)
    ]


# JSON/table rows of relia ingest: dicts are the edge
def outcomes_by_source(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-file ingest rows summed per (source, status), in order of first appearance.

    Parameters
    ----------
    rows
        ``relia ingest``'s rows: source, read, loaded, quarantined, held, ignored, status.

    Returns
    -------
    list of dict
        One row per (source, status): source, files, read, loaded, quarantined, held, ignored,
        status; quarantined, held and ignored are left out when they are 0 for every row.
    """
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (str(row["source"]), str(row["status"]))
        total = out.setdefault(
            key,
            {
                "source": key[0],
                "files": 0,
                "read": 0,
                "loaded": 0,
                "quarantined": 0,
                "held": 0,
                "ignored": 0,
                "status": key[1],
            },
        )
        total["files"] += 1
        for name in ("read", "loaded", "quarantined", "held", "ignored"):
            total[name] += int(row[name] or 0)
    summed = list(out.values())
    # columns that are 0 for every source say nothing: leave them out so the table fits
    empty = {n for n in ("quarantined", "held", "ignored") if not any(r[n] for r in summed)}
    return [{k: v for k, v in r.items() if k not in empty} for r in summed]
