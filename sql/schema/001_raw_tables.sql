-- Raw tables: one row per parsed input line, exactly as the source tool printed it (typed).
-- Every table carries source_file and line_no (1-based) for lineage. Timestamps are UTC.

create table if not exists raw_slurm_jobs (
    source_file varchar not null,
    line_no integer not null,
    job_id varchar,              -- as printed: 123, 123_4, 123.batch, 123+0
    job_id_raw varchar,          -- allocation id without step
    step varchar,                -- null for the allocation row
    job_name varchar,
    partition varchar,
    account varchar,
    user_name varchar,
    alloc_nodes integer,
    alloc_tres varchar,
    n_gpus integer,              -- gres/gpu=N from AllocTRES
    node_list varchar,           -- compressed hostlist
    nodes varchar[],             -- expanded hostlist
    submit_ts timestamptz,
    start_ts timestamptz,
    end_ts timestamptz,
    elapsed_s bigint,            -- seconds
    state varchar,               -- base word: CANCELLED by 123 -> CANCELLED
    state_by_uid integer,
    exit_code integer,
    exit_signal integer,
    restarts integer,
    cluster varchar              -- Cluster column of a multi-cluster dump (sacct -M), else null
);

create table if not exists raw_xid_events (
    source_file varchar not null,
    line_no integer not null,
    host varchar,
    ts timestamptz,
    pci_bus_id varchar,          -- domain:bus:device, lower case (0000:3b:00)
    xid integer,
    pid integer,
    process_name varchar,
    message varchar,
    log_format varchar           -- dmesg_t, journal_iso, syslog, rfc3339, dmesg_iso
);

create table if not exists raw_inventory (
    source_file varchar not null,
    line_no integer not null,
    host varchar,
    snapshot_ts timestamptz,
    gpu_index integer,
    pci_bus_id varchar,
    serial varchar,
    uuid varchar,
    gpu_name varchar
);

create table if not exists raw_fleet (
    source_file varchar not null,
    line_no integer not null,
    node varchar,
    rack varchar,
    cluster varchar,
    batch varchar,
    installed_ts timestamptz,
    removed_ts timestamptz
);

create table if not exists raw_repairs (
    source_file varchar not null,
    line_no integer not null,
    ticket_id varchar,
    node varchar,
    component_class varchar,
    slot varchar,                -- gpu0..gpu7 for GPU-level classes, the class name for node-level ones
    serial_out varchar,
    serial_in varchar,
    opened_ts timestamptz,
    closed_ts timestamptz,
    action varchar,              -- replace, planned_replace, reseat, no_fault_found
    description varchar
);
