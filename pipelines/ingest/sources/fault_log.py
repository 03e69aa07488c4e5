"""Generic fault-log ingest: a CSV or JSON of unit lives or fault intervals, via a column mapping.

A YAML mapping (``load_mapping``) says which columns hold the unit id, the times (absolute
timestamps with a format and zone, or numbers with a unit counted from an origin), the failed flag
or the fault start/end events, the category columns and how their values map onto our component
classes, the cohort columns, and, for files that list only failing units, the population and the
observation window. ``parse`` turns one file into rows of ``raw_fault_events``:

- ``kind: lives`` gives one ``life`` row per unit life or segment (start and end timestamps, or a
  length), failed or censored; with ``point_events: true`` a failure listed on its own line with
  no start (a second event at one removal, or an event inside a segment) becomes an ``event`` row.
- ``kind: events`` gives one ``fault`` row per fault interval: either start and end columns on one
  record, or start and end event records paired per (unit, categories) in time order. A record
  with only a start column is a failure instant (``event``, no repair time known).

For traces of many systems (LANL / CFDR style, ``data_samples/mappings/lanl_failures.yaml``):

- ``groups: {column, population, window, values}`` makes each value of ``column`` (a system;
  it must also be a ``unit`` column) a group with its own population (``values[g].population``,
  else the ``population`` column) and window (``values[g].window``, else the span of the
  service-date columns ``window: {start, end, format, open}``, else the top-level window); rows
  carry them, and ``int_fault_lives`` counts each group's never-failing units as censored lives
  over the group's window (a group with no record in the file is not counted).
- ``blame: {column: class, ...}`` (or ``{columns: {...}, empty: ["0"]}`` for 0/1 flags) reads
  one-hot cause columns: the filled one names the class (a record with several filled is a
  reject); its name and text become categories l1 and l2. ``classes`` rules, checked first,
  can refine it from the text.
- ``categories`` may list any number of columns: l1 and l2 take the first two, l3 the rest
  joined with `` / ``.
- ``time.earliest`` lowers the 2000-01-01 bound for an older trace (see below).

Every record in scope is a row or a reject with a reason (bad timestamp, a time before
``time.earliest`` or more than a day after the ingest, missing unit, end before start, end event
with no open start, ...). A paired end event is carried by its start's row
(``end_line_no``) and counted with the headers and blank lines in ``n_ignored``, so
``rows.height + rejects.height + n_ignored`` is every line (CSV) or record (JSON) of the file.

Example mapping (InfiniteHBD's fault trace)::

    dataset: infinitehbd
    kind: events
    unit: node_id
    time: {unit: days, origin: 2024-03-30T00:00:00Z}
    events: {type: event_type, time: event_time, start: [fault_start], end: [fault_end]}
    categories: [fault_type.Level, fault_type.Class, fault_type.Desc]
    classes: {column: fault_type.Class, map: {GPU: gpu, NIC: nic}, default: unknown}
    population: 400
    window: {start: 0, end: 349}

The mapping's types live in ``fault_log_spec``, their validation in ``fault_log_mapping`` and
the reading of CSV and JSON records in ``fault_log_records``; this module types the records,
builds the rows and re-exports the public names (``from pipelines.ingest.sources.fault_log
import``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.ingest.sources.common import (
    COMPONENT_CLASSES,
    UTC_TS,
    Parsed,
    empty_file_reject,
    in_future,
    utc_now,
)
from pipelines.ingest.sources.fault_log_mapping import MappingError, load_mapping, mapping_from_dict
from pipelines.ingest.sources.fault_log_records import LINE, PRE, RAW, read_records
from pipelines.ingest.sources.fault_log_spec import (
    TIME_UNITS_S,
    ClassRule,
    EventSpec,
    FaultLogMapping,
    GroupSpec,
    TimeSpec,
    regex_names,
    time_expr,
    time_hint,
    time_of,
)

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "COMPONENT_CLASSES",
    "SCHEMA",
    "TIME_UNITS_S",
    "ClassRule",
    "EventSpec",
    "FaultLogMapping",
    "GroupSpec",
    "MappingError",
    "Parsed",
    "TimeSpec",
    "load_mapping",
    "mapping_from_dict",
    "parse",
]

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "end_line_no": pl.Int64(),
    "dataset": pl.String(),
    "unit_id": pl.String(),
    "unit_group": pl.String(),
    "record_kind": pl.String(),
    "component_class": pl.String(),
    "category_l1": pl.String(),
    "category_l2": pl.String(),
    "category_l3": pl.String(),
    "start_ts": UTC_TS,
    "end_ts": UTC_TS,
    "duration_s": pl.Float64(),
    "failed": pl.Boolean(),
    "cohort_json": pl.String(),
    "population": pl.Int64(),
    "window_start": UTC_TS,
    "window_end": UTC_TS,
}
"""Columns of ``raw_fault_events`` (``sql/schema/004_fault_events.sql``)."""

_RECORD_COLUMNS = [
    "__line_no",
    "end_line_no",
    "unit_id",
    "unit_group",
    "record_kind",
    "component_class",
    "category_l1",
    "category_l2",
    "category_l3",
    "start_ts",
    "end_ts",
    "duration_s",
    "failed",
    "cohort_json",
    "population",
    "window_start",
    "window_end",
    "__reason",
    "__raw",
]


# --------------------------------------------------------------------------------------------
# Typing the records


def _blamed(m: FaultLogMapping) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """Return the class, the column name, its text and a reject reason from one-hot causes.

    They come from the one-hot cause columns; the reject reason is for when more than one is filled.
    """
    null = pl.lit(None, dtype=pl.String)
    if not m.blame:
        return null, null, null, null
    empty = pl.Series(m.blame_empty, dtype=pl.String).implode()
    filled = [pl.col(column).is_not_null() & ~pl.col(column).is_in(empty) for column, _ in m.blame]
    first: Any = pl
    for (column, target), is_filled in zip(m.blame, filled, strict=True):
        first = first.when(is_filled).then(
            pl.struct(
                pl.lit(target).alias("cls"),
                pl.lit(column).alias("name"),
                pl.col(column).alias("text"),
            )
        )
    chosen = first.otherwise(
        pl.lit(None, dtype=pl.Struct({"cls": pl.String, "name": pl.String, "text": pl.String}))
    )
    names = pl.concat_str(
        [pl.when(f).then(pl.lit(column)) for (column, _), f in zip(m.blame, filled, strict=True)],
        separator=", ",
        ignore_nulls=True,
    )
    several = pl.sum_horizontal([f.cast(pl.Int32) for f in filled]) > 1
    reason = pl.when(several).then(
        pl.format("several blame columns are filled ({}); a record must name one cause", names)
    )
    return (
        chosen.struct.field("cls"),
        chosen.struct.field("name"),
        chosen.struct.field("text"),
        reason,
    )


def _with_groups(frame: pl.DataFrame, m: FaultLogMapping) -> tuple[pl.DataFrame, pl.Expr]:
    """Add ``unit_group``, ``population``, ``window_start``, ``window_end`` per record.

    Also add the reason to reject a record whose group, population or window is unusable.
    """
    population = pl.lit(m.population, dtype=pl.Int64)
    start = pl.lit(m.window_start, dtype=UTC_TS)
    end = pl.lit(m.window_end, dtype=UTC_TS)
    if m.groups is None:
        frame = frame.with_columns(
            pl.lit(None, dtype=pl.String).alias("unit_group"),
            population.alias("population"),
            start.alias("window_start"),
            end.alias("window_end"),
        )
        return frame, pl.lit(None, dtype=pl.String)
    g = m.groups
    group = pl.col(g.column)
    table = g.table()

    def per_group(column: str, dtype: pl.DataType) -> pl.Expr:
        known = table.filter(pl.col(column).is_not_null())
        return group.replace_strict(
            known["__group"], known[column], default=None, return_dtype=dtype
        )

    column_population = (
        pl.col(g.population_column).cast(pl.Int64, strict=False)
        if g.population_column
        else pl.lit(None, dtype=pl.Int64)
    )
    service = _service_times(g)
    frame = frame.with_columns(
        group.alias("unit_group"),
        pl.coalesce(per_group("__g_population", pl.Int64()), column_population, population).alias(
            "population"
        ),
        pl.coalesce(per_group("__g_start", UTC_TS), service["start"], start).alias("window_start"),
        pl.coalesce(per_group("__g_end", UTC_TS), service["end"], end).alias("window_end"),
        service["start"].alias("__service_start"),
        service["end"].alias("__service_end"),
    )
    return frame, _group_reason(g, column_population)


def _service_times(g: GroupSpec) -> dict[str, pl.Expr]:
    """Return each record's service start and end (null when still open or not mapped)."""
    null_ts = pl.lit(None, dtype=UTC_TS)
    service: dict[str, pl.Expr] = {}
    for what, column in (("start", g.start_column), ("end", g.end_column)):
        if column is None or g.window_time is None:
            service[what] = null_ts
            continue
        text = pl.col(column)
        if what == "end" and g.open_values:
            still_open = text.is_in(pl.Series(g.open_values, dtype=pl.String).implode())
            text = pl.when(~still_open).then(text)
        service[what] = time_of(text, g.window_time)
    return service


