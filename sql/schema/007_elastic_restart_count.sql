-- raw_elastic_events gained restart_count (the agent's restart count from its latest
-- "Rendezvous complete" result block): warehouses created before it get the column here.
alter table raw_elastic_events add column if not exists restart_count integer;
