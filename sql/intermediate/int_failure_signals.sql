-- Every sign of a job-stopping failure, one row per signal and source, before the signals of one
-- physical failure are merged into one failure event. dataset is null for the
-- fleet's own telemetry, the data set's name for fault logs.
--
-- source (class_rank: which source names the class and unit of a merged event, lowest first):
--   'xid' (1)        a run of fatal Xid lines (seed_xid is_failure and stops_job) on one GPU (host,
--                    PCI bus): a new run when the gap to the run's previous line exceeds
--                    incident_gap_s; from its first to its last line. The GPU slot is gpu<i> for
--                    the bus's index in nvidia-smi (else DCGM), else pci<bus>.
--   'dcgm' (1)       fatal DCGM health of one GPU in one hour (int_gpu_health.fatal_kind: a
--                    double-bit ECC count rose, or the row-remap failure gauge turned on; class
--                    gpu_memory), from its sample to the GPU's next sample (for a GPU's last
--                    sample, to the node's next sample of any GPU in a later hour; none: to the
--                    end of the data).
--   'ticket' (2)     a replace ticket, from opened to closed (open while not closed).
--   'node_event' (3) a Slurm node event that is a failure (stg_node_events.is_failure: the class
--                    from the reason vocabulary), from its start to its end (open while none);
--                    a GPU named in the reason ("GPU 2") gives the slot. Node events that are
--                    neither failures nor planned work (corrective work, a "Kill task failed"
--                    drain) are rows with is_evidence: never a failure by themselves, they can
--                    only tell when a failure's node came back.
--   'dcgm' rows with is_evidence: clean DCGM samples of a GPU (the first sample of an hour that
--                    shows a counter reset, the first sample of a new GPU in the slot): they
--                    only tell when a failed GPU came back.
--   'k8s_event' (4)  a Kubernetes Node event NodeNotReady (until the node's next NodeReady, which
--                    is its end; without one until it was last seen), Rebooted, or a GPU-unhealthy
--                    event (class from an Xid code in its text, else gpu).
--   'scheduler' (5)  an attempt that ended NODE_FAIL or BOOT_FAIL (Slurm; a Kubernetes pod whose
--                    node was lost), one row per node of the attempt (n_nodes of them), class
--                    unknown at its end time.
--   'fault_log' (1)  a fault interval or failure instant of a fault log (stg_fault_events),
--                    dataset set, host = the log's unit.
-- in_planned_work: the signal's node was under planned work then (a planned Slurm node event,
-- start to end; a Kubernetes planned-work event, to failure_merge_s after it was last seen):
-- planned work is not failure, so the failure events ignore it. Tickets and fault logs never are.
-- cover_ts is the end of the span the signal shows the unit failing or down (null: still down at
-- the end of the data, is_open); end_ts is the signal's own evidence that the unit is back.
with params as (select * from stg_params),

catalog as (select * from seed_xid),

classes as (select * from seed_component_class),

node_events as (select * from stg_node_events),

-- the GPU slot of a PCI bus: nvidia-smi's index for it, else DCGM's (for a node without snapshots)
inventory_buses as (
    select
        stg_inventory.host,
        stg_inventory.pci_bus_id,
        arg_max(stg_inventory.gpu_index, stg_inventory.snapshot_ts) as gpu_index
    from stg_inventory
    where stg_inventory.pci_bus_id is not null
    group by stg_inventory.host, stg_inventory.pci_bus_id
),

dcgm_buses as (
    select
        raw_dcgm_samples.host,
        raw_dcgm_samples.pci_bus_id,
        arg_max(raw_dcgm_samples.gpu_index, raw_dcgm_samples.ts) as gpu_index
    from raw_dcgm_samples
    where raw_dcgm_samples.pci_bus_id is not null and raw_dcgm_samples.gpu_index is not null
    group by raw_dcgm_samples.host, raw_dcgm_samples.pci_bus_id
),

bus_slots as (
    select
        inventory_buses.host as node,
        inventory_buses.pci_bus_id,
        inventory_buses.gpu_index
    from inventory_buses
    union all
    select
        dcgm_buses.host as node,
        dcgm_buses.pci_bus_id,
        dcgm_buses.gpu_index
    from dcgm_buses
    anti join inventory_buses
        on dcgm_buses.host = inventory_buses.host
),

