-- Training-log events (docs/goodput.md §1), one row per source line: a line loaded twice (the
-- same log re-read under the same path) is kept once, the copy with a time first. job_id and
-- host are as the ingest named them (--job / --host, a path pattern, slurm-<id>.out); the log
-- is tied to a job in int_training_events.
with source as (select * from raw_training_events),

ranked as (
    select
        source.*,
        row_number() over (
            partition by source.source_file, source.line_no
            order by source.ts desc nulls last, source.duration_s desc nulls last
        ) as version_rank
    from source
),

final as (
    select
        ranked.job_id,
        ranked.host,
        ranked.source_file,
        cast(ranked.line_no as bigint) as line_no,
        ranked.event,
        ranked.framework,
        ranked.step,
        ranked.ts,
        ranked.ts_inferred,
        ranked.step_time_s,
        ranked.duration_s,
        ranked.loss,
        ranked.checkpoint_path
    from ranked
    where ranked.version_rank = 1
)

select * from final
