-- torchrun agent log lines; a line re-read from a grown log file (same file, line and text) is
-- kept once. exit_code stays as printed: negative means the worker died of that signal.
with source as (select * from raw_elastic_events),

deduplicated as (
    select distinct on (source.source_file, source.line_no, source.ts, source.message) source.*
    from source
),

final as (
    select
        deduplicated.run_id,
        deduplicated.host,
        deduplicated.ts,
        deduplicated.level,
        deduplicated.logger,
        deduplicated.event,
        deduplicated.role,
        deduplicated.round,
        deduplicated.group_rank,
        deduplicated.n_nodes,
        deduplicated.world_size,
        deduplicated.local_rank,
        deduplicated.exit_code,
        deduplicated.pid,
        deduplicated.restarts_left,
        deduplicated.max_restarts,
        deduplicated.signal_name,
        deduplicated.message,
        deduplicated.log_format,
        deduplicated.group_state,
        -- ts_lo <= the line's time <= ts_hi (both = ts when the line has a time; bounds from the
        -- nearest timed lines around an untimed one; null: no bound on that side)
        deduplicated.ts_lo,
        deduplicated.ts_hi,
        deduplicated.ts_source,
        deduplicated.source_file,
        deduplicated.line_no
    from deduplicated
)

select * from final
