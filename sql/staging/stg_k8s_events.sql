-- Kubernetes events, one row per event: overlapping dumps repeat an event (with a growing count),
-- the latest version wins. node_signal sorts the events that tell about a node's health or a
-- pod's end: node_not_ready, node_ready, node_rebooted, gpu_unhealthy, eviction, oom.
with source as (select * from raw_k8s_events),

ranked as (
    select
        source.*,
        row_number() over (
            partition by coalesce(
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
            when ranked.event_reason in ('Evicted', 'TaintManagerEviction', 'Preempted')
                then 'eviction'
            when ranked.event_reason in ('OOMKilling', 'SystemOOM') then 'oom'
        end as node_signal,
        ranked.source_file,
        ranked.line_no
    from ranked
    where ranked.version_rank = 1
)

select * from final
