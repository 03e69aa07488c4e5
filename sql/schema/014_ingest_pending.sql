-- Ingests under way (pipelines.warehouse.pending): a row is committed with an ingest's first batch
-- and deleted in the transaction that rebuilds the views after its last. A row left
-- behind is an ingest that stopped half-way (killed, disk full): its files are whole, but the
-- views and their snapshots may not show them; commands say so until `relia ingest` reruns.

create table if not exists ingest_pending (
    started_at timestamptz not null,
    pid integer not null
);
