-- GPU units at risk, one row per node and GPU slot, for the nodes whose GPU count is known
-- (int_fleet_nodes.gpu_count_known). slot_source says where the slot comes from:
--   'nvidia_smi': a GPU index of the node's snapshots (slot gpu<i>, its latest PCI bus);
--   'dcgm': a GPU index of the node's DCGM samples, for a node without snapshots (slot gpu<i>);
--   'xid': a PCI bus the node's Xid lines show, for a node with neither (slot pci<bus>, e.g.
--     pci0000:9b:00; gpu_index null: no source maps the bus to an index);
--   'count': the node's other GPUs, which no line names (slots unseen1, unseen2, ... up to
--     n_gpus): at risk all the same.
-- A node whose GPU count is unknown has no rows here (its GPU-level failures are still failure
-- events, outside the lives).
with nodes as (select * from int_fleet_nodes),

inventory as (select * from stg_inventory),

inventory_gpus as (
    select
        inventory.host as node,
        'gpu' || inventory.gpu_index as slot,
        inventory.gpu_index,
        arg_max(inventory.pci_bus_id, inventory.snapshot_ts) as pci_bus_id,
        'nvidia_smi' as slot_source
    from inventory
    group by inventory.host, inventory.gpu_index
),

dcgm_gpus as (
    select
        raw_dcgm_samples.host as node,
        'gpu' || raw_dcgm_samples.gpu_index as slot,
        raw_dcgm_samples.gpu_index,
        arg_max(raw_dcgm_samples.pci_bus_id, raw_dcgm_samples.ts) as pci_bus_id,
        'dcgm' as slot_source
    from raw_dcgm_samples
    inner join nodes
        on raw_dcgm_samples.host = nodes.node
    where raw_dcgm_samples.gpu_index is not null and nodes.gpu_count_source = 'dcgm'
    group by raw_dcgm_samples.host, raw_dcgm_samples.gpu_index
),

xid_gpus as (
    select distinct
        stg_xid_events.host as node,
        'pci' || stg_xid_events.pci_bus_id as slot,
        cast(null as integer) as gpu_index,
        stg_xid_events.pci_bus_id,
        'xid' as slot_source
    from stg_xid_events
    inner join nodes
        on stg_xid_events.host = nodes.node
    where
        stg_xid_events.pci_bus_id is not null
        and nodes.gpu_count_source not in ('nvidia_smi', 'dcgm')
),

unseen_gpus as (
    select
        nodes.node,
        'unseen' || unnest(range(1, nodes.n_gpus - nodes.n_gpus_seen + 1)) as slot,
        cast(null as integer) as gpu_index,
        cast(null as varchar) as pci_bus_id,
        'count' as slot_source
    from nodes
    where nodes.gpu_count_source not in ('nvidia_smi', 'dcgm') and nodes.n_gpus > nodes.n_gpus_seen
),

final as (
    select * from inventory_gpus
    union all
    select * from dcgm_gpus
    union all
    select * from xid_gpus
    union all
    select * from unseen_gpus
)

select * from final
