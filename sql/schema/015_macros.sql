-- Scalar macros the views share (DuckDB expands a macro where a view names it, at bind time).
--
-- A cumulative counter (DCGM energy, ECC, retired pages, remapped rows, NVLink CRC, PCIe
-- replays) that reads lower than its previous value was reset (driver reload, GPU reset,
-- reboot): it restarted from zero, so its increase is its new value, never negative.
-- counter_delta is null when either value is null; counter_reset is false then.

create or replace macro counter_delta(current_value, previous_value) as
case
    when current_value < previous_value then current_value
    else current_value - previous_value
end;

create or replace macro counter_reset(current_value, previous_value) as
coalesce(current_value < previous_value, false);
