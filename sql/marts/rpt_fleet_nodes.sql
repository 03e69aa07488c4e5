-- Nodes with their time in service; the weekly report clips these to its week and window.
with fleet as (select * from stg_fleet),

final as (
    select
        fleet.node,
        fleet.installed_ts,
        fleet.removed_ts
    from fleet
)

select * from final
