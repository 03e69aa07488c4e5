-- Job-stopping failures, one row per physical failure of a unit (a GPU slot, or a node for one
-- component class), from whatever telemetry a fleet has: the signals of int_failure_signals that
-- one failure left in several sources (an Xid 79, the health-check drain it triggers, the job's
-- NODE_FAIL, the replace ticket a day later) are one event listing every source (sources,
-- n_signals). Planned work is never a failure (signals under planned work are ignored). Read by
-- the failure-process lives, the reports and the failure predictor (fct_gpu_hour_features).
--
-- Merge rules (docs/data_contract.md §5; windows in cfg_params):
--   1. Telemetry that names the node (Xid runs, fatal DCGM health, failure node events,
--      Kubernetes node events), per node in time order: a signal joins the current failure when it
--      starts at most failure_merge_s (default 900 s) after the end of the span of an earlier
--      signal (its cover_ts; an open node event covers the rest of the data). So a signal that
--      starts while the node is already down belongs to that outage.
--   2. A NODE_FAIL / BOOT_FAIL attempt (scheduler) joins the earliest failure of rule 1 on any of
--      its nodes whose span, widened by failure_merge_s on both sides, holds the attempt's end.
--      Otherwise it is a failure of its own on one node: the attempt's only node, or for a
--      multi-node attempt the node where a replace ticket was opened within failure_merge_s of its
--      end, else the first of its nodes in sorted order, with unit_inferred; such
--      attempts on one node within failure_merge_s of each other are one failure (rule 1). An
--      attempt with any node under planned work at its end is no failure.
--   3. A replace ticket joins the latest failure of its node that began at most failure_merge_s
--      after it was opened and at most ticket_match_s (default 2 days) before, or that was still
--      down when it was opened; a ticket for a GPU slot only joins a failure of that slot (or one
--      whose GPU is not known). A ticket that joins none is a failure of its own, at its opening.
--   4. Class and unit come from the signal of the lowest class_rank with a known class (then the
--      earliest): Xid / DCGM over ticket over node-event reason over Kubernetes over scheduler;
--      none known: 'unknown'. A GPU-level class takes its GPU slot from that signal, else from
--      another signal of the failure naming one; else the node's first GPU slot is assumed
--      (unit_inferred). Other classes are node-level units: slot = the class.
--   5. The end (back in service), first found: the node events of the failure (its own failure
--      node events and Kubernetes NodeNotReady ends, and any other node event not planned that
--      starts from failure_merge_s before the failure to failure_merge_s after its last signal:
--      the latest end; 'open' if one is still open); the ticket's close ('open' while open); the
--      earlier of the next clean DCGM sample of its GPU (a counter reset or a new GPU, from the
--      failure's last signal on) and the next job attempt that started on its node after it. None:
--      end_status 'unknown'. repair_h = ended_ts - failed_ts in hours.
-- Fault logs (dataset set) are merged per data set and unit alone: overlapping or touching
-- faults are one failure (as in the fault-log lives), ended at the outage's end (end_source
-- 'fault_log'), open while a fault is; a failure instant has no known end.
with members as (select * from int_failure_members),

classes as (select * from seed_component_class),

fleet_members as (
    select * from members
    where dataset is null and not is_evidence
),

evidence as (
    select * from members
    where dataset is null and is_evidence
),

