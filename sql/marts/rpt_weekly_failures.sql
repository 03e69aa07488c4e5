-- Job-stopping failures per calendar week (Monday 00:00 UTC) inside the observation window, for
-- the weekly report's failure history: failure events of the fleet's own telemetry
-- (int_failure_events), with or without repair tickets.
with events as (
    select * from int_failure_events
    where dataset is null
),

observation as (select * from stg_observation_window),

failures as (
    select events.failed_ts
    from events
    cross join observation
    where
        events.failed_ts >= observation.window_start
        and events.failed_ts < observation.window_end
),

final as (
    select
        date_trunc('week', failures.failed_ts) as week_start,
        count(*) as n_failures
    from failures
    group by date_trunc('week', failures.failed_ts)
)

select * from final
