-- Fail-slow episodes before attribution, one row per episode of an attempt (docs/goodput.md §7),
-- from the pace of its progress lines (int_step_pace: scored lines against the attempt's own
-- baseline, trends left out). The episodes view adds to these rows what each is blamed on (the
-- attribution view reads these spans too: kept apart, no view reads itself).
--
-- pace_source 'printed' / 'ts_diff' (where the lines' step_s came from; the most common one of
-- the episode's lines): a maximal run of slow lines, a gap of one healthy line between two slow
-- ones merged into it (its lines count in the sums), kept when it spans at least 2 lines or at
-- least 60 s. start_ts = the time of the line before its first line (the end of the last line
-- outside it), end_ts = its last line's time; first_step = the first step its first line covers
-- (the line before's step + 1), last_step = its last line's step; n_lines its lines;
-- steps_per_line their largest k; baseline_step_s and baseline_mad_s the attempt's;
-- slow_step_s = sum(k x step_s) / sum(k) (the episode's mean seconds per step); slowdown = the
-- median of step_s / baseline_step_s over its lines; slow_s = sum(k x (step_s -
-- baseline_step_s)) (time above the baseline, not the episode's length; exact for every line
-- counted, as a printed step time is the mean over its k steps); bound_s = 2 x steps_per_line x
-- slow_step_s (what a partly slow line at either end, under the threshold, can hide).
--
-- pace_source 'attempt_vs_job': a whole attempt slower than the job's other attempts (a slow GPU
-- present from its start is in its own baseline): baseline_step_s = the median baseline of the
-- job's other attempts, slow_step_s = the attempt's baseline, kept when slow_step_s /
-- baseline_step_s >= 1 + the attempt's theta; slowdown their ratio; slow_s = (slow_step_s -
-- baseline_step_s) x the steps of each scored line, a line faster than the attempt's baseline
-- counting only its own pace above baseline_step_s (a healthy stretch before the slow unit
-- joined costs nothing); it spans those lines. Together with the attempt's own episodes (time
-- above its baseline) nothing is counted twice.
--
-- slow_s here is the whole episode's; the ledger (fct_job_goodput.slow_s) counts only the steps
-- the job kept (a slow stretch later redone is wasted_s).
with pace as (select * from int_step_pace),

job_ids as (
    select
        int_job_attempts.job_id_raw,
        any_value(int_job_attempts.job_id) as job_id
    from int_job_attempts
    group by int_job_attempts.job_id_raw
    union all
    select
        int_training_log_attempts.job_id_raw,
        any_value(int_training_log_attempts.job_id) as job_id
    from int_training_log_attempts
    group by int_training_log_attempts.job_id_raw
),

lines as (
    select
        pace.*,
        lag(pace.is_slow) over attempt_lines as prev_slow,
        lead(pace.is_slow) over attempt_lines as next_slow,
        row_number() over attempt_lines as seq
    from pace
    where pace.scored and pace.baseline_step_s is not null and not pace.in_trend
    window attempt_lines as (partition by pace.job_id_raw, pace.attempt order by pace.step)
),

in_runs as (
    select
        lines.*,
        lines.seq - row_number() over (
            partition by lines.job_id_raw, lines.attempt order by lines.seq
        ) as run_key
    from lines
    where lines.is_slow or (lines.prev_slow and lines.next_slow)
),

runs as (
    select
        in_runs.job_id_raw,
        in_runs.attempt,
        in_runs.run_key,
        arg_min_null(in_runs.prev_ts, in_runs.step) as start_ts,
        max(in_runs.ts) as end_ts,
        arg_min(in_runs.prev_step, in_runs.step) + 1 as first_step,
        max(in_runs.step) as last_step,
        count(*) as n_lines,
        max(in_runs.k) as steps_per_line,
        any_value(in_runs.baseline_step_s) as baseline_step_s,
        any_value(in_runs.baseline_mad_s) as baseline_mad_s,
        sum(in_runs.k * in_runs.step_s) / sum(in_runs.k) as slow_step_s,
        median(in_runs.step_s / in_runs.baseline_step_s) as slowdown,
        sum(in_runs.k * (in_runs.step_s - in_runs.baseline_step_s)) as slow_s,
        sum(in_runs.k * in_runs.step_s) as run_s,
        mode(in_runs.pace_source) as pace_source
    from in_runs
    group by in_runs.job_id_raw, in_runs.attempt, in_runs.run_key
),

