-- Job-stopping failures, one row per physical failure of a unit, from whatever telemetry a fleet
-- has (int_failure_events: the merge rules and the end of each failure are in its header and in
-- docs/data_contract.md §5), with two flags:
--   in_window: the failure began inside the observation window (fleet: [W0, W1); fault logs:
--     after their unit's window start and before its end, when the mapping gives them);
--   in_lives: it ends a failure-process life (fct_component_lives): false outside the window, on
--     a unit not at risk (a node whose GPU count is unknown, a GPU slot no source lists, a node
--     no longer in service) or while the unit was still down from an earlier failure, and for
--     fault logs (their lives are int_fault_lives).
with events as (select * from int_failure_events),

observation as (select * from stg_observation_window),

lives as (
    select distinct int_component_lives.failure_id
    from int_component_lives
    where int_component_lives.failed
),

fault_windows as (
    select
        stg_fault_events.dataset,
        stg_fault_events.unit_id,
        min(stg_fault_events.window_start) as window_start,
        max(stg_fault_events.window_end) as window_end
    from stg_fault_events
    group by stg_fault_events.dataset, stg_fault_events.unit_id
),

final as (
    select
        events.*,
        case
            when events.dataset is null
                then
                    events.failed_ts >= observation.window_start
                    and events.failed_ts < observation.window_end
            else
                coalesce(events.failed_ts > fault_windows.window_start, true)
                and coalesce(events.failed_ts < fault_windows.window_end, true)
        end as in_window,
        lives.failure_id is not null as in_lives
    from events
    cross join observation
    left join fault_windows
        on events.dataset = fault_windows.dataset
        and events.host = fault_windows.unit_id
    left join lives
        on events.failure_id = lives.failure_id
)

select * from final
