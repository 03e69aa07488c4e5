-- One row per repair, shaped like the unit lives the fits read (`relia fit --lives <view>`): a
-- repair is one "life" from the unit going down (entry_h = 0) to its return (exit_h = repair
-- hours, failed = true); a repair still open (repair_h null in its view) is right-censored
-- (failed = false) at its age at the end of the data. lives_view names the view it comes from:
--
-- stg_repairs: replacement tickets only (action 'replace': a failed unit swapped). Planned
--   replacements, reseats and "no fault found" tickets repair no failure and are left out. An
--   open ticket's age runs from opened_ts to the observation window's end (stg_observation_window:
--   the export is taken at the end of the data).
-- int_fault_repairs: every fault interval of the fault logs, classed by its component_class
--   ('unknown' when the data set gives none). An open fault's age runs to the end of its data: the
--   window end of its unit's records (from the mapping), else the data set's last timestamp.
-- int_node_unavailability: every node outage, Slurm node events and fault logs alike, classed by
--   unavailability_class; planned outages (is_planned) are their own class 'planned'. A Slurm
--   outage still open runs to the observation window's end; a fault-log one to the end of its
--   data as above. A Slurm export lists the events that overlap the window, so an outage that
--   began before the window start is there only because it lasted past it: it enters late
--   (entry_h = its hours before the window start; left truncation, as for unit lives), and one
--   that ended before the window start is left out of the fits ('before_window').
--
-- status says what a row gives the fits: 'repaired' (failed), 'open' (censored), and three kinds
-- of row with no usable duration, kept here so that they are counted, never dropped silently:
-- 'open_no_age' (an open repair that does not start before the end of its data), 'no_length' (a
-- repair closed at or before its start) and 'before_window'. exit_h is null for those.
with observation as (select * from stg_observation_window),

tickets as (
    select * from stg_repairs
    where action = 'replace'
),

fault_repairs as (select * from int_fault_repairs),

fault_records as (select * from stg_fault_events),

outages as (select * from int_node_unavailability),

-- the end of a fault log's data for each unit: its records' window end, else the data set's last
-- timestamp
dataset_ends as (
    select
        fault_records.dataset,
        max(coalesce(fault_records.end_ts, fault_records.start_ts)) as last_ts
    from fault_records
    group by fault_records.dataset
),

unit_ends as (
    select
        fault_records.dataset,
        fault_records.unit_id,
        coalesce(max(fault_records.window_end), any_value(dataset_ends.last_ts)) as data_end_ts
    from fault_records
    inner join dataset_ends
        on fault_records.dataset = dataset_ends.dataset
    group by fault_records.dataset, fault_records.unit_id
),

ticket_repairs as (
    select
        'stg_repairs' as lives_view,
        cast(null as varchar) as dataset,
        cast(null as varchar) as source,
        tickets.node,
        tickets.node || coalesce('/' || tickets.slot, '') as unit_id,
        tickets.component_class,
        tickets.opened_ts as start_ts,
        tickets.closed_ts as end_ts,
        tickets.repair_h,
        observation.window_end as data_end_ts,
        0.0 as entry_h
    from tickets
    cross join observation
),

log_repairs as (
    select
        'int_fault_repairs' as lives_view,
        fault_repairs.dataset,
        'fault_log' as source,
        cast(null as varchar) as node,
        fault_repairs.unit_id,
        coalesce(fault_repairs.component_class, 'unknown') as component_class,
        fault_repairs.start_ts,
        fault_repairs.end_ts,
        -- from the timestamps, else the length the file states
        fault_repairs.repair_h,
        unit_ends.data_end_ts,
        0.0 as entry_h
    from fault_repairs
    left join unit_ends
        on fault_repairs.dataset = unit_ends.dataset
        and fault_repairs.unit_id = unit_ends.unit_id
),

node_repairs as (
    select
        'int_node_unavailability' as lives_view,
        outages.dataset,
        outages.source,
        outages.node,
        outages.node as unit_id,
        case when outages.is_planned then 'planned' else outages.unavailability_class end
            as component_class,
        outages.start_ts,
        outages.end_ts,
        outages.repair_h,
        case
            when outages.source = 'slurm' then observation.window_end else unit_ends.data_end_ts
        end as data_end_ts,
        -- hours of a Slurm outage before the window start (left truncation)
        case
            when outages.source = 'slurm'
                then greatest(epoch(observation.window_start - outages.start_ts) / 3600.0, 0.0)
            else 0.0
        end as entry_h
    from outages
    cross join observation
    left join unit_ends
        on outages.dataset = unit_ends.dataset
        and outages.node = unit_ends.unit_id
),

repairs as (
    select * from ticket_repairs
    union all
    select * from log_repairs
    union all
    select * from node_repairs
),

timed as (
    select
        repairs.*,
        -- hours from the unit going down to its return, or to the end of the data while open
        coalesce(repairs.repair_h, epoch(repairs.data_end_ts - repairs.start_ts) / 3600.0)
            as length_h
    from repairs
),

final as (
    select
        timed.lives_view,
        timed.dataset,
        timed.source,
        timed.node,
        timed.unit_id,
        timed.component_class,
        timed.start_ts,
        timed.end_ts,
        timed.data_end_ts,
        case
            when timed.repair_h is null and not coalesce(timed.length_h > 0, false)
                then 'open_no_age'
            when timed.repair_h is not null and timed.length_h <= 0 then 'no_length'
            when timed.length_h <= timed.entry_h then 'before_window'
            when timed.repair_h is null then 'open'
            else 'repaired'
        end as status,
        timed.entry_h,
        case when timed.length_h > timed.entry_h then timed.length_h end as exit_h,
        -- repaired; an open repair (no repair_h yet) is right-censored
        timed.repair_h is not null as failed
    from timed
)

select * from final
