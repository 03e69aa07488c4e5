-- DCGM samples, one row per (host, GPU, time): a sample seen in two files (an overlapping
-- re-export) is kept once, from the latest file. Counters stay cumulative here; int_gpu_health
-- turns them into per-interval deltas.
with source as (select * from raw_dcgm_samples),

ranked as (
    select
        source.*,
        row_number() over (
            partition by source.host, source.gpu_index, source.ts
            order by source.source_file desc, source.line_no desc
        ) as version_rank
    from source
),

final as (
    select
        ranked.host,
        ranked.ts,
        ranked.gpu_index,
        ranked.uuid,
        ranked.pci_bus_id,
        ranked.model_name,
        ranked.gpu_temp_c,
        ranked.memory_temp_c,
        ranked.power_w,
        ranked.energy_mj,
        ranked.gpu_util_pct,
        ranked.ecc_sbe_volatile,
        ranked.ecc_dbe_volatile,
        ranked.ecc_sbe_aggregate,
        ranked.ecc_dbe_aggregate,
        ranked.retired_sbe,
        ranked.retired_dbe,
        ranked.retired_pending,
        ranked.remapped_rows_correctable,
        ranked.remapped_rows_uncorrectable,
        ranked.row_remap_failure,
        ranked.nvlink_crc_flit_errors,
        ranked.nvlink_crc_data_errors,
        ranked.pcie_replays,
        ranked.xid_last,
        ranked.source_format,
        ranked.source_file,
        ranked.line_no,
        ranked.sm_clock_mhz,
        ranked.clock_event_reasons
    from ranked
    where ranked.version_rank = 1
)

select * from final
