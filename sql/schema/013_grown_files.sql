-- A whole file read while it is still being written: the plain bytes its key covers, so that a
-- later read of the same path whose content starts with them replaces this load (not adds to it).
alter table raw_ingest_files add column if not exists content_bytes bigint;
