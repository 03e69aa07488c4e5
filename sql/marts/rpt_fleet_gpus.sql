-- GPU slots per node (one row per node and slot): the GPU units at risk of the fleet from
-- telemetry (int_fleet_gpus: nvidia-smi, else DCGM, else what Xid lines and a known GPU count
-- show).
with gpus as (select * from int_fleet_gpus),

final as (
    select
        gpus.node,
        gpus.slot
    from gpus
)

select * from final
