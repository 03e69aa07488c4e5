-- Attempts of the jobs known only from their training log: one row per run
-- (int_training_log_runs) of a log job that no scheduler record ties (int_training_log_ties.tie
-- = 'none'), attempt_source 'training_log' (docs/goodput.md §2, "Log-only attempts"). A tied log
-- takes its attempts from the scheduler (int_job_attempts); an ambiguous one is not used.
--
-- job_id_raw is 'log:' || the log job (the id the run names, else the file's: int_training_log_runs),
-- or 'log:' || source_file when the log names none. Attempts are the job's runs in order (file,
-- then line). An attempt starts at its run's first printed time and ends at its cancel line's
-- time, else at its last printed time: what ran before the first or after the last time-bearing
-- line (an untimed set-up, a hang before the process died) is not seen, and a run without any
-- printed time has null times (its phases stay null, never 0).
--
-- end_cause says what the run's lines show: completed (the framework's training-end line; a
-- cancel after it, e.g. a hang until the time limit, is in end_reason), cancelled (slurmstepd's
-- CANCELLED line; state TIMEOUT, PREEMPTED or NODE_FAIL when it says DUE TO TIME LIMIT,
-- PREEMPTION or NODE FAILURE, else CANCELLED), crash (srun's task exit line, state FAILED), else
-- unknown (state UNKNOWN) with end_reason saying that no such line was found: nothing is guessed.
with runs as (select * from int_training_log_runs),

ties as (
    select * from int_training_log_ties
    where tie = 'none'
),

untied as (
    select runs.*
    from runs
    inner join ties
        on runs.source_file = ties.source_file and runs.log_job is not distinct from ties.job_id
),

per_run as (
    select
        untied.source_file,
        untied.run,
        any_value(untied.log_job) as job_id,
        min(untied.ts) filter (where not untied.ts_inferred) as first_ts,
        max(untied.ts) as last_ts,
        max(untied.ts) filter (where untied.event = 'job_cancelled') as cancelled_ts,
        min(untied.ts) filter (where untied.event = 'train_end') as train_end_ts,
        bool_or(untied.event = 'train_end') as has_train_end,
        bool_or(untied.event = 'job_cancelled') as has_cancel,
        bool_or(untied.event = 'task_exit') as has_task_exit,
        arg_min(untied.detail, untied.line_no) filter (
            where untied.event = 'job_cancelled'
        ) as cancel_detail,
        coalesce(
            arg_min(untied.detail, untied.line_no) filter (
                where untied.event = 'task_exit' and untied.detail like 'Exited with exit code%'
            ),
            arg_min(untied.detail, untied.line_no) filter (where untied.event = 'task_exit')
        ) as exit_detail,
        coalesce(
            any_value(untied.framework) filter (
                where untied.framework not in ('slurm', 'nvrx')
            ),
            any_value(untied.framework) filter (where untied.framework != 'slurm'),
            'slurm'
        ) as framework,
        -- a straggler report line may be several rows: lines are counted once
        count(distinct untied.line_no) as n_lines
    from untied
    group by untied.source_file, untied.run
),

caused as (
    select
        per_run.*,
        'log:' || coalesce(per_run.job_id, per_run.source_file) as job_id_raw,
        coalesce(per_run.cancelled_ts, per_run.last_ts) as end_ts,
        case
            when per_run.has_train_end then 'completed'
            when per_run.has_cancel then 'cancelled'
            when per_run.has_task_exit then 'crash'
            else 'unknown'
        end as end_cause,
        case
            when per_run.has_train_end and per_run.has_cancel
                then
                    'training-end line, then slurmstepd CANCELLED'
                    || coalesce(' ' || per_run.cancel_detail, '')
            when per_run.has_train_end then 'training-end line'
            when per_run.has_cancel
                then 'slurmstepd CANCELLED' || coalesce(' ' || per_run.cancel_detail, '')
            when per_run.has_task_exit then 'srun: ' || per_run.exit_detail
            else 'no training-end, cancel or task-exit line in the run'
        end as end_reason
    from per_run
),

numbered as (
    select
        caused.job_id_raw,
        row_number() over (
            partition by caused.job_id_raw order by caused.source_file, caused.run
        ) as attempt,
        caused.job_id,
        caused.source_file,
        caused.run,
        caused.framework,
        caused.first_ts as start_ts,
        caused.end_ts,
        caused.train_end_ts,
        case
            when caused.end_cause = 'completed' then 'COMPLETED'
            when caused.end_cause = 'crash' then 'FAILED'
            when caused.end_cause = 'unknown' then 'UNKNOWN'
            when caused.cancel_detail like 'DUE TO TIME LIMIT%' then 'TIMEOUT'
            when caused.cancel_detail like 'DUE TO PREEMPTION%' then 'PREEMPTED'
            when caused.cancel_detail like 'DUE TO NODE FAIL%' then 'NODE_FAIL'
            else 'CANCELLED'
        end as state,
        caused.end_cause,
        caused.end_reason,
        caused.n_lines,
        'training_log' as attempt_source
    from caused
),

final as (
    select
        numbered.*,
        numbered.state in ('FAILED', 'NODE_FAIL') and numbered.end_ts is not null
            as is_interruption,
        lead(numbered.start_ts) over (
            partition by numbered.job_id_raw order by numbered.attempt
        ) as next_start_ts
    from numbered
)

select * from final
