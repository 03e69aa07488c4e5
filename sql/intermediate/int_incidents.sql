-- Xid bursts collapsed into incidents. Lines on one GPU (host, pci_bus_id) sorted by time start a new
-- incident when the gap to the previous line exceeds incident_gap_s (cfg_params, default 600 s).
-- The incident's class is that of its first failure code (is_failure), else of its first code.
with xid as (select * from stg_xid_events),

params as (select * from stg_params),

inventory as (select * from stg_inventory),

gaps as (
    select
        xid.*,
        epoch(xid.ts - lag(xid.ts) over gpu_lines) as gap_s
    from xid
    window gpu_lines as (partition by xid.host, xid.pci_bus_id order by xid.ts, xid.line_no)
),

flagged as (
    select
        gaps.*,
        case when gaps.gap_s is null or gaps.gap_s > params.incident_gap_s then 1 else 0 end
            as starts_incident
    from gaps
    cross join params
),

numbered as (
    select
        flagged.*,
        sum(flagged.starts_incident) over (
            partition by flagged.host, flagged.pci_bus_id
            order by flagged.ts, flagged.line_no
            rows between unbounded preceding and current row
        ) as burst_no
    from flagged
),

bursts as (
    select
        numbered.host,
        numbered.pci_bus_id,
        numbered.burst_no,
        min(numbered.ts) as first_ts,
        max(numbered.ts) as last_ts,
        count(*) as n_lines,
        first(numbered.xid order by numbered.ts, numbered.line_no) as first_xid,
        first(numbered.xid order by numbered.ts, numbered.line_no)
        filter (where numbered.is_failure) as first_failure_xid,
        list(distinct numbered.xid order by numbered.xid) as xid_codes,
        bool_or(numbered.is_failure) as is_failure,
        bool_or(numbered.stops_job) as stops_job
    from numbered
    group by numbered.host, numbered.pci_bus_id, numbered.burst_no
),

gpu_slots as (
    select distinct
        inventory.host,
        inventory.pci_bus_id,
        inventory.gpu_index,
        inventory.slot
    from inventory
),

catalog as (select * from seed_xid),

final as (
    select
        md5(bursts.host || '|' || bursts.pci_bus_id || '|' || cast(bursts.first_ts as varchar))
            as incident_id,
        bursts.host,
        bursts.pci_bus_id,
        gpu_slots.gpu_index,
        gpu_slots.slot,
        bursts.first_ts,
        bursts.last_ts,
        bursts.n_lines,
        coalesce(bursts.first_failure_xid, bursts.first_xid) as xid,
        bursts.xid_codes,
        coalesce(catalog.component_class, 'unknown') as component_class,
        coalesce(catalog.category, 'unknown') as category,
        coalesce(catalog.resolution, 'UNKNOWN') as resolution,
        bursts.is_failure,
        bursts.stops_job
    from bursts
    left join gpu_slots
        on bursts.host = gpu_slots.host
        and bursts.pci_bus_id = gpu_slots.pci_bus_id
    left join catalog
        on coalesce(bursts.first_failure_xid, bursts.first_xid) = catalog.xid
)

select * from final
