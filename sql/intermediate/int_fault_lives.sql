-- One row per unit life and component class from the fault logs, shaped like int_component_lives:
-- entry_h / exit_h in hours, entry_h > 0 is left truncation, failed = false is right censoring.
--
-- lives data sets (records of kind 'life'), on the age scale: a unit ages while in service from
-- its first life on, so a life begins at the summed lengths of the unit's earlier lives (a GPU
-- moved to another slot keeps aging). Where the mapping gives a window, lives are clipped to it;
-- a life that began before the window start enters late (entry_h > 0). The classes at risk are
-- those of the data set's failures (competing risks): every life gives one row per class, failed
-- only for its own class, or for the class of a failure instant (record 'event') of the same unit
-- at the moment the life ended.
--
-- events data sets (records 'fault' and 'event'), times between failures per unit and class on
-- the calendar scale within the window, counting uptime only (a unit is not at risk while down in
-- repair). Overlapping or touching faults of a unit (one starts when or before the other ends)
-- merge into one outage, as in int_node_unavailability. A class-c life runs from the end of
-- the previous outage holding a class-c fault (or the window start) to the start of the next one
-- (failed) or the window end (censored), less the downtime of the other outages in between; a
-- fault that begins while the unit is already down is a failure at that outage's start. A fault
-- that begins at or before the window start, or inside an outage already open then, is downtime,
-- not a failure in the window (without a window in the mapping the window starts at the data set's
-- first record, so that first fault is downtime too). Units of
-- the population that never appear in the file are censored lives over the whole window, with
-- ids <dataset>-unobserved-<n>.
--
-- Groups (unit_group, e.g. the systems of a multi-system trace) each have their own window and
-- population: a unit is observed over its group's window, and each group's units that never
-- appear are censored lives with ids <dataset>-<group>-unobserved-<n>. Without groups a data set
-- is one group (unit_group null). A group is known from its records: one with no record at all
-- (a system that never failed) is not in the warehouse, and its units are not counted.
--
-- No life has zero length: a life that would end where it begins (a failure exactly at the window
-- start, a unit down over its whole window) is left out.
with records as (select * from stg_fault_events),

datasets as (
    select
        records.dataset,
        case
            when count_if(records.record_kind = 'life') > 0 then 'lives' else 'events'
        end as kind,
        min(records.start_ts) as first_ts,
        max(coalesce(records.end_ts, records.start_ts)) as last_ts
    from records
    group by records.dataset
),

groups as (
    select
        records.dataset,
        records.unit_group,
        max(records.population) as population,
        min(records.window_start) as window_start,
        max(records.window_end) as window_end
    from records
    group by records.dataset, records.unit_group
),

failure_classes as (
    select distinct
        records.dataset,
        records.component_class
    from records
    where records.failed
),

classes as (
    select * from failure_classes
    union
    -- a data set with no failure at all keeps its lives under the class they carry
    select distinct
        records.dataset,
        records.component_class
    from records
    anti join failure_classes
        on records.dataset = failure_classes.dataset
),

-- lives data sets -------------------------------------------------------------------------------

life_records as (
    select
        records.* exclude (length_s),
        -- a life still open when the file ends lasts to the window end (or the last time seen)
        coalesce(
            records.length_s,
            epoch(coalesce(groups.window_end, datasets.last_ts) - records.start_ts)
        ) as length_s,
        groups.window_start as data_window_start,
        groups.window_end as data_window_end
    from records
    inner join datasets
        on records.dataset = datasets.dataset
    inner join groups
        on records.dataset = groups.dataset
        and records.unit_group is not distinct from groups.unit_group
    where records.record_kind = 'life'
),

aged as (
    select
        life_records.*,
        row_number() over unit_lives as life_no,
        -- seconds in service before this life began: the lengths of the unit's earlier lives
        coalesce(
            sum(life_records.length_s) over (
                unit_lives rows between unbounded preceding and 1 preceding
            ),
            0
        ) as age_at_start_s
    from life_records
    window unit_lives as (
        partition by life_records.dataset, life_records.unit_id
        order by
            coalesce(life_records.start_ts, life_records.end_ts),
            life_records.source_file,
            life_records.line_no
    )
),

