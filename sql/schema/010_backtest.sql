-- The projection back-test (docs/goodput.md §5), written by pipelines.analysis.backtest.run_backtest and
-- read through rpt_projection_backtest (the latest run). Keyed by run id; times UTC, durations
-- in seconds, rates per hour.

create table if not exists backtest_runs (
    run_id varchar primary key,
    created_at timestamptz not null,
    window_start timestamptz,
    window_end timestamptz,
    min_gpus integer not null,  -- jobs with at least this many GPUs were back-tested
    alpha double not null,  -- intervals cover 1 - alpha
    n_jobs integer not null,  -- ledger jobs of at least min_gpus
    n_projected integer not null,  -- of which had lives observed before their start
    classes varchar,  -- comma-separated fitted component classes (the observed causes)
    checkpoint_from varchar,  -- where measured jobs' checkpoint interval came from
    versions varchar  -- JSON: relia, numpy, scipy versions
);

create table if not exists backtest_jobs (
    run_id varchar not null,
    job_id_raw varchar not null,
    n_gpus integer,
    bucket varchar,  -- GPU-size bucket: 1-8, 9-64, 65-512, 513-4096, 4097+
    period varchar,  -- first half / second half of the window, by first start
    first_start_ts timestamptz,
    last_end_ts timestamptz,
    estimated boolean,  -- the ledger was estimated (no training log)
    has_history boolean,  -- lives were observed before the job's start: it was projected
    wall_s double,
    productive_s double,
    slow_s double,  -- the ledger's fail-slow time: run as compute by the prediction, as measured
    overhead_s double,  -- startup_s + other_s: paid whatever fails
    restart_s double,
    n_interruptions integer,  -- all causes
    checkpoint_interval_s double,  -- compute between checkpoints the prediction used
    checkpoint_cost_s double,  -- blocking save per checkpoint the prediction used
    checkpoint_source varchar,  -- measured, no_saves, column or assumed
    run_h double,  -- hours of its attempts inside the window
    rate_per_h double,  -- hardware interruptions per hour, as of the first start
    rate_lo_per_h double,
    rate_hi_per_h double,
    job_level_rate_per_h double,  -- other interruptions per job-hour of jobs ended before it
    interruptions_observed integer,  -- cause_class among the fitted classes
    interruptions_unattributed integer,  -- cause_class ambiguous or unknown
    interruptions_other integer,  -- any other cause (application, maintenance, software...)
    interruptions_expected double,
    interruptions_expected_lo double,  -- Fay-Feuer gamma interval
    interruptions_expected_hi double,
    restart_per_interruption_s double,
    restart_source varchar,  -- job, fleet_before, fleet_all or default
    predicted_wall_s double,
    predicted_wall_lo_s double,  -- at the lower rate bound
    predicted_wall_hi_s double,  -- at the upper rate bound
    goodput_measured double,
    goodput_predicted double,
    goodput_predicted_lo double,
    goodput_predicted_hi double,
    primary key (run_id, job_id_raw)
);

create table if not exists backtest_buckets (
    run_id varchar not null,
    bucket varchar not null,  -- a GPU-size bucket or 'all'
    period varchar not null,  -- all, first half, second half
    n_jobs integer,
    n_estimated integer,
    gpu_hours double,
    interruptions_observed bigint,
    interruptions_unattributed bigint,
    interruptions_other bigint,
    interruptions_expected double,
    interruptions_expected_sd double,  -- of the expected count, from the as-of fits' failures
    oe_ratio double,
    oe_lo double,  -- exact Poisson (Garwood) bounds of observed / expected, expected as known
    oe_hi double,
    oe_fit_lo double,  -- bounds that also carry the as-of fits' error (conditional binomial)
    oe_fit_hi double,
    goodput_measured double,  -- GPU-hour weighted
    goodput_predicted double,
    goodput_predicted_lo double,
    goodput_predicted_hi double,
    primary key (run_id, bucket, period)
);