def _group_reason(g: GroupSpec, column_population: pl.Expr) -> pl.Expr:
    """Return the reason to reject a record whose group, population or window is unusable."""
    group = pl.col(g.column)
    reason: Any = pl.when(group.is_null()).then(pl.lit(f"missing group (column {g.column})"))
    for what, column in (("start", g.start_column), ("end", g.end_column)):
        if column is None or g.window_time is None:
            continue
        text = pl.col(column)
        unparsed = text.is_not_null() & pl.col(f"__service_{what}").is_null()
        if what == "end" and g.open_values:
            unparsed = unparsed & ~text.is_in(pl.Series(g.open_values, dtype=pl.String).implode())
        reason = reason.when(unparsed).then(
            pl.format(
                f"bad service {what} '{{}}' in column {column} (expected "
                f"{time_hint(g.window_time)}"
                + (f" or one of {list(g.open_values)}" if what == "end" and g.open_values else "")
                + ")",
                text,
            )
        )
    if g.population_column:
        raw = pl.col(g.population_column)
        reason = reason.when(raw.is_not_null() & ~(column_population >= 1).fill_null(False)).then(
            pl.format(
                f"bad population '{{}}' in column {g.population_column} (expected a positive "
                "whole number of units)",
                raw,
            )
        )
    reason = reason.when(
        pl.col("population").is_not_null()
        & (pl.col("window_start").is_null() | pl.col("window_end").is_null())
    ).then(
        pl.format(
            "group '{}' has a population but no window; give it one under "
            "groups.values, groups.window or a top-level window (start and end)",
            group,
        )
    )
    first: pl.Expr = reason.otherwise(pl.lit(None, dtype=pl.String))
    return first


