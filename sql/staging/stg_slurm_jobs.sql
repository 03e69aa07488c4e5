-- Slurm job records (allocations and steps), one row per (cluster, job_id, step, start); cluster is
-- null for dumps without a Cluster column (one cluster), so job ids of several clusters in
-- multi-cluster dumps (sacct -M) never meet.
-- The same record seen in several sacct dumps (a job still RUNNING in one, ended in the next, or
-- two dumps that disagree) is kept once, by this rule (never by file name):
--   1. a version with an end time wins over one without (a RUNNING snapshot is superseded);
--   2. then the latest end time;
--   3. then the version from the dump that reaches furthest in time (its latest end, start or
--      submit time): a later sacct run reflects later accounting;
--   4. then the version loaded last, then the last line.
-- Versions that disagree on how the attempt ended are listed by the job-conflicts staging view.
with source as (select * from raw_slurm_jobs),

-- the Slurm files' lineage rows only: the snapshots above this view are taken again when an
-- ingest changes Slurm files, not when it records files of other sources
files as (
    select * from raw_ingest_files
    where target_table = 'raw_slurm_jobs'
),

versions as (
    select
        source.*,
        max(coalesce(source.end_ts, source.start_ts, source.submit_ts))
            over (partition by source.source_file) as dump_reaches_ts,
        files.loaded_at
    from source
    left join files
        on source.source_file = files.path
),

ranked as (
    select
        versions.*,
        row_number() over (
            partition by
                coalesce(versions.cluster, ''),
                versions.job_id,
                coalesce(versions.step, ''),
                versions.start_ts
            order by
                versions.end_ts is null,
                versions.end_ts desc,
                versions.dump_reaches_ts desc,
                versions.loaded_at desc nulls last,
                versions.line_no desc
        ) as version_rank
    from versions
),

final as (
    select
        ranked.cluster,
        ranked.job_id,
        ranked.job_id_raw,
        ranked.step,
        ranked.job_name,
        ranked.partition,
        ranked.account,
        ranked.user_name,
        ranked.alloc_nodes,
        ranked.n_gpus,
        ranked.node_list,
        ranked.nodes,
        ranked.submit_ts,
        ranked.start_ts,
        ranked.end_ts,
        ranked.elapsed_s,
        ranked.state,
        ranked.state_by_uid,
        ranked.exit_code,
        ranked.exit_signal,
        ranked.restarts,
        ranked.source_file,
        ranked.line_no
    from ranked
    where ranked.version_rank = 1
)

select * from final
