-- Slurm job records whose sacct dumps disagree on how an attempt ended: one row per version of a
-- (cluster, job_id, step, start) that has an end time, for every key with two or more such versions that
-- differ in state, end time or exit code (a RUNNING snapshot later ended is no conflict).
-- `chosen` marks the version stg_slurm_jobs keeps (its rule is documented there); the others are
-- kept here, never dropped silently.
with source as (select * from raw_slurm_jobs),

staged as (select * from stg_slurm_jobs),

ended as (
    select
        source.cluster,
        source.job_id,
        source.step,
        source.start_ts,
        source.end_ts,
        source.state,
        source.exit_code,
        source.exit_signal,
        source.source_file,
        source.line_no
    from source
    where source.end_ts is not null
),

disputed as (
    select
        coalesce(ended.cluster, '') as cluster_key,
        ended.job_id,
        coalesce(ended.step, '') as step_key,
        ended.start_ts,
        count(
            distinct (ended.state, ended.end_ts, ended.exit_code, ended.exit_signal)  -- noqa: ST08, LT01, LT06
        ) as n_versions
    from ended
    group by coalesce(ended.cluster, ''), ended.job_id, coalesce(ended.step, ''), ended.start_ts
    having
        -- a row value: distinct versions of the four columns together (ST08 would drop the row)
        count(distinct (ended.state, ended.end_ts, ended.exit_code, ended.exit_signal)) > 1  -- noqa: ST08, LT01, LT06
),

final as (
    select
        ended.cluster,
        ended.job_id,
        ended.step,
        ended.start_ts,
        ended.end_ts,
        ended.state,
        ended.exit_code,
        ended.exit_signal,
        ended.source_file,
        ended.line_no,
        disputed.n_versions,
        coalesce(
            staged.source_file = ended.source_file and staged.line_no = ended.line_no, false
        ) as chosen
    from ended
    inner join disputed
        on coalesce(ended.cluster, '') = disputed.cluster_key
        and ended.job_id = disputed.job_id
        and coalesce(ended.step, '') = disputed.step_key
        and ended.start_ts = disputed.start_ts
    left join staged
        on coalesce(ended.cluster, '') = coalesce(staged.cluster, '')
        and ended.job_id = staged.job_id
        and coalesce(ended.step, '') = coalesce(staged.step, '')
        and ended.start_ts = staged.start_ts
)

select * from final
