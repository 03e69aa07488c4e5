-- Slowdowns that do not come back, one row per attempt that has one (int_step_pace.in_trend;
-- docs/goodput.md §7): the pace keeps rising over the whole attempt (trend_source 'attempt') or
-- over its closing run of slow lines (trend_source 'tail'). They are flagged here, not counted as
-- episodes or in the ledger's slow_s: a leak or a growing data or software cost has no healthy
-- pace to return to and no slow unit to blame. first_step .. last_step and start_ts .. end_ts
-- span the trend's lines (start_ts: the time of the line before); first_step_s and last_step_s
-- are the pace of its first and last lines, growth their ratio; baseline_step_s is the
-- attempt's median pace.
with pace as (select * from int_step_pace),

final as (
    select
        pace.job_id_raw,
        pace.attempt,
        any_value(pace.trend_source) as trend_source,
        arg_min_null(pace.prev_ts, pace.step) as start_ts,
        max(pace.ts) as end_ts,
        arg_min(pace.prev_step, pace.step) + 1 as first_step,
        max(pace.step) as last_step,
        count(*) as n_lines,
        arg_min(pace.step_s, pace.step) as first_step_s,
        arg_max(pace.step_s, pace.step) as last_step_s,
        arg_max(pace.step_s, pace.step) / arg_min(pace.step_s, pace.step) as growth,
        any_value(pace.baseline_step_s) as baseline_step_s
    from pace
    where pace.in_trend
    group by pace.job_id_raw, pace.attempt
)

select * from final