-- Xid runs -------------------------------------------------------------------------------------

xid_lines as (
    select * from stg_xid_events
    where is_failure and stops_job
),

xid_flagged as (
    select
        xid_lines.*,
        case
            when
                lag(xid_lines.ts) over gpu_lines is null
                or epoch(xid_lines.ts - lag(xid_lines.ts) over gpu_lines) > params.incident_gap_s
                then 1
            else 0
        end as starts_run
    from xid_lines
    cross join params
    window gpu_lines as (
        partition by xid_lines.host, xid_lines.pci_bus_id
        order by xid_lines.ts, xid_lines.source_file, xid_lines.line_no
    )
),

xid_numbered as (
    select
        xid_flagged.*,
        sum(xid_flagged.starts_run) over (
            partition by xid_flagged.host, xid_flagged.pci_bus_id
            order by xid_flagged.ts, xid_flagged.source_file, xid_flagged.line_no
            rows between unbounded preceding and current row
        ) as run_no
    from xid_flagged
),

xid_runs as (
    select
        xid_numbered.host,
        xid_numbered.pci_bus_id,
        min(xid_numbered.ts) as first_ts,
        max(xid_numbered.ts) as last_ts,
        arg_min(xid_numbered.xid, xid_numbered.ts) as xid,
        arg_min(xid_numbered.component_class, xid_numbered.ts) as component_class,
        arg_min(xid_numbered.xid_name, xid_numbered.ts) as xid_name,
        count(*) as n_lines,
        min(xid_numbered.source_file) as source_file,
        min(xid_numbered.line_no) as line_no
    from xid_numbered
    group by xid_numbered.host, xid_numbered.pci_bus_id, xid_numbered.run_no
),

xid_signals as (
    select
        'xid' as source,
        cast(null as varchar) as dataset,
        xid_runs.host,
        bus_slots.gpu_index,
        coalesce('gpu' || bus_slots.gpu_index, 'pci' || xid_runs.pci_bus_id) as slot,
        xid_runs.pci_bus_id,
        xid_runs.component_class,
        xid_runs.first_ts as ts,
        xid_runs.last_ts as cover_ts,
        cast(null as timestamptz) as end_ts,
        false as is_open,
        xid_runs.xid,
        cast(null as varchar) as ticket_id,
        cast(null as varchar) as job_id_raw,
        cast(null as integer) as attempt,
        1 as n_nodes,
        false as is_evidence,
        'Xid ' || xid_runs.xid || ' ' || xid_runs.xid_name || ' x' || xid_runs.n_lines as detail,
        xid_runs.source_file,
        xid_runs.line_no
    from xid_runs
    left join bus_slots
        on xid_runs.host = bus_slots.node
        and xid_runs.pci_bus_id = bus_slots.pci_bus_id
),

-- fatal DCGM health ----------------------------------------------------------------------------

health as (
    select
        int_gpu_health.host,
        int_gpu_health.gpu_index,
        int_gpu_health.uuid,
        int_gpu_health.pci_bus_id,
        int_gpu_health.first_ts,
        int_gpu_health.fatal_first_ts,
        int_gpu_health.fatal_next_ts,
        int_gpu_health.fatal_kind,
        int_gpu_health.reset_first_ts
    from int_gpu_health
),

dcgm_fatal as (
    select * from health
    where fatal_first_ts is not null
),

