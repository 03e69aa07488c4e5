-- Failure-process lives: one row per unit life and component class, the times between a unit's
-- job-stopping failures (int_failure_events of the fleet's own telemetry), whatever fixed them,
-- with no repair ticket needed. Shaped like the fault-log lives' events data sets: renewal after each
-- failure at its end, left truncation at the window start, right censoring at its end, downtime
-- not at risk.
--
-- Units (the fleet from telemetry: int_fleet_nodes, int_fleet_gpus):
--   - a GPU slot of a node whose GPU count is known: at risk for every GPU-level class (competing
--     risks: one row per class and life, failed only for the failure's class), renewed by any
--     GPU-level failure of the slot;
--   - per node, one unit per node-level class (seed_component_class.unit_level 'node'), and per
--     class of any node-level failure of the fleet (unknown, software, driver, nccl, unplanned
--     maintenance, ...: classes of level 'none' that failed at least once), renewed by that
--     class's failures of the node.
-- A unit is in service from the node's install (fleet register; unknown: from the window start)
-- to its removal. Renewals (marks), in time order: its failures (down at failed_ts, back at
-- ended_ts; an open failure keeps it down to the end of the data; one with no known end is back
-- at once) and its planned_replace tickets (down at opened, back at closed; the life before one
-- ends censored). A life runs from the previous mark's return (or the install) to the next mark
-- (failed when that is a failure) or the unit's end (censored). A failure that begins while the
-- unit is still down from an earlier one ends no life (fct_failure_events.in_lives is false).
-- Lives are clipped to the observation window [W0, W1): observed_from_ts / observed_to_ts.
--
-- Age scale: entry_h / exit_h are hours since the life's start (the install, the return from the
-- last renewal, or, with age_known false, the window start: then entry_h = 0). Time before the
-- window counts whole; inside it, downtime of the node's node-level failures (the node is down)
-- is not at risk and does not age the unit: exit_h - entry_h is the life's hours at risk in the
-- window (downtime_h the hours left out). installed_ts is the life's start moved later by that
-- downtime: the hours from it to observed_to_ts are exit_h (a unit's age at the window end). window_entry_h / window_exit_h are
-- the same life on the calendar scale (hours since W0), for trend tests. failure_id names the
-- failure that ended the life (null when censored).
with observation as (select * from stg_observation_window),

nodes as (select * from int_fleet_nodes),

gpus as (select * from int_fleet_gpus),

classes as (select * from seed_component_class),

events as (
    select * from int_failure_events
    where dataset is null
),

planned_tickets as (
    select * from stg_repairs
    where action = 'planned_replace' and opened_ts is not null
),

node_classes as (
    select classes.component_class
    from classes
    where classes.unit_level = 'node'
    union
    select distinct events.component_class
    from events
    where events.unit_level = 'node'
),

gpu_classes as (
    select classes.component_class
    from classes
    where classes.unit_level = 'gpu'
    union
    select distinct events.component_class
    from events
    where events.unit_level = 'gpu'
),

unit_classes as (
    select
        gpu_classes.component_class,
        'gpu' as unit_level
    from gpu_classes
    union all
    select
        node_classes.component_class,
        'node' as unit_level
    from node_classes
),

units as (
    select
        gpus.node,
        gpus.slot,
        'gpu' as unit_level
    from gpus
    union all
    select
        nodes.node,
        node_classes.component_class as slot,
        'node' as unit_level
    from nodes
    cross join node_classes
),

spans as (
    select
        units.*,
        nodes.rack,
        nodes.cluster,
        nodes.batch,
        nodes.installed_ts,
        -- the unit's part of the window: in service from install to removal
        greatest(observation.window_start, coalesce(nodes.installed_ts, observation.window_start))
            as from_ts,
        least(observation.window_end, coalesce(nodes.removed_ts, observation.window_end))
            as to_ts
    from units
    inner join nodes
        on units.node = nodes.node
    cross join observation
),

marks as (
    select
        events.host as node,
        events.slot,
        events.unit_level,
        events.failed_ts as down_ts,
        case events.end_status
            when 'ended' then events.ended_ts
            when 'open' then cast('infinity' as timestamptz)
            else events.failed_ts
        end as up_ts,
        true as is_failure,
        events.component_class,
        events.failure_id
    from events
    union all
    select
        planned_tickets.node,
        planned_tickets.slot,
        case when classes.unit_level = 'gpu' then 'gpu' else 'node' end as unit_level,
        planned_tickets.opened_ts as down_ts,
        coalesce(planned_tickets.closed_ts, cast('infinity' as timestamptz)) as up_ts,
        false as is_failure,
        planned_tickets.component_class,
        cast(null as varchar) as failure_id
    from planned_tickets
    left join classes
        on planned_tickets.component_class = classes.component_class
),

unit_marks as (
    select
        marks.*,
        row_number() over unit_order as mark_no,
        lag(marks.up_ts) over unit_order as previous_up_ts
    from marks
    inner join units
        on marks.node = units.node
        and marks.slot = units.slot
        and marks.unit_level = units.unit_level
    window unit_order as (
        partition by marks.node, marks.slot, marks.unit_level
        order by marks.down_ts asc, marks.is_failure desc, marks.failure_id asc
    )
),

last_marks as (
    select
        unit_marks.node,
        unit_marks.slot,
        unit_marks.unit_level,
        max(unit_marks.mark_no) as n_marks,
        arg_max(unit_marks.up_ts, unit_marks.mark_no) as up_ts
    from unit_marks
    group by unit_marks.node, unit_marks.slot, unit_marks.unit_level
),

-- lives that end at a mark (failed when it is a failure), then the last life of each unit
lives as (
    select
        spans.*,
        unit_marks.mark_no - 1 as generation,
        case when unit_marks.mark_no = 1 then spans.installed_ts else unit_marks.previous_up_ts end
            as start_ts,
        unit_marks.down_ts as end_ts,
        unit_marks.is_failure,
        unit_marks.component_class as end_class,
        unit_marks.failure_id
    from unit_marks
    inner join spans
        on unit_marks.node = spans.node
        and unit_marks.slot = spans.slot
        and unit_marks.unit_level = spans.unit_level
    union all
    select
        spans.*,
        coalesce(last_marks.n_marks, 0) as generation,
        case when last_marks.n_marks is null then spans.installed_ts else last_marks.up_ts end
            as start_ts,
        spans.to_ts as end_ts,
        false as is_failure,
        cast(null as varchar) as end_class,
        cast(null as varchar) as failure_id
    from spans
    left join last_marks
        on spans.node = last_marks.node
        and spans.slot = last_marks.slot
        and spans.unit_level = last_marks.unit_level
),

clipped as (
    select
        lives.*,
        greatest(coalesce(lives.start_ts, lives.from_ts), lives.from_ts) as observed_from_ts,
        least(lives.end_ts, lives.to_ts) as observed_to_ts,
        lives.start_ts is not null as age_known,
        lives.is_failure and lives.end_ts < lives.to_ts as failed
    from lives
),

kept as (
    select
        md5(
            concat_ws('|', clipped.node, clipped.slot, clipped.generation, clipped.unit_level)
        ) as life_key,
        clipped.*
    from clipped
    where clipped.observed_to_ts > clipped.observed_from_ts
),

-- the node's downtime from node-level failures, merged into disjoint intervals
node_down as (
    select
        events.host as node,
        events.failed_ts as down_ts,
        case
            when events.end_status = 'open' then cast('infinity' as timestamptz)
            else events.ended_ts
        end as up_ts
    from events
    where
        events.unit_level = 'node'
        and (events.end_status = 'open' or events.ended_ts > events.failed_ts)
),

node_down_stacked as (
    select
        node_down.*,
        max(node_down.up_ts) over (
            partition by node_down.node
            order by node_down.down_ts, node_down.up_ts
            rows between unbounded preceding and 1 preceding
        ) as earlier_up_ts
    from node_down
),

node_down_numbered as (
    select
        node_down_stacked.*,
        sum(
            case
                when
                    node_down_stacked.earlier_up_ts is null
                    or node_down_stacked.down_ts > node_down_stacked.earlier_up_ts
                    then 1
                else 0
            end
        ) over (
            partition by node_down_stacked.node
            order by node_down_stacked.down_ts, node_down_stacked.up_ts
            rows between unbounded preceding and current row
        ) as outage_no
    from node_down_stacked
),

node_outages as (
    select
        node_down_numbered.node,
        min(node_down_numbered.down_ts) as down_ts,
        max(node_down_numbered.up_ts) as up_ts
    from node_down_numbered
    group by node_down_numbered.node, node_down_numbered.outage_no
),

downtime as (
    select
        kept.life_key,
        sum(
            epoch(
                least(node_outages.up_ts, kept.observed_to_ts)
                - greatest(node_outages.down_ts, kept.observed_from_ts)
            )
        ) as downtime_s
    from kept
    inner join node_outages
        on kept.node = node_outages.node
        and kept.observed_to_ts > node_outages.down_ts
        and kept.observed_from_ts < node_outages.up_ts
    group by kept.life_key
),

final as (
    select
        kept.node || '/' || kept.slot || '#' || kept.generation as unit_id,
        unit_classes.component_class,
        kept.unit_level,
        kept.node,
        kept.slot,
        kept.generation,
        kept.rack,
        kept.cluster,
        kept.batch,
        -- the instant the life's age counts from on the calendar: its start (the window start
        -- when age_known is false), later by the downtime that did not age it, so that the hours
        -- from it to observed_to_ts are exit_h
        coalesce(kept.start_ts, kept.observed_from_ts)
        + to_seconds(coalesce(downtime.downtime_s, 0)) as installed_ts,
        kept.observed_from_ts,
        kept.observed_to_ts,
        -- ages in hours since the life's start, counting only hours at risk inside the window
        case
            when kept.age_known then epoch(kept.observed_from_ts - kept.start_ts) / 3600.0
            else 0.0
        end as entry_h,
        case
            when kept.age_known then epoch(kept.observed_from_ts - kept.start_ts) / 3600.0
            else 0.0
        end
        + (epoch(kept.observed_to_ts - kept.observed_from_ts) - coalesce(downtime.downtime_s, 0))
        / 3600.0 as exit_h,
        coalesce(kept.failed and kept.end_class = unit_classes.component_class, false) as failed,
        case
            when kept.failed and kept.end_class = unit_classes.component_class
                then kept.failure_id
        end as failure_id,
        kept.age_known,
        -- the same life on the calendar scale: hours since the window start
        epoch(kept.observed_from_ts - observation.window_start) / 3600.0 as window_entry_h,
        epoch(kept.observed_to_ts - observation.window_start) / 3600.0 as window_exit_h,
        coalesce(downtime.downtime_s, 0) / 3600.0 as downtime_h
    from kept
    cross join observation
    inner join unit_classes
        on kept.unit_level = unit_classes.unit_level
        and (kept.unit_level = 'gpu' or kept.slot = unit_classes.component_class)
    left join downtime
        on kept.life_key = downtime.life_key
)

select * from final
