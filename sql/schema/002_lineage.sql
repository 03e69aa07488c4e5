-- Lineage, quarantine and view parameters.

create table if not exists raw_ingest_files (
    file_sha256 varchar primary key,   -- content hash: the same bytes are never loaded twice
    path varchar not null,
    source varchar not null,
    target_table varchar not null,
    n_read bigint not null,            -- rows in scope = n_loaded + n_quarantined
    n_loaded bigint not null,
    n_quarantined bigint not null,
    n_ignored bigint not null,         -- lines out of scope (kernel noise, headers, blank lines)
    loaded_at timestamptz not null
);

create table if not exists raw_quarantine (
    file_sha256 varchar not null,
    source_file varchar not null,
    line_no integer not null,          -- 0 for a file-level reject (empty file)
    target_table varchar not null,
    raw varchar,
    reason varchar not null,
    stage varchar not null,            -- parse (the parser rejected it), validate (an expectation failed) or fence (the landing fence refused the file, never opened)
    loaded_at timestamptz not null
);

create table if not exists raw_quality_results (
    file_sha256 varchar not null,
    target_table varchar not null,
    expectation varchar not null,
    success boolean not null,
    n_unexpected bigint not null,
    validated_at timestamptz not null
);

-- Tunable parameters read by the views (seconds unless the name says otherwise).
create table if not exists cfg_params (
    name varchar primary key,
    value double not null,
    description varchar
);

insert into cfg_params values
    ('incident_gap_s', 600, 'Xid lines on one GPU closer than this belong to one incident'),
    ('attribution_before_s', 600, 'an incident up to this long before a job ended can explain it'),
    ('attribution_after_s', 300, 'an incident up to this long after a job ended can explain it'),
    ('failure_merge_s', 900, 'failure signals of a node this close to each other are one failure'),
    ('ticket_match_s', 172800, 'a replace ticket joins a failure that began up to this long before')
on conflict do nothing;
