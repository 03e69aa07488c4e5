-- Per component class: units at risk, failures, exposure and the naive (exponential) MTBF of the
-- failure process (int_component_lives: every job-stopping failure, with or without a ticket),
-- the failure events inside the window (n_failure_events: also those on units not at risk, e.g.
-- a node whose GPU count is unknown), and the job interruptions attributed to the class.
with lives as (select * from int_component_lives),

events as (
    select * from int_failure_events
    where dataset is null
),

observation as (select * from stg_observation_window),

interruptions as (select * from int_job_interruptions),

by_class as (
    select
        lives.component_class,
        any_value(lives.unit_level) as unit_level,
        count(*) as units_at_risk,
        count(*) filter (where lives.failed) as n_failures,
        sum(lives.exit_h - lives.entry_h) as exposure_h
    from lives
    group by lives.component_class
),

event_counts as (
    select
        events.component_class,
        any_value(events.unit_level) as unit_level,
        count(*) as n_failure_events
    from events
    cross join observation
    where
        events.failed_ts >= observation.window_start
        and events.failed_ts < observation.window_end
    group by events.component_class
),

interrupted as (
    select
        interruptions.cause_class as component_class,
        count(*) as n_interruptions
    from interruptions
    group by interruptions.cause_class
),

classes as (
    select
        coalesce(by_class.component_class, event_counts.component_class) as component_class,
        coalesce(by_class.unit_level, event_counts.unit_level) as unit_level,
        coalesce(by_class.units_at_risk, 0) as units_at_risk,
        coalesce(by_class.n_failures, 0) as n_failures,
        coalesce(by_class.exposure_h, 0.0) as exposure_h,
        coalesce(event_counts.n_failure_events, 0) as n_failure_events
    from by_class
    full outer join event_counts
        on by_class.component_class = event_counts.component_class
),

final as (
    select
        classes.component_class,
        classes.unit_level,
        classes.units_at_risk,
        classes.n_failures,
        classes.exposure_h,
        case
            when classes.n_failures > 0 then classes.exposure_h / classes.n_failures
        end as naive_mtbf_h,
        coalesce(interrupted.n_interruptions, 0) as n_interruptions,
        classes.n_failure_events
    from classes
    left join interrupted
        on classes.component_class = interrupted.component_class
)

select * from final
order by n_failures desc, component_class asc