dcgm_signals as (
    select
        'dcgm' as source,
        cast(null as varchar) as dataset,
        dcgm_fatal.host,
        dcgm_fatal.gpu_index,
        'gpu' || dcgm_fatal.gpu_index as slot,
        dcgm_fatal.pci_bus_id,
        'gpu_memory' as component_class,
        dcgm_fatal.fatal_first_ts as ts,
        -- seen until the GPU's next sample; the GPU's last sample (replaced, or off the bus):
        -- until the node's next sample (it is not scraped while down), else to the end of the data
        coalesce(dcgm_fatal.fatal_next_ts, node_samples.first_ts) as cover_ts,
        cast(null as timestamptz) as end_ts,
        false as is_open,
        cast(null as integer) as xid,
        cast(null as varchar) as ticket_id,
        cast(null as varchar) as job_id_raw,
        cast(null as integer) as attempt,
        1 as n_nodes,
        false as is_evidence,
        'DCGM ' || dcgm_fatal.fatal_kind as detail,
        cast(null as varchar) as source_file,
        cast(null as integer) as line_no
    from dcgm_fatal
    asof left join health as node_samples
        on dcgm_fatal.host = node_samples.host
        and dcgm_fatal.fatal_first_ts < node_samples.first_ts
),

-- clean DCGM samples: a GPU back after a reset (a counter went down: driver reload, GPU reset,
-- reboot) or a new GPU in the slot (the first sample of a later UUID)
dcgm_series as (
    select
        health.host,
        health.gpu_index,
        min(health.first_ts) as first_ts,
        row_number() over (
            partition by health.host, health.gpu_index order by min(health.first_ts)
        ) as series_no
    from health
    group by health.host, health.gpu_index, health.uuid
),

dcgm_clean as (
    select
        health.host,
        health.gpu_index,
        health.reset_first_ts as ts,
        'DCGM counter reset' as detail
    from health
    where health.reset_first_ts is not null
    union all
    select
        dcgm_series.host,
        dcgm_series.gpu_index,
        dcgm_series.first_ts as ts,
        'DCGM new GPU' as detail
    from dcgm_series
    where dcgm_series.series_no > 1
),

dcgm_clean_signals as (
    select
        'dcgm' as source,
        cast(null as varchar) as dataset,
        dcgm_clean.host,
        dcgm_clean.gpu_index,
        'gpu' || dcgm_clean.gpu_index as slot,
        cast(null as varchar) as pci_bus_id,
        cast(null as varchar) as component_class,
        dcgm_clean.ts,
        dcgm_clean.ts as cover_ts,
        dcgm_clean.ts as end_ts,
        false as is_open,
        cast(null as integer) as xid,
        cast(null as varchar) as ticket_id,
        cast(null as varchar) as job_id_raw,
        cast(null as integer) as attempt,
        1 as n_nodes,
        true as is_evidence,
        dcgm_clean.detail,
        cast(null as varchar) as source_file,
        cast(null as integer) as line_no
    from dcgm_clean
),

-- replace tickets ------------------------------------------------------------------------------

ticket_signals as (
    select
        'ticket' as source,
        cast(null as varchar) as dataset,
        stg_repairs.node as host,
        try_cast(regexp_extract(stg_repairs.slot, '^gpu([0-9]+)$', 1) as integer) as gpu_index,
        case when classes.unit_level = 'gpu' then stg_repairs.slot end as slot,
        cast(null as varchar) as pci_bus_id,
        stg_repairs.component_class,
        stg_repairs.opened_ts as ts,
        stg_repairs.closed_ts as cover_ts,
        stg_repairs.closed_ts as end_ts,
        stg_repairs.closed_ts is null as is_open,
        cast(null as integer) as xid,
        stg_repairs.ticket_id,
        cast(null as varchar) as job_id_raw,
        cast(null as integer) as attempt,
        1 as n_nodes,
        false as is_evidence,
        stg_repairs.description as detail,
        cast(null as varchar) as source_file,
        cast(null as integer) as line_no
    from stg_repairs
    left join classes
        on stg_repairs.component_class = classes.component_class
    where stg_repairs.action = 'replace' and stg_repairs.opened_ts is not null
),

-- Slurm node events ----------------------------------------------------------------------------

