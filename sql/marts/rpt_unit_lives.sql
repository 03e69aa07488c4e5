-- One row per failure-process life (int_component_lives: the times between a unit's job-stopping
-- failures, from telemetry alone) with its calendar span and its class's category; the weekly
-- report counts failures in its week, trailing weeks and to date by filtering on observed_to_ts.
with lives as (select * from int_component_lives),

classes as (select * from seed_component_class),

final as (
    select
        lives.unit_id,
        lives.component_class,
        classes.category,
        lives.unit_level,
        lives.node,
        lives.slot,
        lives.observed_from_ts,
        lives.observed_to_ts,
        lives.failed,
        classes.component_class is not null as is_seeded_class
    from lives
    left join classes
        on lives.component_class = classes.component_class
)

select * from final
