-- Nodes and GPUs that are repeatedly slow (docs/goodput.md §7): one row per blamed host and GPU
-- (gpu null: the node as a whole) with at least 2 fail-slow episodes (int_slow_episodes), and
-- what they cost: slow_s (the episodes' time above the baseline), slow_gpu_hours (that time x
-- the GPUs of the job, which all wait for the slowest; null for a log-only job, whose GPUs the
-- log does not say), episode_hours (the episodes' length). Only attributed episodes count
-- (int_slow_attribution: per_rank or dcgm, a blamed host); unattributed ones name no unit.
with episodes as (select * from int_slow_episodes),

jobs as (
    select
        int_job_attempts.job_id_raw,
        max(int_job_attempts.n_gpus) as n_gpus
    from int_job_attempts
    group by int_job_attempts.job_id_raw
),

final as (
    select
        episodes.blamed_host as host,
        episodes.blamed_gpu as gpu,
        case when episodes.blamed_gpu is null then 'node' else 'gpu' end as unit_level,
        count(*) as n_episodes,
        count(distinct episodes.job_id_raw) as n_jobs,
        min(episodes.start_ts) as first_ts,
        max(episodes.end_ts) as last_ts,
        sum(episodes.slow_s) as slow_s,
        sum(episodes.slow_s * jobs.n_gpus) / 3600.0 as slow_gpu_hours,
        sum(epoch(episodes.end_ts - episodes.start_ts)) / 3600.0 as episode_hours,
        max(episodes.slowdown) as max_slowdown
    from episodes
    left join jobs on episodes.job_id_raw = jobs.job_id_raw
    where episodes.blamed_host is not null
    group by episodes.blamed_host, episodes.blamed_gpu
    having count(*) >= 2
)

select * from final