def _typed(records: pl.DataFrame, mapping: FaultLogMapping, *, now: datetime) -> pl.DataFrame:
    """Per record: unit, times, categories, class, cohorts, flags and the first reason to reject."""
    m = mapping
    unit = (
        pl.col(m.unit[0])
        if len(m.unit) == 1
        else pl.concat_str([pl.col(c) for c in m.unit], separator="/")
    )
    blame_class, blame_name, blame_text, blame_reason = _blamed(m)
    cats = _category_levels(m, blame_name, blame_text)
    classes = [
        pl.col(rule.column).replace_strict(rule.as_dict(), default=None, return_dtype=pl.String)
        for rule in m.class_rules
    ]
    component = pl.coalesce([*classes, blame_class, pl.lit(m.default_class)])
    cohort_cols = [pl.col(column).alias(name) for name, column in m.cohorts]
    frame = records.with_columns(
        unit.alias("unit_id"),
        *(c.alias(f"category_l{i + 1}") for i, c in enumerate(cats)),
        component.alias("component_class"),
    )
    frame, group_reason = _with_groups(frame, m)
    if m.cohort_pattern is not None:
        column, regex = m.cohort_pattern
        frame = frame.with_columns(pl.col(column).str.extract_groups(regex).alias("__groups"))
        cohort_cols += [pl.col("__groups").struct.field(g).alias(g) for g in regex_names(regex)]
    if cohort_cols:
        cohort = pl.struct(cohort_cols).struct.json_encode()
    else:
        cohort = pl.lit(None, dtype=pl.String)
    frame = frame.with_columns(cohort.alias("cohort_json"))

    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (pl.col(PRE).is_not_null(), pl.col(PRE)),
        (pl.col("unit_id").is_null(), pl.lit(f"missing unit id (column {'/'.join(m.unit)})")),
        (blame_reason.is_not_null(), blame_reason),
        (group_reason.is_not_null(), group_reason),
    ]
    times: dict[str, str | None] = {"start": m.start, "end": m.end}
    if m.events is not None:
        times = {"event": m.events.time_column}
    parsed: dict[str, pl.Expr] = {}
    for what, time_col in times.items():
        if time_col is None:
            continue
        parsed[what] = time_expr(time_col, m.time)
        checks += _time_checks(what, time_col, parsed[what], m.time, now)
    null_ts = pl.lit(None, dtype=UTC_TS)
    duration = pl.lit(None, dtype=pl.Float64)
    if m.duration is not None:
        duration = pl.col(m.duration).cast(pl.Float64, strict=False) * TIME_UNITS_S[m.duration_unit]
        checks.append(
            (
                pl.col(m.duration).is_not_null() & ~(duration.is_finite() & (duration >= 0)),
                pl.format(
                    f"bad duration '{{}}' in column {m.duration} (expected a number of "
                    f"{m.duration_unit} >= 0)",
                    pl.col(m.duration),
                ),
            )
        )
    frame = frame.with_columns(
        parsed.get("start", null_ts).alias("start_ts"),
        parsed.get("end", null_ts).alias("end_ts"),
        parsed.get("event", null_ts).alias("__t"),
        duration.alias("duration_s"),
    )
    return frame.with_columns(_first_reason(checks).alias("__reason"))


