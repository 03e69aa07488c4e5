-- The latest projection back-test (docs/goodput.md §5): per GPU-size bucket (and 'all') and
-- period (all, first half, second half of the window by job start), observed and expected
-- hardware interruptions with O/E and its exact Poisson interval, and measured against
-- predicted goodput (GPU-hour weighted) with the projection's interval. Interruptions whose
-- cause is ambiguous or unknown are not in interruptions_observed: backtest_buckets counts them
-- (interruptions_unattributed).
with runs as (select * from backtest_runs),

buckets as (select * from backtest_buckets),

latest as (
    select runs.run_id
    from runs
    order by runs.created_at desc, runs.run_id desc
    limit 1
),

final as (
    select
        buckets.bucket,
        buckets.period,
        buckets.n_jobs,
        buckets.interruptions_observed,
        buckets.interruptions_expected,
        buckets.oe_ratio,
        buckets.oe_lo,
        buckets.oe_hi,
        buckets.goodput_measured,
        buckets.goodput_predicted,
        buckets.goodput_predicted_lo,
        buckets.goodput_predicted_hi
    from buckets
    inner join latest
        on buckets.run_id = latest.run_id
)

select * from final
order by
    case bucket
        when '1-8' then 1
        when '9-64' then 2
        when '65-512' then 3
        when '513-4096' then 4
        when '4097+' then 5
        else 6
    end,
    case period when 'all' then 1 when 'first half' then 2 else 3 end
