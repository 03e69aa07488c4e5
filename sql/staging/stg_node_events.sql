-- Slurm node events (sacctmgr show event), one row per node and event: a host list is unnested,
-- and the same event seen in several exports (open in one, closed in the next) is kept once: the
-- version with an end wins, then the latest file. The reason text is mapped to a component class
-- (an Xid code through seed_xid, else keywords); a bare "Not responding" is 'unknown'.
-- Planned work is not failure: reasons matching a planned pattern of seed_planned_reason
-- (sql/seeds/dim_planned_reason.csv: firmware / BIOS / driver updates, upgrades, scheduled
-- maintenance, admin reboots, cordons for maintenance, ...) are 'maintenance' with is_planned,
-- before any component keyword; corrective work of the seed (reseats, diagnostics, emergency
-- work) is 'maintenance' too but not planned. A pattern of the seed not planned wins.
-- FUTURE events (sacctmgr prints FUTR, reason "Future": a node configured but not yet in service,
-- as every node is when slurmctld first starts) are not outages and are left out.
with source as (
    select * from raw_node_events
    where state_base not in ('futr', 'future')
),

catalog as (select * from seed_xid),

vocabulary as (select * from seed_planned_reason),

unnested as (
    select
        source.* exclude (nodes),  -- noqa: RF03
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

reasons as (
    select distinct ranked.event_reason
    from ranked
    where ranked.version_rank = 1 and ranked.event_reason is not null
),

reason_work as (
    select
        reasons.event_reason,
        bool_or(vocabulary.is_planned) and not bool_or(not vocabulary.is_planned) as is_planned,
        -- the corrective class when one matched, else the first planned one
        first(vocabulary.work_class order by vocabulary.is_planned, vocabulary.work_class)
            as planned_work
    from reasons
    inner join vocabulary
        on regexp_matches(reasons.event_reason, '(?i)' || vocabulary.pattern)
    group by reasons.event_reason
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
            when reason_work.is_planned then 'maintenance'
            when regexp_matches(ranked.event_reason, '(?i)nvlink') then 'nvlink'
            when regexp_matches(ranked.event_reason, '(?i)ecc|dbe|row.?remap|retired.?page|hbm')
                then 'gpu_memory'
            when regexp_matches(ranked.event_reason, '(?i)fallen off|fell off|pcie|pci-e')
                then 'pcie'
            when reason_work.planned_work is not null then 'maintenance'
            when regexp_matches(ranked.event_reason, '(?i)\bpsu\b|power') then 'power'
            when regexp_matches(
                ranked.event_reason, '(?i)\bhca\b|\bnic\b|infiniband|\bib\b|mlx|link down'
            ) then 'nic'
            when regexp_matches(ranked.event_reason, '(?i)dimm|edac|memory') then 'host_memory'
            when regexp_matches(ranked.event_reason, '(?i)gpu') then 'gpu'
            else 'unknown'
        end as unavailability_class,
        coalesce(reason_work.is_planned and not coalesce(catalog.is_failure, false), false)
            as is_planned,
        reason_work.planned_work,
        ranked.source_file,
        ranked.line_no
    from ranked
    left join catalog
        on ranked.reason_xid = catalog.xid
    left join reason_work
        on ranked.event_reason = reason_work.event_reason
    where ranked.version_rank = 1
)

select * from final
