-- The pace of training, one row per progress line (step line) of an attempt
-- (int_training_events; docs/goodput.md §7): how many steps the line covers and how long each
-- took, the attempt's healthy baseline, and whether the line is slow against it.
--
-- k: steps since the attempt's previous step line (null on its first line). step_s: seconds per
-- step over those k steps: the framework's own printed mean (Megatron's "elapsed time per
-- iteration", pace_source 'printed'), else (ts - previous ts) / k when both times are printed
-- (ts_inferred false; pace_source 'ts_diff'). A checkpoint save or load in the line's interval
-- (its step in [previous step, step): a save at step n comes after the line of step n) is
-- has_checkpoint: the line is never in the baseline; under 'ts_diff' the save's blocking time
-- (duration_s, else its start to its end) is taken out of the interval, and a line whose
-- interval holds a load or a save of unknown length has no step_s. Megatron's printed mean
-- stops around saves and eval, so it is used as printed. Evaluation has no event today: an eval
-- pass inside a 'ts_diff' interval reads as a slow line.
--
-- Warm-up (is_warmup): the first slow_warmup_lines lines of the attempt (stg_params, default 3;
-- the first line has no k anyway), and every line before the first later line whose step_s is
-- within 20 % of the median of the attempt's later lines (compile and allocator time).
-- Baseline, per attempt, over the lines in_baseline (not warm-up, no checkpoint, a step_s; at
-- least 3 of them, n_baseline_lines, else null: the attempt's pace is unknown): the healthy
-- pace is that of the attempt's fast cluster, the in-baseline lines with step_s <= (1 +
-- slow_theta_min) x their 10th percentile (quantile_disc: the (floor((n - 1) x 0.1) + 1)-th
-- smallest, a line's own step_s), n_fast_lines of them. baseline_step_s = their median,
-- baseline_mad_s = their median |step_s - baseline_step_s|. A median over all the lines would
-- take a mostly slow attempt's slow pace for its healthy one, and slow lines would widen the
-- MAD of a short log; the fast cluster holds while at least a tenth of the lines are healthy
-- (an attempt up to about 90 % slow). theta = greatest(slow_theta_min (stg_params, default
-- 0.05), 4 x 1.4826 x MAD / baseline), and a scored line (not warm-up, a step_s) is_slow when
-- step_s > baseline_step_s x (1 + theta). Slowdowns under slow_theta_min are tolerated by design;
-- a long one that holds most of the fast cluster lifts the baseline by up to slow_theta_min.
--
-- Trends (in_trend): a slowdown that does not come back is not an episode. An attempt whose
-- scored lines (at least 5) keep slowing (the correlation of step_s with step at least 0.9, and
-- the fitted rise over the attempt at least slow_theta_min x baseline) is a trend throughout
-- (trend_source 'attempt': a leak, a growing data or software cost; a drift that large also
-- widens the MAD until no line is slow); so is the tail of slow lines after the attempt's last
-- healthy scored line when it keeps rising by the same test (trend_source 'tail'). A slow
-- stretch that levels off and lasts until the attempt ends (a slow GPU until the restart) stays
-- an episode. The episodes leave trend lines out; the trends view lists them.
with params as (select * from stg_params),

events as (
    select * from int_training_events
    where attempt is not null
),

step_lines as (
    select
        events.job_id_raw,
        events.attempt,
        events.step,
        events.ts,
        events.ts_inferred,
        events.step_time_s,
        events.source_file,
        events.line_no,
        row_number() over attempt_lines as line_idx,
        lag(events.step) over attempt_lines as prev_step,
        lag(events.ts) over attempt_lines as prev_ts,
        lag(events.ts_inferred) over attempt_lines as prev_ts_inferred
    from events
    where events.event = 'step' and events.step is not null
    window attempt_lines as (partition by events.job_id_raw, events.attempt order by events.step)
),

-- one row per save (start and end lines of one step) or load, with a save's blocking seconds
checkpoints as (
    select
        events.job_id_raw,
        events.attempt,
        events.step,
        bool_or(events.event like 'checkpoint_load%') as is_load,
        coalesce(
            max(events.duration_s) filter (where events.event = 'checkpoint_save_end'),
            epoch(
                max(events.ts) filter (where events.event = 'checkpoint_save_end')
                - min(events.ts) filter (where events.event = 'checkpoint_save_start')
            )
        ) as save_s
    from events
    where events.event like 'checkpoint%' and events.step is not null
    group by events.job_id_raw, events.attempt, events.step
),

line_checkpoints as (
    select
        step_lines.job_id_raw,
        step_lines.attempt,
        step_lines.step,
        bool_or(checkpoints.is_load) as has_load,
        bool_or(not checkpoints.is_load and checkpoints.save_s is null) as has_unknown_save,
        sum(checkpoints.save_s) filter (where not checkpoints.is_load) as save_s
    from step_lines
    inner join checkpoints
        on
        step_lines.job_id_raw = checkpoints.job_id_raw
        and step_lines.attempt = checkpoints.attempt
        and step_lines.prev_step <= checkpoints.step
        and step_lines.step > checkpoints.step
    group by step_lines.job_id_raw, step_lines.attempt, step_lines.step
),

paced as (
    select
        step_lines.*,
        step_lines.step - step_lines.prev_step as k,
        line_checkpoints.step is not null as has_checkpoint,
        coalesce(line_checkpoints.save_s, 0) as save_s,
        case
            when step_lines.step_time_s is not null then 'printed'
            when
                step_lines.prev_ts is not null
                and step_lines.ts is not null
                and not step_lines.ts_inferred
                and not step_lines.prev_ts_inferred
                then 'ts_diff'
        end as pace_source,
        case
            when step_lines.step_time_s is not null then step_lines.step_time_s
            when
                step_lines.prev_ts is not null
                and step_lines.ts is not null
                and not step_lines.ts_inferred
                and not step_lines.prev_ts_inferred
                and not coalesce(line_checkpoints.has_load, false)
                and not coalesce(line_checkpoints.has_unknown_save, false)
                and epoch(step_lines.ts - step_lines.prev_ts) > coalesce(line_checkpoints.save_s, 0)
                then
                    (
                        epoch(step_lines.ts - step_lines.prev_ts)
                        - coalesce(line_checkpoints.save_s, 0)
                    )
                    / (step_lines.step - step_lines.prev_step)
        end as step_s
    from step_lines
    left join line_checkpoints
        on
        step_lines.job_id_raw = line_checkpoints.job_id_raw
        and step_lines.attempt = line_checkpoints.attempt
        and step_lines.step = line_checkpoints.step
),

-- the median of the lines after the first slow_warmup_lines, to find where the pace settles
after_first as (
    select
        paced.job_id_raw,
        paced.attempt,
        median(paced.step_s) as settled_s
    from paced
    cross join params
    where
        paced.line_idx > params.slow_warmup_lines
        and paced.k is not null
        and paced.step_s is not null
        and not paced.has_checkpoint
    group by paced.job_id_raw, paced.attempt
),

settled as (
    select
        paced.job_id_raw,
        paced.attempt,
        min(paced.line_idx) as settled_idx
    from paced
    cross join params
    inner join after_first
        on paced.job_id_raw = after_first.job_id_raw and paced.attempt = after_first.attempt
    where
        paced.line_idx > params.slow_warmup_lines
        and paced.k is not null
        and not paced.has_checkpoint
        and abs(paced.step_s / after_first.settled_s - 1) <= 0.2
    group by paced.job_id_raw, paced.attempt
),

warm as (
    select
        paced.*,
        paced.k is null
        or paced.line_idx <= params.slow_warmup_lines
        or settled.settled_idx is null
        or paced.line_idx < settled.settled_idx as is_warmup
    from paced
    cross join params
    left join settled
        on paced.job_id_raw = settled.job_id_raw and paced.attempt = settled.attempt
),

-- materialized: the baseline steps and the scoring all read it (inlined, it is planned thrice)
flagged as materialized (
    select
        warm.*,
        not warm.is_warmup and warm.step_s is not null as scored,
        not warm.is_warmup and warm.step_s is not null and not warm.has_checkpoint as in_baseline
    from warm
),

-- the fast cluster of an attempt's baseline lines: within slow_theta_min of their 10th percentile
lows as (
    select
        flagged.job_id_raw,
        flagged.attempt,
        quantile_disc(flagged.step_s, 0.1) as low_step_s,
        count(*) as n_baseline_lines
    from flagged
    where flagged.in_baseline
    group by flagged.job_id_raw, flagged.attempt
    having count(*) >= 3
),

fast as (
    select
        lows.job_id_raw,
        lows.attempt,
        lows.n_baseline_lines,
        flagged.step_s
    from lows
    cross join params
    inner join flagged
        on lows.job_id_raw = flagged.job_id_raw and lows.attempt = flagged.attempt
    where
        flagged.in_baseline
        and flagged.step_s <= (1 + params.slow_theta_min) * lows.low_step_s
),

medians as (
    select
        fast.job_id_raw,
        fast.attempt,
        any_value(fast.n_baseline_lines) as n_baseline_lines,
        count(*) as n_fast_lines,
        median(fast.step_s) as baseline_step_s
    from fast
    group by fast.job_id_raw, fast.attempt
),

baselines as (
    select
        medians.job_id_raw,
        medians.attempt,
        medians.baseline_step_s,
        medians.n_baseline_lines,
        medians.n_fast_lines,
        median(abs(fast.step_s - medians.baseline_step_s)) as baseline_mad_s
    from medians
    inner join fast
        on medians.job_id_raw = fast.job_id_raw and medians.attempt = fast.attempt
    group by
        medians.job_id_raw,
        medians.attempt,
        medians.baseline_step_s,
        medians.n_baseline_lines,
        medians.n_fast_lines
),

scored as (
    select
        flagged.*,
        baselines.baseline_step_s,
        baselines.baseline_mad_s,
        baselines.n_baseline_lines,
        baselines.n_fast_lines,
        greatest(
            params.slow_theta_min,
            4 * 1.4826 * baselines.baseline_mad_s / baselines.baseline_step_s
        ) as theta,
        flagged.scored
        and flagged.step_s
        > baselines.baseline_step_s
        * (
            1 + greatest(
                params.slow_theta_min,
                4 * 1.4826 * baselines.baseline_mad_s / baselines.baseline_step_s
            )
        ) as is_slow,
        params.slow_theta_min
    from flagged
    cross join params
    left join baselines
        on flagged.job_id_raw = baselines.job_id_raw and flagged.attempt = baselines.attempt
),

-- the steady tail: the scored lines after the attempt's last healthy scored line
tails as (
    select
        scored.job_id_raw,
        scored.attempt,
        coalesce(max(scored.step) filter (where not scored.is_slow), -1) as last_healthy_step
    from scored
    where scored.scored and scored.baseline_step_s is not null
    group by scored.job_id_raw, scored.attempt
),

-- does the pace keep rising: over the whole attempt, and over its tail of slow lines
rises as (
    select
        scored.job_id_raw,
        scored.attempt,
        count(*) as n_attempt,
        corr(scored.step_s, scored.step) as attempt_corr,
        regr_slope(scored.step_s, scored.step) * (max(scored.step) - min(scored.step))
            as attempt_rise_s,
        count(*) filter (where scored.step > tails.last_healthy_step) as n_tail,
        corr(scored.step_s, scored.step) filter (where scored.step > tails.last_healthy_step)
            as tail_corr,
        regr_slope(scored.step_s, scored.step) filter (
            where scored.step > tails.last_healthy_step
        )
        * (
            max(scored.step) filter (where scored.step > tails.last_healthy_step)
            - min(scored.step) filter (where scored.step > tails.last_healthy_step)
        ) as tail_rise_s,
        any_value(scored.baseline_step_s) as baseline_step_s,
        any_value(scored.slow_theta_min) as slow_theta_min,
        any_value(tails.last_healthy_step) as last_healthy_step
    from scored
    inner join tails on scored.job_id_raw = tails.job_id_raw and scored.attempt = tails.attempt
    where scored.scored
    group by scored.job_id_raw, scored.attempt
),

trends as (
    select
        rises.job_id_raw,
        rises.attempt,
        rises.last_healthy_step,
        case
            when
                rises.n_attempt >= 5
                and rises.attempt_corr >= 0.9
                and rises.attempt_rise_s >= rises.slow_theta_min * rises.baseline_step_s
                then 'attempt'
            when
                rises.n_tail >= 5
                and rises.tail_corr >= 0.9
                and rises.tail_rise_s >= rises.slow_theta_min * rises.baseline_step_s
                then 'tail'
        end as trend_source
    from rises
),

final as (
    select
        scored.job_id_raw,
        scored.attempt,
        scored.step,
        scored.line_idx,
        scored.source_file,
        scored.line_no,
        scored.prev_step,
        scored.prev_ts,
        scored.ts,
        scored.k,
        scored.step_s,
        scored.pace_source,
        scored.has_checkpoint,
        scored.save_s,
        scored.is_warmup,
        scored.scored,
        scored.in_baseline,
        scored.baseline_step_s,
        scored.baseline_mad_s,
        scored.n_baseline_lines,
        scored.n_fast_lines,
        scored.theta,
        coalesce(scored.is_slow, false) as is_slow,
        scored.scored
        and (
            trends.trend_source = 'attempt'
            or (trends.trend_source = 'tail' and scored.step > trends.last_healthy_step)
        ) is true as in_trend,
        case
            when
                scored.scored
                and (
                    trends.trend_source = 'attempt'
                    or (trends.trend_source = 'tail' and scored.step > trends.last_healthy_step)
                ) is true
                then trends.trend_source
        end as trend_source
    from scored
    left join trends on scored.job_id_raw = trends.job_id_raw and scored.attempt = trends.attempt
)

select * from final
