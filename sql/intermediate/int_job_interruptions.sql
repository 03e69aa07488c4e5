-- Attempts that ended abnormally (FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL) inside the
-- observation window, with a root cause, for every scheduler (slurm, kubernetes, elastic)
-- (docs/data_contract.md §5 Attempts, §7.3 Attribution).
-- Candidates are the failure events of the fleet (int_failure_events, one per physical failure
-- whatever telemetry saw it: Xid runs, fatal DCGM health, failure node events, Kubernetes node
-- events, node-lost attempts, replace tickets) with a signal (int_failure_members, not only
-- evidence of its end) on one of the attempt's nodes in [end - attribution_before_s,
-- end + attribution_after_s]: a node-lost attempt's own signal makes the failure it joined one.
-- A failure of class 'unknown' names no class: it is evidence only. C = the classes of the other candidates. Planned work on those nodes in the
-- interval (a planned Slurm node event, stg_node_events.is_planned; a Kubernetes planned_work
-- event; seed_planned_reason) is a candidate of class 'maintenance' (planned work is not a
-- failure). Any other node event starting in the interval on those nodes (a Slurm node event, a
-- Kubernetes NodeNotReady / Rebooted / GPU-unhealthy event) is evidence without a class.
-- The DCGM Xid gauge is never evidence: failures come from kernel-log Xid lines, not from it.
--   |C| > 1                                              -> ambiguous / ambiguous
--   |C| = 1, an Xid or DCGM signal among the sources of
--            a candidate failure of that class           -> that class / hardware-confirmed
--   |C| = 1 otherwise (node event, ticket, Kubernetes,
--            planned work)                               -> that class / scheduler-only
--   |C| = 0 and (NODE_FAIL, evidence: a failure of class
--            unknown or a node event)                    -> unknown / scheduler-only
--   |C| = 0 and (OUT_OF_MEMORY, a Kubernetes OOMKilled, or an application exit: Kubernetes
--             reason Error with code 1-127, torchrun worker exit code > 0)
--                                                        -> application / application
--   otherwise                                            -> unknown / unattributed
-- failure_id is the candidate failure of the class (the earliest); incident_id the first Xid
-- incident (int_incidents, is_failure) on the attempt's nodes in the interval, if any.
with attempts as (select * from int_job_attempts),

params as (select * from stg_params),

observation as (select * from stg_observation_window),

failures as (
    select * from int_failure_events
    where dataset is null
),

-- the signals of every failure (evidence that only tells an end is no signal of it)
failure_signals as (
    select
        int_failure_members.host,
        int_failure_members.ts,
        int_failure_members.event_key
    from int_failure_members
    where
        int_failure_members.dataset is null
        and not int_failure_members.is_evidence
),

incidents as (
    select * from int_incidents
    where is_failure
),

node_events as (
    select
        stg_node_events.node,
        stg_node_events.start_ts as ts,
        stg_node_events.is_planned
    from stg_node_events
    union all
    select
        stg_k8s_events.node,
        stg_k8s_events.ts,
        stg_k8s_events.node_signal = 'planned_work' as is_planned
    from stg_k8s_events
    where
        stg_k8s_events.node_signal in (
            'node_not_ready', 'node_rebooted', 'gpu_unhealthy', 'planned_work'
        )
),

interrupted as (
    select attempts.*
    from attempts
    cross join observation
    where
        attempts.is_interruption
        and attempts.end_ts >= observation.window_start
        and attempts.end_ts < observation.window_end
),

attempt_nodes as (
    select
        interrupted.job_id_raw,
        interrupted.attempt,
        interrupted.end_ts - to_seconds(params.attribution_before_s) as from_ts,
        interrupted.end_ts + to_seconds(params.attribution_after_s) as to_ts,
        unnest(interrupted.nodes) as node
    from interrupted
    cross join params
),

-- failures with a signal on one of the attempt's nodes in the interval (its own node-lost signal
-- is one: a node-lost attempt is a candidate of the failure it joined)
failure_candidates as (
    select distinct
        attempt_nodes.job_id_raw,
        attempt_nodes.attempt,
        failure_signals.event_key
    from attempt_nodes
    inner join failure_signals
        on attempt_nodes.node = failure_signals.host
        and failure_signals.ts between attempt_nodes.from_ts and attempt_nodes.to_ts
),

