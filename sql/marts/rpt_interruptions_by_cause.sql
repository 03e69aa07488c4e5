-- Job interruptions by root cause and attribution, with lost GPU-hours and restart overhead.
with interruptions as (select * from int_job_interruptions),

final as (
    select
        interruptions.cause_class,
        interruptions.attribution,
        count(*) as n_interruptions,
        sum(interruptions.gpu_hours) as gpu_hours_interrupted,
        median(interruptions.restart_overhead_s) as median_restart_overhead_s
    from interruptions
    group by interruptions.cause_class, interruptions.attribution
)

select * from final
order by n_interruptions desc, cause_class asc
