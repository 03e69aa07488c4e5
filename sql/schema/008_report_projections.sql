-- The weekly report's goodput projection, written by the project stage before a report
-- (pipelines.report.inputs.refresh_inputs) and read by the report (pipelines.report.data).

create table if not exists report_projections (
    run_id varchar primary key,
    created_at timestamptz not null,
    fit_run_id varchar not null,  -- the lifetime fit run the failure rates come from
    target_gpus varchar not null,  -- comma-separated target scales, in report order
    inputs_json varchar not null,  -- JSON: as_of, window and row counts of the marts it read
    scenario_json varchar not null,  -- JSON: the scenario and knob baselines the report shows
    result_json varchar not null  -- JSON: headline rows, curve/targets/knobs (Arrow IPC, base64), notes
);
