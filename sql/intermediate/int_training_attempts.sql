-- One row per attempt of every job that has a tied training log, with the boundaries of
-- docs/goodput.md §3: F (first progress: the training start line, else backed off from the
-- first step line), K (progress kept until), P (last progress), the
-- blocking saves split at K, and the restart's reload end. Attempts without an event of their
-- own are included (all of them is start-up or warm-up). An attempt whose agent lines print no
-- time (torchrun under Python's default log format) has no start: its phases are null, never 0.
--
-- attempt_source: scheduler (the job's attempts from int_job_attempts, the log tied to it) or
-- training_log (a log no scheduler record ties: its runs are the attempts,
-- int_training_log_attempts, with end_cause and end_reason from the log's own lines; their
-- start and end are the run's first and last printed times, so the same boundaries split the
-- same wall time). end_cause and end_reason are null for scheduler attempts (state says).
with attempts as (
    select
        int_job_attempts.job_id_raw,
        int_job_attempts.attempt,
        int_job_attempts.state,
        int_job_attempts.is_interruption,
        int_job_attempts.start_ts,
        int_job_attempts.end_ts,
        'scheduler' as attempt_source,
        cast(null as varchar) as end_cause,
        cast(null as varchar) as end_reason,
        cast(null as timestamptz) as train_end_ts
    from int_job_attempts
    union all
    select
        log_attempts.job_id_raw,
        log_attempts.attempt,
        log_attempts.state,
        log_attempts.is_interruption,
        log_attempts.start_ts,
        log_attempts.end_ts,
        log_attempts.attempt_source,
        log_attempts.end_cause,
        log_attempts.end_reason,
        log_attempts.train_end_ts
    from int_training_log_attempts as log_attempts
),

-- read once: a fleet-year holds millions of events
all_events as materialized (select * from int_training_events),

events as (
    select * from all_events
    where attempt is not null
),

-- lines of a tied log outside every attempt of its job: counted, never used
outside as (
    select
        all_events.job_id_raw,
        sum(all_events.n_lines) as n_events_outside
    from all_events
    where all_events.attempt is null
    group by all_events.job_id_raw
),

-- jobs with a placed event, and every log-only job (a run of only end lines is an attempt)
logged_jobs as (
    select events.job_id_raw from events
    union
    select attempts.job_id_raw from attempts
    where attempts.attempt_source = 'training_log'
),

job_attempts as (
    select
        attempts.*,
        max(attempts.attempt) over (partition by attempts.job_id_raw) as n_attempts,
        lead(attempts.start_ts) over (
            partition by attempts.job_id_raw order by attempts.attempt
        ) as next_attempt_start_ts
    from attempts
    inner join logged_jobs on attempts.job_id_raw = logged_jobs.job_id_raw
),

steps as (
    select
        events.job_id_raw,
        events.attempt,
        events.step,
        events.ts,
        events.step_time_s,
        row_number() over (
            partition by events.job_id_raw, events.attempt order by events.ts, events.step
        ) as k
    from events
    where events.event = 'step' and events.ts is not null
),

first_steps as (
    select
        steps.job_id_raw,
        steps.attempt,
        max(steps.step) filter (where steps.k = 1) as n1,
        max(steps.ts) filter (where steps.k = 1) as t1,
        max(steps.step_time_s) filter (where steps.k = 1) as st1,
        max(steps.step) filter (where steps.k = 2) as n2,
        max(steps.ts) filter (where steps.k = 2) as t2,
        max(steps.ts) as last_step_ts,
        count(*) as n_step_lines
    from steps
    group by steps.job_id_raw, steps.attempt
),

-- a blocking save: [end - duration, end], else from its start line to its end line
save_ends as (
    select
        ends.job_id_raw,
        ends.attempt,
        ends.step,
        ends.ts as end_ts,
        coalesce(ends.ts - to_seconds(ends.duration_s), starts.ts, ends.ts) as start_ts
    from events as ends
    left join events as starts
        on
        ends.job_id_raw = starts.job_id_raw
        and ends.attempt = starts.attempt
        and ends.step = starts.step
        and starts.event = 'checkpoint_save_start'
    where ends.event = 'checkpoint_save_end' and ends.ts is not null
),

per_attempt as (
    select
        events.job_id_raw,
        events.attempt,
        max(events.step) filter (
            where events.event in ('checkpoint_load_start', 'checkpoint_load_end')
        ) as load_step,
        max(events.ts) filter (
            where events.event = 'checkpoint_load_end' and not events.ts_inferred
        ) as load_end_ts,
        max(events.step) filter (where events.event = 'checkpoint_save_end') as last_save_step,
        min(events.ts) filter (
            where events.event = 'train_start' and not events.ts_inferred
        ) as train_start_ts,
        max(events.step) filter (where events.event = 'train_start') as train_start_step,
        max(events.ts) filter (
            where events.event in ('step', 'checkpoint_save_start', 'checkpoint_save_end')
        ) as last_progress_ts,
        count(*) as n_events
    from events
    group by events.job_id_raw, events.attempt
),

with_resume as (
    select
        job_attempts.*,
        first_steps.n1,
        first_steps.t1,
        first_steps.st1,
        first_steps.n2,
        first_steps.t2,
        first_steps.n_step_lines,
        per_attempt.load_step,
        per_attempt.load_end_ts,
        per_attempt.last_save_step,
        per_attempt.last_progress_ts,
        per_attempt.train_start_ts,
        coalesce(per_attempt.n_events, 0) as n_events,
        -- the resume step: this attempt's load, else the step its training start names less
        -- one, else the last save of an earlier attempt
        coalesce(
            per_attempt.load_step,
            per_attempt.train_start_step - 1,
            max(per_attempt.last_save_step) over (
                partition by job_attempts.job_id_raw
                order by job_attempts.attempt
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as resume_step
    from job_attempts
    left join first_steps
        on
        job_attempts.job_id_raw = first_steps.job_id_raw
        and job_attempts.attempt = first_steps.attempt
    left join per_attempt
        on
        job_attempts.job_id_raw = per_attempt.job_id_raw
        and job_attempts.attempt = per_attempt.attempt
),

with_next as (
    select
        with_resume.*,
        -- the step the next attempt resumed from (its load, else this attempt's last save)
        coalesce(
            lead(with_resume.load_step) over (
                partition by with_resume.job_id_raw order by with_resume.attempt
            ),
            max(with_resume.last_save_step) over (
                partition by with_resume.job_id_raw
                order by with_resume.attempt
                rows between unbounded preceding and current row
            ),
            0
        ) as next_resume_step,
        coalesce(
            with_resume.st1,
            epoch(with_resume.t2 - with_resume.t1) / nullif(with_resume.n2 - with_resume.n1, 0),
            -- an attempt with one step line: the job's step time from its other attempts
            median(
                epoch(with_resume.t2 - with_resume.t1)
                / nullif(with_resume.n2 - with_resume.n1, 0)
            ) over (partition by with_resume.job_id_raw),
            0
        ) as per_step_s
    from with_resume
),

bounds as (
    select
        with_next.*,
        case
            -- the training loop's own start line, when it prints one with its time
            when with_next.train_start_ts is not null
                then greatest(with_next.start_ts, least(with_next.end_ts, with_next.train_start_ts))
            -- no step line: a log-only run that printed its training end progressed until
            -- then (what follows is other time); else all of it is start-up or warm-up
            when with_next.t1 is null and with_next.train_end_ts is not null
                then greatest(with_next.start_ts, least(with_next.end_ts, with_next.train_end_ts))
            when with_next.t1 is null then with_next.end_ts
            else
                greatest(
                    with_next.start_ts,
                    least(
                        with_next.end_ts,
                        with_next.t1
                        - to_seconds(
                            greatest(with_next.n1 - with_next.resume_step, 0)
                            * with_next.per_step_s
                        )
                    )
                )
        end as f_ts
    from with_next
),

bounded as (
    select
        bounds.*,
        case
            when bounds.t1 is null then bounds.f_ts
            else least(bounds.end_ts, greatest(bounds.f_ts, bounds.last_progress_ts))
        end as p_ts
    from bounds
),

kept as (
    select
        bounded.job_id_raw,
        bounded.attempt,
        max(events.ts) as kept_ts
    from bounded
    inner join events
        on
        bounded.job_id_raw = events.job_id_raw
        and bounded.attempt = events.attempt
        and events.event in ('step', 'checkpoint_save_end')
        and bounded.next_resume_step >= events.step
        and events.ts is not null
    group by bounded.job_id_raw, bounded.attempt
),

with_kept as (
    select
        bounded.*,
        bounded.attempt = bounded.n_attempts and bounded.state = 'COMPLETED' as completed,
        case
            when bounded.attempt = bounded.n_attempts and bounded.state = 'COMPLETED'
                then bounded.p_ts
            else least(bounded.p_ts, greatest(bounded.f_ts, coalesce(kept.kept_ts, bounded.f_ts)))
        end as k_ts
    from bounded
    left join kept
        on bounded.job_id_raw = kept.job_id_raw and bounded.attempt = kept.attempt
),

save_time as (
    select
        with_kept.job_id_raw,
        with_kept.attempt,
        count(*) as n_saves,
        sum(
            greatest(
                epoch(
                    least(save_ends.end_ts, with_kept.k_ts)
                    - greatest(save_ends.start_ts, with_kept.f_ts)
                ),
                0
            )
        ) as kept_save_s,
        sum(
            greatest(
                epoch(
                    least(save_ends.end_ts, with_kept.p_ts)
                    - greatest(save_ends.start_ts, with_kept.k_ts)
                ),
                0
            )
        ) as wasted_save_s
    from with_kept
    inner join save_ends
        on with_kept.job_id_raw = save_ends.job_id_raw and with_kept.attempt = save_ends.attempt
    group by with_kept.job_id_raw, with_kept.attempt
),

final as (
    select
        with_kept.job_id_raw,
        with_kept.attempt,
        with_kept.n_attempts,
        with_kept.attempt_source,
        with_kept.state,
        with_kept.end_cause,
        with_kept.end_reason,
        with_kept.is_interruption,
        with_kept.completed,
        with_kept.start_ts,
        with_kept.end_ts,
        with_kept.next_attempt_start_ts,
        with_kept.resume_step,
        with_kept.next_resume_step,
        with_kept.f_ts,
        with_kept.k_ts,
        with_kept.p_ts,
        with_kept.load_end_ts,
        with_kept.n_events,
        coalesce(with_kept.n_step_lines, 0) as n_step_lines,
        coalesce(save_time.n_saves, 0) as n_saves,
        epoch(with_kept.f_ts - with_kept.start_ts) as before_progress_s,
        case
            when with_kept.start_ts is null then null
            when
                with_kept.attempt > 1
                and with_kept.load_end_ts between with_kept.start_ts and with_kept.f_ts
                then epoch(with_kept.load_end_ts - with_kept.start_ts)
            else 0
        end as reload_s,
        with_kept.attempt = 1
        or with_kept.load_end_ts between with_kept.start_ts and with_kept.f_ts as reload_known,
        case
            when with_kept.start_ts is not null
                then coalesce(save_time.kept_save_s, 0) + coalesce(save_time.wasted_save_s, 0)
        end as checkpoint_s,
        epoch(with_kept.k_ts - with_kept.f_ts) - coalesce(save_time.kept_save_s, 0)
            as productive_s,
        epoch(with_kept.p_ts - with_kept.k_ts) - coalesce(save_time.wasted_save_s, 0)
            as wasted_s,
        case
            when with_kept.start_ts is null then null
            when with_kept.is_interruption then epoch(with_kept.end_ts - with_kept.p_ts)
            else 0
        end as detect_s,
        case
            when not with_kept.is_interruption then epoch(with_kept.end_ts - with_kept.p_ts)
            else 0
        end as other_s,
        case
            when with_kept.start_ts is not null
                then coalesce(epoch(with_kept.next_attempt_start_ts - with_kept.end_ts), 0)
        end as reschedule_s,
        coalesce(outside.n_events_outside, 0) as n_events_outside
    from with_kept
    left join save_time
        on with_kept.job_id_raw = save_time.job_id_raw and with_kept.attempt = save_time.attempt
    left join outside on with_kept.job_id_raw = outside.job_id_raw
)

select * from final
