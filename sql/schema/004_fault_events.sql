-- Fault-log records loaded through a column mapping (pipelines/ingest/sources/fault_log.py): one row per
-- unit life (record_kind = 'life'), fault interval ('fault': the unit was down from start_ts to
-- end_ts) or failure instant with no interval ('event': start_ts = end_ts). Timestamps are UTC.

create table if not exists raw_fault_events (
    source_file varchar not null,
    line_no integer not null,    -- line where the record starts; for a paired fault its start event
    end_line_no integer,         -- the paired end event of a fault, null otherwise
    dataset varchar not null,    -- the mapping's data set name
    unit_id varchar,
    unit_group varchar,          -- the unit's group (system of a multi-system trace), or null;
                                 -- added later: warehouse.ADDED_COLUMNS adds it to old tables
    record_kind varchar,         -- life, fault, event
    component_class varchar,     -- mapped from the source categories (classes: in the mapping)
    category_l1 varchar,         -- the source's own category text, coarsest first
    category_l2 varchar,
    category_l3 varchar,
    start_ts timestamptz,        -- life start / fault start; null for a life given by its length only
    end_ts timestamptz,          -- life end / fault end (repaired); null while open
    duration_s double,           -- seconds, when the file states a length
    failed boolean,              -- life ended in a failure; true for every fault and event
    cohort_json varchar,         -- JSON object of cohort values (batch, cage, location, ...)
    population integer,          -- units observed (in the unit's group), when the file lists only
                                 -- failing units
    window_start timestamptz,    -- observation window (of the unit's group) from the mapping
    window_end timestamptz
);
