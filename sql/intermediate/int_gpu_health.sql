-- Hourly DCGM features per GPU (host, gpu_index, uuid), for failure prediction.
--
-- Counters (energy, ECC single/double-bit volatile and aggregate, retired pages, remapped rows,
-- NVLink CRC flit/data errors, PCIe replays) become deltas between consecutive samples of one GPU
-- (the previous non-null value). A counter lower than before was reset (driver reload, reboot):
-- it restarted from zero, so its delta is its new value, never negative (the macros
-- counter_delta and counter_reset of sql/schema/015_macros.sql). A GPU replaced in the
-- slot (a new uuid) starts a new series: its first sample has no delta. A delta counts in the
-- hour of the later sample.
--
-- The Xid field is a gauge holding the last Xid seen: it is reported (xid_last_max,
-- xid_last_changes) as a feature and never counted as a failure.
--
-- Fatal health (failure signals of the failure events): a sample whose double-bit ECC count rose
-- (the volatile delta, else the aggregate one, > 0) or whose row-remap failure gauge turned on
-- (> 0 after 0). fatal_first_ts is the hour's first such sample, fatal_next_ts the GPU's next
-- sample after it (the fault was seen at least until then), fatal_kind 'dbe' or
-- 'row_remap_failure'. reset_first_ts is the hour's first sample that shows a counter reset (a
-- driver reload, GPU reset or reboot): evidence the GPU was reset.
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
        lag(samples.pcie_replays ignore nulls) over gpu_series as prev_pcie_replays,
        lag(samples.row_remap_failure ignore nulls) over gpu_series as prev_row_remap_failure,
        lead(samples.ts) over gpu_series as next_ts
    from samples
    window gpu_series as (
        partition by samples.host, samples.gpu_index, coalesce(samples.uuid, '')
        order by samples.ts
    )
),

deltas as (
    select
        lagged.*,
        counter_delta(lagged.energy_mj, lagged.prev_energy_mj) as energy_mj_delta,
        counter_delta(lagged.ecc_sbe_volatile, lagged.prev_ecc_sbe_volatile)
            as ecc_sbe_volatile_delta,
        counter_delta(lagged.ecc_dbe_volatile, lagged.prev_ecc_dbe_volatile)
            as ecc_dbe_volatile_delta,
        counter_delta(lagged.ecc_sbe_aggregate, lagged.prev_ecc_sbe_aggregate)
            as ecc_sbe_aggregate_delta,
        counter_delta(lagged.ecc_dbe_aggregate, lagged.prev_ecc_dbe_aggregate)
            as ecc_dbe_aggregate_delta,
        counter_delta(lagged.retired_sbe, lagged.prev_retired_sbe) as retired_sbe_delta,
        counter_delta(lagged.retired_dbe, lagged.prev_retired_dbe) as retired_dbe_delta,
        counter_delta(lagged.remapped_rows_correctable, lagged.prev_remapped_rows_correctable)
            as remapped_rows_correctable_delta,
        counter_delta(lagged.remapped_rows_uncorrectable, lagged.prev_remapped_rows_uncorrectable)
            as remapped_rows_uncorrectable_delta,
        counter_delta(lagged.nvlink_crc_flit_errors, lagged.prev_nvlink_crc_flit_errors)
            as nvlink_crc_flit_errors_delta,
        counter_delta(lagged.nvlink_crc_data_errors, lagged.prev_nvlink_crc_data_errors)
            as nvlink_crc_data_errors_delta,
        counter_delta(lagged.pcie_replays, lagged.prev_pcie_replays) as pcie_replays_delta,
        counter_reset(lagged.energy_mj, lagged.prev_energy_mj)
        or counter_reset(lagged.ecc_sbe_volatile, lagged.prev_ecc_sbe_volatile)
        or counter_reset(lagged.ecc_dbe_volatile, lagged.prev_ecc_dbe_volatile)
        or counter_reset(lagged.ecc_sbe_aggregate, lagged.prev_ecc_sbe_aggregate)
        or counter_reset(lagged.ecc_dbe_aggregate, lagged.prev_ecc_dbe_aggregate)
        or counter_reset(lagged.retired_sbe, lagged.prev_retired_sbe)
        or counter_reset(lagged.retired_dbe, lagged.prev_retired_dbe)
        or counter_reset(lagged.remapped_rows_correctable, lagged.prev_remapped_rows_correctable)
        or counter_reset(
            lagged.remapped_rows_uncorrectable, lagged.prev_remapped_rows_uncorrectable
        )
        or counter_reset(lagged.nvlink_crc_flit_errors, lagged.prev_nvlink_crc_flit_errors)
        or counter_reset(lagged.nvlink_crc_data_errors, lagged.prev_nvlink_crc_data_errors)
        or counter_reset(lagged.pcie_replays, lagged.prev_pcie_replays) as is_reset,
        coalesce(lagged.xid_last <> lagged.prev_xid_last and lagged.xid_last > 0, false)
            as xid_changed
    from lagged
),

