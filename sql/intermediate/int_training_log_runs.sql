-- Training-log events (stg_training_events) cut into runs: one process start to its end, in
-- the order of the file's lines (docs/goodput.md §1 "Runs"). A Slurm output written with
-- --open-mode=append holds every run of its job (a requeue) and may hold several jobs; a log
-- without a scheduler record is split into its attempts by these runs (its log-only attempts).
--
-- Lines are start lines (launch, job_banner), resume lines (checkpoint loads, train_start),
-- progress (steps, saves) and end lines (train_end, job_cancelled, task_exit). A new run starts
-- at the file's first event, at a start line after any line but a start line (a job id banner
-- and the framework's banner open one run together), at a resume line after progress or an end
-- line (a restart that prints no start banner), and at a step after an end line (a save after
-- Megatron's "after training is done" banner is the same run's final save).
--
-- The job of a run (log_job): the job id it names itself (SLURM_JOB_ID=..., slurmstepd's
-- "*** JOB n"); else, after a run that named one, that job (a run that names none continues the
-- job before it as its next attempt, as Slurm's requeue appends: the log cannot tell them apart);
-- else the file's own id (--job, a path pattern's {job}, slurm-<id>.out); else null.
with events as (select * from stg_training_events),

classed as (
    select
        events.*,
        case
            when events.event in ('launch', 'job_banner') then 'start'
            when
                events.event in ('checkpoint_load_start', 'checkpoint_load_end', 'train_start')
                then 'resume'
            when events.event in ('train_end', 'job_cancelled', 'task_exit') then 'end'
            else 'progress'
        end as line_class
    from events
),

bounded as (
    select
        classed.*,
        lag(classed.line_class) over file_lines as previous_class,
        row_number() over file_lines as k
    from classed
    window file_lines as (partition by classed.source_file order by classed.line_no)
),

numbered as (
    select
        bounded.* exclude (bounded.k, bounded.previous_class),
        sum(
            case
                when bounded.k = 1 then 1
                when bounded.line_class = 'start' and bounded.previous_class != 'start' then 1
                when
                    bounded.line_class = 'resume'
                    and bounded.previous_class in ('progress', 'end')
                    then 1
                when bounded.event = 'step' and bounded.previous_class = 'end' then 1
                else 0
            end
        ) over (
            partition by bounded.source_file
            order by bounded.line_no
            rows between unbounded preceding and current row
        ) as run
    from bounded
),

runs as (
    select
        numbered.source_file,
        numbered.run,
        max(numbered.job_id) as file_job_id,
        arg_min(numbered.job_named, numbered.line_no) filter (
            where numbered.job_named is not null
        ) as run_job_named
    from numbered
    group by numbered.source_file, numbered.run
),

run_jobs as (
    select
        runs.source_file,
        runs.run,
        runs.run_job_named,
        coalesce(
            runs.run_job_named,
            last_value(runs.run_job_named ignore nulls) over (
                partition by runs.source_file
                order by runs.run
                rows between unbounded preceding and 1 preceding
            ),
            runs.file_job_id
        ) as log_job
    from runs
),

final as (
    select
        numbered.*,
        run_jobs.run_job_named,
        run_jobs.log_job
    from numbered
    inner join run_jobs
        on numbered.source_file = run_jobs.source_file and numbered.run = run_jobs.run
)

select * from final
