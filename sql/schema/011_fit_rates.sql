-- Interruption rates of a fit run, one row per component class and cohort (models.failure_rates):
-- the failure process counted, not modelled. The headline of a class lives here once; the report,
-- the CLI, the artifacts and projections read it from here (through rpt_class_rates).

create table if not exists fit_rates (
    run_id varchar not null,
    component_class varchar not null,
    cohort varchar not null,                  -- 'all' or col=value[,col=value] for cohort splits
    unit_level varchar,                       -- gpu or node (classes of level none count at node level)
    n_units bigint,                           -- distinct (node, slot) units
    n_lives bigint,
    n_nodes bigint,
    n_failures bigint,
    exposure_h double,                        -- unit-hours in service (down time is in no life)
    gpus_per_node double,
    node_days double,
    gpu_hours double,
    rate_per_h double,                        -- failures per unit-hour, exact Poisson bounds
    rate_lo_per_h double,
    rate_hi_per_h double,
    rate_per_1000_node_days double,
    rate_lo_per_1000_node_days double,
    rate_hi_per_1000_node_days double,
    rate_per_1e6_gpu_h double,
    rate_lo_per_1e6_gpu_h double,
    rate_hi_per_1e6_gpu_h double,
    mtbf_observed_h double,                   -- exposure_h / failures, chi-square bounds
    mtbf_observed_lo_h double,
    mtbf_observed_hi_h double,
    headline_method varchar,                  -- observed_rate, or chi_square_bound with no failure
    headline_mtbf_h double,                   -- the class's headline MTBF per unit and bounds, hours
    headline_mtbf_lo_h double,
    headline_mtbf_hi_h double,                -- null with no failure (one-sided bound; no point)
    headline_extrapolated boolean,            -- false: the rate rests on the ages observed
    laplace_u double,                         -- recurrence view on the calendar (null: no trend test)
    laplace_p double,
    mil_hdbk_189_chi2 double,
    mil_hdbk_189_dof bigint,
    mil_hdbk_189_p double,
    crow_amsaa_beta double,
    crow_amsaa_beta_lo double,
    crow_amsaa_beta_hi double,
    trend_verdict varchar,                    -- homogeneous, improving or degrading
    primary key (run_id, component_class, cohort)
);
