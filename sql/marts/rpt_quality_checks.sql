-- Great Expectations results per target table and expectation: files checked and failing.
with results as (select * from raw_quality_results),

final as (
    select
        results.target_table,
        results.expectation,
        count(*) as n_files,
        count(*) filter (where not results.success) as n_failed,
        cast(sum(results.n_unexpected) as bigint) as n_unexpected
    from results
    group by results.target_table, results.expectation
)

select * from final
