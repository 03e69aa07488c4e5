-- A quarantine reason is a kind ("malformed JobID '…'"); the value it refused is kept apart, so
-- one rule broken on many lines is one reason (pipelines.ingest.sources.reasons). Null when the
-- reason names no value, and in rows quarantined before this column was added (their reason
-- still holds the value).
alter table raw_quarantine add column if not exists reason_value varchar;
