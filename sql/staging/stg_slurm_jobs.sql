-- Slurm job records (allocations and steps), one row per (job_id, step, start).
-- The same record seen in several sacct dumps (a job still RUNNING in one, ended in the next) is
-- kept once: the version with an end time wins, then the latest file.
with source as (select * from raw_slurm_jobs),

ranked as (
    select
        source.*,
        row_number() over (
            partition by source.job_id, coalesce(source.step, ''), source.start_ts
            order by
                source.end_ts is null,
                source.end_ts desc,
                source.source_file desc,
                source.line_no desc
        ) as version_rank
    from source
),

final as (
    select
        ranked.job_id,
        ranked.job_id_raw,
        ranked.step,
        ranked.job_name,
        ranked.partition,
        ranked.account,
        ranked.user_name,
        ranked.alloc_nodes,
        ranked.n_gpus,
        ranked.node_list,
        ranked.nodes,
        ranked.submit_ts,
        ranked.start_ts,
        ranked.end_ts,
        ranked.elapsed_s,
        ranked.state,
        ranked.state_by_uid,
        ranked.exit_code,
        ranked.exit_signal,
        ranked.restarts,
        ranked.source_file,
        ranked.line_no
    from ranked
    where ranked.version_rank = 1
)

select * from final
