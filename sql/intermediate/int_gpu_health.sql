-- Hourly DCGM features per GPU (host, gpu_index, uuid), for failure prediction.
--
-- Counters (energy, ECC single/double-bit volatile and aggregate, retired pages, remapped rows,
-- NVLink CRC flit/data errors, PCIe replays) become deltas between consecutive samples of one GPU
-- (the previous non-null value). A counter lower than before was reset (driver reload, reboot):
-- it restarted from zero, so its delta is its new value, never negative. A GPU replaced in the
-- slot (a new uuid) starts a new series: its first sample has no delta. A delta counts in the
-- hour of the later sample.
--
-- The Xid field is a gauge holding the last Xid seen: it is reported (xid_last_max,
-- xid_last_changes) as a feature and never counted as a failure.
with samples as (select * from stg_dcgm_samples),

lagged as (
    select
        samples.*,
        lag(samples.xid_last ignore nulls) over gpu_series as prev_xid_last,
        lag(samples.energy_mj ignore nulls) over gpu_series as prev_energy_mj,
        lag(samples.ecc_sbe_volatile ignore nulls) over gpu_series as prev_ecc_sbe_volatile,
        lag(samples.ecc_dbe_volatile ignore nulls) over gpu_series as prev_ecc_dbe_volatile,
        lag(samples.ecc_sbe_aggregate ignore nulls) over gpu_series as prev_ecc_sbe_aggregate,
        lag(samples.ecc_dbe_aggregate ignore nulls) over gpu_series as prev_ecc_dbe_aggregate,
        lag(samples.retired_sbe ignore nulls) over gpu_series as prev_retired_sbe,
        lag(samples.retired_dbe ignore nulls) over gpu_series as prev_retired_dbe,
        lag(samples.remapped_rows_correctable ignore nulls)
            over gpu_series
            as prev_remapped_rows_correctable,
        lag(samples.remapped_rows_uncorrectable ignore nulls)
            over gpu_series
            as prev_remapped_rows_uncorrectable,
        lag(samples.nvlink_crc_flit_errors ignore nulls)
            over gpu_series
            as prev_nvlink_crc_flit_errors,
        lag(samples.nvlink_crc_data_errors ignore nulls)
            over gpu_series
            as prev_nvlink_crc_data_errors,
        lag(samples.pcie_replays ignore nulls) over gpu_series as prev_pcie_replays
    from samples
    window gpu_series as (
        partition by samples.host, samples.gpu_index, coalesce(samples.uuid, '')
        order by samples.ts
    )
),

