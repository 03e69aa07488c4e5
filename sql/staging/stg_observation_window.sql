-- The observation window [window_start, window_end): set in cfg_params (window_start_epoch_s,
-- window_end_epoch_s; `relia fit|summary --window-start/--window-end`), or else the span of the
-- nvidia-smi snapshots, or else the span of every timestamp any other source holds (Slurm jobs,
-- kernel-log Xid lines, Kubernetes events and pods, torchrun agent lines, DCGM scrapes, Slurm
-- node events, repair tickets, training-log lines), widened to whole UTC days. So a warehouse
-- with only Kubernetes, only torchrun, only DCGM data or only training logs still has a window.
with params as (select * from stg_params),

inventory_span as (
    select
        min(snapshot_ts) as first_ts,
        max(snapshot_ts) as last_ts
    from stg_inventory
),

-- the other sources' spans straight from their raw tables: a duplicate row (re-read file,
-- overlapping dump) has the same times, so staging's deduplication (a window over every DCGM
-- sample) would change nothing here but its cost
telemetry_times as (
    select start_ts as ts from stg_slurm_jobs
    union all
    select end_ts as ts from stg_slurm_jobs
    union all
    select ts from stg_xid_events
    union all
    select coalesce(first_ts, event_time_ts, created_ts) as ts from raw_k8s_events
    union all
    select coalesce(last_ts, event_time_ts, first_ts, created_ts) as ts from raw_k8s_events
    union all
    select started_ts as ts from raw_k8s_pods
    union all
    select finished_ts as ts from raw_k8s_pods
    union all
    select ts from raw_elastic_events
    union all
    select ts from raw_training_events
    union all
    select ts from raw_dcgm_samples
    union all
    select start_ts as ts from raw_node_events
    union all
    select end_ts as ts from raw_node_events
    union all
    select opened_ts as ts from stg_repairs
    union all
    select closed_ts as ts from stg_repairs
),

other_span as (
    select
        min(telemetry_times.ts) as first_ts,
        max(telemetry_times.ts) as last_ts
    from telemetry_times
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
