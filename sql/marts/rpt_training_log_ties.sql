-- One row per training log and the job it was tied to (docs/goodput.md §2): tie = job_id (the
-- job id in its name, a path pattern or --job), host_time (the one job on its host while it
-- was written), ambiguous (several such jobs: candidates, not used) or none (no job found).
with ties as (select * from int_training_log_ties),

final as (
    select
        ties.source_file,
        ties.tie,
        ties.job_id_raw,
        ties.candidates,
        ties.job_id,
        ties.host,
        ties.framework,
        ties.first_ts,
        ties.last_ts,
        ties.n_events
    from ties
)

select * from final
