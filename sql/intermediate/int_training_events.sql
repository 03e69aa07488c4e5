-- Training-log events of tied logs (int_training_log_ties) with the attempt of their job whose
-- [start_ts, end_ts] holds them. A line without its own time (a Megatron checkpoint load) is
-- placed by the next timed line of its file, but keeps ts null: it gives a step, not a time.
-- Lines printed once per rank (the same event and step twice in one attempt) are kept once:
-- the earliest step line, the latest save or load line. attempt is null for an event outside
-- every attempt of its job (counted in fct_job_goodput.n_events_outside, never used). A save
-- line that names no step gets the step of the file's last step line before it.
--
-- Only step, checkpoint and train_start lines are events here: the lines that mark runs
-- (launch, train_end and Slurm's job id, cancel and task-exit lines) cut a log into runs
-- (int_training_log_runs); a tied log's attempts come from the scheduler. A log job that no
-- scheduler record ties (tie none) is placed by its runs instead: each run is an attempt of its
-- log-only job (int_training_log_attempts), job_id_raw 'log:...'.
with all_events as (select * from int_training_log_runs),

events as (
    select * from all_events
    where
        event in (
            'step',
            'checkpoint_save_start',
            'checkpoint_save_end',
            'checkpoint_load_start',
            'checkpoint_load_end',
            'train_start'
        )
),

ties as (
    select * from int_training_log_ties
    where job_id_raw is not null
),

log_attempts as (select * from int_training_log_attempts),

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
    inner join ties
        on
        events.source_file = ties.source_file
        and events.log_job is not distinct from ties.job_id
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
    -- log-only jobs: the run is the attempt (place_ts null: not needed)
    union all by name
    select
        events.* replace (
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
        log_attempts.job_id_raw,
        log_attempts.attempt
    from events
    inner join log_attempts
        on events.source_file = log_attempts.source_file and events.run = log_attempts.run
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
