-- Fleet goodput roll-up (docs/goodput.md §4): per dimension (gpu_bucket, account, iso_week of
-- the job's last end, all) and value, weighted by GPU-hours (goodput_gpu_hours) and by job
-- count (goodput_jobs) side by side, with each category's share of the GPU-hours (slow_share
-- counts a job whose slow time is not measured as 0: the seven shares add up to 1).
--
-- Badput by cause: fail-stop (failstop_*: work redone after an interruption and the restart,
-- wasted_s + restart_s; measured or estimated) and fail-slow (failslow_*: slow_s, over the jobs
-- whose slow time is measured, slow_measured, only: n_slow_measured of them, n_slow_jobs with
-- any), each as a share of the GPU-hours (failstop_share, failslow_share), as the mean of the
-- jobs' own shares (failstop_share_jobs, failslow_share_jobs) and in GPU-hours.
with jobs as (
    select
        fct_job_goodput.*,
        case
            when fct_job_goodput.n_gpus <= 8 then '1-8'
            when fct_job_goodput.n_gpus <= 64 then '9-64'
            when fct_job_goodput.n_gpus <= 512 then '65-512'
            when fct_job_goodput.n_gpus <= 4096 then '513-4096'
            else '4097+'
        end as gpu_bucket,
        case
            when fct_job_goodput.n_gpus <= 8 then 1
            when fct_job_goodput.n_gpus <= 64 then 2
            when fct_job_goodput.n_gpus <= 512 then 3
            when fct_job_goodput.n_gpus <= 4096 then 4
            else 5
        end as bucket_order,
        strftime(fct_job_goodput.last_end_ts, '%G-W%V') as iso_week
    from fct_job_goodput
    where fct_job_goodput.wall_s > 0 and fct_job_goodput.n_gpus > 0
),

keyed as (
    select
        'gpu_bucket' as dimension,
        jobs.gpu_bucket as value,
        jobs.bucket_order as sort_key,
        jobs.*
    from jobs
    union all
    select
        'account' as dimension,
        coalesce(jobs.account, '(none)') as value,
        0 as sort_key,
        jobs.*
    from jobs
    union all
    select
        'iso_week' as dimension,
        jobs.iso_week as value,
        0 as sort_key,
        jobs.*
    from jobs
    union all
    select
        'all' as dimension,
        'all' as value,
        0 as sort_key,
        jobs.*
    from jobs
),

final as (
    select
        keyed.dimension,
        keyed.value,
        count(*) as n_jobs,
        sum(keyed.n_gpus * keyed.wall_s) / 3600.0 as gpu_hours,
        sum(keyed.n_gpus * keyed.productive_s) / sum(keyed.n_gpus * keyed.wall_s)
            as goodput_gpu_hours,
        avg(keyed.goodput) as goodput_jobs,
        sum(keyed.n_gpus * keyed.productive_s) / sum(keyed.n_gpus * keyed.wall_s)
            as productive_share,
        sum(keyed.n_gpus * keyed.checkpoint_s) / sum(keyed.n_gpus * keyed.wall_s)
            as checkpoint_share,
        sum(keyed.n_gpus * keyed.wasted_s) / sum(keyed.n_gpus * keyed.wall_s) as wasted_share,
        sum(keyed.n_gpus * keyed.restart_s) / sum(keyed.n_gpus * keyed.wall_s) as restart_share,
        sum(keyed.n_gpus * keyed.startup_s) / sum(keyed.n_gpus * keyed.wall_s) as startup_share,
        sum(keyed.n_gpus * keyed.other_s) / sum(keyed.n_gpus * keyed.wall_s) as other_share,
        count(*) filter (where keyed.measured) as n_measured,
        count(*) filter (where not keyed.measured) as n_estimated,
        sum(keyed.n_gpus * coalesce(keyed.slow_s, 0)) / sum(keyed.n_gpus * keyed.wall_s)
            as slow_share,
        sum(keyed.n_gpus * (keyed.wasted_s + keyed.restart_s)) / sum(keyed.n_gpus * keyed.wall_s)
            as failstop_share,
        sum(keyed.n_gpus * keyed.slow_s) filter (where keyed.slow_measured)
        / sum(keyed.n_gpus * keyed.wall_s) filter (where keyed.slow_measured) as failslow_share,
        avg((keyed.wasted_s + keyed.restart_s) / keyed.wall_s) as failstop_share_jobs,
        avg(keyed.slow_s / keyed.wall_s) filter (where keyed.slow_measured)
            as failslow_share_jobs,
        sum(keyed.n_gpus * (keyed.wasted_s + keyed.restart_s)) / 3600.0 as failstop_gpu_hours,
        sum(keyed.n_gpus * keyed.slow_s) filter (where keyed.slow_measured) / 3600.0
            as failslow_gpu_hours,
        count(*) filter (where keyed.slow_measured) as n_slow_measured,
        count(*) filter (where keyed.slow_s > 0) as n_slow_jobs,
        min(keyed.sort_key) as sort_key
    from keyed
    group by keyed.dimension, keyed.value
)

select * from final
