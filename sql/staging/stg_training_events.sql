-- Training-log events (docs/goodput.md §1), one row per source line, or per figure and rank of a
-- straggler report line (keyed by source_file, line_no, metric and rank): a row loaded twice
-- (the same log re-read under the same path) is kept once, the copy with a time first. job_id and
-- host are as the ingest named them (--job / --host, a path pattern, slurm-<id>.out); the log
-- is tied to a job in int_training_events.
--
-- Stream boundaries: a live log is parsed a read at a time, so a Megatron save whose lines
-- straddle two reads lost what the parser carries within a read. Here, for Megatron rows only:
-- a save start or "successfully saved" row without a time takes the nearest earlier row's printed
-- time (ts_inferred), and a timer's save end without a time takes the latest earlier save start
-- of the same step's time plus its duration_s (ts_inferred). A straggler row without a time (a
-- report's Bottom/Top line, an NVRx score line) takes the nearest earlier row's printed time
-- likewise. Rows the parser gave a time keep it.
--
-- Cost: a fleet-year holds millions of rows, so the ranking runs only over the lines loaded
-- twice, and the repair's windows only over the files that have a Megatron save row without a
-- time (none when every save was read whole), or a straggler row without one.
with source as (select * from raw_training_events),

twice as (
    select
        source.source_file,
        source.line_no,
        source.metric,
        source.rank
    from source
    group by source.source_file, source.line_no, source.metric, source.rank
    having count(*) > 1
),

ranked as (
    select
        source.*,
        row_number() over (
            partition by source.source_file, source.line_no, source.metric, source.rank
            order by source.ts desc nulls last, source.duration_s desc nulls last
        ) as version_rank
    from source
    semi join twice
        on
        source.source_file = twice.source_file
        and source.line_no = twice.line_no
        and source.metric is not distinct from twice.metric
        and source.rank is not distinct from twice.rank
),

deduplicated as (
    select source.* from source
    anti join twice
        on
        source.source_file = twice.source_file
        and source.line_no = twice.line_no
        and source.metric is not distinct from twice.metric
        and source.rank is not distinct from twice.rank
    union all
    select ranked.* exclude (version_rank) from ranked
    where ranked.version_rank = 1
),

to_repair as (
    select distinct deduplicated.source_file
    from deduplicated
    where
        deduplicated.ts is null
        and (
            (
                deduplicated.framework = 'megatron'
                and deduplicated.event in ('checkpoint_save_start', 'checkpoint_save_end')
            )
            or deduplicated.event = 'straggler'
        )
),

in_scope as (
    select deduplicated.* from deduplicated
    semi join to_repair on deduplicated.source_file = to_repair.source_file
),

earlier as (
    select
        deduplicated.*,
        last_value(
            case when not deduplicated.ts_inferred then deduplicated.ts end ignore nulls
        ) over (
            partition by deduplicated.source_file
            order by deduplicated.line_no
            rows between unbounded preceding and 1 preceding
        ) as printed_before
    from in_scope as deduplicated
),

starts_repaired as (
    select
        earlier.*,
        case
            when earlier.ts is not null then null
            when earlier.event = 'straggler' then earlier.printed_before
            when earlier.framework != 'megatron' then null
            when
                earlier.event = 'checkpoint_save_start'
                or (earlier.event = 'checkpoint_save_end' and earlier.duration_s is null)
                then earlier.printed_before
        end as start_repaired_ts
    from earlier
),

with_start as (
    select
        starts_repaired.*,
        last_value(
            case
                when starts_repaired.event = 'checkpoint_save_start' then starts_repaired.step
            end ignore nulls
        ) over (
            partition by starts_repaired.source_file
            order by starts_repaired.line_no
            rows between unbounded preceding and 1 preceding
        ) as start_step_before,
        last_value(
            case
                when
                    starts_repaired.event = 'checkpoint_save_start'
                    then coalesce(starts_repaired.ts, starts_repaired.start_repaired_ts)
            end ignore nulls
        ) over (
            partition by starts_repaired.source_file
            order by starts_repaired.line_no
            rows between unbounded preceding and 1 preceding
        ) as start_ts_before
    from starts_repaired
),

repaired as (
    select
        with_start.*,
        coalesce(
            with_start.start_repaired_ts,
            case
                when
                    with_start.framework = 'megatron'
                    and with_start.ts is null
                    and with_start.event = 'checkpoint_save_end'
                    and with_start.duration_s is not null
                    and with_start.start_step_before = with_start.step
                    then with_start.start_ts_before + to_microseconds(
                        cast(round(with_start.duration_s * 1e6) as bigint)
                    )
            end
        ) as repaired_ts
    from with_start
),

untouched as (
    select
        deduplicated.*,
        cast(null as timestamptz) as repaired_ts
    from deduplicated
    anti join to_repair on deduplicated.source_file = to_repair.source_file
),

all_rows as (
    select
        repaired.job_id,
        repaired.host,
        repaired.source_file,
        repaired.line_no,
        repaired.event,
        repaired.framework,
        repaired.step,
        repaired.ts,
        repaired.ts_inferred,
        repaired.step_time_s,
        repaired.duration_s,
        repaired.loss,
        repaired.checkpoint_path,
        repaired.job_named,
        repaired.detail,
        repaired.global_batch,
        repaired.rank,
        repaired.metric,
        repaired.value,
        repaired.repaired_ts
    from repaired
    union all
    select
        untouched.job_id,
        untouched.host,
        untouched.source_file,
        untouched.line_no,
        untouched.event,
        untouched.framework,
        untouched.step,
        untouched.ts,
        untouched.ts_inferred,
        untouched.step_time_s,
        untouched.duration_s,
        untouched.loss,
        untouched.checkpoint_path,
        untouched.job_named,
        untouched.detail,
        untouched.global_batch,
        untouched.rank,
        untouched.metric,
        untouched.value,
        untouched.repaired_ts
    from untouched
),

final as (
    select
        repaired.job_id,
        repaired.host,
        repaired.source_file,
        cast(repaired.line_no as bigint) as line_no,
        repaired.event,
        repaired.framework,
        repaired.step,
        coalesce(repaired.ts, repaired.repaired_ts) as ts,
        repaired.ts_inferred or repaired.repaired_ts is not null as ts_inferred,
        repaired.step_time_s,
        repaired.duration_s,
        repaired.loss,
        repaired.checkpoint_path,
        repaired.job_named,
        repaired.detail,
        repaired.global_batch,
        repaired.rank,
        repaired.metric,
        repaired.value
    from all_rows as repaired
)

select * from final
