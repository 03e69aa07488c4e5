-- Training-log events of tied logs (int_training_log_ties) with the attempt of their job whose
-- [start_ts, end_ts] holds them. A line without its own time (a Megatron checkpoint load) is
-- placed by the next timed line of its file, but keeps ts null: it gives a step, not a time.
-- Lines printed once per rank (the same event and step twice in one attempt) are kept once:
-- the earliest step line, the latest save or load line. attempt is null for an event outside
-- every attempt of its job (counted in fct_job_goodput.n_events_outside, never used). A save
-- line that names no step gets the step of the file's last step line before it.
with events as (select * from stg_training_events),

ties as (
    select * from int_training_log_ties
    where job_id_raw is not null
),

attempts as (select * from int_job_attempts),

placed as (
    select
        events.* replace (
            -- a save line that names no step (torchtitan's) saves the last step printed before it
            coalesce(
                events.step,
                last_value(case when events.event = 'step' then events.step end ignore nulls)
                    over (
                        partition by events.source_file
                        order by events.line_no
                        rows between unbounded preceding and current row
                    )
            ) as step
        ),
        ties.job_id_raw,
        coalesce(
            events.ts,
            first_value(events.ts ignore nulls) over (
                partition by events.source_file
                order by events.line_no
                rows between current row and unbounded following
            )
        ) as place_ts
    from events
    inner join ties on events.source_file = ties.source_file
),

in_attempt as (
    select
        placed.*,
        attempts.attempt
    from placed
    left join attempts
        on
        placed.job_id_raw = attempts.job_id_raw
        and placed.place_ts >= attempts.start_ts
        and placed.place_ts <= coalesce(attempts.end_ts, placed.place_ts)
),

final as (
    select
        in_attempt.job_id_raw,
        in_attempt.attempt,
        in_attempt.event,
        in_attempt.step,
        case when in_attempt.event = 'step' then min(in_attempt.ts) else max(in_attempt.ts) end
            as ts,
        bool_and(coalesce(in_attempt.ts_inferred, false)) as ts_inferred,
        max(in_attempt.step_time_s) as step_time_s,
        max(in_attempt.duration_s) as duration_s,
        min(in_attempt.source_file) as source_file,
        min(in_attempt.line_no) as line_no,
        count(*) as n_lines
    from in_attempt
    group by in_attempt.job_id_raw, in_attempt.attempt, in_attempt.event, in_attempt.step
)

select * from final