def _category_levels(m: FaultLogMapping, blame_name: pl.Expr, blame_text: pl.Expr) -> list[pl.Expr]:
    """Return the three category levels: blame first, the third level holding the rest."""
    cats = [pl.col(c) for c in m.categories]
    if m.blame:
        cats = [blame_name, blame_text, *cats]
    if len(cats) > 3:  # the third level holds the rest, in mapping order
        rest = pl.concat_str(cats[2:], separator=" / ", ignore_nulls=True)
        cats = [*cats[:2], pl.when(rest.str.len_bytes() > 0).then(rest)]
    cats += [pl.lit(None, dtype=pl.String)] * (3 - len(cats))
    return cats


def _time_checks(
    what: str, time_col: str, parsed: pl.Expr, spec: TimeSpec, now: datetime
) -> list[tuple[pl.Expr, pl.Expr]]:
    """Return the checks of a time column: unreadable, before ``spec.earliest``, in the future."""
    earliest = spec.earliest
    return [
        (
            pl.col(time_col).is_not_null() & parsed.is_null(),
            pl.format(
                f"bad {what} time '{{}}' in column {time_col} (expected {time_hint(spec)})",
                pl.col(time_col),
            ),
        ),
        (
            parsed < pl.lit(earliest, dtype=UTC_TS),
            pl.format(
                f"{what} time '{{}}' in column {time_col} is before {earliest:%Y-%m-%d}; "
                "set time.earliest in the mapping if the trace is that old",
                pl.col(time_col),
            ),
        ),
        (
            in_future(parsed, now),
            pl.format(
                f"{what} time '{{}}' in column {time_col} is in the future", pl.col(time_col)
            ),
        ),
    ]


def _first_reason(checks: list[tuple[pl.Expr, pl.Expr]]) -> pl.Expr:
    expr: Any = pl
    for condition, reason in checks:
        expr = expr.when(condition).then(reason)
    first: pl.Expr = expr.otherwise(pl.lit(None, dtype=pl.String))
    return first


def _add_reason(frame: pl.DataFrame, condition: pl.Expr, reason: pl.Expr) -> pl.DataFrame:
    return frame.with_columns(
        pl.when(pl.col("__reason").is_null() & condition)
        .then(reason)
        .otherwise(pl.col("__reason"))
        .alias("__reason")
    )


def _lives(frame: pl.DataFrame, m: FaultLogMapping) -> pl.DataFrame:
    assert m.failed is not None
    col = pl.col(m.failed)
    failed = col.is_in(pl.Series(m.failed_true, dtype=pl.String).implode()).fill_null(False)
    frame = frame.with_columns(failed.alias("failed"))
    if m.failed_false is not None:
        known = pl.Series([*m.failed_true, *m.failed_false], dtype=pl.String).implode()
        frame = _add_reason(
            frame,
            ~col.is_in(known).fill_null(False),
            pl.format(
                f"failed value '{{}}' in column {m.failed} is neither true "
                f"{list(m.failed_true)} nor false {list(m.failed_false)}",
                col.fill_null(""),
            ),
        )
    start, end, dur = pl.col("start_ts"), pl.col("end_ts"), pl.col("duration_s")
    point = start.is_null() & dur.is_null() & end.is_not_null() & pl.col("failed")
    if not m.point_events:
        point = pl.lit(False)
    frame = frame.with_columns(
        pl.when(point).then(pl.lit("event")).otherwise(pl.lit("life")).alias("record_kind"),
        pl.when(point).then(end).otherwise(start).alias("start_ts"),
    )
    elapsed = (end - start).dt.total_microseconds() / 1e6
    checks = [
        (
            start.is_null() & dur.is_null(),
            pl.lit(
                f"missing start time (column {m.start}) and no duration"
                if m.start
                else f"missing duration (column {m.duration})"
            ),
        ),
        (end.is_not_null() & start.is_not_null() & (end < start), pl.lit("end before start")),
        (
            pl.col("failed") & end.is_null() & start.is_not_null() & dur.is_null(),
            pl.lit(f"failed life with no end time (column {m.end})"),
        ),
        (
            dur.is_not_null()
            & end.is_not_null()
            & start.is_not_null()
            & ((elapsed - dur).abs() > m.duration_tolerance_s),
            pl.format("duration {} s disagrees with end - start = {} s", dur, elapsed),
        ),
    ]
    for condition, reason in checks:
        frame = _add_reason(frame, condition & (pl.col("record_kind") == "life"), reason)
    return frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("end_line_no"))


