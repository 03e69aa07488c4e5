-- Repair tickets that replaced a unit, with their repair time (the goodput scenario's repair_h).
with repairs as (select * from stg_repairs),

final as (
    select
        repairs.opened_ts,
        repairs.repair_h
    from repairs
    where repairs.action = 'replace'
)

select * from final