node_event_signals as (
    select
        'node_event' as source,
        cast(null as varchar) as dataset,
        node_events.node as host,
        case when classes.unit_level = 'gpu' then node_events.reason_gpu_index end as gpu_index,
        case
            when classes.unit_level = 'gpu' then 'gpu' || node_events.reason_gpu_index
        end as slot,
        cast(null as varchar) as pci_bus_id,
        node_events.unavailability_class as component_class,
        node_events.start_ts as ts,
        node_events.end_ts as cover_ts,
        node_events.end_ts,
        node_events.end_ts is null as is_open,
        case when catalog.is_failure then node_events.reason_xid end as xid,
        cast(null as varchar) as ticket_id,
        cast(null as varchar) as job_id_raw,
        cast(null as integer) as attempt,
        1 as n_nodes,
        not node_events.is_failure as is_evidence,
        node_events.state || ' ' || coalesce(node_events.event_reason, '') as detail,
        node_events.source_file,
        node_events.line_no
    from node_events
    left join classes
        on node_events.unavailability_class = classes.component_class
    left join catalog
        on node_events.reason_xid = catalog.xid
    where not node_events.is_planned and node_events.start_ts is not null
),

-- Kubernetes Node events -----------------------------------------------------------------------

k8s as (
    select * from stg_k8s_events
    where node is not null and node_signal is not null
),

k8s_ready as (
    select
        k8s.node,
        k8s.ts
    from k8s
    where k8s.node_signal = 'node_ready'
),

k8s_failures as (
    select
        k8s.*,
        try_cast(
            regexp_extract(
                concat_ws(' ', k8s.event_reason, k8s.message), '(?i)xid[ :=#]*([0-9]+)', 1
            ) as integer
        ) as text_xid
    from k8s
    where k8s.node_signal in ('node_not_ready', 'node_rebooted', 'gpu_unhealthy')
),

k8s_signals as (
    select
        'k8s_event' as source,
        cast(null as varchar) as dataset,
        k8s_failures.node as host,
        cast(null as integer) as gpu_index,
        cast(null as varchar) as slot,
        cast(null as varchar) as pci_bus_id,
        case
            when k8s_failures.node_signal <> 'gpu_unhealthy' then 'unknown'
            when catalog.is_failure then catalog.component_class
            else 'gpu'
        end as component_class,
        k8s_failures.ts,
        case
            when k8s_failures.node_signal = 'node_not_ready'
                then coalesce(k8s_ready.ts, k8s_failures.last_seen_ts)
            else k8s_failures.last_seen_ts
        end as cover_ts,
        case when k8s_failures.node_signal = 'node_not_ready' then k8s_ready.ts end as end_ts,
        false as is_open,
        case when catalog.is_failure then k8s_failures.text_xid end as xid,
        cast(null as varchar) as ticket_id,
        cast(null as varchar) as job_id_raw,
        cast(null as integer) as attempt,
        1 as n_nodes,
        false as is_evidence,
        k8s_failures.event_reason || ': ' || coalesce(k8s_failures.message, '') as detail,
        k8s_failures.source_file,
        k8s_failures.line_no
    from k8s_failures
    asof left join k8s_ready
        on k8s_failures.node = k8s_ready.node
        and k8s_failures.ts < k8s_ready.ts
    left join catalog
        on k8s_failures.text_xid = catalog.xid
),

-- scheduler-only evidence ----------------------------------------------------------------------

lost_attempts as (
    select * from int_job_attempts
    where state in ('NODE_FAIL', 'BOOT_FAIL') and end_ts is not null and len(nodes) > 0
),

scheduler_signals as (
    select
        'scheduler' as source,
        cast(null as varchar) as dataset,
        unnest(lost_attempts.nodes) as host,
        cast(null as integer) as gpu_index,
        cast(null as varchar) as slot,
        cast(null as varchar) as pci_bus_id,
        'unknown' as component_class,
        lost_attempts.end_ts as ts,
        lost_attempts.end_ts as cover_ts,
        cast(null as timestamptz) as end_ts,
        false as is_open,
        cast(null as integer) as xid,
        cast(null as varchar) as ticket_id,
        lost_attempts.job_id_raw,
        cast(lost_attempts.attempt as integer) as attempt,
        cast(len(lost_attempts.nodes) as integer) as n_nodes,
        false as is_evidence,
        lost_attempts.scheduler || ' ' || lost_attempts.state as detail,
        cast(null as varchar) as source_file,
        cast(null as integer) as line_no
    from lost_attempts
),

-- fault logs -----------------------------------------------------------------------------------

