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
                                     -- task_exit; straggler (a per-rank figure of a report)
    framework varchar not null,      -- megatron, torchtitan, hf_trainer; slurm (its own lines);
                                     -- nvrx (the NVIDIA resiliency extension's reports)
    step bigint,                     -- iteration / step; a checkpoint's, or its start's; null when
                                     -- not printed (HF Trainer 4.x log dicts)
    ts timestamptz,                  -- printed, or inferred (ts_inferred); null when neither
    ts_inferred boolean not null,    -- carried from the nearest earlier printed time (Megatron's
                                     -- save lines) or a save start + its timer's duration
    step_time_s double,              -- Megatron's elapsed time per iteration, in seconds
                                     -- (printed in ms, or in s by Megatron-DeepSpeed)
    duration_s double,               -- a save / load end's duration in seconds (Megatron timer
                                     -- max across ranks, torchtitan "in X seconds")
    loss double,                     -- lm loss / loss as printed (may be NaN)
    checkpoint_path varchar,         -- checkpoint lines: the folder they name
    job_named varchar,               -- the job id a Slurm line names (SLURM_JOB_ID=, *** JOB n)
    detail varchar,                  -- what a cancel / task exit line says (DUE TO TIME LIMIT);
                                     -- a straggler warning's text
    -- added later (schema.ADDED_COLUMNS)
    global_batch bigint,             -- Megatron's "global batch size: N" (iteration lines)
    rank integer,                    -- the rank a line is about: torchtitan's [rankN]: tag, a
                                     -- straggler row's rank
    metric varchar,                  -- straggler rows: rtt_min_ms ... etpt_max_tf (Megatron
                                     -- StragglerDetector min/max), etpt_bottom_tf / etpt_top_tf,
                                     -- nvrx_relative / nvrx_individual / nvrx_warning
    value double                     -- the figure (pwr_*_w in W: Megatron prints milliwatts);
                                     -- an NVRx score 0-1; null for nvrx_warning
);
-- A straggler report line may give several rows (one per figure or rank): a row is keyed by
-- source_file, line_no, metric and rank, and a read counts the line once.
