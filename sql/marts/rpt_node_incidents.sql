-- Incidents per node (failure or not), for the evidence next to the report's lemon nodes.
with incidents as (select * from int_incidents),

final as (
    select
        incidents.host as node,
        incidents.first_ts,
        incidents.is_failure
    from incidents
)

select * from final
