"""Job interruptions, nodes to look at and GPUs at risk, for the weekly report."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.report.period import (
    LEMON_ALPHA,
    N_INTERRUPTIONS_LISTED,
    N_WATCH_NODES,
    Notes,
    plain,
    query,
)

if TYPE_CHECKING:
    import duckdb

    from pipelines.report.containers import (
        AtRiskGpu,
        PredictionSummary,
        PredictorMetrics,
        PredictorModel,
    )


# --------------------------------------------------------------------------------------------
# Interruptions
# --------------------------------------------------------------------------------------------
def interruption_tables(
    con: duckdb.DuckDBPyConnection, params: dict[str, object]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Root-cause table, restart overhead and the week's largest interruptions."""
    causes = _interruption_causes(con, params)
    restart = _restart_overhead(con, params)
    listed = _largest_interruptions(con, params)
    return causes, restart, listed


def _interruption_causes(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> pl.DataFrame:
    """Return the interruptions of the week and to date per cause and attribution."""
    return query(
        con,
        """
        with by_cause as (
            select
                cause_class,
                attribution,
                any_value(category) as category,
                count(*) filter (where end_ts >= $ws) as n_week,
                count(*) as n_to_date,
                sum(gpu_hours) as gpu_hours
            from rpt_job_interruptions
            where end_ts >= $w0 and end_ts < $asof
            group by cause_class, attribution
        )

        select
            coalesce(by_cause.category, by_cause.cause_class) as category,
            by_cause.cause_class,
            by_cause.attribution,
            by_cause.n_week,
            by_cause.n_to_date,
            by_cause.gpu_hours,
            by_cause.n_to_date / sum(by_cause.n_to_date) over () as share
        from by_cause
        order by by_cause.n_to_date desc, by_cause.cause_class, by_cause.attribution
        """,
        params,
    )


def _restart_overhead(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> pl.DataFrame:
    """Return the restart overhead (min) to date for hardware, other and all causes."""
    return query(
        con,
        """
        with interruptions as (
            select * from rpt_job_interruptions where end_ts >= $w0 and end_ts < $asof
        ),

        grouped as (
            select
                case when is_hardware then 'hardware cause' else 'other causes' end as cause_group,
                count(*) as n_interruptions,
                count(restart_overhead_s) as n_requeued,
                median(restart_overhead_s) / 60.0 as median_min,
                quantile_cont(restart_overhead_s, 0.9) / 60.0 as p90_min,
                avg(restart_overhead_s) / 60.0 as mean_min,
                sum(gpu_hours) as gpu_hours
            from interruptions
            group by all
            union all
            select
                'all' as cause_group,
                count(*),
                count(restart_overhead_s),
                median(restart_overhead_s) / 60.0,
                quantile_cont(restart_overhead_s, 0.9) / 60.0,
                avg(restart_overhead_s) / 60.0,
                sum(gpu_hours)
            from interruptions
        )

        select * from grouped
        order by case cause_group when 'hardware cause' then 0 when 'other causes' then 1 else 2 end
        """,
        params,
    )


def _largest_interruptions(
    con: duckdb.DuckDBPyConnection, params: dict[str, object]
) -> pl.DataFrame:
    """Return the week's interruptions that cost the most GPU-hours."""
    return query(
        con,
        """
        select
            job_id,
            attempt,
            job_name,
            user_name,
            n_nodes,
            n_gpus,
            end_ts,
            state,
            cause_class,
            attribution,
            array_to_string(suspect_nodes, ', ') as suspect_nodes,
            restart_overhead_s / 60.0 as restart_min,
            gpu_hours
        from rpt_job_interruptions
        where end_ts >= $ws and end_ts < $we
        order by gpu_hours desc nulls last, end_ts
        limit $limit
        """,
        params | {"limit": N_INTERRUPTIONS_LISTED},
    )


# --------------------------------------------------------------------------------------------
# Nodes to look at
# --------------------------------------------------------------------------------------------
def nodes_to_watch(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], notes: Notes
) -> tuple[pl.DataFrame, str]:
    """Lemon test per node (failures to date against the fleet rate), with the evidence."""
    from models import lemon_nodes

    counts = _node_failure_counts(con, params)
    if counts.height == 0 or counts.get_column("n_failures").sum() == 0:
        return pl.DataFrame(), "no failures up to the week end: no node stands out"
    tested = notes.run(
        "Lemon test", lambda: lemon_nodes(counts, unit_col="node", alpha=LEMON_ALPHA)
    )
    rule = str(tested.get_column("rule")[0])
    picked = (
        tested.filter(pl.col("observed") > 0)
        .sort(["lemon", "p_adjusted", "observed"], descending=[True, False, True])
        .filter(pl.col("lemon") | (pl.int_range(pl.len()) < N_WATCH_NODES))
    )
    evidence = _node_evidence(con, params, picked.get_column("node").to_list())
    nodes = picked.join(evidence, on="node", how="left").select(
        "node",
        "lemon",
        "observed",
        "expected",
        "rate_ratio",
        "p_adjusted",
        "exposure_h",
        "failures",
        "n_interruptions",
        "n_failure_incidents",
        "n_other_incidents",
    )
    return nodes, rule


def _node_failure_counts(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> pl.DataFrame:
    """Return each node's failures up to the week end and its exposure (h) in the window."""
    return query(
        con,
        """
        with nodes as (
            select
                node,
                epoch(least(coalesce(removed_ts, $w1), $asof) - greatest(installed_ts, $w0))
                / 3600.0 as exposure_h
            from rpt_fleet_nodes
        ),

        failures as (
            select node, count(*) as n_failures
            from rpt_unit_lives
            where failed and observed_to_ts < $asof
            group by node
        )

        select nodes.node, coalesce(failures.n_failures, 0) as n_failures, nodes.exposure_h
        from nodes
        left join failures on nodes.node = failures.node
        where nodes.exposure_h > 0
        order by nodes.node
        """,
        params,
    )


def _node_evidence(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], nodes: list[str]
) -> pl.DataFrame:
    """Return the failures, interruptions and incidents of ``nodes`` up to the week end."""
    return query(
        con,
        """
        with picked as (select unnest($nodes::varchar[]) as node),

        failures as (
            select
                node,
                string_agg(
                    component_class || ' (' || slot || ', ' || strftime(observed_to_ts, '%Y-%m-%d')
                    || ')',
                    '; ' order by observed_to_ts
                ) as failures
            from rpt_unit_lives
            where failed and observed_to_ts < $asof and node in (select node from picked)
            group by node
        ),

        interrupted as (
            select node, count(*) as n_interruptions
            from (
                select unnest(suspect_nodes) as node
                from rpt_job_interruptions
                where end_ts >= $w0 and end_ts < $asof
            )
            where node in (select node from picked)
            group by node
        ),

        incidents as (
            select
                node,
                count(*) filter (where is_failure) as n_failure_incidents,
                count(*) filter (where not is_failure) as n_other_incidents
            from rpt_node_incidents
            where first_ts >= $w0 and first_ts < $asof and node in (select node from picked)
            group by node
        )

        select
            picked.node,
            failures.failures,
            coalesce(interrupted.n_interruptions, 0) as n_interruptions,
            coalesce(incidents.n_failure_incidents, 0) as n_failure_incidents,
            coalesce(incidents.n_other_incidents, 0) as n_other_incidents
        from picked
        left join failures on picked.node = failures.node
        left join interrupted on picked.node = interrupted.node
        left join incidents on picked.node = incidents.node
        """,
        params | {"nodes": nodes},
    )


AT_RISK_LIMIT = 25
"""GPUs listed in the report's at-risk table (highest probability first)."""


def prediction_summary(con: duckdb.DuckDBPyConnection, notes: Notes) -> PredictionSummary:
    """Return the latest failure predictor's test metrics and the GPUs at risk.

    The GPUs at risk are those its latest scores put at risk.
    """
    tables = query(
        con,
        "select count(*) as n from duckdb_tables() "
        "where table_name in ('predict_models', 'predict_scores')",
    ).item()
    if tables < 2:  # a warehouse written before prediction existed (read-only: no schema change)
        return {"model": None, "at_risk": [], "n_at_risk": 0, "scored_at": None}
    row = query(
        con,
        "select model_id, trained_at, horizon_h, threshold, test_start, test_end, metrics "
        "from predict_models order by trained_at desc limit 1",
    )
    if row.height == 0:
        return {"model": None, "at_risk": [], "n_at_risk": 0, "scored_at": None}
    stored = row.row(0, named=True)
    metrics = json.loads(stored["metrics"])
    model: PredictorModel = {
        "model_id": stored["model_id"],
        "trained_at": stored["trained_at"],
        "horizon_h": stored["horizon_h"],
        "threshold": stored["threshold"],
        "test_start": stored["test_start"],
        "test_end": stored["test_end"],
        "metrics": [
            _metrics(name, metrics.get(key, {}))
            for name, key in (
                ("classifier", "model"),
                ("rule: drain after N SBEs in an hour", "sbe_rule"),
                ("never predict", "never_predict"),
            )
        ],
        "n_sbe_per_h": metrics.get("sbe_rule", {}).get("n_sbe_per_h"),
        "sizes": metrics.get("sizes", {}),
    }
    latest = query(
        con,
        "select max(prediction_ts) as at, max(scored_at) as scored_at, "
        "count(*) filter (where at_risk) as n_at_risk from predict_scores "
        "where model_id = $id and prediction_ts = "
        "(select max(prediction_ts) from predict_scores where model_id = $id)",
        {"id": model["model_id"]},
    ).row(0, named=True)
    at_risk = query(
        con,
        "select host, gpu_index, uuid, prob, evidence from predict_scores "
        "where model_id = $id and at_risk and prediction_ts = $at "
        "order by prob desc, host, gpu_index limit $limit",
        {"id": model["model_id"], "at": latest["at"], "limit": AT_RISK_LIMIT},
    )
    rows: list[AtRiskGpu] = [
        {
            "host": r["host"],
            "gpu_index": r["gpu_index"],
            "uuid": r["uuid"],
            "prob": r["prob"],
            "evidence": _evidence_text(r["evidence"]),
        }
        for r in at_risk.to_dicts()
    ]
    if latest["at"] is None:
        notes.add(
            f"Failure predictor {model['model_id']} has not scored the fleet yet: run "
            "`relia predict score` (the weekly-report deployment does before each report)."
        )
    return {
        "model": model,
        "at_risk": rows,
        "n_at_risk": int(latest["n_at_risk"] or 0),
        "prediction_ts": latest["at"],
        "scored_at": latest["scored_at"],
    }


def _metrics(name: str, stored: dict[str, Any]) -> PredictorMetrics:
    """Return a model's or a baseline's test metrics (None where the train stage stored none)."""
    return {
        "name": name,
        "precision": stored.get("precision"),
        "alarm_precision": stored.get("alarm_precision"),
        "recall": stored.get("recall"),
        "pr_auc": stored.get("pr_auc"),
        "lead_time_h": stored.get("lead_time_h"),
        "alarms_per_day": stored.get("alarms_per_day"),
        "n_failures": stored.get("n_failures"),
    }


def _evidence_text(evidence: str | None) -> str:
    """Return a score's evidence (JSON of feature -> value) as ``name value`` pairs."""
    if not evidence:
        return ""
    try:
        parsed = json.loads(evidence)
    except ValueError:
        return evidence
    if isinstance(parsed, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in parsed.items())
    if isinstance(parsed, list):
        return ", ".join(plain(v) for v in parsed)
    return plain(parsed)
