-- Slurm node events (sacctmgr show event), one row per node and event: a host list is unnested,
-- and the same event seen in several exports (open in one, closed in the next) is kept once: the
-- version with an end wins, then the latest file.
-- The reason text gives the event's class and whether it is a failure, in this order:
--   1. an Xid code in the reason ("NHC: Xid 79 ...") that NVIDIA's catalog (seed_xid) lists: its
--      class, a failure when the catalog's code is (is_failure and stops_job);
--   2. planned work (seed_planned_reason, sql/seeds/dim_planned_reason.csv: firmware / BIOS /
--      driver updates, upgrades, scheduled maintenance, admin reboots, cordons for maintenance,
--      ...): 'maintenance' with is_planned, never a failure; a corrective pattern of that seed
--      (unplanned / emergency work, reseats, diagnostics) makes it not planned;
--   3. the first pattern, by rank, of the editable vocabulary seed_node_reason
--      (sql/seeds/dim_node_reason.csv): its component_class and is_failure ("Not responding" is a
--      failure of class unknown, "Kill task failed" a symptom after a job ended, not a failure);
--   4. no pattern matched: class 'unknown', a failure only when the node was set DOWN or FAIL
--      (that kills its jobs; a drain lets them finish).
-- reason_gpu_index: the GPU a reason names ("GPU 2", "gpu3"), else null.
-- FUTURE events (sacctmgr prints FUTR, reason "Future": a node configured but not yet in service,
-- as every node is when slurmctld first starts) are not outages and are left out.
with source as (
    select * from raw_node_events
    where state_base not in ('futr', 'future')
),

catalog as (select * from seed_xid),

vocabulary as (select * from seed_planned_reason),

node_reasons as (select * from seed_node_reason),

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

-- each distinct reason is matched once; runs of three or more digits (ticket numbers, host
-- names, dates) are read as 000, so reasons that differ only there are matched once too
reason_texts as (
    select distinct
        ranked.event_reason,
        regexp_replace(ranked.event_reason, '[0-9]{3,}', '000', 'g') as reason_text
    from ranked
    where ranked.version_rank = 1 and ranked.event_reason is not null
),

reasons as (
    select distinct reason_texts.reason_text
    from reason_texts
),

reason_work as (
    select
        reasons.reason_text,
        bool_or(vocabulary.is_planned) and not bool_or(not vocabulary.is_planned) as is_planned,
        -- the corrective class when one matched, else the first planned one
        first(vocabulary.work_class order by vocabulary.is_planned, vocabulary.work_class)
            as planned_work
    from reasons
    inner join vocabulary
        on regexp_matches(reasons.reason_text, '(?i)' || vocabulary.pattern)
    group by reasons.reason_text
),

reason_classes as (
    select
        reasons.reason_text,
        -- the first pattern by rank wins
        arg_min(node_reasons.component_class, node_reasons.rank) as component_class,
        arg_min(node_reasons.is_failure, node_reasons.rank) as is_failure
    from reasons
    inner join node_reasons
        on regexp_matches(reasons.reason_text, '(?i)' || node_reasons.pattern)
    group by reasons.reason_text
),

classified as (
    select
        ranked.*,
        reason_work.planned_work,
        coalesce(catalog.is_failure, false) as is_xid_failure,
        coalesce(reason_work.is_planned and not coalesce(catalog.is_failure, false), false)
            as is_planned,
        reason_classes.component_class as vocabulary_class,
        reason_classes.is_failure as vocabulary_failure,
        catalog.xid as catalog_xid,
        catalog.component_class as catalog_class,
        catalog.stops_job as catalog_stops_job
    from ranked
    left join catalog
        on ranked.reason_xid = catalog.xid
    left join reason_texts
        on ranked.event_reason = reason_texts.event_reason
    left join reason_work
        on reason_texts.reason_text = reason_work.reason_text
    left join reason_classes
        on reason_texts.reason_text = reason_classes.reason_text
    where ranked.version_rank = 1
),

final as (
    select
        classified.node,
        classified.cluster,
        classified.start_ts,
        classified.end_ts,
        classified.state,
        classified.state_base,
        classified.event_reason,
        classified.user_name,
        classified.reason_xid,
        case
            when classified.is_xid_failure then classified.catalog_class
            when classified.is_planned then 'maintenance'
            when classified.catalog_xid is not null then classified.catalog_class
            else coalesce(classified.vocabulary_class, 'unknown')
        end as unavailability_class,
        classified.is_planned,
        classified.planned_work,
        case
            when classified.is_xid_failure then classified.catalog_stops_job
            when classified.is_planned or classified.catalog_xid is not null then false
            else coalesce(classified.vocabulary_failure, classified.state_base in ('down', 'fail'))
        end as is_failure,
        try_cast(
            nullif(
                regexp_extract(classified.event_reason, '(?i)\bgpu ?#?([0-9]{1,2})\b', 1), ''
            ) as integer
        ) as reason_gpu_index,
        classified.source_file,
        classified.line_no
    from classified
)

select * from final
