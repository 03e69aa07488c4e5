-- The interruption rates and headline of every fit run, one row per run, class and cohort, with
-- the run's lives view, what it counted (process: 'failure' for every job-stopping failure, from
-- fct_component_lives or a fault log's int_fault_lives; 'replacement' for replace tickets, from
-- fct_replacement_lives) and whether it is the newest run on its lives view (is_latest). The
-- fleet's headline is the newest run on fct_component_lives. Repair-time runs store no rates.
with runs as (select * from fit_runs),

rates as (select * from fit_rates),

labelled as (
    select
        runs.run_id,
        runs.created_at,
        runs.window_start,
        runs.window_end,
        coalesce(runs.lives, 'fct_component_lives') as lives,
        case
            when runs.lives = 'fct_replacement_lives' then 'replacement'
            else 'failure'
        end as process
    from runs
),

ranked as (
    select
        labelled.*,
        row_number() over (
            partition by labelled.lives
            order by labelled.created_at desc, labelled.run_id desc
        ) = 1 as is_latest
    from labelled
),

final as (
    select
        rates.*,
        ranked.created_at,
        ranked.window_start,
        ranked.window_end,
        ranked.lives,
        ranked.process,
        ranked.is_latest
    from rates
    inner join ranked
        on rates.run_id = ranked.run_id
)

select * from final
