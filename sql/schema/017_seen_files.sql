-- Whole files whose content was loaded before from another path, or from this path before its
-- mtime changed (a landing moved or mounted elsewhere, a file copied or touched): their path,
-- size and mtime, and the key of the load that holds their rows. An ingest that meets the same
-- path, size and mtime again does not read and hash the file again (pipelines.warehouse.load:
-- loaded_unchanged); a key no longer in raw_ingest_files means nothing, and the file is read.
create table if not exists ingest_seen_files (
    path varchar not null,
    source varchar not null,
    file_size bigint not null,
    file_mtime_ns bigint not null,
    file_sha256 varchar not null
);
