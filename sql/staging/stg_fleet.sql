-- Fleet inventory, one row per node: the earliest install and the latest removal seen.
with source as (select * from raw_fleet),

final as (
    select
        source.node,
        max(source.rack) as rack,
        max(source.cluster) as cluster,
        max(source.batch) as batch,
        min(source.installed_ts) as installed_ts,
        max(source.removed_ts) as removed_ts
    from source
    group by source.node
)

select * from final
