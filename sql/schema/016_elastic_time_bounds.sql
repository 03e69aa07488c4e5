-- torchrun lines: the worker group's state a line names, and the bounds of a line's time.
-- ts_lo <= the line's time <= ts_hi: both equal ts where the line has a time; for a line that
-- prints none (Python's default format of torch 1.x) the nearest clock marks before and after it
-- in the file (either may be null: no mark on that side); all three null: unknown.
-- ts_source: where ts came from (line, continuation, child_failed_error), null without ts.
alter table raw_elastic_events add column if not exists group_state varchar;
alter table raw_elastic_events add column if not exists ts_lo timestamptz;
alter table raw_elastic_events add column if not exists ts_hi timestamptz;
alter table raw_elastic_events add column if not exists ts_source varchar;