def _interval_faults(frame: pl.DataFrame, m: FaultLogMapping) -> pl.DataFrame:
    """Events given as start (and end, or duration) columns on one record."""
    start, end, dur = pl.col("start_ts"), pl.col("end_ts"), pl.col("duration_s")
    if m.end is None and m.duration is not None:
        end = start + pl.duration(microseconds=(dur * 1e6).round(0).cast(pl.Int64))
    point = pl.lit(m.end is None and m.duration is None)
    frame = frame.with_columns(
        pl.when(point).then(start).otherwise(end).alias("end_ts"),
        pl.when(point).then(pl.lit("event")).otherwise(pl.lit("fault")).alias("record_kind"),
        pl.lit(True).alias("failed"),
        pl.lit(None, dtype=pl.Int64).alias("end_line_no"),
    )
    frame = _add_reason(frame, start.is_null(), pl.lit(f"missing start time (column {m.start})"))
    return _add_reason(
        frame,
        pl.col("end_ts").is_not_null() & (pl.col("end_ts") < start),
        pl.lit("end before start"),
    )


def _paired_faults(frame: pl.DataFrame, m: FaultLogMapping) -> tuple[pl.DataFrame, int]:
    """Pair start and end event records per (unit, pair_on) in time order.

    Within a key, sorted by time (a start before an end at the same instant), an end event closes
    the oldest open start. An end with no open start is rejected; a start never closed is an open
    fault (``end_ts`` null: the unit is still down when the file ends).

    Returns the frame (start rows now carry the end; unpaired ends carry a reason; paired end
    records removed) and the number of paired end records.
    """
    assert m.events is not None
    ev = m.events
    kind = pl.col(ev.type_column)
    is_start = kind.is_in(pl.Series(ev.start_values, dtype=pl.String).implode())
    is_end = kind.is_in(pl.Series(ev.end_values, dtype=pl.String).implode())
    frame = frame.with_columns(
        is_start.fill_null(False).alias("__start"),
        pl.lit(True).alias("failed"),
        pl.lit("fault").alias("record_kind"),
    )
    frame = _add_reason(
        frame,
        ~(is_start | is_end).fill_null(False),
        pl.format(
            f"event type '{{}}' in column {ev.type_column} is neither a start "
            f"{list(ev.start_values)} nor an end {list(ev.end_values)}",
            kind.fill_null(""),
        ),
    )
    frame = _add_reason(
        frame, pl.col("__t").is_null(), pl.lit(f"missing event time (column {ev.time_column})")
    )
    good = frame.filter(pl.col("__reason").is_null())
    bad = frame.filter(pl.col("__reason").is_not_null())
    key = ["unit_id", *(f"__pair{i}" for i in range(len(ev.pair_on)))]
    good = good.with_columns(pl.col(c).alias(f"__pair{i}") for i, c in enumerate(ev.pair_on))
    good = good.sort([*key, "__t", ~pl.col("__start"), LINE], nulls_last=True)
    step = pl.when(pl.col("__start")).then(1).otherwise(-1)
    depth = step.cum_sum().over(key)
    good = good.with_columns(depth.alias("__depth"))
    lowest_before = pl.min_horizontal(
        pl.col("__depth").cum_min().shift(1).over(key).fill_null(0), pl.lit(0)
    )
    unmatched = ~pl.col("__start") & (pl.col("__depth") < lowest_before)
    good = good.with_columns(unmatched.alias("__unmatched"))
    starts = good.filter(pl.col("__start")).with_columns(
        pl.int_range(pl.len()).over(key).alias("__k")
    )
    ends = good.filter(~pl.col("__start") & ~pl.col("__unmatched")).with_columns(
        pl.int_range(pl.len()).over(key).alias("__k")
    )
    paired = starts.join(
        ends.select(*key, "__k", pl.col("__t").alias("__end_ts"), pl.col(LINE).alias("__end_line")),
        on=[*key, "__k"],
        how="left",
        nulls_equal=True,
    ).with_columns(
        pl.col("__t").alias("start_ts"),
        pl.col("__end_ts").alias("end_ts"),
        pl.col("__end_line").alias("end_line_no"),
    )
    unpaired = good.filter(pl.col("__unmatched")).with_columns(
        pl.lit("end event with no open start event for the same unit and categories").alias(
            "__reason"
        ),
        pl.lit(None, dtype=pl.Int64).alias("end_line_no"),
    )
    bad = bad.with_columns(pl.lit(None, dtype=pl.Int64).alias("end_line_no"))
    out = pl.concat([f.select(_RECORD_COLUMNS) for f in (paired, unpaired, bad)])
    return out.sort(LINE), ends.height


