-- Quarantined rows per target table, stage and reason.
with quarantine as (select * from raw_quarantine),

final as (
    select
        quarantine.target_table,
        quarantine.stage,
        quarantine.reason,
        count(*) as n_rows
    from quarantine
    group by quarantine.target_table, quarantine.stage, quarantine.reason
)

select * from final