candidates as (
    select
        failure_candidates.job_id_raw,
        failure_candidates.attempt,
        nullif(failures.component_class, 'unknown') as component_class,
        case
            when list_has_any(failures.sources, ['xid', 'dcgm']) then 'xid'
            else 'failure'
        end as evidence,
        failures.failure_id,
        failures.failed_ts,
        failures.host as node
    from failure_candidates
    inner join failures
        on failure_candidates.event_key = failures.event_key
    union all
    select
        attempt_nodes.job_id_raw,
        attempt_nodes.attempt,
        case when node_events.is_planned then 'maintenance' end as component_class,
        case when node_events.is_planned then 'planned' else 'node_event' end as evidence,
        cast(null as varchar) as failure_id,
        node_events.ts as failed_ts,
        attempt_nodes.node
    from attempt_nodes
    inner join node_events
        on attempt_nodes.node = node_events.node
        and node_events.ts between attempt_nodes.from_ts and attempt_nodes.to_ts
),

xid_incidents as (
    select
        attempt_nodes.job_id_raw,
        attempt_nodes.attempt,
        min(incidents.incident_id) as incident_id
    from attempt_nodes
    inner join incidents
        on attempt_nodes.node = incidents.host
        and incidents.first_ts between attempt_nodes.from_ts and attempt_nodes.to_ts
    group by attempt_nodes.job_id_raw, attempt_nodes.attempt
),

evidence as (
    select
        candidates.job_id_raw,
        candidates.attempt,
        count(distinct candidates.component_class) as n_classes,
        min(candidates.component_class) as only_class,
        bool_or(candidates.evidence = 'xid' and candidates.component_class is not null)
            as has_xid,
        -- evidence without a class: a failure of class unknown, a node event not planned
        bool_or(candidates.component_class is null) as has_node_event,
        first(
            candidates.failure_id order by candidates.failed_ts, candidates.failure_id
        ) filter (where candidates.component_class is not null) as failure_id,
        list(distinct candidates.node order by candidates.node) as suspect_nodes
    from candidates
    group by candidates.job_id_raw, candidates.attempt
),

final as (
    select
        interrupted.job_id_raw,
        interrupted.attempt,
        interrupted.job_id,
        interrupted.job_name,
        interrupted.user_name,
        interrupted.nodes,
        interrupted.n_nodes,
        interrupted.n_gpus,
        interrupted.start_ts,
        interrupted.end_ts,
        interrupted.state,
        interrupted.exit_code,
        case
            when evidence.n_classes > 1 then 'ambiguous'
            when evidence.n_classes = 1 then evidence.only_class
            when interrupted.state = 'NODE_FAIL' or evidence.has_node_event then 'unknown'
            when interrupted.state = 'OUT_OF_MEMORY' or interrupted.is_application_exit
                then 'application'
            else 'unknown'
        end as cause_class,
        case
            when evidence.n_classes > 1 then 'ambiguous'
            when evidence.n_classes = 1 and evidence.has_xid then 'hardware-confirmed'
            when evidence.n_classes = 1 then 'scheduler-only'
            when interrupted.state = 'NODE_FAIL' or evidence.has_node_event then 'scheduler-only'
            when interrupted.state = 'OUT_OF_MEMORY' or interrupted.is_application_exit
                then 'application'
            else 'unattributed'
        end as attribution,
        case when evidence.n_classes = 1 then evidence.failure_id end as failure_id,
        xid_incidents.incident_id,
        evidence.suspect_nodes,
        interrupted.restart_overhead_s,
        interrupted.gpu_hours,
        interrupted.scheduler,
        interrupted.termination_reason,
        coalesce(evidence.has_node_event, false) as has_node_event
    from interrupted
    left join evidence
        on interrupted.job_id_raw = evidence.job_id_raw
        and interrupted.attempt = evidence.attempt
    left join xid_incidents
        on interrupted.job_id_raw = xid_incidents.job_id_raw
        and interrupted.attempt = xid_incidents.attempt
)

select * from final