def _empty_rows() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def parse(
    data: bytes, *, source_file: str, mapping: FaultLogMapping, now: datetime | None = None
) -> Parsed:
    """Parse one fault-log file (CSV or JSON) through a column mapping.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded in every row and reject.
    mapping
        The column mapping (``load_mapping``).
    now
        The ingest time (default: the current UTC time); a time more than a day after it, or
        before the mapping's ``time.earliest`` (2000-01-01 unless set), is a reject.

    Returns
    -------
    Parsed
        ``rows`` with the columns of ``raw_fault_events`` (``SCHEMA``): ``source_file``,
        ``line_no`` (1-based line where the record starts; for a paired fault, its start
        event), ``end_line_no`` (the paired end event), ``dataset``, ``unit_id``,
        ``unit_group`` (the ``groups.column`` text, else null), ``record_kind`` (``life``,
        ``fault`` or ``event``), ``component_class``,
        ``category_l1..3`` (the source's own text; with ``blame``, the filled column's name
        and text come first; a fourth category and later ones join the third with `` / ``),
        ``start_ts``/``end_ts`` (UTC; an ``event``
        has both at its instant; an open fault has no end), ``duration_s`` (seconds, when the
        mapping reads a duration), ``failed``, ``cohort_json``, ``population``,
        ``window_start``/``window_end`` (from the mapping; per group with ``groups``).
        ``rejects`` has ``source_file, line_no, raw, reason``; ``n_ignored`` counts headers,
        blank lines and paired end events.

    Raises
    ------
    ValueError
        When a column named in the mapping is not in the file (the message names the mapping
        key and lists the file's columns).
    """
    if not data.strip():
        return Parsed(_empty_rows(), empty_file_reject(source_file), 0)
    records = read_records(data, mapping, source_file)
    if records.frame.height == 0:
        return Parsed(_empty_rows(), records.file_rejects, records.n_ignored)
    typed = _typed(records.frame, mapping, now=utc_now(now))
    n_ignored = records.n_ignored
    if mapping.kind == "lives":
        typed = _lives(typed, mapping)
    elif mapping.events is None:
        typed = _interval_faults(typed, mapping)
    else:
        typed, n_paired_ends = _paired_faults(typed, mapping)
        n_ignored += n_paired_ends
    good = typed.filter(pl.col("__reason").is_null())
    rows = good.select(
        pl.lit(source_file).alias("source_file"),
        pl.col(LINE).alias("line_no"),
        pl.col("end_line_no"),
        pl.lit(mapping.dataset).alias("dataset"),
        *(
            pl.col(c)
            for c in (
                "unit_id",
                "unit_group",
                "record_kind",
                "component_class",
                "category_l1",
                "category_l2",
                "category_l3",
                "start_ts",
                "end_ts",
                "duration_s",
                "failed",
                "cohort_json",
                "population",
                "window_start",
                "window_end",
            )
        ),
    ).cast(SCHEMA)  # type: ignore[arg-type]  # polars stub: dict is invariant in its value type
    rejects = pl.concat(
        [
            records.file_rejects,
            typed.filter(pl.col("__reason").is_not_null()).select(
                pl.lit(source_file).alias("source_file"),
                pl.col(LINE).alias("line_no"),
                pl.col(RAW).alias("raw"),
                pl.col("__reason").alias("reason"),
            ),
        ]
    ).sort("line_no")
    return Parsed(rows, rejects, n_ignored)
