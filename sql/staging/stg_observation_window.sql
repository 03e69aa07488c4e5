-- The observation window [window_start, window_end): set in cfg_params, or else the span of the
-- nvidia-smi snapshots (falling back to Slurm and Xid times) widened to whole UTC days.
with params as (select * from stg_params),

inventory_span as (
    select
        min(snapshot_ts) as first_ts,
        max(snapshot_ts) as last_ts
    from stg_inventory
),

other_span as (
    select
        min(ts) as first_ts,
        max(ts) as last_ts
    from (
        select start_ts as ts from stg_slurm_jobs
        union all
        select end_ts as ts from stg_slurm_jobs
        union all
        select ts from stg_xid_events
    )
),

span as (
    select
        coalesce(inventory_span.first_ts, other_span.first_ts) as first_ts,
        coalesce(inventory_span.last_ts, other_span.last_ts) as last_ts
    from inventory_span
    cross join other_span
),

days as (
    select
        -- truncate in UTC whatever the session time zone is
        date_trunc('day', span.first_ts at time zone 'UTC') as first_day,
        date_trunc('day', span.last_ts at time zone 'UTC') as last_day,
        span.last_ts at time zone 'UTC' as last_local
    from span
),

final as (
    select
        coalesce(
            to_timestamp(params.window_start_epoch_s),
            days.first_day at time zone 'UTC'
        ) as window_start,
        coalesce(
            to_timestamp(params.window_end_epoch_s),
            (case
                when days.last_local = days.last_day then days.last_day
                else days.last_day + interval 1 day
            end) at time zone 'UTC'
        ) as window_end
    from params
    cross join days
)

select * from final
