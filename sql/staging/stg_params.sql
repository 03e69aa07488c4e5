-- View parameters as one row (seconds unless named otherwise), from cfg_params with the documented
-- defaults (docs/data_contract.md §5).
with params as (select * from cfg_params),

final as (
    select
        coalesce(max(params.value) filter (where params.name = 'incident_gap_s'), 600)
            as incident_gap_s,
        coalesce(max(params.value) filter (where params.name = 'attribution_before_s'), 600)
            as attribution_before_s,
        coalesce(max(params.value) filter (where params.name = 'attribution_after_s'), 300)
            as attribution_after_s,
        -- failure events (int_failure_events): signals of one node whose spans come within
        -- failure_merge_s of each other are one failure; a replace ticket joins a failure of its
        -- node (and unit) that began at most ticket_match_s before it was opened
        coalesce(max(params.value) filter (where params.name = 'failure_merge_s'), 900)
            as failure_merge_s,
        coalesce(max(params.value) filter (where params.name = 'ticket_match_s'), 172800)
            as ticket_match_s,
        -- GPUs per node where neither nvidia-smi nor DCGM lists a node's GPUs (int_fleet_nodes);
        -- no default: without it the count comes from the fleet's other nodes or the jobs
        cast(max(params.value) filter (where params.name = 'gpus_per_node') as integer)
            as gpus_per_node,
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
        -- fail-slow (int_step_pace, docs/goodput.md §7): the slowness tolerated before a
        -- progress line is slow (a fraction of the baseline step time, the floor of theta), and
        -- the progress lines of each attempt that are warm-up
        coalesce(max(params.value) filter (where params.name = 'slow_theta_min'), 0.05)
            as slow_theta_min,
        cast(
            coalesce(max(params.value) filter (where params.name = 'slow_warmup_lines'), 3)
            as integer
        ) as slow_warmup_lines,
        max(params.value) filter (where params.name = 'window_start_epoch_s')
            as window_start_epoch_s,
        max(params.value) filter (where params.name = 'window_end_epoch_s')
            as window_end_epoch_s
    from params
)

select * from final