clipped as (
    select
        aged.*,
        -- seconds of the life before the window start (left truncation)
        case
            when aged.start_ts is null or aged.data_window_start is null then 0
            else greatest(epoch(aged.data_window_start - aged.start_ts), 0)
        end as before_window_s,
        -- seconds of the life up to the window end
        case
            when aged.start_ts is null or aged.data_window_end is null then aged.length_s
            else least(epoch(aged.data_window_end - aged.start_ts), aged.length_s)
        end as to_window_end_s,
        aged.data_window_end is null
        or aged.end_ts is null
        or aged.end_ts < aged.data_window_end as ends_in_window
    from aged
),

end_events as (
    select distinct
        records.dataset,
        records.unit_id,
        records.end_ts,
        records.component_class
    from records
    where records.record_kind = 'event'
),

life_rows as (
    select
        clipped.dataset,
        clipped.unit_group,
        clipped.unit_id,
        clipped.life_no,
        classes.component_class,
        clipped.cohort_json,
        case
            when clipped.start_ts is null then null
            else greatest(clipped.start_ts, coalesce(clipped.data_window_start, clipped.start_ts))
        end as observed_from_ts,
        least(clipped.end_ts, coalesce(clipped.data_window_end, clipped.end_ts))
            as observed_to_ts,
        -- ages in hours since the unit first went into service
        (clipped.age_at_start_s + clipped.before_window_s) / 3600.0 as entry_h,
        (clipped.age_at_start_s + clipped.to_window_end_s) / 3600.0 as exit_h,
        clipped.ends_in_window
        and (
            (clipped.failed and clipped.component_class = classes.component_class)
            or end_events.unit_id is not null
        ) as failed,
        'age' as time_scale
    from clipped
    inner join classes
        on clipped.dataset = classes.dataset
    left join end_events
        on clipped.dataset = end_events.dataset
        and clipped.unit_id = end_events.unit_id
        and clipped.end_ts = end_events.end_ts
        and classes.component_class = end_events.component_class
    -- a life of zero length (a failure exactly at the window start) is no life
    where clipped.to_window_end_s > clipped.before_window_s
),

-- events data sets ------------------------------------------------------------------------------

event_sets as (
    select
        groups.dataset,
        groups.unit_group,
        groups.population,
        -- without a window in the mapping, the span of the data set
        coalesce(groups.window_start, datasets.first_ts) as window_start,
        coalesce(groups.window_end, datasets.last_ts) as window_end
    from groups
    inner join datasets
        on groups.dataset = datasets.dataset
    where datasets.kind = 'events'
),

faults as (
    select
        records.dataset,
        records.unit_group,
        records.unit_id,
        records.component_class,
        records.source_file,
        records.line_no,
        -- a fault that began before (or exactly at) the window start is downtime, not a
        -- failure in the window: a failure at the start would end a life of zero length
        records.start_ts > event_sets.window_start as began_in_window,
        greatest(records.start_ts, event_sets.window_start) as down_ts,
        -- a fault still open when the file ends keeps the unit down to the window end
        least(coalesce(records.end_ts, event_sets.window_end), event_sets.window_end) as up_ts
    from records
    inner join event_sets
        on records.dataset = event_sets.dataset
        and records.unit_group is not distinct from event_sets.unit_group
    where
        records.record_kind in ('fault', 'event')
        and records.start_ts < event_sets.window_end
        and coalesce(records.end_ts, event_sets.window_end) >= event_sets.window_start
),

stacked as (
    select
        faults.*,
        -- the latest repair among the unit's earlier faults
        max(faults.up_ts) over (
            unit_faults rows between unbounded preceding and 1 preceding
        ) as earlier_up_ts
    from faults
    window unit_faults as (
        partition by faults.dataset, faults.unit_id
        order by faults.down_ts, faults.up_ts, faults.source_file, faults.line_no
    )
),

numbered as (
    select
        stacked.*,
        -- a fault that starts while an earlier one is still open, or the instant it ends,
        -- joins that outage (no life of zero length between them)
        sum(
            case
                when stacked.earlier_up_ts is null or stacked.down_ts > stacked.earlier_up_ts
                    then 1
                else 0
            end
        ) over (
            partition by stacked.dataset, stacked.unit_id
            order by stacked.down_ts, stacked.up_ts, stacked.source_file, stacked.line_no
            rows between unbounded preceding and current row
        ) as outage_no
    from stacked
),

