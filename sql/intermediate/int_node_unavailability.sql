-- Node unavailability intervals with their repair time, from Slurm node events and fault logs.
--
-- slurm: a node's events (down, drain, fail...) that overlap or touch merge into one outage, from
-- the first start to the last end (null while an event is still open). The outage takes the
-- reason of its first event and the class of its first event whose reason maps to one
-- (stg_node_events.unavailability_class; 'unknown' if none does). is_planned: the outage began
-- with planned work (stg_node_events.is_planned, from seed_planned_reason), not a failure.
-- fault_log: every fault interval of int_fault_repairs (unit down from start_ts to end_ts), with
-- its data set's class and category text.
--
-- repair_h is the outage's length in hours (null while open); mttr_class_h and mttr_reason_h are
-- the mean repair_h of the closed outages of the same source and class (reason).
with node_events as (select * from stg_node_events),

fault_repairs as (select * from int_fault_repairs),

stacked as (
    select
        node_events.*,
        -- the latest end among the node's earlier events (null end = still open = no end)
        max(coalesce(node_events.end_ts, cast('infinity' as timestamptz))) over (
            partition by node_events.node
            order by node_events.start_ts, node_events.source_file, node_events.line_no
            rows between unbounded preceding and 1 preceding
        ) as earlier_end_ts
    from node_events
),

numbered as (
    select
        stacked.*,
        sum(
            case
                when stacked.earlier_end_ts is null or stacked.start_ts > stacked.earlier_end_ts
                    then 1
                else 0
            end
        ) over (
            partition by stacked.node
            order by stacked.start_ts, stacked.source_file, stacked.line_no
            rows between unbounded preceding and current row
        ) as outage_no
    from stacked
),

slurm_outages as (
    select
        'slurm' as source,
        cast(null as varchar) as dataset,
        numbered.node,
        numbered.outage_no,
        min(numbered.start_ts) as start_ts,
        case when bool_or(numbered.end_ts is null) then null else max(numbered.end_ts) end
            as end_ts,
        first(
            numbered.event_reason
            order by numbered.start_ts, numbered.source_file, numbered.line_no
        ) as reason,
        coalesce(
            first(
                numbered.unavailability_class
                order by numbered.start_ts, numbered.source_file, numbered.line_no
            ) filter (where numbered.unavailability_class <> 'unknown'),
            'unknown'
        ) as unavailability_class,
        list(numbered.state_base order by numbered.start_ts, numbered.line_no) as states,
        count(*) as n_events,
        first(
            numbered.is_planned
            order by numbered.start_ts, numbered.source_file, numbered.line_no
        ) as is_planned
    from numbered
    group by numbered.node, numbered.outage_no
),

fault_outages as (
    select
        'fault_log' as source,
        fault_repairs.dataset,
        fault_repairs.unit_id as node,
        row_number() over (
            partition by fault_repairs.dataset, fault_repairs.unit_id
            order by fault_repairs.start_ts, fault_repairs.source_file, fault_repairs.line_no
        ) as outage_no,
        fault_repairs.start_ts,
        fault_repairs.end_ts,
        concat_ws(
            ' / ',
            fault_repairs.category_l1,
            fault_repairs.category_l2,
            fault_repairs.category_l3
        ) as reason,
        coalesce(fault_repairs.component_class, 'unknown') as unavailability_class,
        cast([] as varchar[]) as states,
        1 as n_events,
        false as is_planned
    from fault_repairs
),

outages as (
    select * from slurm_outages
    union all
    select * from fault_outages
),

final as (
    select
        outages.source,
        outages.dataset,
        outages.node,
        outages.outage_no,
        outages.start_ts,
        outages.end_ts,
        outages.end_ts is null as is_open,
        -- hours from the node going away to its return
        epoch(outages.end_ts - outages.start_ts) / 3600.0 as repair_h,
        outages.reason,
        outages.unavailability_class,
        outages.states,
        outages.n_events,
        outages.is_planned,
        avg(epoch(outages.end_ts - outages.start_ts) / 3600.0) over (
            partition by outages.source, outages.dataset, outages.unavailability_class
        ) as mttr_class_h,
        count(outages.end_ts) over (
            partition by outages.source, outages.dataset, outages.unavailability_class
        ) as n_class_repairs,
        avg(epoch(outages.end_ts - outages.start_ts) / 3600.0) over (
            partition by outages.source, outages.dataset, outages.reason
        ) as mttr_reason_h
    from outages
)

select * from final
