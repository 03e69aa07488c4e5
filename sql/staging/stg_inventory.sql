-- nvidia-smi GPU inventory snapshots, one row per (host, snapshot, GPU index).
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
        source.gpu_name
    from source
    order by source.host asc, source.snapshot_ts asc, source.gpu_index asc, source.source_file desc
)

select * from final
