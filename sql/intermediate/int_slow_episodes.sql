-- Fail-slow episodes, one row per episode of an attempt (docs/goodput.md §7): the episodes of
-- int_slow_spans (what they are and how they are found: see there) with what each is blamed on.
--
-- Attribution (int_slow_attribution): blamed_rank, blamed_host and blamed_gpu (null for a node
-- blamed as a whole), attribution 'per_rank' (the rank the job's straggler reports name most
-- often in the episode: Megatron's StragglerDetector, NVRx scores and warnings; its host and GPU
-- by NVRx's Node= or by the launcher's block layout over the attempt's node list), 'dcgm' (else
-- the GPU of the attempt's nodes with the strongest DCGM evidence in the episode: clock-event
-- reasons 0x4/0x8/0x20/0x40/0x80, an SM clock below the job's, a warning Xid, PCIe replays,
-- NVLink CRC, an SBE burst) or 'unattributed' (neither; the blamed columns null), and evidence,
-- the figures in words. slow_s here is the whole episode's; the ledger (fct_job_goodput.slow_s)
-- counts only the steps the job kept (a slow stretch later redone is wasted_s).
with spans as (select * from int_slow_spans),

attribution as (select * from int_slow_attribution),

final as (
    select
        spans.job_id,
        spans.job_id_raw,
        spans.attempt,
        spans.episode_no,
        spans.start_ts,
        spans.end_ts,
        spans.first_step,
        spans.last_step,
        spans.n_lines,
        spans.steps_per_line,
        spans.baseline_step_s,
        spans.baseline_mad_s,
        spans.slow_step_s,
        spans.slowdown,
        spans.slow_s,
        spans.bound_s,
        spans.pace_source,
        attribution.blamed_host,
        attribution.blamed_gpu,
        attribution.blamed_rank,
        coalesce(attribution.attribution, 'unattributed') as attribution,
        attribution.evidence
    from spans
    left join attribution
        on
        spans.job_id_raw = attribution.job_id_raw
        and spans.attempt = attribution.attempt
        and spans.episode_no = attribution.episode_no
)

select * from final
