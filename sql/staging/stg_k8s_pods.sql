-- Kubernetes container runs, one row per (pod uid, container, start): snapshots repeat a run
-- (running in one, terminated in the next), the terminated and latest version wins. job_key names
-- the job across attempts (<namespace>/<job>), replica_key the replica inside it; is_failed marks
-- a run that ended with a non-zero exit code, node_lost one whose node went away under it.
with source as (select * from raw_k8s_pods),

ranked as (
    select
        source.*,
        row_number() over (
            partition by source.pod_uid, source.container_name, source.started_ts
            order by
                source.finished_ts is null,
                source.snapshot_ts desc nulls last,
                source.source_file desc,
                source.line_no desc
        ) as version_rank
    from source
),

final as (
    select
        ranked.snapshot_ts,
        ranked.namespace,
        ranked.pod_name,
        ranked.pod_uid,
        ranked.node_name,
        ranked.phase,
        ranked.pod_reason,
        ranked.pod_message,
        ranked.disruption_reason,
        ranked.created_ts,
        ranked.deletion_ts,
        ranked.pod_start_ts,
        ranked.owner_kind,
        ranked.owner_name,
        ranked.job_kind,
        ranked.job_name,
        case when ranked.job_name is not null then ranked.namespace || '/' || ranked.job_name end
            as job_key,
        concat_ws(
            '/',
            coalesce(ranked.replica_type, ''),
            coalesce(cast(ranked.replica_index as varchar), ''),
            coalesce(cast(ranked.completion_index as varchar), ''),
            coalesce(ranked.container_name, '')
        ) as replica_key,
        ranked.replica_type,
        ranked.replica_index,
        ranked.completion_index,
        ranked.restart_attempt,
        ranked.container_name,
        ranked.gpu_limit,
        ranked.restart_count,
        ranked.run,
        ranked.container_state,
        ranked.started_ts,
        ranked.finished_ts,
        ranked.exit_code,
        ranked.signal,
        ranked.termination_reason,
        ranked.termination_message,
        ranked.waiting_reason,
        ranked.container_state = 'terminated' and coalesce(ranked.exit_code, 1) <> 0 as is_failed,
        coalesce(ranked.termination_reason = 'ContainerStatusUnknown', false)
        or coalesce(
            ranked.pod_reason in ('NodeLost', 'Evicted', 'Shutdown', 'Terminated'), false
        )
        or ranked.disruption_reason is not null as node_lost,
        ranked.source_file,
        ranked.line_no
    from ranked
    where ranked.version_rank = 1
)

select * from final
