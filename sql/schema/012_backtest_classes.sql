-- The projection back-test per component class (docs/goodput.md §5), written with its run by
-- pipelines.analysis.backtest.run_backtest (models.backtest_class_summary) and read through
-- rpt_projection_backtest_classes (the latest run). One row per run, class of the failure process
-- and GPU-size bucket (or 'all'), over the whole window: the interruptions attributed to the class
-- against those its as-of rate predicted, with O/E and its exact Poisson interval.

create table if not exists backtest_classes (
    run_id varchar not null,
    component_class varchar not null,
    unit_level varchar,  -- gpu or node: the job's GPUs or nodes are its units at risk
    bucket varchar not null,  -- a GPU-size bucket or 'all'
    n_jobs integer,
    interruptions_observed bigint,  -- cause_class = component_class
    interruptions_expected double,
    interruptions_expected_sd double,  -- of the expected count, from the as-of fits' failures
    oe_ratio double,
    oe_lo double,  -- exact Poisson (Garwood) bounds of observed / expected, expected as known
    oe_hi double,
    oe_fit_lo double,  -- bounds that also carry the as-of fits' error (conditional binomial)
    oe_fit_hi double,
    primary key (run_id, component_class, bucket)
);
