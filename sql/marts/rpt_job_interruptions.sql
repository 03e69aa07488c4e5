-- Job interruptions with the category of their cause class (hardware or not), for the report's
-- root-cause table, restart overhead and the week's largest interruptions.
with interruptions as (select * from int_job_interruptions),

classes as (select * from seed_component_class),

final as (
    select
        interruptions.job_id,
        interruptions.attempt,
        interruptions.job_name,
        interruptions.user_name,
        interruptions.n_nodes,
        interruptions.n_gpus,
        interruptions.end_ts,
        interruptions.state,
        interruptions.cause_class,
        interruptions.attribution,
        interruptions.suspect_nodes,
        interruptions.restart_overhead_s,
        interruptions.gpu_hours,
        classes.category,
        coalesce(classes.category, 'unknown') = 'hardware' as is_hardware
    from interruptions
    left join classes
        on interruptions.cause_class = classes.component_class
)

select * from final
