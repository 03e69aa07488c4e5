-- One row per fault interval from the fault logs: the unit was down from start_ts until end_ts
-- (repaired and back); end_ts and repair_h are null for a fault still open when its file ends.
with faults as (
    select * from stg_fault_events
    where record_kind = 'fault'
),

final as (
    select
        faults.dataset,
        faults.unit_id,
        faults.component_class,
        faults.category_l1,
        faults.category_l2,
        faults.category_l3,
        faults.start_ts,
        faults.end_ts,
        -- hours from fault start to repair done
        faults.length_s / 3600.0 as repair_h,
        faults.source_file,
        faults.line_no,
        faults.end_line_no
    from faults
)

select * from final
