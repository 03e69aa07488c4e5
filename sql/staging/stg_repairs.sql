-- Repair tickets, one row per ticket: a later export of the same ticket (now closed) wins.
with source as (select * from raw_repairs),

final as (
    select distinct on (source.ticket_id)
        source.ticket_id,
        source.node,
        source.component_class,
        source.slot,
        source.serial_out,
        source.serial_in,
        source.opened_ts,
        source.closed_ts,
        source.action,
        source.description,
        -- hours from failure report to repair done (null while open)
        epoch(source.closed_ts - source.opened_ts) / 3600.0 as repair_h
    from source
    order by
        source.ticket_id asc, source.closed_ts is null, source.source_file desc, source.line_no desc
)

select * from final
