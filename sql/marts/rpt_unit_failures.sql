-- Repeat offenders, visible per unit: one row per unit of the failure process (a GPU slot, or a
-- node for its node-level units) with its failures in the observation window, its time at risk,
-- and how soon it failed again after coming back from a repair. The fleet rate each unit is
-- compared with (relia trend's repeat offenders: models.lemon_nodes) is the level's: GPU slots
-- against GPU slots, nodes against nodes.
--   n_failures: failures that ended a life (fct_component_lives.failed) of any class of the level;
--   exposure_h: hours at risk in the window (the unit's lives; a GPU slot's lives are at risk for
--     every GPU-level class at once, so each life counts once; a node's node-level units, one per
--     class, are at risk together: the node's hours are its longest class's);
--   classes: the classes of its failures, sorted;
--   min_back_to_fail_h: shortest time from the unit's return after a failure (ended_ts) to its
--     next failure (null with fewer than two failures or no known return);
--   n_repeat_7d: failures that came within 7 days (168 h) of the unit's return from the previous.
with lives as (select * from fct_component_lives),

events as (
    select * from fct_failure_events
    where dataset is null and in_lives
),

life_hours as (
    select
        lives.unit_level,
        lives.node,
        case when lives.unit_level = 'gpu' then lives.slot else lives.node end as unit_key,
        lives.unit_id,
        lives.slot,
        max(lives.exit_h - lives.entry_h) as life_h,
        count_if(lives.failed) as n_failed
    from lives
    group by lives.unit_level, lives.node, lives.unit_id, lives.slot
),

slot_hours as (
    select
        life_hours.unit_level,
        life_hours.node,
        life_hours.unit_key,
        life_hours.slot,
        sum(life_hours.life_h) as hours,
        cast(sum(life_hours.n_failed) as bigint) as n_failures
    from life_hours
    group by life_hours.unit_level, life_hours.node, life_hours.unit_key, life_hours.slot
),

unit_hours as (
    select
        slot_hours.unit_level,
        slot_hours.node,
        slot_hours.unit_key,
        max(slot_hours.hours) as exposure_h,
        cast(sum(slot_hours.n_failures) as bigint) as n_failures
    from slot_hours
    group by slot_hours.unit_level, slot_hours.node, slot_hours.unit_key
),

unit_events as (
    select
        events.unit_level,
        events.host as node,
        case when events.unit_level = 'gpu' then events.slot else events.host end as unit_key,
        events.component_class,
        events.failed_ts,
        lag(events.ended_ts) over unit_order as previous_back_ts
    from events
    window unit_order as (
        partition by
            events.unit_level,
            events.host,
            case when events.unit_level = 'gpu' then events.slot else events.host end
        order by events.failed_ts
    )
),

gaps as (
    select
        unit_events.unit_level,
        unit_events.node,
        unit_events.unit_key,
        list_sort(list_distinct(list(unit_events.component_class))) as classes,
        min(unit_events.failed_ts) as first_failed_ts,
        max(unit_events.failed_ts) as last_failed_ts,
        min(epoch(unit_events.failed_ts - unit_events.previous_back_ts) / 3600.0)
            as min_back_to_fail_h,
        cast(count_if(
            epoch(unit_events.failed_ts - unit_events.previous_back_ts) <= 168 * 3600
        ) as bigint) as n_repeat_7d
    from unit_events
    group by unit_events.unit_level, unit_events.node, unit_events.unit_key
),

final as (
    select
        unit_hours.unit_level,
        unit_hours.node,
        case
            when unit_hours.unit_level = 'gpu' then unit_hours.node || '/' || unit_hours.unit_key
            else unit_hours.node
        end as unit,
        unit_hours.n_failures,
        unit_hours.exposure_h,
        coalesce(gaps.classes, []) as classes,
        gaps.first_failed_ts,
        gaps.last_failed_ts,
        gaps.min_back_to_fail_h,
        coalesce(gaps.n_repeat_7d, 0) as n_repeat_7d
    from unit_hours
    left join gaps
        on unit_hours.unit_level = gaps.unit_level
        and unit_hours.node = gaps.node
        and unit_hours.unit_key = gaps.unit_key
)

select * from final
