-- One row per job attempt. Slurm keeps a requeued job's earlier runs as extra allocation records
-- with the same JobIDRaw (sacct --duplicates): ordered by start they are attempts 1, 2, ...
-- Records that never started (pending, cancelled in queue) are not attempts.
with jobs as (
    select * from stg_slurm_jobs
    where step is null and start_ts is not null
),

ordered as (
    select
        jobs.*,
        row_number() over job_runs as attempt,
        lead(jobs.start_ts) over job_runs as next_start_ts
    from jobs
    window job_runs as (partition by jobs.job_id_raw order by jobs.start_ts, jobs.submit_ts)
),

final as (
    select
        ordered.job_id_raw,
        ordered.attempt,
        ordered.job_id,
        ordered.job_name,
        ordered.user_name,
        ordered.account,
        ordered.partition,
        ordered.nodes,
        len(ordered.nodes) as n_nodes,
        ordered.n_gpus,
        ordered.submit_ts,
        ordered.start_ts,
        ordered.end_ts,
        ordered.state,
        ordered.exit_code,
        ordered.exit_signal,
        ordered.state in ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'BOOT_FAIL')
        and ordered.end_ts is not null as is_interruption,
        ordered.next_start_ts,
        -- seconds from this attempt's end to the next attempt's start (requeue + queue wait)
        epoch(ordered.next_start_ts - ordered.end_ts) as restart_overhead_s,
        -- GPU-hours the attempt held (to its end, or to now while it runs)
        ordered.n_gpus * epoch(coalesce(ordered.end_ts, ordered.start_ts) - ordered.start_ts)
        / 3600.0 as gpu_hours
    from ordered
)

select * from final
