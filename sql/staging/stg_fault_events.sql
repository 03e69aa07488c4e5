-- Fault-log records, one row per life, fault interval or failure instant, with the length of each.
with source as (select * from raw_fault_events),

final as (
    select
        source.source_file,
        source.line_no,
        source.end_line_no,
        source.dataset,
        source.unit_id,
        source.unit_group,
        source.record_kind,
        source.component_class,
        source.category_l1,
        source.category_l2,
        source.category_l3,
        source.start_ts,
        source.end_ts,
        source.duration_s,
        -- seconds: from the timestamps when both are known, else the length the file states
        coalesce(epoch(source.end_ts - source.start_ts), source.duration_s) as length_s,
        source.failed,
        source.cohort_json,
        source.population,
        source.window_start,
        source.window_end
    from source
)

select * from final
