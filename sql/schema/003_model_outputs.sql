-- Outputs of the models, keyed by run id, with the data window and library versions.

create table if not exists fit_runs (
    run_id varchar primary key,
    created_at timestamptz not null,
    window_start timestamptz,
    window_end timestamptz,
    by_columns varchar,           -- comma-separated cohort columns the fits were split by
    versions varchar              -- JSON: relia, lifelines, numpy versions
);

create table if not exists fit_results (
    run_id varchar not null,
    component_class varchar not null,
    cohort varchar not null,      -- 'all' or col=value[,col=value] for cohort splits
    unit_level varchar,           -- gpu or node
    family varchar not null,      -- exponential, weibull, lognormal, loglogistic
    n_units bigint,
    n_failures bigint,
    exposure_h double,
    params_json varchar,
    shape double,
    log_likelihood double,
    aic double,
    mtbf_h double,
    mtbf_lo_h double,
    mtbf_hi_h double,
    afr_pct double,
    fit_per_1e9h double,
    b10_h double,
    chosen boolean,
    primary key (run_id, component_class, cohort, family)
);

create table if not exists projections (
    run_id varchar not null,
    created_at timestamptz not null,
    fit_run_id varchar,
    scenario_json varchar not null,
    result_json varchar not null
);
