-- Node-level recurrence data for repairable-system analysis: one row per job-stopping failure of
-- any unit on a node inside the observation window (int_failure_events of the fleet's own
-- telemetry; component_class, time_h since the window start), plus one row with null time_h for
-- each node that never failed. start_h / end_h bound the node's observation (its install, else
-- the window start; its removal, else the window end). Nodes are the fleet from telemetry
-- (int_fleet_nodes).
with failures_all as (
    select * from int_failure_events
    where dataset is null
),

nodes as (select * from int_fleet_nodes),

observation as (select * from stg_observation_window),

windows as (
    select
        nodes.node,
        nodes.rack,
        nodes.batch,
        greatest(coalesce(nodes.installed_ts, observation.window_start), observation.window_start)
            as from_ts,
        least(coalesce(nodes.removed_ts, observation.window_end), observation.window_end)
            as to_ts
    from nodes
    cross join observation
),

observed as (
    select
        windows.*,
        epoch(windows.from_ts - observation.window_start) / 3600.0 as start_h,
        epoch(windows.to_ts - observation.window_start) / 3600.0 as end_h
    from windows
    cross join observation
    where windows.to_ts > windows.from_ts
),

failures as (
    select
        failures_all.host as node,
        failures_all.component_class,
        failures_all.failed_ts,
        epoch(failures_all.failed_ts - observation.window_start) / 3600.0 as time_h
    from failures_all
    cross join observation
),

final as (
    select
        observed.node,
        observed.rack,
        observed.batch,
        observed.start_h,
        observed.end_h,
        failures.component_class,
        failures.failed_ts,
        failures.time_h
    from observed
    left join failures
        on observed.node = failures.node
        and observed.from_ts <= failures.failed_ts
        and observed.to_ts > failures.failed_ts
)

select * from final
