-- Raw tables of the Kubernetes, PyTorch elastic, DCGM and Slurm node-event sources
-- (pipelines/ingest/sources/{k8s_events,k8s_pods,elastic,dcgm,node_events}.py). One row per parsed item:
-- an event, a container run, an agent log line, a GPU sample, a node event. Timestamps are UTC.

create table if not exists raw_k8s_events (
    source_file varchar not null,
    line_no integer not null,        -- line of the item's opening brace
    namespace varchar,
    event_name varchar,
    event_uid varchar,
    involved_kind varchar,           -- Node, Pod, JobSet, PyTorchJob, ...
    involved_namespace varchar,
    involved_name varchar,
    involved_uid varchar,
    field_path varchar,
    event_reason varchar,            -- NodeNotReady, Evicted, TaintManagerEviction, OOMKilling, ...
    message varchar,
    event_type varchar,              -- Normal, Warning
    count integer,
    first_ts timestamptz,
    last_ts timestamptz,
    event_time_ts timestamptz,       -- events.k8s.io micro-time
    created_ts timestamptz,
    source_component varchar,        -- node-controller, kubelet, default-scheduler, ...
    source_host varchar,
    node varchar                     -- the involved Node, else the reporting host
);

create table if not exists raw_k8s_pods (
    source_file varchar not null,
    line_no integer not null,        -- line of the pod's opening brace
    snapshot_ts timestamptz,         -- from the file name pods_<YYYYmmddTHHMMSSZ>.json
    namespace varchar,
    pod_name varchar,
    pod_uid varchar,
    node_name varchar,
    phase varchar,                   -- Pending, Running, Succeeded, Failed, Unknown
    pod_reason varchar,              -- Evicted, DeadlineExceeded, NodeLost, ...
    pod_message varchar,
    disruption_reason varchar,       -- DisruptionTarget condition: DeletionByTaintManager, ...
    created_ts timestamptz,
    deletion_ts timestamptz,
    pod_start_ts timestamptz,
    owner_kind varchar,
    owner_name varchar,
    job_kind varchar,                -- JobSet, PyTorchJob, ..., Job
    job_name varchar,
    replica_type varchar,
    replica_index integer,
    completion_index integer,
    restart_attempt integer,         -- jobset.sigs.k8s.io/restart-attempt
    container_name varchar,
    gpu_limit integer,               -- nvidia.com/gpu limit of the container
    restart_count integer,
    run varchar,                     -- current (state) or last (lastState.terminated)
    container_state varchar,         -- running, terminated, waiting
    started_ts timestamptz,
    finished_ts timestamptz,
    exit_code integer,
    signal integer,
    termination_reason varchar,      -- Completed, Error, OOMKilled, ContainerStatusUnknown, ...
    termination_message varchar,
    waiting_reason varchar
);

create table if not exists raw_elastic_events (
    source_file varchar not null,
    line_no integer not null,
    run_id varchar,                  -- rendezvous id
    host varchar,
    ts timestamptz,
    level varchar,
    logger varchar,
    event varchar,                   -- workers_started, worker_failed, group_restart, ...
    role varchar,
    round integer,                   -- attempt round the agent was in (joined round, else restart count)
    group_rank integer,
    n_nodes integer,                 -- world size of the rendezvous (agents)
    world_size integer,              -- workers (global_world_sizes)
    local_rank integer,
    exit_code integer,               -- as printed: negative for a signal
    pid bigint,
    restarts_left integer,
    max_restarts integer,
    signal_name varchar,
    message varchar,
    log_format varchar               -- torch_bracket, glog, elastic_v1
);

create table if not exists raw_dcgm_samples (
    source_file varchar not null,
    line_no integer not null,        -- first line of the GPU's sample
    host varchar,
    ts timestamptz,
    gpu_index integer,
    uuid varchar,
    pci_bus_id varchar,
    model_name varchar,
    gpu_temp_c double,
    memory_temp_c double,
    power_w double,
    energy_mj double,                -- counter, millijoules since boot
    gpu_util_pct double,
    ecc_sbe_volatile double,         -- counters: cumulative, reset by a driver reload or reboot
    ecc_dbe_volatile double,
    ecc_sbe_aggregate double,
    ecc_dbe_aggregate double,
    retired_sbe double,
    retired_dbe double,
    retired_pending double,          -- gauge
    remapped_rows_correctable double,
    remapped_rows_uncorrectable double,
    row_remap_failure double,        -- gauge (0/1)
    nvlink_crc_flit_errors double,
    nvlink_crc_data_errors double,
    pcie_replays double,
    xid_last double,                 -- gauge: the last Xid seen; never a failure count
    source_format varchar,           -- prometheus, dmon
    -- added later (schema.ADDED_COLUMNS)
    sm_clock_mhz double,             -- DCGM_FI_DEV_SM_CLOCK (field 100, dmon SMCLK)
    clock_event_reasons bigint       -- DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / _CLOCKS_EVENT_REASONS
                                     -- (field 112, dmon DVCCTR): bitmask 0x1 idle, 0x2 clocks
                                     -- setting, 0x4 SW power cap, 0x8 HW slowdown, 0x10 sync
                                     -- boost, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power
                                     -- brake, 0x100 display
);

create table if not exists raw_node_events (
    source_file varchar not null,
    line_no integer not null,
    cluster varchar,
    node_name varchar,               -- as printed
    nodes varchar[],                 -- expanded
    start_ts timestamptz,
    end_ts timestamptz,              -- null while the event is open
    state varchar,                   -- as printed: DOWN*, IDLE+DRAIN, ...
    state_base varchar,              -- down, fail, drain, maint, ...
    event_reason varchar,
    user_name varchar
);
