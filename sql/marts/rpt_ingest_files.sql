-- Files ingested per source and target table, with rows read, loaded, quarantined and ignored.
with files as (select * from raw_ingest_files),

final as (
    select
        files.source,
        files.target_table,
        count(*) as n_files,
        sum(files.n_read)::bigint as n_read,
        sum(files.n_loaded)::bigint as n_loaded,
        sum(files.n_quarantined)::bigint as n_quarantined,
        sum(files.n_ignored)::bigint as n_ignored,
        max(files.loaded_at) as last_loaded_at
    from files
    group by files.source, files.target_table
)

select * from final
