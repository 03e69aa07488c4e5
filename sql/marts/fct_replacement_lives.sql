-- Replacement lives (cut by replace / planned_replace tickets) ready for survival fitting
-- (durations in hours on the age scale): `relia fit --lives fct_replacement_lives`.
with lives as (select * from int_replacement_lives),

final as (
    select
        lives.unit_id,
        lives.component_class,
        lives.unit_level,
        lives.node,
        lives.slot,
        -- position in the node: the GPU slot (gpu0..gpu7) or the node-level unit
        lives.slot as position,
        lives.rack,
        lives.cluster,
        lives.batch,
        lives.entry_h,
        lives.exit_h,
        lives.failed
    from lives
)

select * from final
