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
    method varchar,  -- chi_square (exact exponential), mle_delta (MLE, delta-method bounds), weibayes_lr
    shape_lo double,  -- 1 - alpha bounds of the shape (delta method on log shape)
    shape_hi double,
    aic_weight double,  -- Akaike weight of the family within its class x cohort
    max_age_h double,  -- oldest age observed in the group
    rmst_h double,  -- the family's mean restricted to max_age_h
    extrapolated boolean,  -- more than half of the family's mean lies beyond max_age_h
    mtbf_sampled_h double,  -- median, bounds and share at infinity of the family's mean drawn from its parameters' normal law
    mtbf_sampled_lo_h double,
    mtbf_sampled_hi_h double,
    mtbf_sampled_inf_share double,
    unit_years double,  -- exposure_h / 8766
    afr_observed_pct double,  -- 100 x failures / unit_years, exact Poisson bounds
    afr_observed_lo_pct double,
    afr_observed_hi_pct double,
    mtbf_observed_h double,  -- exposure_h / failures, chi-square bounds
    mtbf_observed_lo_h double,
    mtbf_observed_hi_h double,
    headline_method varchar,  -- observed_rate or chi_square_bound (model_average, weibayes_lr, chi_square in older runs)
    headline_mtbf_h double,  -- the class x cohort's headline MTBF and bounds (same on every row): exposure / failures, exact chi-square interval
    headline_mtbf_lo_h double,
    headline_mtbf_hi_h double,
    headline_rmst_h double,  -- NaN since the headline is the observed rate; see lifetime_rmst_h
    headline_extrapolated boolean,  -- false: the headline rests on the ages observed only
    lifetime_method varchar,  -- model_average, weibayes_lr or chi_square: the lifetime mean shown beside the headline
    lifetime_mtbf_h double,
    lifetime_mtbf_lo_h double,
    lifetime_mtbf_hi_h double,
    lifetime_rmst_h double,
    lifetime_extrapolated boolean,  -- more than half of the lifetime mean lies beyond max_age_h
    primary key (run_id, component_class, cohort, family)
);

create table if not exists projections (
    run_id varchar not null,
    created_at timestamptz not null,
    fit_run_id varchar,
    scenario_json varchar not null,
    result_json varchar not null
);