fleet_events as (
    select
        fleet_members.event_key,
        fleet_members.host,
        min(fleet_members.ts) as failed_ts,
        -- the last moment any signal but a ticket shows the failure (the end is searched after it)
        coalesce(
            max(coalesce(fleet_members.cover_ts, fleet_members.ts))
            filter (where fleet_members.source <> 'ticket'),
            min(fleet_members.ts)
        ) as last_signal_ts,
        max(coalesce(fleet_members.cover_ts, cast('infinity' as timestamptz)))
        filter (where fleet_members.source <> 'ticket') as signals_to_ts,
        first(
            fleet_members.component_class
            order by
                fleet_members.component_class = 'unknown',
                fleet_members.class_rank,
                fleet_members.ts,
                fleet_members.signal_id
        ) as component_class,
        first(
            fleet_members.source
            order by
                fleet_members.component_class = 'unknown',
                fleet_members.class_rank,
                fleet_members.ts,
                fleet_members.signal_id
        ) as class_source,
        first(
            fleet_members.slot
            order by
                fleet_members.component_class = 'unknown',
                fleet_members.class_rank,
                fleet_members.ts,
                fleet_members.signal_id
        ) as named_slot,
        first(
            fleet_members.detail
            order by
                fleet_members.component_class = 'unknown',
                fleet_members.class_rank,
                fleet_members.ts,
                fleet_members.signal_id
        ) as detail,
        -- any GPU slot a signal of the failure names (the earliest of the best-ranked source)
        first(fleet_members.slot order by fleet_members.class_rank, fleet_members.ts)
        filter (where fleet_members.slot is not null and fleet_members.unit_level = 'gpu')
            as any_slot,
        first(fleet_members.source order by fleet_members.ts, fleet_members.class_rank)
            as first_source,
        list(distinct fleet_members.source order by fleet_members.source) as sources,
        count(*) as n_signals,
        first(fleet_members.xid order by fleet_members.ts) filter (where fleet_members.xid > 0)
            as xid,
        first(fleet_members.ticket_id order by fleet_members.ts)
        filter (where fleet_members.ticket_id is not null) as ticket_id,
        -- every node lost (scheduler) signal of a failure found alone was a multi-node attempt
        bool_and(fleet_members.n_nodes > 1) filter (where fleet_members.source = 'scheduler')
        and count(*) filter (where fleet_members.source <> 'scheduler') = 0 as node_inferred,
        -- node-event ends (rule 5): open, or the latest end
        bool_or(fleet_members.is_open)
        filter (where fleet_members.source in ('node_event', 'k8s_event')) as node_event_open,
        max(fleet_members.end_ts)
        filter (where fleet_members.source in ('node_event', 'k8s_event')) as node_event_end_ts,
        bool_or(fleet_members.is_open) filter (where fleet_members.source = 'ticket')
            as ticket_open,
        max(fleet_members.end_ts) filter (where fleet_members.source = 'ticket') as ticket_end_ts
    from fleet_members
    group by fleet_members.event_key, fleet_members.host
),

-- a node's first GPU slot (the one assumed when a failure of a GPU-level class names none): its
-- lowest GPU index in nvidia-smi, else in DCGM, else its lowest PCI bus in Xid lines, else the
-- first GPU no line names (the slots of int_fleet_gpus)
inventory_first as (
    select
        stg_inventory.host,
        min(stg_inventory.gpu_index) as gpu_index
    from stg_inventory
    group by stg_inventory.host
),

dcgm_first as (
    select
        raw_dcgm_samples.host,
        min(raw_dcgm_samples.gpu_index) as gpu_index
    from raw_dcgm_samples
    where raw_dcgm_samples.gpu_index is not null
    group by raw_dcgm_samples.host
),

xid_first as (
    select
        stg_xid_events.host,
        min(stg_xid_events.pci_bus_id) as pci_bus_id
    from stg_xid_events
    where stg_xid_events.pci_bus_id is not null
    group by stg_xid_events.host
),

