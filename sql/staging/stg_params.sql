-- View parameters as one row (seconds), from cfg_params with the documented defaults.
with params as (select * from cfg_params),

final as (
    select
        coalesce(max(params.value) filter (where params.name = 'incident_gap_s'), 600)
            as incident_gap_s,
        coalesce(max(params.value) filter (where params.name = 'attribution_before_s'), 600)
            as attribution_before_s,
        coalesce(max(params.value) filter (where params.name = 'attribution_after_s'), 300)
            as attribution_after_s,
        -- the estimated goodput ledger's assumptions (docs/goodput.md §3)
        coalesce(max(params.value) filter (where params.name = 'assumed_startup_s'), 300)
            as assumed_startup_s,
        coalesce(max(params.value) filter (where params.name = 'assumed_restart_s'), 300)
            as assumed_restart_s,
        coalesce(
            max(params.value) filter (where params.name = 'assumed_checkpoint_interval_s'), 3600
        ) as assumed_checkpoint_interval_s,
        coalesce(max(params.value) filter (where params.name = 'assumed_checkpoint_s'), 60)
            as assumed_checkpoint_s,
        max(params.value) filter (where params.name = 'window_start_epoch_s')
            as window_start_epoch_s,
        max(params.value) filter (where params.name = 'window_end_epoch_s')
            as window_end_epoch_s
    from params
)

select * from final
