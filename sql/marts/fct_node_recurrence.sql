-- Node-level recurrence data for repairable-system analysis: one row per failure of any unit on a
-- node (component_class, time_h since the window start), plus one row with null time_h for each
-- node that never failed. start_h / end_h bound the node's observation (installed, removed).
with lives as (select * from int_component_lives),

fleet as (select * from stg_fleet),

observation as (select * from stg_observation_window),

windows as (
    select
        fleet.node,
        fleet.rack,
        fleet.batch,
        epoch(greatest(fleet.installed_ts, observation.window_start) - observation.window_start)
        / 3600.0 as start_h,
        epoch(
            least(coalesce(fleet.removed_ts, observation.window_end), observation.window_end)
            - observation.window_start
        ) / 3600.0 as end_h
    from fleet
    cross join observation
    where
        coalesce(fleet.removed_ts, observation.window_end) > observation.window_start
        and fleet.installed_ts < observation.window_end
),

failures as (
    select
        lives.node,
        lives.component_class,
        lives.observed_to_ts as failed_ts,
        epoch(lives.observed_to_ts - observation.window_start) / 3600.0 as time_h
    from lives
    cross join observation
    where lives.failed
),

final as (
    select
        windows.node,
        windows.rack,
        windows.batch,
        windows.start_h,
        windows.end_h,
        failures.component_class,
        failures.failed_ts,
        failures.time_h
    from windows
    left join failures
        on windows.node = failures.node
)

select * from final
