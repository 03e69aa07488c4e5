-- The latest projection back-test per component class (docs/goodput.md §5): per class of the
-- failure process and GPU-size bucket (and 'all'), over the whole window, the interruptions
-- attributed to the class against those its as-of rate predicted, with O/E and its exact Poisson
-- interval. The classes' expected counts add up to rpt_projection_backtest's of the same bucket
-- and period 'all'.
with runs as (select * from backtest_runs),

classes as (select * from backtest_classes),

latest as (
    select runs.run_id
    from runs
    order by runs.created_at desc, runs.run_id desc
    limit 1
),

final as (
    select
        classes.component_class,
        classes.unit_level,
        classes.bucket,
        classes.n_jobs,
        classes.interruptions_observed,
        classes.interruptions_expected,
        classes.oe_ratio,
        classes.oe_lo,
        classes.oe_hi
    from classes
    inner join latest
        on classes.run_id = latest.run_id
)

select * from final
order by
    component_class,
    case bucket
        when '1-8' then 1
        when '9-64' then 2
        when '65-512' then 3
        when '513-4096' then 4
        when '4097+' then 5
        else 6
    end
