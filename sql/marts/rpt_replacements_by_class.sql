-- Replacements per component class from repair tickets: the replacement lifetimes of
-- fct_replacement_lives (replacement AFR, spares consumption), never the failure process (most
-- failures replace nothing; rpt_fleet_summary counts them). n_repair_tickets, the same on every
-- row, is the warehouse's count of repair tickets: 0 means the fleet exports none, so every
-- replacement count is 0 for want of tickets, not for want of replacements.
with lives as (select * from fct_replacement_lives),

repairs as (select * from stg_repairs),

tickets as (
    select count(*) as n_repair_tickets
    from repairs
),

by_class as (
    select
        lives.component_class,
        any_value(lives.unit_level) as unit_level,
        count(distinct lives.node || '/' || lives.slot) as n_units,
        count(*) as n_lives,
        count(*) filter (where lives.failed) as n_replacements,
        sum(lives.exit_h - lives.entry_h) as exposure_h
    from lives
    group by lives.component_class
),

final as (
    select
        by_class.component_class,
        by_class.unit_level,
        by_class.n_units,
        by_class.n_lives,
        by_class.n_replacements,
        by_class.exposure_h,
        -- unit-years of 8,766 h (365.25 days), the AFR's denominator
        by_class.exposure_h / 8766.0 as unit_years,
        tickets.n_repair_tickets
    from by_class
    cross join tickets
)

select * from final
order by n_replacements desc, component_class asc
