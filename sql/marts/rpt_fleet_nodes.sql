-- Nodes with their time in service; the weekly report clips these to its week and window. The
-- fleet from telemetry (int_fleet_nodes): installed_ts is the install the fleet register gives,
-- else the observation window's start (in service all along, as the failure-process lives take
-- it).
with nodes as (select * from int_fleet_nodes),

observation as (select * from stg_observation_window),

final as (
    select
        nodes.node,
        coalesce(nodes.installed_ts, observation.window_start) as installed_ts,
        nodes.removed_ts
    from nodes
    cross join observation
)

select * from final
