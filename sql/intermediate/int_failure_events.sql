-- Job-stopping hardware failures, one row per event: the labels and the failure history of the
-- failure predictor (models/predict.py).
-- A GPU failure is a run of failure Xid lines (is_failure and stops_job in seed_xid) on one GPU
-- (host, pci_bus_id), a new one starting when the gap to the previous failure line exceeds
-- incident_gap_s. Its time is its first failure line, not the first line of its incident: a
-- warning line just before would date it early, and that a line is a failure's first depends
-- only on the lines before it (as-of). A node failure is a replace ticket of a node-level class
-- (seed_component_class.unit_level = 'node') at its opened_ts.
with xid as (
    select * from stg_xid_events
    where is_failure and stops_job
),

params as (select * from stg_params),

inventory as (select * from stg_inventory),

classes as (select * from seed_component_class),

tickets as (
    select * from stg_repairs
    where action = 'replace'
),

gaps as (
    select
        xid.host,
        xid.pci_bus_id,
        xid.ts,
        xid.xid,
        xid.component_class,
        epoch(xid.ts - lag(xid.ts) over gpu_lines) as gap_s
    from xid
    window gpu_lines as (partition by xid.host, xid.pci_bus_id order by xid.ts, xid.line_no)
),

gpu_slots as (
    select distinct
        inventory.host,
        inventory.pci_bus_id,
        inventory.gpu_index
    from inventory
),

gpu_failures as (
    select
        gaps.host,
        gpu_slots.gpu_index,
        gaps.ts as failed_ts,
        gaps.component_class,
        gaps.xid
    from gaps
    cross join params
    left join gpu_slots
        on gaps.host = gpu_slots.host
        and gaps.pci_bus_id = gpu_slots.pci_bus_id
    where gaps.gap_s is null or gaps.gap_s > params.incident_gap_s
),

node_failures as (
    select
        tickets.node as host,
        tickets.opened_ts as failed_ts,
        tickets.component_class,
        tickets.ticket_id
    from tickets
    inner join classes
        on tickets.component_class = classes.component_class
    where classes.unit_level = 'node'
),

final as (
    select
        md5(
            'gpu|'
            || gpu_failures.host
            || '|'
            || coalesce(cast(gpu_failures.gpu_index as varchar), '?')
            || '|' || cast(gpu_failures.failed_ts as varchar)
        ) as failure_id,
        'gpu' as unit_level,
        gpu_failures.host,
        gpu_failures.gpu_index,
        gpu_failures.failed_ts,
        gpu_failures.component_class,
        gpu_failures.xid,
        cast(null as varchar) as ticket_id
    from gpu_failures
    union all
    select
        md5('node|' || node_failures.host || '|' || node_failures.ticket_id) as failure_id,
        'node' as unit_level,
        node_failures.host,
        cast(null as integer) as gpu_index,
        node_failures.failed_ts,
        node_failures.component_class,
        cast(null as integer) as xid,
        node_failures.ticket_id
    from node_failures
)

select * from final
