-- What each fail-slow episode is blamed on (docs/goodput.md §7), one row per episode of
-- int_slow_spans (key job_id_raw, attempt, episode_no): the rank, host and GPU blamed, how
-- (attribution 'per_rank' | 'dcgm' | 'unattributed') and the evidence in words; the episodes
-- view carries these columns. In order:
--
-- per_rank: the straggler reports of the job's log (stg_training_events rows event 'straggler',
-- tied to the job as its log is: int_training_log_ties, or the run's log-only attempt) printed in
-- (start_ts, end_ts] (a report printed at start_ts covers the healthy interval before it). Each
-- report names at most one rank, with theta = slow_theta_min (stg_params, default 0.05):
-- Megatron's StragglerDetector line (one report per file and printed time, its Bottom/Top lines
-- with it): the rank at rtt_max_ms when rtt_max_ms / rtt_min_ms >= 1 + theta ('MxRtt'), else the
-- rank at etpt_min_tf when etpt_max_tf / etpt_min_tf >= 1 + theta ('MnEtpt'), else the Bottom
-- list's lowest rank when the listed maximum over it is >= 1 + theta ('Bottom Etpt'). NVRx: each
-- block of score lines (consecutive lines of one metric; relative and individual are two
-- reports) names its lowest-scoring rank when that score is below 1 / (1 + theta): NVRx's scores
-- are the reference time over the rank's (relative: the fastest rank's median; individual: the
-- rank's own best; nvidia-resiliency-ext straggler/reporting.py), so pace ~ 1 / score; each rank
-- of a STRAGGLER DETECTION WARNING block counts as named by it. The rank named by the most
-- reports is blamed (ties: the one the reports make slower, summing ratio - 1 and 1 / score -
-- 1 over them; then the lower rank). Its host: the Node= its NVRx score lines give (the
-- row's host), else the launcher's block layout: rank r runs on the node floor(r /
-- gpus_per_node) of the attempt's node list (int_job_attempts.nodes, Slurm's node list expanded
-- in Slurm's order at ingest) and on its GPU r mod gpus_per_node, gpus_per_node = the attempt's
-- GPUs / its nodes (when they divide), else stg_params.gpus_per_node. That layout is an
-- assumption (srun's default block distribution, one rank per GPU, ranks in node-list order); a
-- job launched otherwise (cyclic, a rank file) is blamed on the wrong GPU unless NVRx names the
-- node. A log-only job has no node list: only NVRx's Node= places its ranks.
--
-- dcgm: else the DCGM samples (stg_dcgm_samples) of the attempt's nodes in [start_ts, end_ts].
-- Per GPU, evidence in order of strength: clock-event reason bits 0x4 SW power cap, 0x8 HW
-- slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake (mask 0xEC; never 0x1 idle,
-- 0x2 clocks setting, 0x10 sync boost, 0x100 display), by the share of its samples showing
-- them; an SM clock (the median of its samples without the idle bit) below the median of the
-- job's GPUs by a factor >= 1 + theta; a warning Xid (the xid_last gauge changing in the window
-- to a hardware Xid that does not stop the job, seed_xid); PCIe replay or NVLink CRC (flit +
-- data) increments; an SBE burst (volatile single-bit ECC up by 10 or more). Counters are read
-- as the last sample's value minus the first's in the window (an increase between the sample
-- before the window and the first one in it is not seen). The GPU with the strongest evidence
-- is blamed (ties: host, then GPU index); when every GPU of its node with samples shows reason
-- bits or a low clock, and there are at least 2, the node as a whole (blamed_gpu null).
--
-- unattributed: neither (a data-bound or software slowdown shows no unit: it stays so), and a
-- job whose reports name no rank above theta falls through to DCGM.
--
-- evidence: 'megatron MxRtt rank 30 x1.086 in 5/6 reports' (the median ratio over the reports
-- naming the rank by that figure, out of the reports in the window), 'nvrx relative score rank 76
-- 0.91 in 3/4 reports on h100-001' (its median score), 'nvrx warning rank 76 in 2/2 warnings';
-- 'dcgm clock_event_reasons 0x88 in 4/4 samples, sm_clock 1441/1980 MHz on gpu0013 gpu3'.
with params as (select * from stg_params),

theta as (select 1 + params.slow_theta_min as min_ratio from params),

spans as (select * from int_slow_spans),

attempts as (select * from int_job_attempts),

windows as (
    select
        spans.job_id_raw,
        spans.attempt,
        spans.episode_no,
        coalesce(spans.start_ts, spans.end_ts) as start_ts,
        spans.end_ts,
        attempts.nodes,
        coalesce(
            case
                when len(attempts.nodes) > 0 and attempts.n_gpus % len(attempts.nodes) = 0
                    then nullif(attempts.n_gpus // len(attempts.nodes), 0)
            end,
            params.gpus_per_node
        ) as gpus_per_node,
        theta.min_ratio
    from spans
    cross join params
    cross join theta
    left join attempts
        on spans.job_id_raw = attempts.job_id_raw and spans.attempt = attempts.attempt
),

-- per-rank reports ------------------------------------------------------------------------------

straggler as (
    select * from int_training_log_runs
    where event = 'straggler' and ts is not null
),

tied as (
    select
        ties.job_id_raw,
        straggler.source_file,
        straggler.line_no,
        straggler.framework,
        straggler.ts,
        straggler.host,
        straggler.rank,
        straggler.metric,
        straggler.value
    from straggler
    inner join int_training_log_ties as ties
        on
        straggler.source_file = ties.source_file
        and straggler.log_job is not distinct from ties.job_id
    where ties.job_id_raw is not null
    union all
    select
        log_attempts.job_id_raw,
        straggler.source_file,
        straggler.line_no,
        straggler.framework,
        straggler.ts,
        straggler.host,
        straggler.rank,
        straggler.metric,
        straggler.value
    from straggler
    inner join int_training_log_attempts as log_attempts
        on straggler.source_file = log_attempts.source_file and straggler.run = log_attempts.run
),

megatron_reports as (
    select
        tied.job_id_raw,
        tied.source_file,
        tied.ts,
        max(tied.value) filter (where tied.metric = 'rtt_max_ms') as rtt_max,
        min(tied.value) filter (where tied.metric = 'rtt_min_ms') as rtt_min,
        arg_max(tied.rank, tied.value) filter (where tied.metric = 'rtt_max_ms') as rtt_rank,
        max(tied.value) filter (where tied.metric = 'etpt_max_tf') as etpt_max,
        min(tied.value) filter (where tied.metric = 'etpt_min_tf') as etpt_min,
        arg_min(tied.rank, tied.value) filter (where tied.metric = 'etpt_min_tf') as etpt_rank,
        max(tied.value) filter (where tied.metric in ('etpt_bottom_tf', 'etpt_top_tf'))
            as listed_max,
        min(tied.value) filter (where tied.metric = 'etpt_bottom_tf') as bottom_min,
        arg_min(tied.rank, tied.value) filter (where tied.metric = 'etpt_bottom_tf')
            as bottom_rank
    from tied
    where tied.framework = 'megatron'
    group by tied.job_id_raw, tied.source_file, tied.ts
),

megatron_ratios as (
    select
        megatron_reports.*,
        megatron_reports.rtt_max / nullif(megatron_reports.rtt_min, 0) as rtt_ratio,
        megatron_reports.etpt_max / nullif(megatron_reports.etpt_min, 0) as etpt_ratio,
        megatron_reports.listed_max / nullif(megatron_reports.bottom_min, 0) as listed_ratio
    from megatron_reports
),

nvrx_rows as (
    select
        tied.*,
        lag(tied.metric) over file_rows as prev_metric,
        lag(tied.line_no) over file_rows as prev_line_no
    from tied
    where tied.framework = 'nvrx' and tied.rank is not null
    window file_rows as (
        partition by tied.job_id_raw, tied.source_file order by tied.line_no, tied.rank
    )
),

-- a block: consecutive lines of one metric (a score list's Worst and Best halves are one line
-- apart)
nvrx_blocks as (
    select
        nvrx_rows.*,
        sum(
            case
                when
                    nvrx_rows.prev_line_no is null
                    or nvrx_rows.metric != nvrx_rows.prev_metric
                    or nvrx_rows.line_no - nvrx_rows.prev_line_no > 2
                    then 1
                else 0
            end
        ) over (
            partition by nvrx_rows.job_id_raw, nvrx_rows.source_file
            order by nvrx_rows.line_no, nvrx_rows.rank
            rows between unbounded preceding and current row
        ) as block
    from nvrx_rows
),

nvrx_scores as (
    select
        nvrx_blocks.job_id_raw,
        nvrx_blocks.source_file,
        nvrx_blocks.block,
        any_value(nvrx_blocks.metric) as metric,
        min(nvrx_blocks.ts) as ts,
        min(nvrx_blocks.value) as low_score,
        arg_min(nvrx_blocks.rank, nvrx_blocks.value) as low_rank,
        arg_min(nvrx_blocks.host, nvrx_blocks.value) as low_host
    from nvrx_blocks
    where nvrx_blocks.metric in ('nvrx_relative', 'nvrx_individual')
    group by nvrx_blocks.job_id_raw, nvrx_blocks.source_file, nvrx_blocks.block
),

-- one row per report, rank null when it names none; family: what the evidence counts it among
reports as (
    select
        megatron_ratios.job_id_raw,
        megatron_ratios.source_file || '@' || cast(megatron_ratios.ts as varchar) as report,
        megatron_ratios.ts,
        'megatron' as family,
        case
            when megatron_ratios.rtt_ratio >= theta.min_ratio then 'MxRtt'
            when megatron_ratios.etpt_ratio >= theta.min_ratio then 'MnEtpt'
            when megatron_ratios.listed_ratio >= theta.min_ratio then 'Bottom Etpt'
        end as signal,
        case
            when megatron_ratios.rtt_ratio >= theta.min_ratio then megatron_ratios.rtt_rank
            when megatron_ratios.etpt_ratio >= theta.min_ratio
                then megatron_ratios.etpt_rank
            when megatron_ratios.listed_ratio >= theta.min_ratio
                then megatron_ratios.bottom_rank
        end as rank,
        case
            when megatron_ratios.rtt_ratio >= theta.min_ratio
                then megatron_ratios.rtt_ratio
            when megatron_ratios.etpt_ratio >= theta.min_ratio
                then megatron_ratios.etpt_ratio
            when megatron_ratios.listed_ratio >= theta.min_ratio
                then megatron_ratios.listed_ratio
        end as figure,
        cast(null as varchar) as node
    from megatron_ratios
    cross join theta
    union all
    select
        nvrx_scores.job_id_raw,
        nvrx_scores.source_file || '#' || cast(nvrx_scores.block as varchar) as report,
        nvrx_scores.ts,
        replace(nvrx_scores.metric, '_', ' ') as family,
        case
            when nvrx_scores.low_score * theta.min_ratio < 1
                then replace(nvrx_scores.metric, 'nvrx_', '') || ' score'
        end as signal,
        case
            when nvrx_scores.low_score * theta.min_ratio < 1 then nvrx_scores.low_rank
        end as rank,
        nvrx_scores.low_score as figure,
        nvrx_scores.low_host as node
    from nvrx_scores
    cross join theta
    union all
    select
        nvrx_blocks.job_id_raw,
        nvrx_blocks.source_file || '#' || cast(nvrx_blocks.block as varchar) as report,
        nvrx_blocks.ts,
        'nvrx warning' as family,
        'warning' as signal,
        nvrx_blocks.rank,
        cast(null as double) as figure,
        cast(null as varchar) as node
    from nvrx_blocks
    where nvrx_blocks.metric = 'nvrx_warning'
),

episode_reports as (
    select
        windows.job_id_raw,
        windows.attempt,
        windows.episode_no,
        reports.report,
        reports.family,
        reports.signal,
        reports.rank,
        reports.figure,
        reports.node
    from windows
    inner join reports
        on
        windows.job_id_raw = reports.job_id_raw
        and windows.start_ts < reports.ts
        and windows.end_ts >= reports.ts
),

family_counts as (
    select
        episode_reports.job_id_raw,
        episode_reports.attempt,
        episode_reports.episode_no,
        episode_reports.family,
        count(distinct episode_reports.report) as n_reports
    from episode_reports
    group by
        episode_reports.job_id_raw,
        episode_reports.attempt,
        episode_reports.episode_no,
        episode_reports.family
),

signal_votes as (
    select
        episode_reports.job_id_raw,
        episode_reports.attempt,
        episode_reports.episode_no,
        episode_reports.rank,
        episode_reports.family,
        episode_reports.signal,
        count(distinct episode_reports.report) as n_votes,
        median(episode_reports.figure) as figure,
        -- how much slower than the others the reports make it (a Megatron ratio - 1, an NVRx
        -- 1 / score - 1), summed: the tie-break between ranks named equally often
        sum(
            case
                when episode_reports.family = 'megatron' then episode_reports.figure - 1
                when episode_reports.signal != 'warning' then 1 / episode_reports.figure - 1
                else 0
            end
        ) as excess,
        mode(episode_reports.node) as node
    from episode_reports
    where episode_reports.rank is not null
    group by
        episode_reports.job_id_raw,
        episode_reports.attempt,
        episode_reports.episode_no,
        episode_reports.rank,
        episode_reports.family,
        episode_reports.signal
),

-- per rank: its votes over every figure, and the figure that names it most (ties: Megatron's,
-- then NVRx's relative score, its individual score, its warning)
rank_votes as (
    select
        signal_votes.*,
        sum(signal_votes.n_votes) over rank_signals as rank_total,
        sum(signal_votes.excess) over rank_signals as rank_excess,
        any_value(signal_votes.node) over rank_signals as rank_node,
        row_number() over (
            rank_signals order by
                signal_votes.n_votes desc,
                list_position(
                    ['megatron', 'nvrx relative', 'nvrx individual', 'nvrx warning'],
                    signal_votes.family
                ),
                signal_votes.signal asc
        ) as signal_order
    from signal_votes
    window rank_signals as (
        partition by
            signal_votes.job_id_raw,
            signal_votes.attempt,
            signal_votes.episode_no,
            signal_votes.rank
    )
),

per_rank as (
    select
        rank_votes.job_id_raw,
        rank_votes.attempt,
        rank_votes.episode_no,
        rank_votes.rank as blamed_rank,
        coalesce(
            rank_votes.rank_node, windows.nodes[rank_votes.rank // windows.gpus_per_node + 1]
        ) as blamed_host,
        rank_votes.rank % windows.gpus_per_node as blamed_gpu,
        case
            when rank_votes.family = 'megatron'
                then printf(
                    'megatron %s rank %d x%.3f in %d/%d reports',
                    rank_votes.signal,
                    rank_votes.rank,
                    rank_votes.figure,
                    rank_votes.n_votes,
                    family_counts.n_reports
                )
            when rank_votes.signal = 'warning'
                then printf(
                    'nvrx warning rank %d in %d/%d warnings',
                    rank_votes.rank,
                    rank_votes.n_votes,
                    family_counts.n_reports
                )
            else printf(
                'nvrx %s rank %d %.2f in %d/%d reports',
                rank_votes.signal,
                rank_votes.rank,
                rank_votes.figure,
                rank_votes.n_votes,
                family_counts.n_reports
            )
        end || coalesce(' on ' || rank_votes.rank_node, '') as evidence,
        row_number() over (
            partition by rank_votes.job_id_raw, rank_votes.attempt, rank_votes.episode_no
            order by rank_votes.rank_total desc, rank_votes.rank_excess desc, rank_votes.rank asc
        ) as choice
    from rank_votes
    inner join windows
        on
        rank_votes.job_id_raw = windows.job_id_raw
        and rank_votes.attempt = windows.attempt
        and rank_votes.episode_no = windows.episode_no
    inner join family_counts
        on
        rank_votes.job_id_raw = family_counts.job_id_raw
        and rank_votes.attempt = family_counts.attempt
        and rank_votes.episode_no = family_counts.episode_no
        and rank_votes.family = family_counts.family
    where rank_votes.signal_order = 1
),

-- DCGM ------------------------------------------------------------------------------------------

warning_xids as (
    select seed_xid.xid from seed_xid
    where seed_xid.category = 'hardware' and not seed_xid.stops_job
),

window_hosts as (
    select
        windows.job_id_raw,
        windows.attempt,
        windows.episode_no,
        windows.start_ts,
        windows.end_ts,
        windows.min_ratio,
        unnest(windows.nodes) as host
    from windows
    where windows.nodes is not null
),

samples as (
    select
        window_hosts.job_id_raw,
        window_hosts.attempt,
        window_hosts.episode_no,
        window_hosts.min_ratio,
        dcgm.host,
        dcgm.gpu_index,
        dcgm.ts,
        dcgm.sm_clock_mhz,
        coalesce(dcgm.clock_event_reasons, 0) as reasons,
        dcgm.pcie_replays,
        coalesce(dcgm.nvlink_crc_flit_errors, 0) + coalesce(dcgm.nvlink_crc_data_errors, 0)
            as nvlink_crc,
        dcgm.ecc_sbe_volatile,
        dcgm.xid_last
    from window_hosts
    inner join stg_dcgm_samples as dcgm
        on
        window_hosts.host = dcgm.host
        and window_hosts.start_ts <= dcgm.ts
        and window_hosts.end_ts >= dcgm.ts
),

gpus as (
    select
        samples.job_id_raw,
        samples.attempt,
        samples.episode_no,
        samples.host,
        samples.gpu_index,
        any_value(samples.min_ratio) as min_ratio,
        count(*) as n_samples,
        count(*) filter (where samples.reasons & 236 != 0) as n_throttled,
        bit_or(samples.reasons & 236) as reason_bits,
        median(samples.sm_clock_mhz) filter (where samples.reasons & 1 = 0) as clock_mhz,
        greatest(
            arg_max(samples.pcie_replays, samples.ts)
            filter (where samples.pcie_replays is not null)
            - arg_min(samples.pcie_replays, samples.ts)
            filter (where samples.pcie_replays is not null),
            0
        ) as pcie_up,
        greatest(
            arg_max(samples.nvlink_crc, samples.ts) - arg_min(samples.nvlink_crc, samples.ts), 0
        ) as nvlink_up,
        greatest(
            arg_max(samples.ecc_sbe_volatile, samples.ts)
            filter (where samples.ecc_sbe_volatile is not null)
            - arg_min(samples.ecc_sbe_volatile, samples.ts)
            filter (where samples.ecc_sbe_volatile is not null),
            0
        ) as sbe_up,
        arg_min(samples.xid_last, samples.ts) filter (where samples.xid_last is not null)
            as first_xid,
        arg_max(samples.xid_last, samples.ts) filter (where samples.xid_last is not null)
            as last_xid
    from samples
    group by
        samples.job_id_raw, samples.attempt, samples.episode_no, samples.host, samples.gpu_index
),

job_clocks as (
    select
        gpus.job_id_raw,
        gpus.attempt,
        gpus.episode_no,
        median(gpus.clock_mhz) as job_clock_mhz
    from gpus
    group by gpus.job_id_raw, gpus.attempt, gpus.episode_no
),

graded as (
    select
        gpus.*,
        job_clocks.job_clock_mhz,
        job_clocks.job_clock_mhz / nullif(gpus.clock_mhz, 0) as clock_ratio,
        case
            when gpus.last_xid != coalesce(gpus.first_xid, -1) and warning_xids.xid is not null
                then gpus.last_xid
        end as warning_xid
    from gpus
    inner join job_clocks
        on
        gpus.job_id_raw = job_clocks.job_id_raw
        and gpus.attempt = job_clocks.attempt
        and gpus.episode_no = job_clocks.episode_no
    left join warning_xids on gpus.last_xid = warning_xids.xid
),

tiered as (
    select
        graded.*,
        graded.clock_ratio >= graded.min_ratio as low_clock,
        case
            when graded.n_throttled > 0 then 1
            when graded.clock_ratio >= graded.min_ratio then 2
            when graded.warning_xid is not null then 3
            when graded.pcie_up + graded.nvlink_up > 0 then 4
            when graded.sbe_up >= 10 then 5
        end as tier
    from graded
),

node_shares as (
    select
        tiered.job_id_raw,
        tiered.attempt,
        tiered.episode_no,
        tiered.host,
        count(*) as n_gpus,
        count(*) filter (where tiered.tier <= 2) as n_slow_gpus
    from tiered
    group by tiered.job_id_raw, tiered.attempt, tiered.episode_no, tiered.host
),

dcgm as (
    select
        tiered.job_id_raw,
        tiered.attempt,
        tiered.episode_no,
        tiered.host as blamed_host,
        case
            when not (node_shares.n_gpus >= 2 and node_shares.n_slow_gpus = node_shares.n_gpus)
                then tiered.gpu_index
        end as blamed_gpu,
        'dcgm '
        || concat_ws(
            ', ',
            case
                when tiered.n_throttled > 0
                    then printf(
                        'clock_event_reasons 0x%x in %d/%d samples',
                        tiered.reason_bits,
                        tiered.n_throttled,
                        tiered.n_samples
                    )
            end,
            case
                when tiered.low_clock
                    then printf(
                        'sm_clock %d/%d MHz',
                        cast(round(tiered.clock_mhz) as bigint),
                        cast(round(tiered.job_clock_mhz) as bigint)
                    )
            end,
            case
                when
                    tiered.warning_xid is not null
                    then printf('xid %d', cast(tiered.warning_xid as bigint))
            end,
            case
                when
                    tiered.pcie_up > 0
                    then printf('pcie_replays +%d', cast(tiered.pcie_up as bigint))
            end,
            case
                when
                    tiered.nvlink_up > 0
                    then printf('nvlink_crc +%d', cast(tiered.nvlink_up as bigint))
            end,
            case
                when tiered.sbe_up >= 10 then printf('ecc_sbe +%d', cast(tiered.sbe_up as bigint))
            end
        )
        || ' on '
        || tiered.host
        || case
            when node_shares.n_gpus >= 2 and node_shares.n_slow_gpus = node_shares.n_gpus
                then printf(' (all %d GPUs)', node_shares.n_gpus)
            else printf(' gpu%d', tiered.gpu_index)
        end as evidence,
        row_number() over (
            partition by tiered.job_id_raw, tiered.attempt, tiered.episode_no
            order by
                tiered.tier asc,
                tiered.n_throttled * 1.0 / tiered.n_samples desc,
                tiered.clock_ratio desc nulls last,
                tiered.pcie_up + tiered.nvlink_up desc,
                tiered.sbe_up desc,
                tiered.host asc,
                tiered.gpu_index asc
        ) as choice
    from tiered
    inner join node_shares
        on
        tiered.job_id_raw = node_shares.job_id_raw
        and tiered.attempt = node_shares.attempt
        and tiered.episode_no = node_shares.episode_no
        and tiered.host = node_shares.host
    where tiered.tier is not null
),

final as (
    select
        windows.job_id_raw,
        windows.attempt,
        windows.episode_no,
        case
            when per_rank.job_id_raw is not null then per_rank.blamed_host else dcgm.blamed_host
        end as blamed_host,
        cast(
            case
                when per_rank.job_id_raw is not null then per_rank.blamed_gpu
                else dcgm.blamed_gpu
            end as integer
        ) as blamed_gpu,
        cast(per_rank.blamed_rank as integer) as blamed_rank,
        case
            when per_rank.job_id_raw is not null then 'per_rank'
            when dcgm.job_id_raw is not null then 'dcgm'
            else 'unattributed'
        end as attribution,
        coalesce(per_rank.evidence, dcgm.evidence) as evidence
    from windows
    left join per_rank
        on
        windows.job_id_raw = per_rank.job_id_raw
        and windows.attempt = per_rank.attempt
        and windows.episode_no = per_rank.episode_no
        and per_rank.choice = 1
    left join dcgm
        on
        windows.job_id_raw = dcgm.job_id_raw
        and windows.attempt = dcgm.attempt
        and windows.episode_no = dcgm.episode_no
        and dcgm.choice = 1
)

select * from final
