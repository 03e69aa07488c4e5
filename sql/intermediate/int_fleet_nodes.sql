-- The fleet as its telemetry shows it: one row per node that any source names, with or without a
-- fleet register (fleet CSV). Sources that name hosts: the fleet register, nvidia-smi snapshots,
-- DCGM samples, the nodes jobs ran on (sacct node lists: 'slurm'; Kubernetes pods:
-- 'kubernetes'; torchrun agents: 'elastic'), kernel-log Xid lines, Slurm node events, Kubernetes
-- events, repair tickets. seen_in lists them. rack, cluster, batch, installed_ts and removed_ts come from the register only (null
-- elsewhere: installed_ts null means the install time is unknown).
--
-- GPUs per node (n_gpus, gpu_count_source), first found:
--   1. 'nvidia_smi': the GPU indexes of the node's nvidia-smi snapshots;
--   2. 'dcgm': the GPU indexes of its DCGM samples;
--   3. 'cfg_params': the gpus_per_node parameter;
--   4. 'fleet_nodes': the most common count among the nodes counted by 1 or 2 (ties: the larger);
--   5. 'sacct': the most GPUs a job held per node on this node (its GPUs over its nodes, rounded
--      up: AllocTRES gres/gpu per node for Slurm; a pod's nvidia.com/gpu limit; a torchrun
--      run's world size over its nodes);
-- 3 to 5 are raised to the number of distinct GPUs (PCI buses) the node's Xid lines show when that
-- is larger. Without any of them the count is unknown: n_gpus is null, gpu_count_known false, and
-- the node has no GPU units at risk, only node-level ones.
with params as (select * from stg_params),

register as (select * from stg_fleet),

inventory as (select * from stg_inventory),

-- the nodes jobs ran on, with the GPUs per node a job held (its GPUs over its nodes, rounded
-- up), straight from the raw rows: a duplicate or superseded version of a record names the same
-- nodes and GPUs, so staging's deduplication would change neither
job_nodes as (
    select
        'slurm' as source,
        unnest(raw_slurm_jobs.nodes) as node,
        case
            when raw_slurm_jobs.n_gpus > 0 and len(raw_slurm_jobs.nodes) > 0
                then cast(ceil(raw_slurm_jobs.n_gpus / len(raw_slurm_jobs.nodes)) as bigint)
        end as gpus_per_node
    from raw_slurm_jobs
    where raw_slurm_jobs.step is null
    union all
    select
        'kubernetes' as source,
        raw_k8s_pods.node_name as node,
        case when raw_k8s_pods.gpu_limit > 0 then raw_k8s_pods.gpu_limit end as gpus_per_node
    from raw_k8s_pods
    union all
    select
        'elastic' as source,
        raw_elastic_events.host as node,
        case
            when raw_elastic_events.world_size > 0 and raw_elastic_events.n_nodes > 0
                then
                    cast(
                        ceil(raw_elastic_events.world_size / raw_elastic_events.n_nodes) as bigint
                    )
        end as gpus_per_node
    from raw_elastic_events
),

named as (
    select
        register.node,
        'fleet' as source
    from register
    union all
    select distinct
        inventory.host as node,
        'nvidia_smi' as source
    from inventory
    union all
    select distinct
        raw_dcgm_samples.host as node,
        'dcgm' as source
    from raw_dcgm_samples
    union all
    select distinct
        job_nodes.node,
        job_nodes.source
    from job_nodes
    union all
    select distinct
        stg_xid_events.host as node,
        'kernel' as source
    from stg_xid_events
    union all
    -- from the raw rows: a node named by an event is in the fleet whatever the event says, but
    -- not one configured for the future only (FUTR)
    select distinct
        unnest(raw_node_events.nodes) as node,
        'node_events' as source
    from raw_node_events
    where raw_node_events.state_base not in ('futr', 'future')
    union all
    select distinct
        stg_k8s_events.node,
        'k8s_events' as source
    from stg_k8s_events
    union all
    select distinct
        stg_repairs.node,
        'repairs' as source
    from stg_repairs
),

nodes as (
    select
        named.node,
        list(distinct named.source order by named.source) as seen_in
    from named
    where named.node is not null and named.node <> ''
    group by named.node
),

inventory_counts as (
    select
        inventory.host as node,
        count(distinct inventory.gpu_index) as n_gpus
    from inventory
    group by inventory.host
),

dcgm_counts as (
    select
        raw_dcgm_samples.host as node,
        count(distinct raw_dcgm_samples.gpu_index) as n_gpus
    from raw_dcgm_samples
    where raw_dcgm_samples.gpu_index is not null
    group by raw_dcgm_samples.host
),

observed_counts as (
    select
        nodes.node,
        coalesce(inventory_counts.n_gpus, dcgm_counts.n_gpus) as n_gpus,
        case
            when inventory_counts.n_gpus is not null then 'nvidia_smi'
            when dcgm_counts.n_gpus is not null then 'dcgm'
        end as gpu_count_source
    from nodes
    left join inventory_counts
        on nodes.node = inventory_counts.node
    left join dcgm_counts
        on nodes.node = dcgm_counts.node
),

fleet_mode as (
    select
        observed_counts.n_gpus,
        count(*) as n_nodes
    from observed_counts
    where observed_counts.n_gpus is not null
    group by observed_counts.n_gpus
    order by n_nodes desc, observed_counts.n_gpus desc
    limit 1
),

job_counts as (
    select
        job_nodes.node,
        max(job_nodes.gpus_per_node) as n_gpus
    from job_nodes
    group by job_nodes.node
),

xid_buses as (
    select
        stg_xid_events.host as node,
        count(distinct stg_xid_events.pci_bus_id) as n_gpus_seen
    from stg_xid_events
    where stg_xid_events.pci_bus_id is not null
    group by stg_xid_events.host
),

counted as (
    select
        observed_counts.node,
        coalesce(xid_buses.n_gpus_seen, 0) as n_gpus_seen,
        case
            when observed_counts.n_gpus is not null then observed_counts.n_gpus
            when
                coalesce(params.gpus_per_node, fleet_mode.n_gpus, job_counts.n_gpus) is not null
                then greatest(
                    coalesce(params.gpus_per_node, fleet_mode.n_gpus, job_counts.n_gpus),
                    coalesce(xid_buses.n_gpus_seen, 0)
                )
        end as n_gpus,
        case
            when observed_counts.gpu_count_source is not null
                then observed_counts.gpu_count_source
            when params.gpus_per_node is not null then 'cfg_params'
            when fleet_mode.n_gpus is not null then 'fleet_nodes'
            when job_counts.n_gpus is not null then 'sacct'
        end as gpu_count_source
    from observed_counts
    cross join params
    left join fleet_mode
        on true
    left join job_counts
        on observed_counts.node = job_counts.node
    left join xid_buses
        on observed_counts.node = xid_buses.node
),

final as (
    select
        nodes.node,
        register.rack,
        register.cluster,
        register.batch,
        register.installed_ts,
        register.removed_ts,
        register.node is not null as in_register,
        nodes.seen_in,
        cast(counted.n_gpus as integer) as n_gpus,
        counted.gpu_count_source,
        counted.n_gpus is not null as gpu_count_known,
        cast(counted.n_gpus_seen as integer) as n_gpus_seen
    from nodes
    inner join counted
        on nodes.node = counted.node
    left join register
        on nodes.node = register.node
)

select * from final
