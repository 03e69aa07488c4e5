-- Files ingested per source and target table, with rows read, loaded, quarantined and ignored.
with files as (select * from raw_ingest_files),

final as (
    select
        files.source,
        files.target_table,
        count(*) as n_files,
        cast(sum(files.n_read) as bigint) as n_read,
        cast(sum(files.n_loaded) as bigint) as n_loaded,
        cast(sum(files.n_quarantined) as bigint) as n_quarantined,
        cast(sum(files.n_ignored) as bigint) as n_ignored,
        max(files.loaded_at) as last_loaded_at
    from files
    group by files.source, files.target_table
)

select * from final
