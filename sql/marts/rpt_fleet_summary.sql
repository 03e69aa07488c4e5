-- Per component class: units at risk, failures, exposure and the naive (exponential) MTBF,
-- plus job interruptions attributed to the class, over the observation window.
with lives as (select * from int_component_lives),

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

interrupted as (
    select
        interruptions.cause_class as component_class,
        count(*) as n_interruptions
    from interruptions
    group by interruptions.cause_class
),

final as (
    select
        by_class.component_class,
        by_class.unit_level,
        by_class.units_at_risk,
        by_class.n_failures,
        by_class.exposure_h,
        case
            when by_class.n_failures > 0 then by_class.exposure_h / by_class.n_failures
        end as naive_mtbf_h,
        coalesce(interrupted.n_interruptions, 0) as n_interruptions
    from by_class
    left join interrupted
        on by_class.component_class = interrupted.component_class
)

select * from final
order by n_failures desc, component_class asc
