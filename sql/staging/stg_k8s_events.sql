-- Kubernetes events, one row per event: overlapping dumps repeat an event (with a growing count),
-- the latest version wins. node_signal sorts the events that tell about a node's health or a
-- pod's end: node_not_ready, node_ready, node_rebooted, gpu_unhealthy, planned_work, eviction,
-- oom. planned_work: a Node event whose reason or message matches a planned pattern of
-- seed_planned_reason (an upgrade, a scheduled reboot, a cordon for maintenance, ...) and none of
-- its corrective patterns: planned work, not a failure.
with source as (select * from raw_k8s_events),

vocabulary as (select * from seed_planned_reason),

ranked as (
    select
        source.*,
        row_number() over (
            partition by
                coalesce(
                    source.event_uid,
                    md5(
                        concat_ws(
                            '|',
                            source.involved_kind,
                            source.involved_namespace,
                            source.involved_name,
                            source.event_reason,
                            cast(coalesce(source.first_ts, source.event_time_ts) as varchar),
                            source.message
                        )
                    )
                )
            order by
                source.count desc nulls last,
                source.last_ts desc nulls last,
                source.source_file desc,
                source.line_no desc
        ) as version_rank
    from source
),

node_texts as (
    select distinct concat_ws(' ', ranked.event_reason, ranked.message) as text
    from ranked
    where ranked.version_rank = 1 and ranked.involved_kind = 'Node'
),

planned_texts as (
    select node_texts.text
    from node_texts
    inner join vocabulary
        on regexp_matches(node_texts.text, '(?i)' || vocabulary.pattern)
    group by node_texts.text
    having bool_or(vocabulary.is_planned) and not bool_or(not vocabulary.is_planned)
),

final as (
    select
        ranked.namespace,
        ranked.event_name,
        ranked.event_uid,
        ranked.involved_kind,
        ranked.involved_namespace,
        ranked.involved_name,
        ranked.involved_uid,
        ranked.field_path,
        ranked.event_reason,
        ranked.message,
        ranked.event_type,
        ranked.count,
        -- when the event (first) happened and when it was last seen
        coalesce(ranked.first_ts, ranked.event_time_ts, ranked.created_ts) as ts,
        coalesce(ranked.last_ts, ranked.event_time_ts, ranked.first_ts, ranked.created_ts)
            as last_seen_ts,
        ranked.source_component,
        ranked.source_host,
        ranked.node,
        case
            when ranked.involved_kind = 'Node' and ranked.event_reason = 'NodeNotReady'
                then 'node_not_ready'
            when ranked.involved_kind = 'Node' and ranked.event_reason = 'NodeReady'
                then 'node_ready'
            when ranked.involved_kind = 'Node' and ranked.event_reason = 'Rebooted'
                then 'node_rebooted'
            when
                ranked.involved_kind = 'Node'
                and regexp_matches(
                    concat_ws(' ', ranked.event_reason, ranked.message),
                    '(?i)\bxid\b|gpu.*(unhealthy|lost|fallen|not ready)'
                )
                then 'gpu_unhealthy'
            when planned_texts.text is not null then 'planned_work'
            when ranked.event_reason in ('Evicted', 'TaintManagerEviction', 'Preempted')
                then 'eviction'
            when ranked.event_reason in ('OOMKilling', 'SystemOOM') then 'oom'
        end as node_signal,
        ranked.source_file,
        ranked.line_no
    from ranked
    left join planned_texts
        on
        ranked.involved_kind = 'Node'
        and concat_ws(' ', ranked.event_reason, ranked.message) = planned_texts.text
    where ranked.version_rank = 1
)

select * from final
