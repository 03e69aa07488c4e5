-- Every quarantined line with its file name (no folder), for the report's sample of them.
with quarantine as (select * from raw_quarantine),

final as (
    select
        quarantine.line_no,
        quarantine.target_table,
        quarantine.stage,
        quarantine.reason,
        quarantine.reason_value,
        -- the reason as the parser wrote it: the kind with its value put back
        coalesce(replace(quarantine.reason, '…', quarantine.reason_value), quarantine.reason)
            as reason_text,
        quarantine.raw,
        quarantine.loaded_at,
        quarantine.source_file,
        regexp_extract(quarantine.source_file, '[^/\\]+$') as file_name
    from quarantine
)

select * from final
