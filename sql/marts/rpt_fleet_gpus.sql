-- GPU slots per node from the inventory (one row per node and slot).
with inventory as (select * from stg_inventory),

final as (
    select distinct
        inventory.host as node,
        inventory.slot
    from inventory
)

select * from final
