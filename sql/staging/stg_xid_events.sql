-- Kernel-log Xid lines joined to NVIDIA's Xid catalog (seed_xid); a line re-read from a grown log
-- file (same file, line and text) is kept once. Unknown codes keep class 'unknown'.
with source as (select * from raw_xid_events),

catalog as (select * from seed_xid),

deduplicated as (
    select distinct on (source.source_file, source.line_no, source.ts, source.message) source.*
    from source
),

final as (
    select
        deduplicated.host,
        deduplicated.ts,
        deduplicated.pci_bus_id,
        deduplicated.xid,
        deduplicated.pid,
        deduplicated.process_name,
        deduplicated.message,
        deduplicated.log_format,
        coalesce(catalog.name, 'unknown Xid') as xid_name,
        coalesce(catalog.category, 'unknown') as category,
        coalesce(catalog.component_class, 'unknown') as component_class,
        coalesce(catalog.resolution, 'UNKNOWN') as resolution,
        coalesce(catalog.stops_job, false) as stops_job,
        coalesce(catalog.is_failure, false) as is_failure,
        deduplicated.source_file,
        deduplicated.line_no
    from deduplicated
    left join catalog
        on deduplicated.xid = catalog.xid
)

select * from final
