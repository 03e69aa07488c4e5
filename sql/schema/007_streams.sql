-- Streams: files that grow, get rotated and get compressed, read exactly once (pipelines/ingest/streams.py).
-- A stream is one log's life across renames and compression, found again by the fingerprint of
-- its head; the warehouse records how far its rows go in the same transaction as the rows.

create table if not exists raw_streams (
    stream_id varchar primary key,     -- also file_sha256 of its raw_ingest_files, quarantine and quality rows
    source varchar not null,
    target_table varchar not null,
    rows_path varchar not null,        -- the source_file its rows carry: the file that holds it now
    head_len integer not null,         -- bytes fingerprinted (up to 1024; fewer while shorter)
    head_sha varchar not null,         -- sha256 of those first bytes (of the plain, decompressed content)
    consumed_bytes bigint not null,    -- plain bytes whose lines are loaded or quarantined
    consumed_lines bigint not null,    -- lines in those bytes: the next line is consumed_lines + 1
    prefix_sha varchar not null,       -- sha256 of the consumed bytes, chained read by read (audit)
    tail_sha varchar not null,         -- sha256 of the last 1024 consumed bytes (a rewrite is told by it)
    held_bytes bigint not null,        -- a last line without its newline, held back
    file_size bigint not null,         -- stat of the file at the last read (compressed size if so)
    file_mtime_ns bigint not null,
    updated_at timestamptz not null
);

create table if not exists raw_stream_reads (
    read_key varchar primary key,      -- sha256 of stream id and start byte; names lake parts
    stream_id varchar not null,
    path varchar not null,
    action varchar not null,           -- new, append, replace (rewritten: earlier rows replaced)
    codec varchar,                     -- gzip, bzip2, xz, zstd; null for a plain file
    from_byte bigint not null,
    to_byte bigint not null,
    first_line bigint not null,        -- line numbers of this read: first_line .. first_line + n - 1
    n_read bigint not null,            -- = n_loaded + n_quarantined (+ n_held lines not yet read)
    n_loaded bigint not null,
    n_quarantined bigint not null,
    n_held bigint not null,            -- 1 when a last line without its newline was held back
    n_ignored bigint not null,
    released boolean not null,         -- a held last line was read as a line (file finished or quiet)
    superseded boolean not null,       -- its rows were replaced by a later read from byte 0
    read_at timestamptz not null
);

alter table raw_ingest_files add column if not exists n_held bigint default 0;
-- stat of a whole file when it was read: the same path, size and mtime is not read again
alter table raw_ingest_files add column if not exists file_size bigint;
alter table raw_ingest_files add column if not exists file_mtime_ns bigint;
