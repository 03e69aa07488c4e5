-- One row per training log (source_file) and job it holds, and the scheduler job it belongs to
-- (docs/goodput.md §2). A log holds one job unless its runs name several (an appended Slurm
-- output: int_training_log_runs.log_job); job_id is the run's job (the id it names, else the
-- ingest's --job option, a path pattern's {job}, or Slurm's slurm-<id>.out name), and a log job
-- with one belongs to the job whose job_id_raw or job_id (sacct JobID) equals it.
-- A log without a job id but with a host belongs to the job whose attempts ran on that host
-- and overlap the log's first-to-last timestamp. tie: job_id | host_time when exactly one job
-- matches; ambiguous when several do (candidates lists them; the log is not used); none.
with events as (select * from int_training_log_runs),

attempts as (select * from int_job_attempts),

attempt_nodes as (
    select
        attempts.job_id_raw,
        attempts.start_ts,
        attempts.end_ts,
        unnest(attempts.nodes) as node
    from attempts
),

logs as (
    select
        events.source_file,
        events.log_job as job_id,
        -- an NVRx score row's host is the node it names, not the log's
        coalesce(
            max(events.host) filter (where events.event != 'straggler'), max(events.host)
        ) as host,
        min(events.ts) as first_ts,
        max(events.ts) as last_ts,
        count(*) as n_events,
        -- Slurm's own lines (framework slurm) and NVRx's reports do not say which framework
        -- trained
        coalesce(
            any_value(events.framework) filter (
                where events.framework not in ('slurm', 'nvrx')
            ),
            any_value(events.framework) filter (where events.framework != 'slurm'),
            'slurm'
        ) as framework
    from events
    group by events.source_file, events.log_job
),

-- equi-joins only (an OR or a list test in a join condition is a nested loop: logs x attempts)
candidates as (
    select
        logs.source_file,
        logs.job_id,
        attempts.job_id_raw,
        'job_id' as tie_kind
    from logs
    inner join attempts on logs.job_id = attempts.job_id_raw
    union
    select
        logs.source_file,
        logs.job_id,
        attempts.job_id_raw,
        'job_id' as tie_kind
    from logs
    inner join attempts on logs.job_id = attempts.job_id
    union
    select
        logs.source_file,
        logs.job_id,
        attempt_nodes.job_id_raw,
        'host_time' as tie_kind
    from logs
    inner join attempt_nodes
        on
        logs.host = attempt_nodes.node
        and logs.last_ts >= attempt_nodes.start_ts
        and coalesce(attempt_nodes.end_ts, logs.last_ts) >= logs.first_ts
    where logs.job_id is null
),

matched as (
    select
        candidates.source_file,
        candidates.job_id,
        count(distinct candidates.job_id_raw) as n_candidates,
        list(distinct candidates.job_id_raw order by candidates.job_id_raw) as candidates,
        min(candidates.job_id_raw) as only_job,
        min(candidates.tie_kind) as tie_kind
    from candidates
    group by candidates.source_file, candidates.job_id
),

final as (
    select
        logs.source_file,
        logs.job_id,
        logs.host,
        logs.framework,
        logs.first_ts,
        logs.last_ts,
        logs.n_events,
        case when matched.n_candidates = 1 then matched.only_job end as job_id_raw,
        case
            when matched.n_candidates = 1 then matched.tie_kind
            when matched.n_candidates > 1 then 'ambiguous'
            else 'none'
        end as tie,
        coalesce(matched.candidates, []) as candidates
    from logs
    left join matched
        on
        logs.source_file = matched.source_file
        and logs.job_id is not distinct from matched.job_id
)

select * from final
