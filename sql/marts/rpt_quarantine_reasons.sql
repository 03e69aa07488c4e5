-- Quarantined rows per target table, stage and reason (a kind: its offending values are in
-- raw_quarantine.reason_value), with how many distinct values it refused and one of them.
with quarantine as (select * from raw_quarantine),

final as (
    select
        quarantine.target_table,
        quarantine.stage,
        quarantine.reason,
        count(*) as n_rows,
        count(distinct quarantine.reason_value) as n_values,
        min(quarantine.reason_value) as example_value
    from quarantine
    group by quarantine.target_table, quarantine.stage, quarantine.reason
)

select * from final