-- a node's first GPU slot (the one assumed when a failure of a GPU-level class names none): its
-- lowest GPU index in nvidia-smi, else in DCGM, else its lowest PCI bus in Xid lines, else the
-- first GPU no line names (the slots of the fleet's GPU units)
first_gpu_slots as (
    select
        coalesce(inventory_first.host, dcgm_first.host, xid_first.host) as node,
        coalesce(
            'gpu' || inventory_first.gpu_index,
            'gpu' || dcgm_first.gpu_index,
            'pci' || xid_first.pci_bus_id
        ) as slot
    from inventory_first
    full outer join dcgm_first
        on inventory_first.host = dcgm_first.host
    full outer join xid_first
        on coalesce(inventory_first.host, dcgm_first.host) = xid_first.host
),

fleet_units as (
    select
        fleet_events.*,
        coalesce(classes.unit_level = 'gpu', false) as is_gpu_class,
        case
            when coalesce(classes.unit_level = 'gpu', false)
                then
                    coalesce(
                        fleet_events.named_slot,
                        fleet_events.any_slot,
                        first_gpu_slots.slot,
                        'unseen1'
                    )
            else fleet_events.component_class
        end as slot,
        coalesce(classes.unit_level = 'gpu', false)
        and fleet_events.named_slot is null
        and fleet_events.any_slot is null as slot_inferred
    from fleet_events
    left join classes
        on fleet_events.component_class = classes.component_class
    left join first_gpu_slots
        on fleet_events.host = first_gpu_slots.node
),

-- 5. ends ------------------------------------------------------------------------------------------

-- other node events not planned (corrective work, drains): their end tells when the node is back
evidence_ends as (
    select
        evidence.event_key,
        bool_or(evidence.is_open) filter (where evidence.source = 'node_event') as is_open,
        max(evidence.end_ts) filter (where evidence.source = 'node_event') as end_ts
    from evidence
    group by evidence.event_key
),

-- the first clean DCGM sample of the failure's GPU from its last signal on
dcgm_ends as (
    select
        evidence.event_key,
        evidence.slot,
        min(evidence.ts) as end_ts
    from evidence
    where evidence.source = 'dcgm'
    group by evidence.event_key, evidence.slot
),

job_starts as (
    select
        unnest(int_job_attempts.nodes) as host,
        int_job_attempts.start_ts as ts
    from int_job_attempts
    where int_job_attempts.start_ts is not null
),

ended as (
    select
        fleet_units.*,
        case
            when fleet_units.is_gpu_class
                then try_cast(regexp_extract(fleet_units.slot, '^gpu([0-9]+)$', 1) as integer)
        end as gpu_index,
        evidence_ends.is_open as evidence_open,
        evidence_ends.end_ts as evidence_end_ts,
        dcgm_ends.end_ts as dcgm_end_ts,
        job_starts.ts as job_end_ts
    from fleet_units
    left join evidence_ends
        on fleet_units.event_key = evidence_ends.event_key
    left join dcgm_ends
        on fleet_units.event_key = dcgm_ends.event_key
        and fleet_units.slot = dcgm_ends.slot
        and fleet_units.is_gpu_class
    asof left join job_starts
        on fleet_units.host = job_starts.host
        and fleet_units.last_signal_ts < job_starts.ts
),

fleet_final as (
    select
        ended.*,
        coalesce(ended.node_event_open, false) or coalesce(ended.evidence_open, false)
            as down_at_end,
        nullif(
            greatest(
                coalesce(ended.node_event_end_ts, cast('-infinity' as timestamptz)),
                coalesce(ended.evidence_end_ts, cast('-infinity' as timestamptz))
            ),
            cast('-infinity' as timestamptz)
        ) as node_back_ts
    from ended
),

fleet_ends as (
    select
        fleet_final.*,
        case
            when fleet_final.down_at_end then 'open'
            when fleet_final.node_back_ts >= fleet_final.failed_ts then 'ended'
            when fleet_final.ticket_open then 'open'
            when fleet_final.ticket_end_ts >= fleet_final.failed_ts then 'ended'
            when coalesce(fleet_final.dcgm_end_ts, fleet_final.job_end_ts) is not null then 'ended'
            else 'unknown'
        end as end_status,
        case
            when fleet_final.down_at_end then 'node_event'
            when fleet_final.node_back_ts >= fleet_final.failed_ts then 'node_event'
            when fleet_final.ticket_open then 'ticket'
            when fleet_final.ticket_end_ts >= fleet_final.failed_ts then 'ticket'
            when
                fleet_final.dcgm_end_ts
                <= coalesce(fleet_final.job_end_ts, fleet_final.dcgm_end_ts)
                then 'dcgm'
            when fleet_final.job_end_ts is not null then 'next_job'
        end as end_source,
        case
            when fleet_final.down_at_end then null
            when fleet_final.node_back_ts >= fleet_final.failed_ts then fleet_final.node_back_ts
            when fleet_final.ticket_open then null
            when fleet_final.ticket_end_ts >= fleet_final.failed_ts then fleet_final.ticket_end_ts
            else least(fleet_final.dcgm_end_ts, fleet_final.job_end_ts)
        end as ended_ts
    from fleet_final
),

fleet_rows as (
    select
        fleet_ends.event_key,
        cast(null as varchar) as dataset,
        case when fleet_ends.is_gpu_class then 'gpu' else 'node' end as unit_level,
        fleet_ends.host,
        fleet_ends.gpu_index,
        fleet_ends.slot,
        fleet_ends.component_class,
        fleet_ends.failed_ts,
        fleet_ends.ended_ts,
        fleet_ends.end_source,
        fleet_ends.end_status,
        fleet_ends.sources,
        fleet_ends.n_signals,
        fleet_ends.first_source,
        fleet_ends.class_source,
        fleet_ends.xid,
        fleet_ends.ticket_id,
        coalesce(fleet_ends.node_inferred, false) or fleet_ends.slot_inferred as unit_inferred,
        fleet_ends.detail
    from fleet_ends
),

-- fault logs ---------------------------------------------------------------------------------------

-- fault logs ---------------------------------------------------------------------------------------

fault_numbered as (
    select * from members
    where dataset is not null
),

fault_rows as (
    select
        fault_numbered.event_key,
        fault_numbered.dataset,
        'node' as unit_level,
        fault_numbered.host,
        cast(null as integer) as gpu_index,
        arg_min(fault_numbered.component_class, fault_numbered.ts) as slot,
        arg_min(fault_numbered.component_class, fault_numbered.ts) as component_class,
        min(fault_numbered.ts) as failed_ts,
        case
            when bool_or(fault_numbered.is_open) then null
            else max(fault_numbered.end_ts)
        end as ended_ts,
        case
            when bool_or(fault_numbered.is_open) or max(fault_numbered.end_ts) is not null
                then 'fault_log'
        end as end_source,
        case
            when bool_or(fault_numbered.is_open) then 'open'
            when max(fault_numbered.end_ts) is not null then 'ended'
            else 'unknown'
        end as end_status,
        ['fault_log'] as sources,
        count(*) as n_signals,
        'fault_log' as first_source,
        'fault_log' as class_source,
        cast(null as integer) as xid,
        cast(null as varchar) as ticket_id,
        false as unit_inferred,
        arg_min(fault_numbered.detail, fault_numbered.ts) as detail
    from fault_numbered
    group by fault_numbered.event_key, fault_numbered.dataset, fault_numbered.host
),

all_rows as (
    select * from fleet_rows
    union all
    select * from fault_rows
),

final as (
    select
        md5(
            concat_ws(
                '|',
                coalesce(all_rows.dataset, 'fleet'),
                all_rows.host,
                all_rows.slot,
                cast(all_rows.failed_ts as varchar),
                all_rows.first_source
            )
        ) as failure_id,
        all_rows.dataset,
        all_rows.unit_level,
        all_rows.host,
        all_rows.gpu_index,
        all_rows.slot,
        all_rows.host || '/' || coalesce(all_rows.slot, '?') as unit_id,
        all_rows.component_class,
        coalesce(classes.category, 'unknown') as category,
        all_rows.failed_ts,
        all_rows.ended_ts,
        all_rows.end_source,
        all_rows.end_status,
        -- hours from the failure to the unit back in service
        epoch(all_rows.ended_ts - all_rows.failed_ts) / 3600.0 as repair_h,
        all_rows.sources,
        cast(all_rows.n_signals as integer) as n_signals,
        all_rows.first_source,
        all_rows.class_source,
        all_rows.xid,
        all_rows.ticket_id,
        all_rows.ticket_id is not null as replaced,
        all_rows.unit_inferred,
        all_rows.detail,
        -- the failure's signals are the rows of int_failure_members with this key
        all_rows.event_key
    from all_rows
    left join classes
        on all_rows.component_class = classes.component_class
)

select * from final