kept_runs as (
    select
        runs.job_id_raw,
        runs.attempt,
        runs.start_ts,
        runs.end_ts,
        runs.first_step,
        runs.last_step,
        runs.n_lines,
        runs.steps_per_line,
        runs.baseline_step_s,
        runs.baseline_mad_s,
        runs.slow_step_s,
        runs.slowdown,
        runs.slow_s,
        runs.pace_source
    from runs
    where runs.n_lines >= 2 or coalesce(epoch(runs.end_ts - runs.start_ts), runs.run_s) >= 60
),

-- whole attempts against the job's other attempts
attempt_paces as (
    select
        lines.job_id_raw,
        lines.attempt,
        any_value(lines.baseline_step_s) as attempt_step_s,
        any_value(lines.baseline_mad_s) as baseline_mad_s,
        any_value(lines.theta) as theta,
        arg_min_null(lines.prev_ts, lines.step) as start_ts,
        max(lines.ts) as end_ts,
        arg_min(lines.prev_step, lines.step) + 1 as first_step,
        max(lines.step) as last_step,
        count(*) as n_lines,
        max(lines.k) as steps_per_line,
        sum(lines.k) as n_steps
    from lines
    group by lines.job_id_raw, lines.attempt
),

job_paces as (
    select
        attempt_paces.job_id_raw,
        attempt_paces.attempt,
        median(others.attempt_step_s) as job_step_s
    from attempt_paces
    inner join attempt_paces as others
        on
        attempt_paces.job_id_raw = others.job_id_raw
        and attempt_paces.attempt != others.attempt
    group by attempt_paces.job_id_raw, attempt_paces.attempt
),

-- each scored line's time above the other attempts' pace, up to the attempt's own baseline (a
-- line faster than that baseline counts only what it is above the others'; the part above the
-- attempt's baseline is its own episodes')
attempt_slow as (
    select
        lines.job_id_raw,
        lines.attempt,
        sum(
            lines.k * greatest(
                least(lines.step_s, lines.baseline_step_s) - job_paces.job_step_s, 0
            )
        ) as slow_above_s
    from lines
    inner join job_paces
        on
        lines.job_id_raw = job_paces.job_id_raw
        and lines.attempt = job_paces.attempt
    group by lines.job_id_raw, lines.attempt
),

slow_attempts as (
    select
        attempt_paces.job_id_raw,
        attempt_paces.attempt,
        attempt_paces.start_ts,
        attempt_paces.end_ts,
        attempt_paces.first_step,
        attempt_paces.last_step,
        attempt_paces.n_lines,
        attempt_paces.steps_per_line,
        job_paces.job_step_s as baseline_step_s,
        attempt_paces.baseline_mad_s,
        attempt_paces.attempt_step_s as slow_step_s,
        attempt_paces.attempt_step_s / job_paces.job_step_s as slowdown,
        attempt_slow.slow_above_s as slow_s,
        'attempt_vs_job' as pace_source
    from attempt_paces
    inner join job_paces
        on
        attempt_paces.job_id_raw = job_paces.job_id_raw
        and attempt_paces.attempt = job_paces.attempt
    inner join attempt_slow
        on
        attempt_paces.job_id_raw = attempt_slow.job_id_raw
        and attempt_paces.attempt = attempt_slow.attempt
    where attempt_paces.attempt_step_s >= (1 + attempt_paces.theta) * job_paces.job_step_s
),

episodes as (
    select * from kept_runs
    union all by name
    select * from slow_attempts
),

final as (
    select
        job_ids.job_id,
        episodes.job_id_raw,
        episodes.attempt,
        row_number() over (
            partition by episodes.job_id_raw, episodes.attempt
            order by episodes.first_step, episodes.pace_source = 'attempt_vs_job' desc
        ) as episode_no,
        episodes.start_ts,
        episodes.end_ts,
        episodes.first_step,
        episodes.last_step,
        episodes.n_lines,
        episodes.steps_per_line,
        episodes.baseline_step_s,
        episodes.baseline_mad_s,
        episodes.slow_step_s,
        episodes.slowdown,
        episodes.slow_s,
        2 * episodes.steps_per_line * episodes.slow_step_s as bound_s,
        episodes.pace_source
    from episodes
    left join job_ids on episodes.job_id_raw = job_ids.job_id_raw
)

select * from final
