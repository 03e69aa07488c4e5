-- One row per job attempt, whatever ran the job (scheduler: slurm, kubernetes, elastic). Job ids
-- are namespaced so they cannot collide: Slurm keeps its JobIDRaw (1042; <cluster>/1042 for rows
-- of a multi-cluster dump with a Cluster column), Kubernetes jobs are k8s:<namespace>/<job>,
-- torchrun runs elastic:<rendezvous id>.
--
-- slurm: Slurm keeps a requeued job's earlier runs as extra allocation records with the same
-- JobIDRaw (sacct --duplicates): ordered by start they are attempts 1, 2, ... Records that never
-- started (pending, cancelled in queue) are not attempts.
--
-- kubernetes: the container runs of a JobSet, PyTorchJob (or other Kubeflow job) or batch Job.
-- A JobSet's attempt is its restart-attempt label + 1; otherwise the n-th run of each replica
-- (in-place restart or re-created pod) belongs to attempt n. An attempt starts at its first
-- container start and ends at its first failed run (non-zero exit), else when its last run
-- completed; that first failed run gives the state: node lost (ContainerStatusUnknown, Evicted,
-- NodeLost, a DisruptionTarget condition) NODE_FAIL, OOMKilled OUT_OF_MEMORY, DeadlineExceeded
-- TIMEOUT, else FAILED. An exit code 1-127 with reason Error is an application (Python) exit.
--
-- elastic: each rendezvous round whose worker group started is an attempt (in start order). The
-- round (stg_elastic_events.round) is the joined-round number of dynamic rendezvous logs; in logs
-- without joined-round lines (static rendezvous, torch versions or log levels that print none) it
-- is the restart_count of the agents' "Rendezvous complete" result blocks, which every agent of a
-- run increments on each group restart (without result blocks: the worker-group starts so far);
-- every worker-group start is an attempt, whatever rendezvous lines precede it. The attempt's
-- nodes are the agents that joined the round or started workers in it. It starts when the first
-- agent starts its workers and ends at the first worker failure (FAILED), the first death signal
-- (CANCELLED) or the last successful finish (COMPLETED). A positive worker exit code is an
-- application (Python) exit; a negative one is a signal. Lines of Python's default log format
-- print no time: their attempts, states and exit codes are kept, their times are null (and so
-- are the overheads and GPU-hours computed from them, never 0); such a failure is no
-- interruption (an interruption needs its time). Their bounds are start_ts_lo/_hi and
-- end_ts_lo/_hi (from the lines' ts_lo/ts_hi: the timed lines around them); a failure that the
-- launcher's ChildFailedError summary dates has that time (stg_elastic_events.ts_source).
with jobs as (
    select
        stg_slurm_jobs.* replace (
            coalesce(stg_slurm_jobs.cluster || '/', '') || stg_slurm_jobs.job_id_raw as job_id_raw
        )
    from stg_slurm_jobs
    where stg_slurm_jobs.step is null and stg_slurm_jobs.start_ts is not null
),

ordered as (
    select
        jobs.*,
        row_number() over job_runs as attempt,
        lead(jobs.start_ts) over job_runs as next_start_ts
    from jobs
    window job_runs as (partition by jobs.job_id_raw order by jobs.start_ts, jobs.submit_ts)
),

slurm_attempts as (
    select
        ordered.job_id_raw,
        ordered.attempt,
        ordered.job_id,
        ordered.job_name,
        ordered.user_name,
        ordered.account,
        ordered.partition,
        ordered.nodes,
        ordered.n_gpus,
        ordered.submit_ts,
        ordered.start_ts,
        ordered.end_ts,
        ordered.state,
        ordered.exit_code,
        ordered.exit_signal,
        ordered.next_start_ts,
        'slurm' as scheduler,
        ordered.state as termination_reason,
        false as is_application_exit
    from ordered
),

-- kubernetes ---------------------------------------------------------------------------------

pod_runs as (
    select * from stg_k8s_pods
    where started_ts is not null and job_key is not null
),

numbered_runs as (
    select
        pod_runs.*,
        coalesce(
            pod_runs.restart_attempt + 1,
            row_number() over (
                partition by pod_runs.job_key, pod_runs.replica_key
                order by pod_runs.started_ts
            )
        ) as attempt
    from pod_runs
),

pod_attempts as (
    select
        numbered_runs.job_key,
        numbered_runs.attempt,
        any_value(numbered_runs.namespace) as namespace,
        any_value(numbered_runs.job_name) as job_name,
        any_value(numbered_runs.job_kind) as job_kind,
        list(distinct numbered_runs.node_name order by numbered_runs.node_name)
        filter (where numbered_runs.node_name is not null) as nodes,
        sum(numbered_runs.gpu_limit) as n_gpus,
        min(numbered_runs.created_ts) as submit_ts,
        min(numbered_runs.started_ts) as start_ts,
        bool_or(numbered_runs.is_failed) as any_failed,
        bool_and(numbered_runs.container_state = 'terminated') as all_done,
        max(numbered_runs.finished_ts) as last_finished_ts,
        min(numbered_runs.finished_ts) filter (where numbered_runs.is_failed) as failed_ts,
        first(
            numbered_runs.node_lost
            order by numbered_runs.finished_ts, numbered_runs.pod_name
        ) filter (where numbered_runs.is_failed) as first_node_lost,
        first(
            numbered_runs.termination_reason
            order by numbered_runs.finished_ts, numbered_runs.pod_name
        ) filter (where numbered_runs.is_failed) as first_reason,
        first(
            numbered_runs.pod_reason
            order by numbered_runs.finished_ts, numbered_runs.pod_name
        ) filter (where numbered_runs.is_failed) as first_pod_reason,
        first(
            numbered_runs.exit_code
            order by numbered_runs.finished_ts, numbered_runs.pod_name
        ) filter (where numbered_runs.is_failed) as first_exit_code,
        first(
            numbered_runs.signal
            order by numbered_runs.finished_ts, numbered_runs.pod_name
        ) filter (where numbered_runs.is_failed) as first_signal
    from numbered_runs
    group by numbered_runs.job_key, numbered_runs.attempt
),

k8s_attempts as (
    select
        'k8s:' || pod_attempts.job_key as job_id_raw,
        pod_attempts.attempt,
        pod_attempts.job_key as job_id,
        pod_attempts.job_name,
        cast(null as varchar) as user_name,
        pod_attempts.namespace as account,
        pod_attempts.job_kind as partition,
        pod_attempts.nodes,
        cast(pod_attempts.n_gpus as integer) as n_gpus,
        pod_attempts.submit_ts,
        pod_attempts.start_ts,
        case
            when pod_attempts.any_failed then pod_attempts.failed_ts
            when pod_attempts.all_done then pod_attempts.last_finished_ts
        end as end_ts,
        case
            when pod_attempts.any_failed and pod_attempts.first_node_lost then 'NODE_FAIL'
            when pod_attempts.any_failed and pod_attempts.first_reason = 'OOMKilled'
                then 'OUT_OF_MEMORY'
            when pod_attempts.any_failed and pod_attempts.first_pod_reason = 'DeadlineExceeded'
                then 'TIMEOUT'
            when pod_attempts.any_failed then 'FAILED'
            when pod_attempts.all_done then 'COMPLETED'
            else 'RUNNING'
        end as state,
        case
            when pod_attempts.any_failed then pod_attempts.first_exit_code
            when pod_attempts.all_done then 0
        end as exit_code,
        case
            when pod_attempts.any_failed
                then coalesce(
                    pod_attempts.first_signal,
                    case
                        when pod_attempts.first_exit_code > 128
                            then pod_attempts.first_exit_code - 128
                    end,
                    0
                )
            when pod_attempts.all_done then 0
        end as exit_signal,
        cast(null as timestamptz) as next_start_ts,
        'kubernetes' as scheduler,
        case
            when pod_attempts.any_failed then pod_attempts.first_reason
            when pod_attempts.all_done then 'Completed'
        end as termination_reason,
        coalesce(
            pod_attempts.any_failed
            and pod_attempts.first_reason = 'Error'
            and pod_attempts.first_exit_code between 1 and 127
            and not pod_attempts.first_node_lost,
            false
        ) as is_application_exit
    from pod_attempts
),

-- torchrun (elastic) -------------------------------------------------------------------------

agent_lines as (
    select * from stg_elastic_events
    where round is not null
),

rounds as (
    select
        agent_lines.run_id,
        agent_lines.round,
        coalesce(
            min(agent_lines.ts) filter (where agent_lines.event = 'rendezvous_joined'),
            min(agent_lines.ts) filter (where agent_lines.event = 'rendezvous_complete')
        ) as submit_ts,
        min(agent_lines.ts) filter (where agent_lines.event = 'workers_started') as start_ts,
        min(agent_lines.ts) filter (where agent_lines.event = 'worker_failed') as failed_ts,
        first(
            agent_lines.exit_code
            order by agent_lines.ts, agent_lines.host, agent_lines.line_no
        ) filter (where agent_lines.event = 'worker_failed') as first_exit_code,
        -- what happened, whether or not the lines print a time (Python's default format does not)
        count(*) filter (where agent_lines.event = 'workers_started') as n_starts,
        bool_or(agent_lines.event = 'worker_failed') as has_failed,
        bool_or(agent_lines.event = 'death_signal') as has_signal,
        bool_or(agent_lines.event = 'group_succeeded') as has_succeeded,
        min(agent_lines.ts) filter (where agent_lines.event = 'death_signal') as signal_ts,
        max(agent_lines.ts) filter (where agent_lines.event = 'group_succeeded') as succeeded_ts,
        -- bounds of those times (ts_lo <= time <= ts_hi on every line): the earliest of some
        -- lines is at least the least lower bound only when every line has one, and at most any
        -- line's upper bound; the latest the other way round
        case
            when
                bool_and(agent_lines.ts_lo is not null)
                filter (where agent_lines.event = 'workers_started')
                then min(agent_lines.ts_lo) filter (where agent_lines.event = 'workers_started')
        end as start_lo,
        min(agent_lines.ts_hi) filter (where agent_lines.event = 'workers_started') as start_hi,
        case
            when
                bool_and(agent_lines.ts_lo is not null)
                filter (where agent_lines.event = 'worker_failed')
                then min(agent_lines.ts_lo) filter (where agent_lines.event = 'worker_failed')
        end as failed_lo,
        min(agent_lines.ts_hi) filter (where agent_lines.event = 'worker_failed') as failed_hi,
        case
            when
                bool_and(agent_lines.ts_lo is not null)
                filter (where agent_lines.event = 'death_signal')
                then min(agent_lines.ts_lo) filter (where agent_lines.event = 'death_signal')
        end as signal_lo,
        min(agent_lines.ts_hi) filter (where agent_lines.event = 'death_signal') as signal_hi,
        max(agent_lines.ts_lo) filter (where agent_lines.event = 'group_succeeded')
            as succeeded_lo,
        case
            when
                bool_and(agent_lines.ts_hi is not null)
                filter (where agent_lines.event = 'group_succeeded')
                then max(agent_lines.ts_hi) filter (where agent_lines.event = 'group_succeeded')
        end as succeeded_hi,
        list(distinct agent_lines.host order by agent_lines.host)
        filter (where agent_lines.event in ('rendezvous_joined', 'workers_started')) as nodes,
        max(agent_lines.world_size) as world_size
    from agent_lines
    group by agent_lines.run_id, agent_lines.round
),

started_rounds as (
    select
        rounds.*,
        row_number() over (partition by rounds.run_id order by rounds.start_ts, rounds.round)
            as attempt
    from rounds
    where rounds.n_starts > 0
),

elastic_attempts as (
    select
        'elastic:' || started_rounds.run_id as job_id_raw,
        started_rounds.attempt,
        started_rounds.run_id as job_id,
        started_rounds.run_id as job_name,
        cast(null as varchar) as user_name,
        cast(null as varchar) as account,
        cast(null as varchar) as partition,
        coalesce(started_rounds.nodes, []) as nodes,
        started_rounds.world_size as n_gpus,
        started_rounds.submit_ts,
        started_rounds.start_ts,
        coalesce(
            started_rounds.failed_ts, started_rounds.signal_ts, started_rounds.succeeded_ts
        ) as end_ts,
        case
            when started_rounds.has_failed then 'FAILED'
            when started_rounds.has_signal then 'CANCELLED'
            when started_rounds.has_succeeded then 'COMPLETED'
            else 'RUNNING'
        end as state,
        case
            when started_rounds.first_exit_code >= 0 then started_rounds.first_exit_code
            when started_rounds.has_succeeded then 0
        end as exit_code,
        case
            when started_rounds.first_exit_code < 0 then -started_rounds.first_exit_code
            when started_rounds.first_exit_code >= 0 or started_rounds.has_succeeded
                then 0
        end as exit_signal,
        cast(null as timestamptz) as next_start_ts,
        started_rounds.start_lo as start_ts_lo,
        started_rounds.start_hi as start_ts_hi,
        case
            when started_rounds.has_failed then started_rounds.failed_lo
            when started_rounds.has_signal then started_rounds.signal_lo
            when started_rounds.has_succeeded then started_rounds.succeeded_lo
        end as end_ts_lo,
        case
            when started_rounds.has_failed then started_rounds.failed_hi
            when started_rounds.has_signal then started_rounds.signal_hi
            when started_rounds.has_succeeded then started_rounds.succeeded_hi
        end as end_ts_hi,
        'elastic' as scheduler,
        case
            when started_rounds.has_failed
                then 'exitcode ' || started_rounds.first_exit_code
            when started_rounds.has_signal then 'death signal'
            when started_rounds.has_succeeded then 'succeeded'
        end as termination_reason,
        coalesce(
            started_rounds.has_failed and started_rounds.first_exit_code > 0, false
        ) as is_application_exit
    from started_rounds
),

other_attempts as (
    select
        unioned.* exclude (next_start_ts),
        lead(unioned.start_ts) over (
            partition by unioned.job_id_raw order by unioned.attempt
        ) as next_start_ts
    from (
        select * from k8s_attempts
        union all by name
        select * from elastic_attempts
    ) as unioned
),

all_attempts as (
    select * from slurm_attempts
    union all by name
    select * from other_attempts
),

final as (
    select
        all_attempts.job_id_raw,
        all_attempts.attempt,
        all_attempts.job_id,
        all_attempts.job_name,
        all_attempts.user_name,
        all_attempts.account,
        all_attempts.partition,
        all_attempts.nodes,
        len(all_attempts.nodes) as n_nodes,
        all_attempts.n_gpus,
        all_attempts.submit_ts,
        all_attempts.start_ts,
        all_attempts.end_ts,
        all_attempts.state,
        all_attempts.exit_code,
        all_attempts.exit_signal,
        all_attempts.state in ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'BOOT_FAIL')
        and all_attempts.end_ts is not null as is_interruption,
        all_attempts.next_start_ts,
        -- seconds from this attempt's end to the next attempt's start (requeue + queue wait;
        -- for torchrun, failure to training restarted)
        epoch(all_attempts.next_start_ts - all_attempts.end_ts) as restart_overhead_s,
        -- GPU-hours the attempt held (to its end, or to now while it runs)
        all_attempts.n_gpus
        * epoch(coalesce(all_attempts.end_ts, all_attempts.start_ts) - all_attempts.start_ts)
        / 3600.0 as gpu_hours,
        all_attempts.scheduler,
        all_attempts.termination_reason,
        all_attempts.is_application_exit,
        -- start_ts_lo <= the start <= start_ts_hi, likewise the end: the time itself where it
        -- is known; for a torchrun attempt whose lines print no time, the bounds from the timed
        -- lines around them (null where there is none on that side)
        coalesce(all_attempts.start_ts, all_attempts.start_ts_lo) as start_ts_lo,
        coalesce(all_attempts.start_ts, all_attempts.start_ts_hi) as start_ts_hi,
        coalesce(all_attempts.end_ts, all_attempts.end_ts_lo) as end_ts_lo,
        coalesce(all_attempts.end_ts, all_attempts.end_ts_hi) as end_ts_hi
    from all_attempts
)

select * from final
