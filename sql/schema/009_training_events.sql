-- Raw training-log events (pipelines/ingest/sources/training.py, docs/goodput.md §1): one row per step or
-- checkpoint line of a job's training log (landing/training/, e.g. Slurm's slurm-%j.out), as
-- parsed. Timestamps are UTC. A log is read as a stream: a grown log adds its new lines only.

create table if not exists raw_training_events (
    source_file varchar not null,
    line_no integer not null,        -- line of the event in the log (a stream's lines continue)
    job_id varchar,                  -- --job / a path pattern's {job} / slurm-<id>.out; else null
    host varchar,                    -- --host / a path pattern's {host}; else null
    event varchar not null,          -- step, checkpoint_save_start, checkpoint_save_end,
                                     -- checkpoint_load_start, checkpoint_load_end, train_start;
                                     -- runs: launch, train_end, job_banner, job_cancelled,
                                     -- task_exit
    framework varchar not null,      -- megatron, torchtitan, hf_trainer; slurm (its own lines)
    step bigint,                     -- iteration / step; a checkpoint's, or its start's; null when
                                     -- not printed (HF Trainer 4.x log dicts)
    ts timestamptz,                  -- printed, or inferred (ts_inferred); null when neither
    ts_inferred boolean not null,    -- carried from the nearest earlier printed time (Megatron's
                                     -- save lines) or a save start + its timer's duration
    step_time_s double,              -- Megatron's elapsed time per iteration, in seconds
    duration_s double,               -- a save / load end's duration in seconds (Megatron timer
                                     -- max across ranks, torchtitan "in X seconds")
    loss double,                     -- lm loss / loss as printed (may be NaN)
    checkpoint_path varchar,         -- checkpoint lines: the folder they name
    job_named varchar,               -- the job id a Slurm line names (SLURM_JOB_ID=, *** JOB n)
    detail varchar                   -- what a cancel / task exit line says (DUE TO TIME LIMIT)
);
