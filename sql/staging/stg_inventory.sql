-- nvidia-smi GPU inventory snapshots, one row per (host, snapshot, GPU index).
-- unit_id names the physical GPU: its board serial, or its UUID where nvidia-smi printed no
-- serial ([N/A]: consumer and many workstation boards); serial itself stays null then, and
-- serial_note says why the UUID stands in.
with source as (select * from raw_inventory),

final as (
    select distinct on (source.host, source.snapshot_ts, source.gpu_index)
        source.host,
        source.snapshot_ts,
        source.gpu_index,
        'gpu' || source.gpu_index as slot,
        source.pci_bus_id,
        source.serial,
        source.uuid,
        source.gpu_name,
        coalesce(source.serial, source.uuid) as unit_id,
        case
            when source.serial is null and source.uuid is not null
                then 'no board serial reported (nvidia-smi [N/A]): unit_id is the GPU UUID'
        end as serial_note
    from source
    order by source.host asc, source.snapshot_ts asc, source.gpu_index asc, source.source_file desc
)

select * from final
