-- Unit lives ready for survival fitting (durations in hours on the age scale).
with lives as (select * from int_component_lives),

final as (
    select
        lives.unit_id,
        lives.component_class,
        lives.unit_level,
        lives.node,
        lives.slot,
        lives.rack,
        lives.cluster,
        lives.batch,
        lives.entry_h,
        lives.exit_h,
        lives.failed
    from lives
)

select * from final
