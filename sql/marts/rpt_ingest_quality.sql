-- Per source and quarantine reason: files, rows read, loaded and quarantined.
-- A (source, target table) repeats its file counts on each quarantine reason of its table; a
-- reason of a table no recorded file loads has null source and counts (relia summary reads
-- both grains from here).
with files as (select * from raw_ingest_files),

quarantine as (select * from raw_quarantine),

per_source as (
    select
        files.source,
        files.target_table,
        count(*) as n_files,
        sum(files.n_read) as n_read,
        sum(files.n_loaded) as n_loaded,
        sum(files.n_quarantined) as n_quarantined,
        sum(files.n_ignored) as n_ignored
    from files
    group by files.source, files.target_table
),

reasons as (
    select
        quarantine.target_table,
        quarantine.stage,
        quarantine.reason,
        count(*) as n_rows
    from quarantine
    group by quarantine.target_table, quarantine.stage, quarantine.reason
),

final as (
    select
        per_source.source,
        coalesce(per_source.target_table, reasons.target_table) as target_table,
        per_source.n_files,
        per_source.n_read,
        per_source.n_loaded,
        per_source.n_quarantined,
        per_source.n_ignored,
        reasons.stage,
        reasons.reason,
        reasons.n_rows as n_rows_with_reason
    from per_source
    full join reasons
        on per_source.target_table = reasons.target_table
)

select * from final
order by source asc, n_rows_with_reason desc nulls last