deltas as (
    select
        lagged.*,
        case
            when lagged.energy_mj < lagged.prev_energy_mj then lagged.energy_mj
            else lagged.energy_mj - lagged.prev_energy_mj
        end as energy_mj_delta,
        case
            when lagged.ecc_sbe_volatile < lagged.prev_ecc_sbe_volatile then lagged.ecc_sbe_volatile
            else lagged.ecc_sbe_volatile - lagged.prev_ecc_sbe_volatile
        end as ecc_sbe_volatile_delta,
        case
            when lagged.ecc_dbe_volatile < lagged.prev_ecc_dbe_volatile then lagged.ecc_dbe_volatile
            else lagged.ecc_dbe_volatile - lagged.prev_ecc_dbe_volatile
        end as ecc_dbe_volatile_delta,
        case
            when
                lagged.ecc_sbe_aggregate < lagged.prev_ecc_sbe_aggregate
                then lagged.ecc_sbe_aggregate
            else lagged.ecc_sbe_aggregate - lagged.prev_ecc_sbe_aggregate
        end as ecc_sbe_aggregate_delta,
        case
            when
                lagged.ecc_dbe_aggregate < lagged.prev_ecc_dbe_aggregate
                then lagged.ecc_dbe_aggregate
            else lagged.ecc_dbe_aggregate - lagged.prev_ecc_dbe_aggregate
        end as ecc_dbe_aggregate_delta,
        case
            when lagged.retired_sbe < lagged.prev_retired_sbe then lagged.retired_sbe
            else lagged.retired_sbe - lagged.prev_retired_sbe
        end as retired_sbe_delta,
        case
            when lagged.retired_dbe < lagged.prev_retired_dbe then lagged.retired_dbe
            else lagged.retired_dbe - lagged.prev_retired_dbe
        end as retired_dbe_delta,
        case
            when
                lagged.remapped_rows_correctable < lagged.prev_remapped_rows_correctable
                then lagged.remapped_rows_correctable
            else lagged.remapped_rows_correctable - lagged.prev_remapped_rows_correctable
        end as remapped_rows_correctable_delta,
        case
            when
                lagged.remapped_rows_uncorrectable < lagged.prev_remapped_rows_uncorrectable
                then lagged.remapped_rows_uncorrectable
            else lagged.remapped_rows_uncorrectable - lagged.prev_remapped_rows_uncorrectable
        end as remapped_rows_uncorrectable_delta,
        case
            when
                lagged.nvlink_crc_flit_errors < lagged.prev_nvlink_crc_flit_errors
                then lagged.nvlink_crc_flit_errors
            else lagged.nvlink_crc_flit_errors - lagged.prev_nvlink_crc_flit_errors
        end as nvlink_crc_flit_errors_delta,
        case
            when
                lagged.nvlink_crc_data_errors < lagged.prev_nvlink_crc_data_errors
                then lagged.nvlink_crc_data_errors
            else lagged.nvlink_crc_data_errors - lagged.prev_nvlink_crc_data_errors
        end as nvlink_crc_data_errors_delta,
        case
            when lagged.pcie_replays < lagged.prev_pcie_replays then lagged.pcie_replays
            else lagged.pcie_replays - lagged.prev_pcie_replays
        end as pcie_replays_delta,
        coalesce(lagged.energy_mj < lagged.prev_energy_mj, false)
        or coalesce(lagged.ecc_sbe_volatile < lagged.prev_ecc_sbe_volatile, false)
        or coalesce(lagged.ecc_dbe_volatile < lagged.prev_ecc_dbe_volatile, false)
        or coalesce(lagged.ecc_sbe_aggregate < lagged.prev_ecc_sbe_aggregate, false)
        or coalesce(lagged.ecc_dbe_aggregate < lagged.prev_ecc_dbe_aggregate, false)
        or coalesce(lagged.retired_sbe < lagged.prev_retired_sbe, false)
        or coalesce(lagged.retired_dbe < lagged.prev_retired_dbe, false)
        or coalesce(lagged.remapped_rows_correctable < lagged.prev_remapped_rows_correctable, false)
        or coalesce(
            lagged.remapped_rows_uncorrectable < lagged.prev_remapped_rows_uncorrectable, false
        )
        or coalesce(lagged.nvlink_crc_flit_errors < lagged.prev_nvlink_crc_flit_errors, false)
        or coalesce(lagged.nvlink_crc_data_errors < lagged.prev_nvlink_crc_data_errors, false)
        or coalesce(lagged.pcie_replays < lagged.prev_pcie_replays, false) as is_reset,
        coalesce(lagged.xid_last <> lagged.prev_xid_last and lagged.xid_last > 0, false)
            as xid_changed
    from lagged
),

final as (
    select
        deltas.host,
        deltas.gpu_index,
        deltas.uuid,
        date_trunc('hour', deltas.ts at time zone 'UTC') at time zone 'UTC' as hour_ts,
        any_value(deltas.pci_bus_id) as pci_bus_id,
        any_value(deltas.model_name) as model_name,
        count(*) as n_samples,
        min(deltas.ts) as first_ts,
        max(deltas.ts) as last_ts,
        max(deltas.gpu_temp_c) as gpu_temp_max_c,
        avg(deltas.gpu_temp_c) as gpu_temp_mean_c,
        max(deltas.memory_temp_c) as memory_temp_max_c,
        avg(deltas.power_w) as power_mean_w,
        max(deltas.power_w) as power_max_w,
        -- millijoules to kilowatt-hours
        sum(deltas.energy_mj_delta) / 3.6e9 as energy_kwh,
        avg(deltas.gpu_util_pct) as gpu_util_mean_pct,
        sum(deltas.ecc_sbe_volatile_delta) as ecc_sbe_volatile_delta,
        sum(deltas.ecc_dbe_volatile_delta) as ecc_dbe_volatile_delta,
        sum(deltas.ecc_sbe_aggregate_delta) as ecc_sbe_aggregate_delta,
        sum(deltas.ecc_dbe_aggregate_delta) as ecc_dbe_aggregate_delta,
        sum(deltas.retired_sbe_delta) as retired_sbe_delta,
        sum(deltas.retired_dbe_delta) as retired_dbe_delta,
        sum(deltas.remapped_rows_correctable_delta) as remapped_rows_correctable_delta,
        sum(deltas.remapped_rows_uncorrectable_delta) as remapped_rows_uncorrectable_delta,
        sum(deltas.nvlink_crc_flit_errors_delta) as nvlink_crc_flit_errors_delta,
        sum(deltas.nvlink_crc_data_errors_delta) as nvlink_crc_data_errors_delta,
        sum(deltas.pcie_replays_delta) as pcie_replays_delta,
        max(deltas.retired_pending) as retired_pending_max,
        max(deltas.row_remap_failure) as row_remap_failure_max,
        count_if(deltas.is_reset) as n_counter_resets,
        max(deltas.xid_last) as xid_last_max,
        count_if(deltas.xid_changed) as xid_last_changes
    from deltas
    group by deltas.host, deltas.gpu_index, deltas.uuid, hour_ts
)

select * from final
