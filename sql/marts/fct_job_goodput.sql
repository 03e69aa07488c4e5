-- The goodput ledger: one row per job (all its attempts) whose last attempt has ended
-- (docs/goodput.md §3). wall_s = productive_s + slow_s + checkpoint_s + wasted_s + restart_s +
-- startup_s + other_s (slow_s taken as 0 where null), restart_s = detect_s + reschedule_s +
-- reload_s + warmup_s. measured: from the job's own training log (int_training_attempts);
-- estimated: from the scheduler alone under the assumptions named in the assumed_* columns
-- (stg_params), which are null for measured jobs.
--
-- slow_s (fail-slow, docs/goodput.md §7): the time the job's kept steps ran above their healthy
-- pace, the episodes of int_slow_episodes summed over the progress lines (int_step_pace) the job
-- kept (an attempt's lines up to the step the next attempt resumed from; all of the final
-- completed attempt's), each episode at least 0; it is taken out of the productive time. A slow
-- stretch later redone stays in wasted_s, counted once. slow_measured: the job is measured and
-- its log gives a pace baseline in at least one attempt; else (an estimated job, a log with no
-- step times such as the Hugging Face Trainer's 4.x dicts, attempts too short for a baseline)
-- slow_s is null.
--
-- attempt_source: scheduler for the jobs of int_job_attempts; training_log for a job known only
-- from its training log (int_training_log_attempts: no scheduler record ties it). A log-only
-- job is always measured; its wall time runs from its first attempt's first printed time to its
-- last attempt's end (cancel line, else last printed time), and it is in the ledger once every
-- attempt has both (an attempt without a printed time keeps the job out). Its scheduler
-- columns (account, user, GPUs, nodes) are null: the log does not say them; final_state is
-- the last attempt's state from the log (COMPLETED, FAILED, TIMEOUT, CANCELLED..., UNKNOWN) and
-- final_end_cause its end_cause (null for scheduler jobs).
with attempts as (select * from int_job_attempts),

log_attempts as (select * from int_training_log_attempts),

params as (select * from stg_params),

measured_attempts as (select * from int_training_attempts),

interruptions as (select * from int_job_interruptions),

pace as (select * from int_step_pace),

episodes as (select * from int_slow_episodes),

jobs as (
    select
        attempts.job_id_raw,
        any_value(attempts.job_id) as job_id,
        any_value(attempts.job_name) as job_name,
        any_value(attempts.account) as account,
        any_value(attempts.user_name) as user_name,
        any_value(attempts.scheduler) as scheduler,
        max(attempts.n_gpus) as n_gpus,
        max(attempts.n_nodes) as n_nodes,
        min(attempts.start_ts) as first_start_ts,
        max(attempts.end_ts) as last_end_ts,
        count(*) as n_attempts,
        count(*) filter (where attempts.is_interruption) as n_interruptions,
        arg_max(attempts.state, attempts.attempt) as final_state,
        'scheduler' as attempt_source,
        cast(null as varchar) as final_end_cause
    from attempts
    group by attempts.job_id_raw
    having bool_and(attempts.end_ts is not null)
    union all
    select
        log_attempts.job_id_raw,
        any_value(log_attempts.job_id) as job_id,
        cast(null as varchar) as job_name,
        cast(null as varchar) as account,
        cast(null as varchar) as user_name,
        cast(null as varchar) as scheduler,
        cast(null as integer) as n_gpus,
        cast(null as bigint) as n_nodes,
        min(log_attempts.start_ts) as first_start_ts,
        max(log_attempts.end_ts) as last_end_ts,
        count(*) as n_attempts,
        count(*) filter (where log_attempts.is_interruption) as n_interruptions,
        arg_max(log_attempts.state, log_attempts.attempt) as final_state,
        'training_log' as attempt_source,
        arg_max(log_attempts.end_cause, log_attempts.attempt) as final_end_cause
    from log_attempts
    group by log_attempts.job_id_raw
    having bool_and(log_attempts.start_ts is not null and log_attempts.end_ts is not null)
),

causes as (
    select
        interruptions.job_id_raw,
        list(interruptions.cause_class order by interruptions.attempt) as interruption_causes
    from interruptions
    group by interruptions.job_id_raw
),

measured as (
    select
        measured_attempts.job_id_raw,
        sum(measured_attempts.productive_s) as productive_s,
        sum(measured_attempts.checkpoint_s) as checkpoint_s,
        sum(measured_attempts.wasted_s) as wasted_s,
        sum(measured_attempts.detect_s) as detect_s,
        sum(measured_attempts.reschedule_s) as reschedule_s,
        sum(measured_attempts.reload_s) filter (where measured_attempts.attempt > 1) as reload_s,
        sum(measured_attempts.before_progress_s - measured_attempts.reload_s) filter (
            where measured_attempts.attempt > 1
        ) as warmup_s,
        sum(measured_attempts.before_progress_s) filter (
            where measured_attempts.attempt = 1
        ) as startup_s,
        sum(measured_attempts.other_s) as other_s,
        sum(measured_attempts.n_saves) as n_saves,
        bool_and(measured_attempts.reload_known) as reload_known,
        count(*) filter (where measured_attempts.n_events > 0) as n_attempts_logged,
        max(measured_attempts.n_events_outside) as n_events_outside
    from measured_attempts
    group by measured_attempts.job_id_raw
),

-- fail-slow: each episode's time above the baseline over the lines its job kept
kept_episodes as (
    select
        episodes.job_id_raw,
        episodes.attempt,
        episodes.episode_no,
        greatest(
            sum(
                case
                    when episodes.pace_source = 'attempt_vs_job'
                        then
                            pace.k * greatest(
                                least(pace.step_s, episodes.slow_step_s)
                                - episodes.baseline_step_s,
                                0
                            )
                    else pace.k * (pace.step_s - episodes.baseline_step_s)
                end
            ),
            0
        ) as slow_s
    from episodes
    inner join pace
        on
        episodes.job_id_raw = pace.job_id_raw
        and episodes.attempt = pace.attempt
        and pace.step between episodes.first_step and episodes.last_step
        and pace.scored
        and not pace.in_trend
    inner join measured_attempts
        on
        episodes.job_id_raw = measured_attempts.job_id_raw
        and episodes.attempt = measured_attempts.attempt
    where measured_attempts.completed or pace.step <= measured_attempts.next_resume_step
    group by episodes.job_id_raw, episodes.attempt, episodes.episode_no
),

paced as (
    select
        pace.job_id_raw,
        bool_or(pace.baseline_step_s is not null) as pace_known
    from pace
    group by pace.job_id_raw
),

slow as (
    select
        paced.job_id_raw,
        paced.pace_known,
        coalesce(sum(kept_episodes.slow_s), 0) as slow_s
    from paced
    left join kept_episodes on paced.job_id_raw = kept_episodes.job_id_raw
    group by paced.job_id_raw, paced.pace_known
),

-- the estimated ledger, attempt by attempt: start-up or restart, then cycles of tau compute
-- and c blocking save; the compute since the last completed save is lost unless the attempt
-- is the job's final COMPLETED one
attempt_runs as (
    select
        attempts.job_id_raw,
        attempts.attempt,
        attempts.is_interruption,
        epoch(attempts.end_ts - attempts.start_ts) as run_s,
        least(
            case
                when attempts.attempt = 1 then params.assumed_startup_s
                else params.assumed_restart_s
            end,
            epoch(attempts.end_ts - attempts.start_ts)
        ) as lead_in_s,
        params.assumed_checkpoint_interval_s as tau,
        params.assumed_checkpoint_s as c,
        attempts.attempt = max(attempts.attempt) over (partition by attempts.job_id_raw)
        and attempts.state = 'COMPLETED' as completed,
        coalesce(epoch(attempts.next_start_ts - attempts.end_ts), 0) as reschedule_s
    from attempts
    cross join params
),

estimated_attempts as (
    select
        attempt_runs.*,
        attempt_runs.run_s - attempt_runs.lead_in_s as train_s
    from attempt_runs
),

estimated_cycles as (
    select
        estimated_attempts.*,
        floor(estimated_attempts.train_s / (estimated_attempts.tau + estimated_attempts.c))
            as n_cycles,
        case
            when estimated_attempts.completed then 0
            else
                estimated_attempts.train_s
                - floor(
                    estimated_attempts.train_s / (estimated_attempts.tau + estimated_attempts.c)
                )
                * (estimated_attempts.tau + estimated_attempts.c)
        end as lost_s
    from estimated_attempts
),

estimated as (
    select
        estimated_cycles.job_id_raw,
        sum(
            estimated_cycles.train_s
            - estimated_cycles.n_cycles * estimated_cycles.c
            - estimated_cycles.lost_s
        ) as productive_s,
        sum(estimated_cycles.n_cycles * estimated_cycles.c) as checkpoint_s,
        sum(estimated_cycles.lost_s) as wasted_s,
        0.0 as detect_s,
        sum(estimated_cycles.reschedule_s) as reschedule_s,
        0.0 as reload_s,
        coalesce(sum(estimated_cycles.lead_in_s) filter (where estimated_cycles.attempt > 1), 0)
            as warmup_s,
        sum(estimated_cycles.lead_in_s) filter (where estimated_cycles.attempt = 1) as startup_s,
        0.0 as other_s,
        sum(estimated_cycles.n_cycles) as n_saves
    from estimated_cycles
    group by estimated_cycles.job_id_raw
),

ledger as (
    select
        jobs.*,
        measured.job_id_raw is not null as measured,
        measured.job_id_raw is not null and coalesce(slow.pace_known, false) as slow_measured,
        -- never more than the productive time it is taken from
        case
            when measured.job_id_raw is not null and slow.pace_known
                then least(slow.slow_s, measured.productive_s)
        end as slow_s,
        coalesce(measured.productive_s, estimated.productive_s)
        - coalesce(
            case
                when measured.job_id_raw is not null and slow.pace_known
                    then least(slow.slow_s, measured.productive_s)
            end,
            0
        ) as productive_s,
        coalesce(measured.checkpoint_s, estimated.checkpoint_s) as checkpoint_s,
        coalesce(measured.wasted_s, estimated.wasted_s) as wasted_s,
        coalesce(measured.detect_s, estimated.detect_s) as detect_s,
        coalesce(measured.reschedule_s, estimated.reschedule_s) as reschedule_s,
        coalesce(measured.reload_s, estimated.reload_s, 0) as reload_s,
        coalesce(measured.warmup_s, estimated.warmup_s, 0) as warmup_s,
        coalesce(measured.startup_s, estimated.startup_s) as startup_s,
        coalesce(measured.other_s, estimated.other_s) as other_s,
        coalesce(measured.n_saves, estimated.n_saves) as n_saves,
        coalesce(measured.reload_known, false) as reload_known,
        coalesce(measured.n_attempts_logged, 0) as n_attempts_logged,
        coalesce(measured.n_events_outside, 0) as n_events_outside
    from jobs
    left join measured on jobs.job_id_raw = measured.job_id_raw
    left join estimated on jobs.job_id_raw = estimated.job_id_raw
    left join slow on jobs.job_id_raw = slow.job_id_raw
),

final as (
    select
        ledger.job_id_raw,
        ledger.job_id,
        ledger.job_name,
        ledger.account,
        ledger.user_name,
        ledger.scheduler,
        ledger.attempt_source,
        ledger.final_end_cause,
        ledger.n_gpus,
        ledger.n_nodes,
        ledger.first_start_ts,
        ledger.last_end_ts,
        ledger.final_state,
        ledger.n_attempts,
        ledger.n_interruptions,
        coalesce(causes.interruption_causes, []) as interruption_causes,
        epoch(ledger.last_end_ts - ledger.first_start_ts) as wall_s,
        ledger.productive_s,
        ledger.slow_s,
        ledger.checkpoint_s,
        ledger.wasted_s,
        ledger.detect_s + ledger.reschedule_s + ledger.reload_s + ledger.warmup_s as restart_s,
        ledger.detect_s,
        ledger.reschedule_s,
        ledger.reload_s,
        ledger.warmup_s,
        ledger.startup_s,
        ledger.other_s,
        ledger.productive_s
        / nullif(epoch(ledger.last_end_ts - ledger.first_start_ts), 0) as goodput,
        ledger.n_gpus * epoch(ledger.last_end_ts - ledger.first_start_ts) / 3600.0 as gpu_hours,
        ledger.n_saves,
        -- compute time per completed save: the checkpoint interval the job ran with
        (ledger.productive_s + coalesce(ledger.slow_s, 0) + ledger.wasted_s)
        / nullif(ledger.n_saves, 0) as checkpoint_interval_s,
        ledger.checkpoint_s / nullif(ledger.n_saves, 0) as save_s,
        ledger.measured,
        not ledger.measured as estimated,
        ledger.slow_measured,
        ledger.reload_known,
        ledger.n_attempts_logged,
        ledger.n_events_outside,
        case when not ledger.measured then params.assumed_startup_s end as assumed_startup_s,
        case when not ledger.measured then params.assumed_restart_s end as assumed_restart_s,
        case
            when not ledger.measured then params.assumed_checkpoint_interval_s
        end as assumed_checkpoint_interval_s,
        case when not ledger.measured then params.assumed_checkpoint_s end as assumed_checkpoint_s
    from ledger
    cross join params
    left join causes on ledger.job_id_raw = causes.job_id_raw
)

select * from final