flagged as (
    select
        deltas.*,
        case
            when coalesce(deltas.ecc_dbe_volatile_delta, deltas.ecc_dbe_aggregate_delta) > 0
                then 'dbe'
            when deltas.row_remap_failure > 0 and deltas.prev_row_remap_failure = 0
                then 'row_remap_failure'
        end as fatal_kind
    from deltas
),

final as (
    select
        flagged.host,
        flagged.gpu_index,
        flagged.uuid,
        date_trunc('hour', flagged.ts at time zone 'UTC') at time zone 'UTC' as hour_ts,
        any_value(flagged.pci_bus_id) as pci_bus_id,
        any_value(flagged.model_name) as model_name,
        count(*) as n_samples,
        min(flagged.ts) as first_ts,
        max(flagged.ts) as last_ts,
        max(flagged.gpu_temp_c) as gpu_temp_max_c,
        avg(flagged.gpu_temp_c) as gpu_temp_mean_c,
        max(flagged.memory_temp_c) as memory_temp_max_c,
        avg(flagged.power_w) as power_mean_w,
        max(flagged.power_w) as power_max_w,
        -- millijoules to kilowatt-hours
        sum(flagged.energy_mj_delta) / 3.6e9 as energy_kwh,
        avg(flagged.gpu_util_pct) as gpu_util_mean_pct,
        sum(flagged.ecc_sbe_volatile_delta) as ecc_sbe_volatile_delta,
        sum(flagged.ecc_dbe_volatile_delta) as ecc_dbe_volatile_delta,
        sum(flagged.ecc_sbe_aggregate_delta) as ecc_sbe_aggregate_delta,
        sum(flagged.ecc_dbe_aggregate_delta) as ecc_dbe_aggregate_delta,
        sum(flagged.retired_sbe_delta) as retired_sbe_delta,
        sum(flagged.retired_dbe_delta) as retired_dbe_delta,
        sum(flagged.remapped_rows_correctable_delta) as remapped_rows_correctable_delta,
        sum(flagged.remapped_rows_uncorrectable_delta) as remapped_rows_uncorrectable_delta,
        sum(flagged.nvlink_crc_flit_errors_delta) as nvlink_crc_flit_errors_delta,
        sum(flagged.nvlink_crc_data_errors_delta) as nvlink_crc_data_errors_delta,
        sum(flagged.pcie_replays_delta) as pcie_replays_delta,
        max(flagged.retired_pending) as retired_pending_max,
        max(flagged.row_remap_failure) as row_remap_failure_max,
        count_if(flagged.is_reset) as n_counter_resets,
        max(flagged.xid_last) as xid_last_max,
        count_if(flagged.xid_changed) as xid_last_changes,
        min(flagged.ts) filter (where flagged.fatal_kind is not null) as fatal_first_ts,
        arg_min_null(flagged.next_ts, flagged.ts) filter (where flagged.fatal_kind is not null)
            as fatal_next_ts,
        arg_min(flagged.fatal_kind, flagged.ts) filter (where flagged.fatal_kind is not null)
            as fatal_kind,
        min(flagged.ts) filter (where flagged.is_reset) as reset_first_ts
    from flagged
    group by flagged.host, flagged.gpu_index, flagged.uuid, hour_ts
)

select * from final
