-- Slurm node events (sacctmgr show event), one row per node and event: a host list is unnested,
-- and the same event seen in several exports (open in one, closed in the next) is kept once: the
-- version with an end wins, then the latest file. The reason text is mapped to a component class
-- (an Xid code through seed_xid, else keywords); planned work, reseats and diagnostics are
-- 'maintenance', a bare "Not responding" is 'unknown'.
with source as (select * from raw_node_events),

catalog as (select * from seed_xid),

unnested as (
    select
        source.* exclude (nodes),
        unnest(source.nodes) as node
    from source
),

ranked as (
    select
        unnested.*,
        row_number() over (
            partition by unnested.node, unnested.start_ts, unnested.state
            order by
                unnested.end_ts is null,
                unnested.end_ts desc,
                unnested.source_file desc,
                unnested.line_no desc
        ) as version_rank,
        try_cast(
            regexp_extract(unnested.event_reason, '(?i)xid[ :=#]*([0-9]+)', 1) as integer
        ) as reason_xid
    from unnested
),

final as (
    select
        ranked.node,
        ranked.cluster,
        ranked.start_ts,
        ranked.end_ts,
        ranked.state,
        ranked.state_base,
        ranked.event_reason,
        ranked.user_name,
        ranked.reason_xid,
        case
            when catalog.is_failure then catalog.component_class
            when regexp_matches(ranked.event_reason, '(?i)nvlink') then 'nvlink'
            when regexp_matches(ranked.event_reason, '(?i)ecc|dbe|row.?remap|retired.?page|hbm')
                then 'gpu_memory'
            when regexp_matches(ranked.event_reason, '(?i)fallen off|fell off|pcie|pci-e')
                then 'pcie'
            when regexp_matches(ranked.event_reason, '(?i)maint|planned|reseat|diagnos|upgrade')
                then 'maintenance'
            when regexp_matches(ranked.event_reason, '(?i)\bpsu\b|power') then 'power'
            when regexp_matches(
                ranked.event_reason, '(?i)\bhca\b|\bnic\b|infiniband|\bib\b|mlx|link down'
            ) then 'nic'
            when regexp_matches(ranked.event_reason, '(?i)dimm|edac|memory') then 'host_memory'
            when regexp_matches(ranked.event_reason, '(?i)gpu') then 'gpu'
            else 'unknown'
        end as unavailability_class,
        ranked.source_file,
        ranked.line_no
    from ranked
    left join catalog
        on ranked.reason_xid = catalog.xid
    where ranked.version_rank = 1
)

select * from final