fault_signals as (
    select
        'fault_log' as source,
        stg_fault_events.dataset,
        stg_fault_events.unit_id as host,
        cast(null as integer) as gpu_index,
        cast(null as varchar) as slot,
        cast(null as varchar) as pci_bus_id,
        coalesce(stg_fault_events.component_class, 'unknown') as component_class,
        stg_fault_events.start_ts as ts,
        case
            when stg_fault_events.record_kind = 'event' then stg_fault_events.start_ts
            else stg_fault_events.end_ts
        end as cover_ts,
        case when stg_fault_events.record_kind = 'fault' then stg_fault_events.end_ts end
            as end_ts,
        stg_fault_events.record_kind = 'fault' and stg_fault_events.end_ts is null as is_open,
        cast(null as integer) as xid,
        cast(null as varchar) as ticket_id,
        cast(null as varchar) as job_id_raw,
        cast(null as integer) as attempt,
        1 as n_nodes,
        false as is_evidence,
        concat_ws(
            ' / ',
            stg_fault_events.category_l1,
            stg_fault_events.category_l2,
            stg_fault_events.category_l3
        ) as detail,
        stg_fault_events.source_file,
        stg_fault_events.line_no
    from stg_fault_events
    where
        stg_fault_events.record_kind in ('fault', 'event')
        and stg_fault_events.start_ts is not null
        and stg_fault_events.unit_id is not null
),

-- planned work ---------------------------------------------------------------------------------

planned as (
    select
        node_events.node,
        node_events.start_ts as from_ts,
        coalesce(node_events.end_ts, cast('infinity' as timestamptz)) as to_ts
    from node_events
    where node_events.is_planned
    union all
    select
        k8s.node,
        k8s.ts as from_ts,
        k8s.last_seen_ts + to_seconds(params.failure_merge_s) as to_ts
    from k8s
    cross join params
    where k8s.node_signal = 'planned_work'
),

all_signals as (
    select * from xid_signals
    union all
    select * from dcgm_signals
    union all
    select * from dcgm_clean_signals
    union all
    select * from ticket_signals
    union all
    select * from node_event_signals
    union all
    select * from k8s_signals
    union all
    select * from scheduler_signals
    union all
    select * from fault_signals
),

keyed as (
    select
        md5(
            concat_ws(
                '|',
                all_signals.source,
                all_signals.dataset,
                all_signals.host,
                cast(all_signals.ts as varchar),
                all_signals.ticket_id,
                all_signals.job_id_raw,
                cast(all_signals.attempt as varchar),
                all_signals.source_file,
                cast(all_signals.line_no as varchar),
                all_signals.pci_bus_id,
                cast(all_signals.gpu_index as varchar)
            )
        ) as signal_id,
        all_signals.*
    from all_signals
),

in_planned as (
    select distinct keyed.signal_id
    from keyed
    inner join planned
        on keyed.host = planned.node
        and keyed.ts >= planned.from_ts
        and keyed.ts < planned.to_ts
    where keyed.dataset is null and keyed.source <> 'ticket'
),

final as (
    select
        keyed.signal_id,
        keyed.source,
        keyed.dataset,
        keyed.host,
        case
            when classes.unit_level = 'gpu' or keyed.source = 'dcgm' then 'gpu' else 'node'
        end as unit_level,
        keyed.gpu_index,
        keyed.slot,
        keyed.pci_bus_id,
        keyed.component_class,
        case keyed.source
            when 'xid' then 1
            when 'dcgm' then 1
            when 'fault_log' then 1
            when 'ticket' then 2
            when 'node_event' then 3
            when 'k8s_event' then 4
            else 5
        end as class_rank,
        keyed.ts,
        keyed.cover_ts,
        keyed.end_ts,
        keyed.is_open,
        keyed.xid,
        keyed.ticket_id,
        keyed.job_id_raw,
        keyed.attempt,
        keyed.n_nodes,
        keyed.is_evidence,
        in_planned.signal_id is not null as in_planned_work,
        keyed.detail,
        keyed.source_file,
        keyed.line_no
    from keyed
    left join classes
        on keyed.component_class = classes.component_class
    left join in_planned
        on keyed.signal_id = in_planned.signal_id
)

select * from final
