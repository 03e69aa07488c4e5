-- Failure prediction (pipelines/analysis/predict.py): trained models with their data windows and test
-- metrics, and the scores they gave. Probabilities are of a failure of the GPU or its node within
-- horizon_h hours of prediction_ts.

create table if not exists predict_models (
    model_id varchar primary key,
    trained_at timestamptz not null,
    horizon_h double not null,            -- label horizon, hours
    train_start timestamptz not null,     -- periods by prediction time, ends exclusive
    train_end timestamptz not null,
    calibration_start timestamptz not null,
    calibration_end timestamptz not null,
    test_start timestamptz not null,
    test_end timestamptz not null,
    threshold double,                     -- operating threshold on the calibrated probability
    metrics varchar not null,             -- JSON: model and baselines on the test period, sizes
    curve varchar,                        -- JSON: operating curve on the test period (rows)
    versions varchar,                     -- JSON: relia, scikit-learn, numpy versions
    model blob not null                   -- pickled models.predict.FailurePredictor
);

create table if not exists predict_scores (
    model_id varchar not null,
    scored_at timestamptz not null,       -- when the scoring ran
    prediction_ts timestamptz not null,   -- features use data strictly before this time
    host varchar not null,
    gpu_index integer not null,
    uuid varchar,
    prob double not null,                 -- calibrated probability of a failure within horizon_h
    at_risk boolean not null,             -- prob >= the model's threshold
    evidence varchar,                     -- JSON: warning features above the training p99
    primary key (model_id, prediction_ts, host, gpu_index)
);
