-- Failures per calendar week (Monday 00:00 UTC), for the weekly report's failure history.
with lives as (select * from int_component_lives),

failures as (
    select lives.observed_to_ts
    from lives
    where lives.failed
),

final as (
    select
        date_trunc('week', failures.observed_to_ts) as week_start,
        count(*) as n_failures
    from failures
    group by date_trunc('week', failures.observed_to_ts)
)

select * from final
