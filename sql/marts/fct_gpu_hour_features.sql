-- Failure-prediction features, one row per GPU (host, gpu_index, uuid) and hour of DCGM telemetry.
-- The prediction time prediction_ts is the end of the hour; every feature uses only data strictly
-- before it (as-of): int_gpu_health hours up to and including this one (its samples lie in
-- [hour_ts, prediction_ts)), Xid lines with ts < prediction_ts, failures before it, tickets closed
-- before it. Windows are "the last n hours": hours with hour_ts in [prediction_ts - n h,
-- prediction_ts), on the GPU's own series (a new uuid starts afresh).
--   counters (sums of per-hour deltas): sbe_{1,6,24,168}h (single-bit ECC, volatile),
--     dbe_24h, retired_pages_24h (SBE + DBE), row_remaps_24h (correctable + uncorrectable),
--     nvlink_crc_{6,24}h (flit + data), pcie_replays_{6,24}h, counter_resets_24h,
--     xid_gauge_changes_24h (DCGM Xid gauge changes), sbe_rate_ratio (6 h rate over 7-day rate)
--   gauges: retired_pending_24h, row_remap_failure_24h (max), temp_max_6h_c, memory_temp_max_6h_c,
--     power_max_6h_w, temp_over_peers_6h_c / power_over_peers_6h_w (largest excess over the
--     mean of the node's other GPUs in the same hour: an excursion that load does not explain)
--   warning Xids (kernel log; seed_xid hardware codes that neither stop the job nor are failures,
--     e.g. 63, 92): warning_xids_{24,168}h, hours_since_warning_xid
--   history: gpu_age_h (since the slot's last replace / planned_replace ticket closed, else the
--     node's install), series_age_h (since the uuid's first sample), n_failures_gpu_30d (this
--     slot's failures in the last 30 days), n_failures_node_30d (any failure on the host in the
--     last 30 days; windowed counts stay comparable over time, cumulative ones would grow with
--     it), hours_since_node_failure
-- in_service is false when the GPU or its node failed during the hour (after its last sample): it
-- is no longer at risk, so the predictor neither trains on nor scores such a row.
-- The as-of lookups (failures, warnings, tickets) run on the narrow keys and join the windowed
-- features back, so the wide rows are not sorted once per lookup.
-- Label columns (never features): the next failure at or after prediction_ts of this GPU slot
-- (int_failure_events unit_level gpu) or of its node (unit_level node): next_failure_ts,
-- next_failure_id, next_failure_level, next_failure_class, hours_to_failure (null when none).
with health as (select * from int_gpu_health),

xid as (select * from stg_xid_events),

inventory as (select * from stg_inventory),

failures as (select * from int_failure_events),

fleet as (select * from stg_fleet),

tickets as (
    select * from stg_repairs
    where action in ('replace', 'planned_replace') and closed_ts is not null
),

hours as (
    select
        health.host,
        health.gpu_index,
        health.uuid,
        health.hour_ts,
        health.hour_ts + interval 1 hour as prediction_ts,
        min(health.first_ts) over gpu_series as series_start_ts,
        coalesce(health.ecc_sbe_volatile_delta, 0) as sbe,
        coalesce(health.ecc_dbe_volatile_delta, 0) as dbe,
        coalesce(health.retired_sbe_delta, 0) + coalesce(health.retired_dbe_delta, 0)
            as retired_pages,
        coalesce(health.remapped_rows_correctable_delta, 0)
        + coalesce(health.remapped_rows_uncorrectable_delta, 0) as row_remaps,
        coalesce(health.nvlink_crc_flit_errors_delta, 0)
        + coalesce(health.nvlink_crc_data_errors_delta, 0) as nvlink_crc,
        coalesce(health.pcie_replays_delta, 0) as pcie_replays,
        health.n_counter_resets,
        health.xid_last_changes,
        health.retired_pending_max,
        health.row_remap_failure_max,
        health.gpu_temp_max_c,
        health.memory_temp_max_c,
        health.power_max_w,
        health.gpu_temp_max_c
        - (sum(health.gpu_temp_max_c) over node_hour - health.gpu_temp_max_c)
        / nullif(count(health.gpu_temp_max_c) over node_hour - 1, 0) as temp_over_peers_c,
        health.power_max_w
        - (sum(health.power_max_w) over node_hour - health.power_max_w)
        / nullif(count(health.power_max_w) over node_hour - 1, 0) as power_over_peers_w
    from health
    window
        gpu_series as (partition by health.host, health.gpu_index, health.uuid),
        node_hour as (partition by health.host, health.hour_ts)
),

windowed as (
    select
        hours.host,
        hours.gpu_index,
        hours.uuid,
        hours.hour_ts,
        hours.prediction_ts,
        hours.series_start_ts,
        hours.sbe as sbe_1h,
        sum(hours.sbe) over last_6h as sbe_6h,
        sum(hours.sbe) over last_24h as sbe_24h,
        sum(hours.sbe) over last_168h as sbe_168h,
        sum(hours.dbe) over last_24h as dbe_24h,
        sum(hours.retired_pages) over last_24h as retired_pages_24h,
        max(hours.retired_pending_max) over last_24h as retired_pending_24h,
        sum(hours.row_remaps) over last_24h as row_remaps_24h,
        max(hours.row_remap_failure_max) over last_24h as row_remap_failure_24h,
        sum(hours.nvlink_crc) over last_6h as nvlink_crc_6h,
        sum(hours.nvlink_crc) over last_24h as nvlink_crc_24h,
        sum(hours.pcie_replays) over last_6h as pcie_replays_6h,
        sum(hours.pcie_replays) over last_24h as pcie_replays_24h,
        sum(hours.n_counter_resets) over last_24h as counter_resets_24h,
        sum(hours.xid_last_changes) over last_24h as xid_gauge_changes_24h,
        max(hours.gpu_temp_max_c) over last_6h as temp_max_6h_c,
        max(hours.memory_temp_max_c) over last_6h as memory_temp_max_6h_c,
        max(hours.power_max_w) over last_6h as power_max_6h_w,
        max(hours.temp_over_peers_c) over last_6h as temp_over_peers_6h_c,
        max(hours.power_over_peers_w) over last_6h as power_over_peers_6h_w
    from hours
    window
        last_6h as (
            partition by hours.host, hours.gpu_index, hours.uuid
            order by hours.hour_ts
            range between interval 5 hours preceding and current row
        ),
        last_24h as (
            partition by hours.host, hours.gpu_index, hours.uuid
            order by hours.hour_ts
            range between interval 23 hours preceding and current row
        ),
        last_168h as (
            partition by hours.host, hours.gpu_index, hours.uuid
            order by hours.hour_ts
            range between interval 167 hours preceding and current row
        )
),

keys as (
    select
        windowed.host,
        windowed.gpu_index,
        windowed.uuid,
        windowed.hour_ts,
        windowed.prediction_ts,
        windowed.series_start_ts
    from windowed
),

gpu_slots as (
    select distinct
        inventory.host,
        inventory.pci_bus_id,
        inventory.gpu_index
    from inventory
),

warnings as (
    select
        xid.host,
        gpu_slots.gpu_index,
        xid.ts
    from xid
    inner join gpu_slots
        on xid.host = gpu_slots.host
        and xid.pci_bus_id = gpu_slots.pci_bus_id
    where not xid.stops_job and not xid.is_failure and xid.category = 'hardware'
),

warning_counts as (
    select
        keys.host,
        keys.gpu_index,
        keys.uuid,
        keys.prediction_ts,
        count(*) filter (where warnings.ts >= keys.prediction_ts - interval 24 hour)
            as warning_xids_24h,
        count(*) as warning_xids_168h
    from keys
    inner join warnings
        on keys.host = warnings.host
        and keys.gpu_index = warnings.gpu_index
        and keys.prediction_ts > warnings.ts
        and warnings.ts >= keys.prediction_ts - interval 168 hour
        and keys.series_start_ts <= warnings.ts
    group by keys.host, keys.gpu_index, keys.uuid, keys.prediction_ts
),

gpu_failures as (
    select
        failures.*,
        row_number() over (
            partition by failures.host, failures.gpu_index order by failures.failed_ts
        ) as n_so_far
    from failures
    where failures.unit_level = 'gpu'
),

host_failures as (
    select
        failures.*,
        row_number() over (partition by failures.host order by failures.failed_ts) as n_so_far
    from failures
),

node_failures as (
    select * from failures
    where unit_level = 'node'
),

slot_renewals as (
    select
        tickets.node as host,
        cast(substr(tickets.slot, 4) as integer) as gpu_index,
        tickets.closed_ts
    from tickets
    where tickets.slot similar to 'gpu[0-9]+'
),

as_of as (
    select
        keys.*,
        last_warning.ts as last_warning_ts,
        coalesce(past_gpu.n_so_far, 0) - coalesce(past_gpu_30d.n_so_far, 0)
            as n_failures_gpu_30d,
        past_gpu.failed_ts as last_gpu_failure_ts,
        past_node.failed_ts as last_node_level_failure_ts,
        coalesce(past_host.n_so_far, 0) - coalesce(past_host_30d.n_so_far, 0)
            as n_failures_node_30d,
        past_host.failed_ts as last_node_failure_ts,
        renewal.closed_ts as renewed_ts
    from keys
    asof left join warnings as last_warning
        on keys.host = last_warning.host
        and keys.gpu_index = last_warning.gpu_index
        and keys.prediction_ts > last_warning.ts
    asof left join gpu_failures as past_gpu
        on keys.host = past_gpu.host
        and keys.gpu_index = past_gpu.gpu_index
        and keys.prediction_ts > past_gpu.failed_ts
    asof left join node_failures as past_node
        on keys.host = past_node.host
        and keys.prediction_ts > past_node.failed_ts
    asof left join gpu_failures as past_gpu_30d
        on keys.host = past_gpu_30d.host
        and keys.gpu_index = past_gpu_30d.gpu_index
        and keys.prediction_ts - interval 30 day > past_gpu_30d.failed_ts
    asof left join host_failures as past_host
        on keys.host = past_host.host
        and keys.prediction_ts > past_host.failed_ts
    asof left join host_failures as past_host_30d
        on keys.host = past_host_30d.host
        and keys.prediction_ts - interval 30 day > past_host_30d.failed_ts
    asof left join slot_renewals as renewal
        on keys.host = renewal.host
        and keys.gpu_index = renewal.gpu_index
        and keys.prediction_ts > renewal.closed_ts
),

labelled as (
    select
        as_of.*,
        next_gpu.failed_ts as next_gpu_failure_ts,
        next_gpu.failure_id as next_gpu_failure_id,
        next_gpu.component_class as next_gpu_failure_class,
        next_node.failed_ts as next_node_failure_ts,
        next_node.failure_id as next_node_failure_id,
        next_node.component_class as next_node_failure_class,
        next_node.failed_ts is not null
        and (next_gpu.failed_ts is null or next_node.failed_ts < next_gpu.failed_ts) as node_first
    from as_of
    asof left join gpu_failures as next_gpu
        on as_of.host = next_gpu.host
        and as_of.gpu_index = next_gpu.gpu_index
        and as_of.prediction_ts <= next_gpu.failed_ts
    asof left join node_failures as next_node
        on as_of.host = next_node.host
        and as_of.prediction_ts <= next_node.failed_ts
),

final as (
    select
        labelled.host,
        labelled.gpu_index,
        labelled.uuid,
        labelled.hour_ts,
        labelled.prediction_ts,
        coalesce(labelled.last_gpu_failure_ts < labelled.hour_ts, true)
        and coalesce(labelled.last_node_level_failure_ts < labelled.hour_ts, true) as in_service,
        windowed.sbe_1h,
        windowed.sbe_6h,
        windowed.sbe_24h,
        windowed.sbe_168h,
        (windowed.sbe_6h / 6.0 + 0.1) / (windowed.sbe_168h / 168.0 + 0.1) as sbe_rate_ratio,
        windowed.dbe_24h,
        windowed.retired_pages_24h,
        windowed.retired_pending_24h,
        windowed.row_remaps_24h,
        windowed.row_remap_failure_24h,
        windowed.nvlink_crc_6h,
        windowed.nvlink_crc_24h,
        windowed.pcie_replays_6h,
        windowed.pcie_replays_24h,
        windowed.counter_resets_24h,
        windowed.xid_gauge_changes_24h,
        windowed.temp_max_6h_c,
        windowed.memory_temp_max_6h_c,
        windowed.power_max_6h_w,
        windowed.temp_over_peers_6h_c,
        windowed.power_over_peers_6h_w,
        coalesce(warning_counts.warning_xids_24h, 0) as warning_xids_24h,
        coalesce(warning_counts.warning_xids_168h, 0) as warning_xids_168h,
        epoch(labelled.prediction_ts - labelled.last_warning_ts)
        / 3600.0 as hours_since_warning_xid,
        epoch(labelled.prediction_ts - coalesce(labelled.renewed_ts, fleet.installed_ts)) / 3600.0
            as gpu_age_h,
        epoch(labelled.prediction_ts - labelled.series_start_ts) / 3600.0 as series_age_h,
        labelled.n_failures_gpu_30d,
        labelled.n_failures_node_30d,
        epoch(labelled.prediction_ts - labelled.last_node_failure_ts) / 3600.0
            as hours_since_node_failure,
        case
            when labelled.node_first then labelled.next_node_failure_ts
            else labelled.next_gpu_failure_ts
        end as next_failure_ts,
        case
            when labelled.node_first then labelled.next_node_failure_id
            else labelled.next_gpu_failure_id
        end as next_failure_id,
        case
            when labelled.node_first then 'node'
            when labelled.next_gpu_failure_ts is not null then 'gpu'
        end as next_failure_level,
        case
            when labelled.node_first then labelled.next_node_failure_class
            else labelled.next_gpu_failure_class
        end as next_failure_class,
        epoch(
            case
                when labelled.node_first then labelled.next_node_failure_ts
                else labelled.next_gpu_failure_ts
            end
            - labelled.prediction_ts
        ) / 3600.0 as hours_to_failure
    from labelled
    inner join windowed
        on labelled.host = windowed.host
        and labelled.gpu_index = windowed.gpu_index
        and labelled.uuid is not distinct from windowed.uuid
        and labelled.prediction_ts = windowed.prediction_ts
    left join warning_counts
        on labelled.host = warning_counts.host
        and labelled.gpu_index = warning_counts.gpu_index
        and labelled.uuid is not distinct from warning_counts.uuid
        and labelled.prediction_ts = warning_counts.prediction_ts
    left join fleet
        on labelled.host = fleet.node
)

select * from final
