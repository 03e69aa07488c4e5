-- Failure-process lives ready for survival fitting (durations in hours on the age scale): the times
-- between each unit's job-stopping failures, from telemetry alone (int_component_lives). The
-- replacement lives cut by repair tickets are fct_replacement_lives.
with lives as (select * from int_component_lives),

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
        lives.failed,
        lives.failure_id,
        lives.age_known,
        lives.window_entry_h,
        lives.window_exit_h
    from lives
)

select * from final
