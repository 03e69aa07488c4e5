-- Attempts that ended abnormally (FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL) inside the
-- observation window, with a root cause, for every scheduler (slurm, kubernetes, elastic).
-- Candidates are failure incidents (Xid, is_failure) whose first line is on one of the attempt's
-- nodes, and replace tickets opened on those nodes, within
-- [end - attribution_before_s, end + attribution_after_s]. C = their component classes. Node
-- events in the same interval on those nodes (a Slurm node event starting, a Kubernetes
-- NodeNotReady / Rebooted / GPU-unhealthy event) are scheduler evidence without a class, unless
-- they are planned work (stg_node_events.is_planned, a Kubernetes planned_work event, from
-- seed_planned_reason): then they are a candidate of class 'maintenance' (planned work is not
-- failure). The DCGM Xid gauge is never evidence: failures come from kernel-log Xid lines only.
--   |C| > 1                                   -> ambiguous / ambiguous
--   |C| = 1 with an Xid                       -> that class / hardware-confirmed
--   |C| = 1, ticket or planned work only      -> that class / scheduler-only
--   |C| = 0 and (NODE_FAIL or a node event)   -> unknown / scheduler-only
--   |C| = 0 and (OUT_OF_MEMORY, a Kubernetes OOMKilled, or an application exit: Kubernetes
--             reason Error with code 1-127, torchrun worker exit code > 0)
--                                             -> application / application
--   otherwise                                 -> unknown / unattributed
with attempts as (select * from int_job_attempts),

params as (select * from stg_params),

observation as (select * from stg_observation_window),

incidents as (
    select * from int_incidents
    where is_failure
),

tickets as (
    select * from stg_repairs
    where action = 'replace'
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

candidates as (
    select
        attempt_nodes.job_id_raw,
        attempt_nodes.attempt,
        incidents.component_class,
        'xid' as evidence,
        incidents.incident_id,
        attempt_nodes.node
    from attempt_nodes
    inner join incidents
        on attempt_nodes.node = incidents.host
        and incidents.first_ts between attempt_nodes.from_ts and attempt_nodes.to_ts
    union all
    select
        attempt_nodes.job_id_raw,
        attempt_nodes.attempt,
        tickets.component_class,
        'ticket' as evidence,
        cast(null as varchar) as incident_id,
        attempt_nodes.node
    from attempt_nodes
    inner join tickets
        on attempt_nodes.node = tickets.node
        and tickets.opened_ts between attempt_nodes.from_ts and attempt_nodes.to_ts
    union all
    select
        attempt_nodes.job_id_raw,
        attempt_nodes.attempt,
        case when node_events.is_planned then 'maintenance' end as component_class,
        case when node_events.is_planned then 'planned' else 'node_event' end as evidence,
        cast(null as varchar) as incident_id,
        attempt_nodes.node
    from attempt_nodes
    inner join node_events
        on attempt_nodes.node = node_events.node
        and node_events.ts between attempt_nodes.from_ts and attempt_nodes.to_ts
),

evidence as (
    select
        candidates.job_id_raw,
        candidates.attempt,
        count(distinct candidates.component_class) as n_classes,
        min(candidates.component_class) as only_class,
        bool_or(candidates.evidence = 'xid') as has_xid,
        bool_or(candidates.evidence = 'node_event') as has_node_event,
        min(candidates.incident_id) as incident_id,
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
        evidence.incident_id,
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
)

select * from final
