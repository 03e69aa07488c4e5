"""Failures of the fleet's window that end no failure-process life, and why (``relia fit``).

A failure event ends a life of ``fct_component_lives`` only when its unit is at risk: a failure
on a GPU of a node whose telemetry lists no GPUs (kernel logs alone say which bus failed, not how
many GPUs the node has) has no GPU unit to end, and a failure while its unit is still down from
an earlier one, or on a unit no longer in service, ends none either. The fit's rates leave those
out; :func:`failures_outside_lives` counts them so that ``relia fit`` says so instead of dropping
them silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

GPUS_UNKNOWN = "gpus_unknown"  # a GPU failure on a node whose GPU count no telemetry gives
NOT_AT_RISK = "not_at_risk"  # the unit was still down from an earlier failure, or not in service

_SQL = f"""
select
    events.component_class,
    events.unit_level,
    case
        when
            events.unit_level = 'gpu'
            and not exists (
                select 1 from fct_component_lives as lives
                where lives.node = events.host and lives.unit_level = 'gpu'
            )
            then '{GPUS_UNKNOWN}'
        else '{NOT_AT_RISK}'
    end as reason,
    count(*)::bigint as n_failures
from fct_failure_events as events
where events.dataset is null and events.in_window and not events.in_lives
group by all
order by reason, n_failures desc, events.component_class
"""


# JSON rows of relia fit --json (failures_outside_lives): dicts are the edge
def failures_outside_lives(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Rows (component_class, unit_level, reason, n_failures) of window failures in no life."""
    cursor = con.execute(_SQL)
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def outside_lives_text(rows: list[dict[str, Any]]) -> list[str]:
    """One line per reason: how many failures the rates leave out, by class, and what to do."""
    lines = []
    for reason, tail in (
        (
            GPUS_UNKNOWN,
            "on nodes whose telemetry lists no GPUs, so no GPU was at risk: give "
            "`relia ingest --gpus-per-node N` (or ingest DCGM metrics or an inventory that lists "
            "the GPUs) to count them",
        ),
        (
            NOT_AT_RISK,
            "while their unit was still down from an earlier failure or out of service "
            "(fct_failure_events.in_lives is false)",
        ),
    ):
        picked = [r for r in rows if r["reason"] == reason]
        if not picked:
            continue
        n = sum(int(r["n_failures"]) for r in picked)
        by_class = ", ".join(f"{r['component_class']} {r['n_failures']:,}" for r in picked)
        verbs = ("ends", "is") if n == 1 else ("end", "are")
        lines.append(
            f"{n:,} failure event{'s' if n != 1 else ''} of the window {verbs[0]} no life and "
            f"{verbs[1]} not in the rates ({by_class}): {tail}"
        )
    return lines