outages as (
    select
        numbered.dataset,
        numbered.unit_group,
        numbered.unit_id,
        numbered.outage_no,
        min(numbered.down_ts) as down_ts,
        max(numbered.up_ts) as up_ts
    from numbered
    group by numbered.dataset, numbered.unit_group, numbered.unit_id, numbered.outage_no
),

outage_uptime as (
    select
        outages.*,
        -- seconds of uptime from the window start to this outage: calendar time less the
        -- unit's earlier outages
        epoch(outages.down_ts - event_sets.window_start)
        - coalesce(
            sum(epoch(outages.up_ts - outages.down_ts)) over (
                partition by outages.dataset, outages.unit_id
                order by outages.outage_no
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as uptime_s
    from outages
    inner join event_sets
        on outages.dataset = event_sets.dataset
        and outages.unit_group is not distinct from event_sets.unit_group
),

observed_units as (
    select
        records.dataset,
        records.unit_group,
        records.unit_id,
        any_value(records.cohort_json) as cohort_json
    from records
    inner join event_sets
        on records.dataset = event_sets.dataset
        and records.unit_group is not distinct from event_sets.unit_group
    group by records.dataset, records.unit_group, records.unit_id
),

unit_uptime as (
    select
        observed_units.dataset,
        observed_units.unit_group,
        observed_units.unit_id,
        observed_units.cohort_json,
        -- seconds of uptime over the whole window
        epoch(any_value(event_sets.window_end) - any_value(event_sets.window_start))
        - coalesce(sum(epoch(outages.up_ts - outages.down_ts)), 0) as uptime_s
    from observed_units
    inner join event_sets
        on observed_units.dataset = event_sets.dataset
        and observed_units.unit_group is not distinct from event_sets.unit_group
    left join outages
        on observed_units.dataset = outages.dataset
        and observed_units.unit_id = outages.unit_id
    group by
        observed_units.dataset,
        observed_units.unit_group,
        observed_units.unit_id,
        observed_units.cohort_json
),

outage_failures as (
    select distinct
        numbered.dataset,
        numbered.unit_id,
        numbered.outage_no,
        numbered.component_class
    from numbered
    where numbered.began_in_window
),

class_failures as (
    select
        outage_failures.dataset,
        outage_failures.unit_id,
        outage_failures.component_class,
        outage_uptime.down_ts,
        outage_uptime.up_ts,
        outage_uptime.uptime_s,
        row_number() over class_outages as life_no,
        lag(outage_uptime.uptime_s, 1, 0) over class_outages as previous_uptime_s,
        lag(outage_uptime.up_ts) over class_outages as previous_up_ts
    from outage_failures
    inner join outage_uptime
        on outage_failures.dataset = outage_uptime.dataset
        and outage_failures.unit_id = outage_uptime.unit_id
        and outage_failures.outage_no = outage_uptime.outage_no
    -- a fault that begins inside an outage already open at the window start fails at no uptime
    -- (a life of zero length): downtime, like a fault at the window start
    where outage_uptime.uptime_s > 0
    window class_outages as (
        partition by
            outage_failures.dataset, outage_failures.unit_id, outage_failures.component_class
        order by outage_failures.outage_no
    )
),

failed_lives as (
    select
        class_failures.dataset,
        unit_uptime.unit_group,
        class_failures.unit_id,
        class_failures.life_no,
        class_failures.component_class,
        unit_uptime.cohort_json,
        coalesce(class_failures.previous_up_ts, event_sets.window_start) as observed_from_ts,
        class_failures.down_ts as observed_to_ts,
        0.0 as entry_h,
        -- hours of uptime since the last repair of this class (or the window start)
        (class_failures.uptime_s - class_failures.previous_uptime_s) / 3600.0 as exit_h,
        true as failed,
        'uptime' as time_scale
    from class_failures
    inner join unit_uptime
        on class_failures.dataset = unit_uptime.dataset
        and class_failures.unit_id = unit_uptime.unit_id
    inner join event_sets
        on unit_uptime.dataset = event_sets.dataset
        and unit_uptime.unit_group is not distinct from event_sets.unit_group
),

last_failures as (
    select
        class_failures.dataset,
        class_failures.unit_id,
        class_failures.component_class,
        max(class_failures.life_no) as n_failures,
        arg_max(class_failures.uptime_s, class_failures.life_no) as uptime_s,
        arg_max(class_failures.up_ts, class_failures.life_no) as up_ts
    from class_failures
    group by class_failures.dataset, class_failures.unit_id, class_failures.component_class
),

censored_lives as (
    select
        unit_uptime.dataset,
        unit_uptime.unit_group,
        unit_uptime.unit_id,
        coalesce(last_failures.n_failures, 0) + 1 as life_no,
        classes.component_class,
        unit_uptime.cohort_json,
        coalesce(last_failures.up_ts, event_sets.window_start) as observed_from_ts,
        event_sets.window_end as observed_to_ts,
        0.0 as entry_h,
        (unit_uptime.uptime_s - coalesce(last_failures.uptime_s, 0)) / 3600.0 as exit_h,
        false as failed,
        'uptime' as time_scale
    from unit_uptime
    inner join event_sets
        on unit_uptime.dataset = event_sets.dataset
        and unit_uptime.unit_group is not distinct from event_sets.unit_group
    inner join classes
        on unit_uptime.dataset = classes.dataset
    left join last_failures
        on unit_uptime.dataset = last_failures.dataset
        and unit_uptime.unit_id = last_failures.unit_id
        and classes.component_class = last_failures.component_class
    where
        -- no life after a failure whose repair outlasts the window
        (last_failures.up_ts is null or last_failures.up_ts < event_sets.window_end)
        -- nor for a unit down over the whole window (a life of zero length)
        and unit_uptime.uptime_s > coalesce(last_failures.uptime_s, 0)
),

unobserved_numbers as (
    select
        event_sets.dataset,
        event_sets.unit_group,
        unnest(
            range(1, greatest(event_sets.population - count(observed_units.unit_id), 0) + 1)
        ) as n
    from event_sets
    left join observed_units
        on event_sets.dataset = observed_units.dataset
        and event_sets.unit_group is not distinct from observed_units.unit_group
    where event_sets.population is not null
    group by event_sets.dataset, event_sets.unit_group, event_sets.population
),

unobserved_lives as (
    select
        unobserved_numbers.dataset,
        unobserved_numbers.unit_group,
        unobserved_numbers.dataset
        || coalesce('-' || unobserved_numbers.unit_group, '')
        || '-unobserved-'
        || unobserved_numbers.n as unit_id,
        1 as life_no,
        classes.component_class,
        cast(null as varchar) as cohort_json,
        event_sets.window_start as observed_from_ts,
        event_sets.window_end as observed_to_ts,
        0.0 as entry_h,
        epoch(event_sets.window_end - event_sets.window_start) / 3600.0 as exit_h,
        false as failed,
        'uptime' as time_scale
    from unobserved_numbers
    inner join event_sets
        on unobserved_numbers.dataset = event_sets.dataset
        and unobserved_numbers.unit_group is not distinct from event_sets.unit_group
    inner join classes
        on unobserved_numbers.dataset = classes.dataset
),

all_lives as (
    select * from life_rows
    union all
    select * from failed_lives
    union all
    select * from censored_lives
    union all
    select * from unobserved_lives
),

final as (
    select
        all_lives.dataset,
        all_lives.unit_group,
        all_lives.unit_id,
        all_lives.life_no,
        all_lives.component_class,
        json_extract_string(all_lives.cohort_json, '$.batch') as batch,
        json_extract_string(all_lives.cohort_json, '$.cage') as cage,
        json_extract_string(all_lives.cohort_json, '$.location') as location,
        all_lives.cohort_json,
        all_lives.observed_from_ts,
        all_lives.observed_to_ts,
        all_lives.entry_h,
        all_lives.exit_h,
        all_lives.failed,
        -- age: hours in service since the unit's first life; uptime: hours up since the last
        -- repair of the class (or the window start)
        all_lives.time_scale
    from all_lives
)

select * from final
