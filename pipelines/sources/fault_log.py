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
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl
import yaml

from pipelines.sources.common import (
    EARLIEST,
    REJECT_SCHEMA,
    UTC_TS,
    Parsed,
    empty_file_reject,
    in_future,
    split_lines,
    utc_now,
)

COMPONENT_CLASSES: tuple[str, ...] = (
    "gpu",
    "gpu_memory",
    "gpu_sram",
    "gsp",
    "nvlink",
    "pcie",
    "nic",
    "network",
    "host_cpu",
    "host_memory",
    "storage",
    "power",
    "cooling",
    "chassis",
    "driver",
    "nccl",
    "application",
    "maintenance",
    "software",
    "human_error",
    "facilities",
    "unknown",
)

TIME_UNITS_S: dict[str, float] = {"days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0}

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

_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")
_ISO_ZONED = ("%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f%#z")
_ISO_NAIVE = ("%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d")
_MAX_RAW = 2000  # characters of a JSON record kept in a reject's raw text
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

# internal column names; the double underscore keeps them apart from the file's own columns
_LINE, _RAW, _PRE = "__line_no", "__raw", "__pre_reason"


# --------------------------------------------------------------------------------------------
# The mapping


@dataclass(frozen=True)
class TimeSpec:
    """How the file writes times.

    Absolute timestamps use ``format`` (strptime; ISO 8601 when None) in ``timezone`` unless
    the text carries its own offset; ``ambiguous`` settles wall times a DST change makes
    ambiguous (``earliest``, ``latest`` or ``reject``). Relative times are numbers of ``unit``
    (days, hours, minutes, seconds) counted from ``origin``. A time before ``earliest`` (by
    default 2000-01-01, the range of every other source) or more than a day after the ingest
    is a reject; a historical trace sets ``earliest`` to its first year.
    """

    format: str | None = None
    timezone: str = "UTC"
    ambiguous: Literal["earliest", "latest", "reject"] = "earliest"
    unit: str | None = None
    origin: datetime | None = None
    earliest: datetime = EARLIEST

    @property
    def relative(self) -> bool:
        """True when times are numbers counted from ``origin``."""
        return self.unit is not None


@dataclass(frozen=True)
class EventSpec:
    """Start and end events on separate records: which column says which, and when."""

    type_column: str
    time_column: str
    start_values: tuple[str, ...]
    end_values: tuple[str, ...]
    pair_on: tuple[str, ...]  # besides the unit; defaults to the category columns


@dataclass(frozen=True)
class ClassRule:
    """Source values of one column and the component class each stands for."""

    column: str
    values: tuple[tuple[str, str], ...]

    def as_dict(self) -> dict[str, str]:
        """The rule's ``{source value: component_class}``."""
        return dict(self.values)


@dataclass(frozen=True)
class GroupSpec:
    """Groups of units (the systems of a multi-system trace), each with its window and population.

    ``population_column`` names a column holding the group's number of units (the same on every
    record of the group); ``start_column`` / ``end_column`` hold service dates (a group's window
    runs from its records' earliest start to their latest end; an end in ``open_values`` means
    still in service, i.e. the top-level window end), read with ``window_time``. ``values``
    gives per group (by the text of ``column``) a population and / or a window, which win over
    the columns and over the mapping's top-level ones.
    """

    column: str
    population_column: str | None = None
    values: tuple[tuple[str, int | None, datetime | None, datetime | None], ...] = ()
    start_column: str | None = None
    end_column: str | None = None
    window_time: TimeSpec | None = None
    open_values: tuple[str, ...] = ()

    def table(self) -> pl.DataFrame:
        """``values`` as a frame: ``__group, __g_population, __g_start, __g_end``."""
        return pl.DataFrame(
            [list(v) for v in self.values],
            schema={
                "__group": pl.String,
                "__g_population": pl.Int64,
                "__g_start": UTC_TS,
                "__g_end": UTC_TS,
            },
            orient="row",
        )


@dataclass(frozen=True)
class FaultLogMapping:
    """A validated column mapping; build it with ``load_mapping`` or ``mapping_from_dict``.

    Column names are CSV header names or, for JSON, dotted paths (``fault_type.Class``).
    """

    dataset: str
    kind: Literal["lives", "events"]
    unit: tuple[str, ...]
    format: Literal["csv", "json"] | None = None
    separator: str = ","
    null_values: tuple[str, ...] = ("",)
    time: TimeSpec = field(default_factory=TimeSpec)
    start: str | None = None
    end: str | None = None
    duration: str | None = None
    duration_unit: str = "seconds"
    duration_tolerance_s: float = 1.0
    failed: str | None = None
    failed_true: tuple[str, ...] = ()
    failed_false: tuple[str, ...] | None = None
    point_events: bool = False
    events: EventSpec | None = None
    categories: tuple[str, ...] = ()
    class_rules: tuple[ClassRule, ...] = ()
    blame: tuple[tuple[str, str], ...] = ()  # (one-hot column, component class)
    blame_empty: tuple[str, ...] = ()  # values that leave a blame column unfilled ("0", ...)
    default_class: str = "unknown"
    cohorts: tuple[tuple[str, str], ...] = ()  # (cohort name, column)
    cohort_pattern: tuple[str, str] | None = None  # (column, regex with named groups)
    population: int | None = None
    window_start: datetime | None = None
    window_end: datetime | None = None
    groups: GroupSpec | None = None

    def columns(self) -> list[str]:
        """Every column the mapping reads, in a stable order without repeats."""
        named = [
            *self.unit,
            self.start,
            self.end,
            self.duration,
            self.failed,
            *((self.events.type_column, self.events.time_column) if self.events else ()),
            *(self.events.pair_on if self.events else ()),
            *self.categories,
            *(rule.column for rule in self.class_rules),
            *(column for column, _ in self.blame),
            *(column for _, column in self.cohorts),
            self.cohort_pattern[0] if self.cohort_pattern else None,
            self.groups.column if self.groups else None,
            self.groups.population_column if self.groups else None,
            self.groups.start_column if self.groups else None,
            self.groups.end_column if self.groups else None,
        ]
        return list(dict.fromkeys(c for c in named if c is not None))


class MappingError(ValueError):
    """A mapping file that cannot be used; the message names the bad key."""


_TOP_KEYS = {
    "dataset",
    "kind",
    "format",
    "csv",
    "unit",
    "time",
    "start",
    "end",
    "duration",
    "failed",
    "point_events",
    "events",
    "categories",
    "classes",
    "blame",
    "cohorts",
    "cohort_pattern",
    "population",
    "window",
    "groups",
}


def load_mapping(path: Path | str) -> FaultLogMapping:
    """Read and validate a YAML column mapping.

    Parameters
    ----------
    path
        The mapping file (see ``data_samples/mappings/`` and the module docstring for the keys).

    Returns
    -------
    FaultLogMapping
        The validated mapping.

    Raises
    ------
    MappingError
        When a key is unknown, missing, of the wrong type or names an unknown component class,
        or when ``cohort_pattern.regex`` is a pattern the parser's engine (polars, Rust
        ``regex``) cannot run; the message names the key and the file.
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        msg = f"{path}: not valid YAML ({error}); fix the syntax and retry"
        raise MappingError(msg) from error
    return mapping_from_dict(raw, where=str(path))


def mapping_from_dict(raw: object, *, where: str = "mapping") -> FaultLogMapping:
    """Validate a mapping already read from YAML (the body of ``load_mapping``).

    Raises
    ------
    MappingError
        As ``load_mapping``.
    """
    if not isinstance(raw, dict):
        _fail(where, "(top level)", "must be a mapping of keys such as dataset, kind, unit")
    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        _fail(where, unknown[0], f"is not a mapping key; known keys are {sorted(_TOP_KEYS)}")
    dataset = _required_str(raw, "dataset", where)
    if not _IDENT.match(dataset):
        _fail(where, "dataset", f"{dataset!r} must be lower case letters, digits and _")
    kind = _required_str(raw, "kind", where)
    if kind not in ("lives", "events"):
        _fail(where, "kind", f"is {kind!r}; use lives or events")
    fmt = raw.get("format")
    if fmt is not None and fmt not in ("csv", "json"):
        _fail(where, "format", f"is {fmt!r}; use csv or json (or leave it out to detect)")
    csv_opts = _section(raw, "csv", where, {"separator", "null_values"})
    separator = str(csv_opts.get("separator", ","))
    if len(separator) != 1:
        _fail(where, "csv.separator", f"must be one character, not {separator!r}")
    null_values = tuple(_value_list(csv_opts.get("null_values", [""]), "csv.null_values", where))

    unit = raw.get("unit")
    units = tuple(_str_list(unit, "unit", where)) if unit is not None else ()
    if not units:
        _fail(where, "unit", "is required: the column (or list of columns) naming the unit")

    time = _time_spec(
        _section(
            raw, "time", where, {"format", "timezone", "ambiguous", "unit", "origin", "earliest"}
        ),
        where,
    )
    start = _optional_str(raw, "start", where)
    end = _optional_str(raw, "end", where)

    duration_col, duration_unit, tolerance = None, "seconds", 1.0
    if "duration" in raw:
        spec = raw["duration"]
        if isinstance(spec, str):
            duration_col = spec
        else:
            section = _section(raw, "duration", where, {"column", "unit", "tolerance_s"})
            duration_col = _required_str(section, "column", where, "duration.column")
            duration_unit = str(section.get("unit", "seconds"))
            tolerance = section.get("tolerance_s", 1.0)
            if isinstance(tolerance, bool) or not isinstance(tolerance, int | float):
                _fail(
                    where, "duration.tolerance_s", f"must be a number of seconds, not {tolerance!r}"
                )
        if duration_unit not in TIME_UNITS_S:
            _fail(where, "duration.unit", f"is {duration_unit!r}; use one of {list(TIME_UNITS_S)}")

    failed_col, failed_true, failed_false = None, (), None
    if "failed" in raw:
        section = _section(raw, "failed", where, {"column", "true_values", "false_values"})
        failed_col = _required_str(section, "column", where, "failed.column")
        failed_true = tuple(_value_list(section.get("true_values"), "failed.true_values", where))
        if not failed_true:
            _fail(where, "failed.true_values", "must list the values that mean failed")
        if section.get("false_values") is not None:
            failed_false = tuple(_value_list(section["false_values"], "failed.false_values", where))

    events = None
    if "events" in raw:
        section = _section(raw, "events", where, {"type", "time", "start", "end", "pair_on"})
        events_pair = section.get("pair_on")
        events = EventSpec(
            type_column=_required_str(section, "type", where, "events.type"),
            time_column=_required_str(section, "time", where, "events.time"),
            start_values=tuple(_value_list(section.get("start"), "events.start", where)),
            end_values=tuple(_value_list(section.get("end"), "events.end", where)),
            pair_on=tuple(_str_list(events_pair, "events.pair_on", where))
            if events_pair is not None
            else (),
        )
        if not events.start_values or not events.end_values:
            _fail(
                where,
                "events.start" if not events.start_values else "events.end",
                "must list the event type values that open / close a fault",
            )

    categories = tuple(_str_list(raw.get("categories", []), "categories", where))
    if events is not None and events_pair is None:
        events = EventSpec(
            events.type_column,
            events.time_column,
            events.start_values,
            events.end_values,
            categories,
        )

    rules, default_class = _classes(raw, where)
    cohorts = _cohorts(raw.get("cohorts", []), where)
    pattern = None
    if "cohort_pattern" in raw:
        section = _section(raw, "cohort_pattern", where, {"column", "regex"})
        regex = _required_str(section, "regex", where, "cohort_pattern.regex")
        try:
            names = _regex_names(regex)
        except pl.exceptions.PolarsError as error:
            problem = str(error).strip().splitlines()[-1].removeprefix("error: ")
            _fail(
                where,
                "cohort_pattern.regex",
                f"is not a regular expression the parser (Rust regex) runs: {problem}; "
                "rewrite it without look-around or back-references",
            )
        if not names:
            _fail(where, "cohort_pattern.regex", "needs named groups, e.g. (?P<cage>\\d)")
        pattern = (_required_str(section, "column", where, "cohort_pattern.column"), regex)

    point_events = raw.get("point_events", False)
    if not isinstance(point_events, bool):
        _fail(where, "point_events", f"must be true or false, not {point_events!r}")
    population = raw.get("population")
    if population is not None and (
        isinstance(population, bool) or not isinstance(population, int) or population < 1
    ):
        _fail(where, "population", f"must be a positive whole number, not {population!r}")
    window = _section(raw, "window", where, {"start", "end"})
    window_start = _mapping_time(window.get("start"), time, where, "window.start")
    window_end = _mapping_time(window.get("end"), time, where, "window.end")
    if window_start and window_end and window_end <= window_start:
        _fail(where, "window.end", "must be later than window.start")
    blame, blame_empty = _blame(raw.get("blame"), where)
    groups = _groups(raw, time, where, (window_start, window_end))

    mapping = FaultLogMapping(
        dataset=dataset,
        kind=kind,  # type: ignore[arg-type]
        unit=units,
        format=fmt,
        separator=separator,
        null_values=null_values,
        time=time,
        start=start,
        end=end,
        duration=duration_col,
        duration_unit=duration_unit,
        duration_tolerance_s=float(tolerance),
        failed=failed_col,
        failed_true=failed_true,
        failed_false=failed_false,
        point_events=point_events,
        events=events,
        categories=categories,
        class_rules=rules,
        blame=blame,
        blame_empty=blame_empty,
        default_class=default_class,
        cohorts=cohorts,
        cohort_pattern=pattern,
        population=population,
        window_start=window_start,
        window_end=window_end,
        groups=groups,
    )
    _check_kind(mapping, where)
    return mapping


def _check_kind(m: FaultLogMapping, where: str) -> None:
    if m.groups is not None and m.groups.column not in m.unit:
        _fail(
            where,
            "groups.column",
            f"{m.groups.column!r} must also be a unit column (unit: [{m.groups.column}, ...]), "
            "so that units of different groups stay apart",
        )
    if m.kind == "lives":
        if m.events is not None:
            _fail(where, "events", "applies to kind: events; lives files have start/end columns")
        if m.failed is None:
            _fail(where, "failed", "is required for kind: lives ({column, true_values})")
        if m.duration is None and (m.start is None or m.end is None):
            _fail(
                where,
                "start" if m.start is None else "end",
                "kind: lives needs start and end columns, or a duration",
            )
        if m.population is not None:
            _fail(where, "population", "applies to kind: events (files listing failing units)")
        if m.groups is not None and (
            m.groups.population_column or any(v[1] is not None for v in m.groups.values)
        ):
            _fail(
                where,
                "groups.population",
                "applies to kind: events (files listing failing units)",
            )
    else:
        if m.failed is not None or m.point_events:
            _fail(
                where,
                "failed" if m.failed else "point_events",
                "applies to kind: lives; in an events file every fault is a failure",
            )
        if m.events is None and m.start is None:
            _fail(where, "start", "kind: events needs a start column or an events section")
        if m.events is not None and (m.start or m.end or m.duration):
            _fail(where, "events", "give either an events section or start/end columns, not both")
        per_group = m.groups is not None and (m.groups.window_time or m.groups.values)
        if (
            m.population is not None
            and (m.window_start is None or m.window_end is None)
            and (not per_group)
        ):
            _fail(where, "window", "population needs a window {start, end} to give exposure")


def _fail(where: str, key: str, problem: str) -> NoReturn:
    msg = f"{where}: key {key!r} {problem}"
    raise MappingError(msg)


def _section(raw: dict[str, Any], key: str, where: str, allowed: set[str]) -> dict[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        _fail(where, key, f"must be a mapping with keys {sorted(allowed)}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        _fail(where, f"{key}.{unknown[0]}", f"is not known here; use {sorted(allowed)}")
    return value


def _required_str(raw: dict[str, Any], key: str, where: str, name: str | None = None) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        _fail(where, name or key, f"is required and must be a non-empty string, not {value!r}")
    return value.strip()


def _optional_str(raw: dict[str, Any], key: str, where: str) -> str | None:
    return _required_str(raw, key, where) if raw.get(key) is not None else None


def _str_list(value: object, key: str, where: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        _fail(where, key, f"must be a column name or a list of them, not {value!r}")
    return [v.strip() for v in items]


def _value_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value)


def _value_list(value: object, key: str, where: str) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if any(isinstance(v, dict | list) for v in items):
        _fail(where, key, "must be a value or a list of plain values")
    return [_value_text(v) for v in items]


def _time_spec(section: dict[str, Any], where: str) -> TimeSpec:
    tz = str(section.get("timezone", "UTC"))
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        _fail(where, "time.timezone", f"{tz!r} is not an IANA time zone (e.g. America/New_York)")
    ambiguous = str(section.get("ambiguous", "earliest"))
    if ambiguous not in ("earliest", "latest", "reject"):
        _fail(where, "time.ambiguous", f"is {ambiguous!r}; use earliest, latest or reject")
    unit = section.get("unit")
    fmt = section.get("format")
    if fmt is not None and (not isinstance(fmt, str) or "%" not in fmt):
        _fail(
            where,
            "time.format",
            f"must be a strptime format such as %Y-%m-%d %H:%M:%S, not {fmt!r}",
        )
    if unit is not None:
        if not isinstance(unit, str):
            _fail(where, "time.unit", f"is {unit!r}; use one of {list(TIME_UNITS_S)}")
        if unit not in TIME_UNITS_S:
            _fail(where, "time.unit", f"is {unit!r}; use one of {list(TIME_UNITS_S)}")
        if fmt is not None:
            _fail(where, "time.format", "and time.unit exclude each other (absolute or relative)")
        if section.get("origin") is None:
            _fail(where, "time.origin", "is required with time.unit: relative times need a zero")
    elif section.get("origin") is not None:
        _fail(where, "time.unit", "is required with time.origin (days, hours, ... from origin)")
    earliest = EARLIEST
    if section.get("earliest") is not None:
        earliest = _mapping_time(section["earliest"], TimeSpec(timezone=tz), where, "time.earliest")
        assert earliest is not None
    spec = TimeSpec(format=fmt, timezone=tz, ambiguous=ambiguous, unit=unit, earliest=earliest)  # type: ignore[arg-type]
    if unit is not None:
        origin = _mapping_time(section["origin"], TimeSpec(timezone=tz), where, "time.origin")
        spec = TimeSpec(
            format=None,
            timezone=tz,
            ambiguous=spec.ambiguous,
            unit=unit,
            origin=origin,
            earliest=earliest,
        )
    return spec


def _mapping_time(value: object, spec: TimeSpec, where: str, key: str) -> datetime | None:
    """A time written in the mapping: a timestamp, or a number relative to the time origin."""
    if value is None:
        return None
    if isinstance(value, bool):
        _fail(where, key, f"must be a timestamp or a number, not {value!r}")
    if isinstance(value, int | float):
        if spec.origin is None or spec.unit is None:
            _fail(where, key, "is a number, which needs time.unit and time.origin; or give a date")
        return spec.origin + _seconds_delta(float(value) * TIME_UNITS_S[spec.unit])
    if isinstance(value, datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=ZoneInfo(spec.timezone))
        return stamp.astimezone(UTC)
    if isinstance(value, date):
        return datetime(
            value.year, value.month, value.day, tzinfo=ZoneInfo(spec.timezone)
        ).astimezone(UTC)
    # the file's format, else ISO 8601 (a mapping's own times are often written that way)
    formats = dict.fromkeys([spec.format, None])
    for fmt in formats:
        text_spec = TimeSpec(format=fmt, timezone=spec.timezone, ambiguous=spec.ambiguous)
        parsed = (
            pl.DataFrame({"t": [str(value)]})
            .select(_absolute_ts(pl.col("t").str.strip_chars(), text_spec))
            .item()
        )
        if parsed is not None:
            return parsed
    shown = " or ".join(f or "ISO 8601" for f in formats)
    _fail(where, key, f"{value!r} is not a timestamp (format {shown})")


def _seconds_delta(seconds: float) -> timedelta:
    return timedelta(microseconds=round(seconds * 1e6))


def _classes(raw: dict[str, Any], where: str) -> tuple[tuple[ClassRule, ...], str]:
    section = _section(raw, "classes", where, {"column", "map", "default", "overrides"})
    default = str(section.get("default", "unknown"))
    _check_class(default, where, "classes.default")
    rules: list[ClassRule] = []
    for i, item in enumerate(section.get("overrides") or []):
        key = f"classes.overrides[{i}]"
        if not isinstance(item, dict) or set(item) != {"column", "map"}:
            _fail(where, key, "must be a mapping {column, map}")
        rules.append(_class_rule(item, where, key))
    if "map" in section or "column" in section:
        rules.append(_class_rule(section, where, "classes"))
    return tuple(rules), default


def _class_rule(section: dict[str, Any], where: str, key: str) -> ClassRule:
    column = _required_str(section, "column", where, f"{key}.column")
    values = section.get("map")
    if not isinstance(values, dict) or not values:
        _fail(where, f"{key}.map", "must map source values to component classes")
    pairs = []
    for source, target in values.items():
        _check_class(target, where, f"{key}.map[{source!r}]")
        pairs.append((_value_text(source), str(target)))
    return ClassRule(column=column, values=tuple(pairs))


def _check_class(value: object, where: str, key: str) -> None:
    if value not in COMPONENT_CLASSES:
        _fail(where, key, f"is {value!r}, not a component class; use one of {COMPONENT_CLASSES}")


def _cohorts(value: object, where: str) -> tuple[tuple[str, str], ...]:
    if isinstance(value, list):
        pairs = [(_str_list(v, "cohorts", where)[0],) * 2 for v in value]
    elif isinstance(value, dict):
        pairs = [(str(k), _str_list(v, f"cohorts.{k}", where)[0]) for k, v in value.items()]
    else:
        _fail(where, "cohorts", "must be a list of columns or a mapping {name: column}")
    for name, _ in pairs:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            _fail(where, "cohorts", f"name {name!r} must be letters, digits and _")
    return tuple(pairs)


def _regex_names(regex: str) -> list[str]:
    """The named groups of ``regex`` as polars (Rust ``regex``) compiles it, which runs it.

    Raises ``polars.exceptions.PolarsError`` when that engine rejects the pattern (look-around,
    back-references: Python's ``re`` accepts them, the parser could not run them).
    """
    dtype = pl.Series([""], dtype=pl.String).str.extract_groups(regex).dtype
    assert isinstance(dtype, pl.Struct)
    return [f.name for f in dtype.fields if not f.name.isdigit()]


def _blame(value: object, where: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """One-hot cause columns: the filled column names the class.

    Either ``{column: component_class, ...}`` or ``{columns: {column: class, ...}, empty: [...]}``
    where ``empty`` lists values that mean "not this cause" (``0``, ``FALSE``) besides an empty
    cell. Returns the ``(column, class)`` pairs in mapping order and the ``empty`` values.
    """
    if value is None:
        return (), ()
    empty: list[str] = []
    if isinstance(value, dict) and "columns" in value:
        section = _section({"blame": value}, "blame", where, {"columns", "empty"})
        empty = _value_list(section.get("empty"), "blame.empty", where)
        value = section["columns"]
    if not isinstance(value, dict) or not value:
        _fail(where, "blame", "must map one-hot cause columns to component classes")
    pairs = []
    for column, target in value.items():
        if not isinstance(column, str) or not column.strip():
            _fail(where, "blame", f"column {column!r} must be a column name")
        _check_class(target, where, f"blame[{column!r}]")
        pairs.append((column.strip(), str(target)))
    return tuple(pairs), tuple(empty)


def _groups(
    raw: dict[str, Any],
    time: TimeSpec,
    where: str,
    window: tuple[datetime | None, datetime | None],
) -> GroupSpec | None:
    """The ``groups`` section: a group column, a population column and per-group values."""
    if raw.get("groups") is None:
        return None
    section = _section(raw, "groups", where, {"column", "population", "window", "values"})
    column = _required_str(section, "column", where, "groups.column")
    population_column = None
    if section.get("population") is not None:
        population_column = _required_str(section, "population", where, "groups.population")
    columns = _section(section, "window", where, {"start", "end", "format", "open"})
    start_column = _optional_str(columns, "start", f"{where}: groups.window")
    end_column = _optional_str(columns, "end", f"{where}: groups.window")
    window_time = None
    if start_column or end_column:
        fmt = columns.get("format")
        if fmt is not None and (not isinstance(fmt, str) or "%" not in fmt):
            _fail(where, "groups.window.format", f"must be a strptime format, not {fmt!r}")
        window_time = time if fmt is None else TimeSpec(format=fmt, timezone=time.timezone)
    open_values = tuple(_value_list(columns.get("open"), "groups.window.open", where))
    values = section.get("values") or {}
    if not isinstance(values, dict):
        _fail(where, "groups.values", "must map each group to {population, window}")
    rows = []
    for group, spec in values.items():
        key = f"groups.values[{_value_text(group)!r}]"
        if not isinstance(spec, dict) or not set(spec) <= {"population", "window"} or not spec:
            _fail(where, key, "must be a mapping with population and / or window {start, end}")
        population = spec.get("population")
        if population is not None and (
            isinstance(population, bool) or not isinstance(population, int) or population < 1
        ):
            _fail(
                where, f"{key}.population", f"must be a positive whole number, not {population!r}"
            )
        own = spec.get("window") or {}
        if not isinstance(own, dict) or not set(own) <= {"start", "end"}:
            _fail(where, f"{key}.window", "must be a mapping with keys start and / or end")
        own_start = _mapping_time(own.get("start"), time, where, f"{key}.window.start")
        own_end = _mapping_time(own.get("end"), time, where, f"{key}.window.end")
        start, end = own_start or window[0], own_end or window[1]
        if start and end and end <= start:
            _fail(where, f"{key}.window.end", "must be later than the window start")
        if population is not None and window_time is None and (start is None or end is None):
            _fail(where, f"{key}.window", "a population needs a window {start, end} (here or top)")
        rows.append((_value_text(group), population, own_start, own_end))
    return GroupSpec(
        column=column,
        population_column=population_column,
        values=tuple(rows),
        start_column=start_column,
        end_column=end_column,
        window_time=window_time,
        open_values=open_values,
    )


# --------------------------------------------------------------------------------------------
# Reading records


@dataclass(frozen=True)
class _Records:
    """The file's records as strings, one row per record, with line numbers and raw text."""

    frame: pl.DataFrame  # the mapped columns plus _LINE, _RAW, _PRE
    n_ignored: int
    file_rejects: pl.DataFrame  # rejects that belong to no record (JSON that stops parsing)


def _detect_format(data: bytes) -> Literal["csv", "json"]:
    head = data.removeprefix(_BOM).lstrip()[:1]
    return "json" if head in (b"[", b"{") else "csv"


def _csv_records(data: bytes, mapping: FaultLogMapping, source_file: str) -> _Records:
    lines = split_lines(data)
    nonblank = lines.filter(pl.col("line").str.strip_chars() != "")
    n_blank = lines.height - nonblank.height
    empty = pl.DataFrame(schema=REJECT_SCHEMA)
    if nonblank.height == 0:
        return _Records(pl.DataFrame(), n_blank, empty)
    header_text = nonblank["line"][0].removeprefix("\ufeff")
    body = nonblank.slice(1)
    text = header_text + "\n" + body["line"].str.join("\n").item() if body.height else header_text
    sep = mapping.separator
    header = next(csv.reader([header_text], delimiter=sep))
    names = [h.strip() for h in header]
    _require_columns(mapping, names, source_file)
    n_fields = len(names)
    frame = pl.read_csv(
        text.encode(),
        infer_schema=False,
        separator=sep,
        truncate_ragged_lines=True,
        has_header=True,
        new_columns=names,
    )
    if frame.height == body.height:
        fields = pl.col("line").str.count_matches(sep, literal=True) + 1
        pre = (
            pl.when(~pl.col("utf8_ok"))
            .then(pl.lit("line is not valid UTF-8"))
            .when(~pl.col("line").str.contains('"', literal=True) & (fields != n_fields))
            .then(pl.format("expected {} fields, found {}", pl.lit(n_fields), fields))
        )
        meta = body.select(
            pl.col("line_no").alias(_LINE), pl.col("line").alias(_RAW), pre.alias(_PRE)
        )
        frame = pl.concat([frame, meta], how="horizontal")
    else:
        frame = _csv_quoted(text, body, names, sep)
    return _Records(_clean(frame, mapping), 1 + n_blank, empty)


def _csv_quoted(text: str, body: pl.DataFrame, names: list[str], sep: str) -> pl.DataFrame:
    """Records with quoted line breaks: the csv module tracks where each record starts."""
    line_nos = body["line_no"].to_list()
    text_lines = text.split("\n")
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    next(reader)
    records: list[list[str]] = []
    starts: list[int] = []
    raws: list[str] = []
    reasons: list[str | None] = []
    previous = reader.line_num
    for record in reader:
        first, last = previous + 1, reader.line_num  # 1-based lines of `text`
        previous = last
        starts.append(line_nos[first - 2])
        raws.append("\n".join(text_lines[first - 1 : last]))
        reasons.append(
            None
            if len(record) == len(names)
            else f"expected {len(names)} fields, found {len(record)}"
        )
        records.append((record + [""] * len(names))[: len(names)])
    columns = {name: [r[i] for r in records] for i, name in enumerate(names)}
    frame = pl.DataFrame(columns, schema=dict.fromkeys(names, pl.String))
    return frame.with_columns(
        pl.Series(_LINE, starts, dtype=pl.Int64),
        pl.Series(_RAW, raws, dtype=pl.String),
        pl.Series(_PRE, reasons, dtype=pl.String),
    )


_MISSING = object()
_BOM = b"\xef\xbb\xbf"


def _json_get(record: dict[str, Any], path: str) -> Any:
    if path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _json_records(data: bytes, mapping: FaultLogMapping, source_file: str) -> _Records:
    """A JSON array of objects (or one object per line); nested keys are dotted paths."""
    text = data.decode("utf-8", errors="backslashreplace")
    decoder = json.JSONDecoder()
    paths = mapping.columns()
    values: dict[str, list[str | None]] = {p: [] for p in paths}
    seen = dict.fromkeys(paths, False)
    line_nos: list[int] = []
    raws: list[str] = []
    pre: list[str | None] = []
    file_rejects: list[tuple[str, int, str, str]] = []
    pos = _skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    in_array = text.startswith("[", pos)
    if in_array:
        pos += 1
    line, counted_to = 1, 0
    while True:
        pos = _skip_ws(text, pos, commas=True)
        if pos >= len(text) or (in_array and text[pos] == "]"):
            break
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        try:
            record, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as error:
            where = line + text.count("\n", pos, error.pos)
            reason = f"invalid JSON: {error.msg}; the rest of the file was not read"
            file_rejects.append((source_file, where, text[pos : pos + 200], reason))
            break
        line_nos.append(line)
        raws.append(json.dumps(record, ensure_ascii=False)[:_MAX_RAW])
        if not isinstance(record, dict):
            pre.append("record is not a JSON object")
            record = {}
        else:
            pre.append(None)
        for p in paths:
            value = _json_get(record, p)
            if value is not _MISSING:
                seen[p] = True
            values[p].append(None if value is _MISSING or value is None else _value_text(value))
        pos = end
    if line_nos:
        _require_columns(mapping, [p for p, ok in seen.items() if ok], source_file)
    frame = pl.DataFrame(
        {
            **{p: pl.Series(p, v, dtype=pl.String) for p, v in values.items()},
            _LINE: pl.Series(_LINE, line_nos, dtype=pl.Int64),
            _RAW: pl.Series(_RAW, raws, dtype=pl.String),
            _PRE: pl.Series(_PRE, pre, dtype=pl.String),
        }
    )
    rejects = pl.DataFrame(file_rejects, schema=REJECT_SCHEMA, orient="row")
    return _Records(_clean(frame, mapping), 0, rejects)


def _skip_ws(text: str, pos: int, *, commas: bool = False) -> int:
    skip = " \t\r\n," if commas else " \t\r\n"
    while pos < len(text) and text[pos] in skip:
        pos += 1
    return pos


def _clean(frame: pl.DataFrame, mapping: FaultLogMapping) -> pl.DataFrame:
    """Strip the mapped columns and turn the mapping's null values into nulls."""
    nulls = pl.Series(list(mapping.null_values), dtype=pl.String).implode()
    return frame.with_columns(
        pl.when(pl.col(c).str.strip_chars().is_in(nulls))
        .then(None)
        .otherwise(pl.col(c).str.strip_chars())
        .alias(c)
        for c in mapping.columns()
    )


def _require_columns(mapping: FaultLogMapping, present: list[str], source_file: str) -> None:
    keys = {
        **dict.fromkeys(mapping.unit, "unit"),
        mapping.start: "start",
        mapping.end: "end",
        mapping.duration: "duration.column",
        mapping.failed: "failed.column",
        **(
            {mapping.events.type_column: "events.type", mapping.events.time_column: "events.time"}
            if mapping.events
            else {}
        ),
        **dict.fromkeys(mapping.events.pair_on if mapping.events else (), "events.pair_on"),
        **dict.fromkeys(mapping.categories, "categories"),
        **{rule.column: "classes.column" for rule in mapping.class_rules},
        **dict.fromkeys((column for column, _ in mapping.blame), "blame"),
        **{column: f"cohorts.{name}" for name, column in mapping.cohorts},
        **({mapping.cohort_pattern[0]: "cohort_pattern.column"} if mapping.cohort_pattern else {}),
        **(
            {
                mapping.groups.column: "groups.column",
                mapping.groups.population_column: "groups.population",
                mapping.groups.start_column: "groups.window.start",
                mapping.groups.end_column: "groups.window.end",
            }
            if mapping.groups
            else {}
        ),
    }
    for column, key in keys.items():
        if column is not None and column not in present:
            shown = ", ".join(present[:30]) + (" ..." if len(present) > 30 else "")
            msg = (
                f"{source_file}: mapping key {key!r} names column {column!r}, which the file does "
                f"not have (columns: {shown}); fix the mapping for data set {mapping.dataset!r}"
            )
            raise ValueError(msg)


# --------------------------------------------------------------------------------------------
# Typing the records


def _absolute_ts(raw: pl.Expr, spec: TimeSpec) -> pl.Expr:
    """Text to a UTC timestamp (null when it does not parse or the wall time does not exist)."""
    ambiguous = "null" if spec.ambiguous == "reject" else spec.ambiguous

    def naive(fmt: str) -> pl.Expr:
        return (
            raw.str.to_datetime(fmt, strict=False, time_unit="us")
            .dt.replace_time_zone(spec.timezone, ambiguous=ambiguous, non_existent="null")
            .dt.convert_time_zone("UTC")
        )

    def zoned(fmt: str) -> pl.Expr:
        return raw.str.to_datetime(fmt, strict=False, time_unit="us", time_zone="UTC")

    if spec.format is not None:
        has_zone = any(z in spec.format for z in ("%z", "%#z", "%:z", "%Z"))
        return zoned(spec.format) if has_zone else naive(spec.format)
    return pl.coalesce([*(zoned(f) for f in _ISO_ZONED), *(naive(f) for f in _ISO_NAIVE)])


def _time(column: str, spec: TimeSpec) -> pl.Expr:
    """A time column as ``Datetime(us, UTC)``: absolute text, or a number from the origin."""
    return _time_of(pl.col(column), spec)


def _time_of(raw: pl.Expr, spec: TimeSpec) -> pl.Expr:
    """Text as ``Datetime(us, UTC)``: absolute text, or a number from the origin."""
    if not spec.relative:
        return _absolute_ts(raw, spec)
    seconds = raw.cast(pl.Float64, strict=False) * TIME_UNITS_S[str(spec.unit)]
    micros = pl.when(seconds.is_finite() & (seconds.abs() < 1e13)).then(seconds * 1e6)
    return pl.lit(spec.origin, dtype=UTC_TS) + pl.duration(
        microseconds=micros.round(0).cast(pl.Int64)
    )


def _time_hint(spec: TimeSpec) -> str:
    if spec.relative:
        return f"a number of {spec.unit}"
    return f"format {spec.format or 'ISO 8601'} in {spec.timezone}"


def _blamed(m: FaultLogMapping) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """From the one-hot cause columns: the class, the column name, its text, and a reject reason
    when more than one is filled."""
    null = pl.lit(None, dtype=pl.String)
    if not m.blame:
        return null, null, null, null
    empty = pl.Series(m.blame_empty, dtype=pl.String).implode()
    filled = [pl.col(column).is_not_null() & ~pl.col(column).is_in(empty) for column, _ in m.blame]
    first: Any = pl
    for (column, target), is_filled in zip(m.blame, filled, strict=True):
        first = first.when(is_filled).then(pl.struct(
            pl.lit(target).alias("cls"), pl.lit(column).alias("name"), pl.col(column).alias("text")
        ))  # fmt: skip
    chosen = first.otherwise(pl.lit(None, dtype=pl.Struct(
        {"cls": pl.String, "name": pl.String, "text": pl.String}
    )))  # fmt: skip
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
    """Add ``unit_group``, ``population``, ``window_start``, ``window_end`` per record, and the
    reason to reject a record whose group, population or window is unusable."""
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
        service[what] = _time_of(text, g.window_time)
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
                f"{_time_hint(g.window_time)}"
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
    return frame, reason.otherwise(pl.lit(None, dtype=pl.String))


def _typed(records: pl.DataFrame, mapping: FaultLogMapping, *, now: datetime) -> pl.DataFrame:
    """Per record: unit, times, categories, class, cohorts, flags and the first reason to reject."""
    m = mapping
    unit = (
        pl.col(m.unit[0])
        if len(m.unit) == 1
        else pl.concat_str([pl.col(c) for c in m.unit], separator="/")
    )
    blame_class, blame_name, blame_text, blame_reason = _blamed(m)
    cats = [pl.col(c) for c in m.categories]
    if m.blame:
        cats = [blame_name, blame_text, *cats]
    if len(cats) > 3:  # the third level holds the rest, in mapping order
        rest = pl.concat_str(cats[2:], separator=" / ", ignore_nulls=True)
        cats = [*cats[:2], pl.when(rest.str.len_bytes() > 0).then(rest)]
    cats += [pl.lit(None, dtype=pl.String)] * (3 - len(cats))
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
        cohort_cols += [pl.col("__groups").struct.field(g).alias(g) for g in _regex_names(regex)]
    if cohort_cols:
        cohort = pl.struct(cohort_cols).struct.json_encode()
    else:
        cohort = pl.lit(None, dtype=pl.String)
    frame = frame.with_columns(cohort.alias("cohort_json"))

    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (pl.col(_PRE).is_not_null(), pl.col(_PRE)),
        (pl.col("unit_id").is_null(), pl.lit(f"missing unit id (column {'/'.join(m.unit)})")),
        (blame_reason.is_not_null(), blame_reason),
        (group_reason.is_not_null(), group_reason),
    ]
    times = {"start": m.start, "end": m.end}
    if m.events is not None:
        times = {"event": m.events.time_column}
    parsed = {}
    for what, column in times.items():
        if column is None:
            continue
        parsed[what] = _time(column, m.time)
        checks.append(
            (
                pl.col(column).is_not_null() & parsed[what].is_null(),
                pl.format(
                    f"bad {what} time '{{}}' in column {column} (expected {_time_hint(m.time)})",
                    pl.col(column),
                ),
            )
        )
        earliest = m.time.earliest
        checks.append(
            (
                parsed[what] < pl.lit(earliest, dtype=UTC_TS),
                pl.format(
                    f"{what} time '{{}}' in column {column} is before {earliest:%Y-%m-%d}; "
                    "set time.earliest in the mapping if the trace is that old",
                    pl.col(column),
                ),
            )
        )
        checks.append(
            (
                in_future(parsed[what], now),
                pl.format(
                    f"{what} time '{{}}' in column {column} is in the future", pl.col(column)
                ),
            )
        )
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


def _first_reason(checks: list[tuple[pl.Expr, pl.Expr]]) -> pl.Expr:
    expr: Any = pl
    for condition, reason in checks:
        expr = expr.when(condition).then(reason)
    return expr.otherwise(pl.lit(None, dtype=pl.String))


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
    good = good.sort([*key, "__t", ~pl.col("__start"), _LINE], nulls_last=True)
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
        ends.select(
            *key, "__k", pl.col("__t").alias("__end_ts"), pl.col(_LINE).alias("__end_line")
        ),
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
    return out.sort(_LINE), ends.height


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
    fmt = mapping.format or _detect_format(data)
    reader = _json_records if fmt == "json" else _csv_records
    records = reader(data, mapping, source_file)
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
        pl.col(_LINE).alias("line_no"),
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
    ).cast(SCHEMA)  # type: ignore[arg-type]
    rejects = pl.concat(
        [
            records.file_rejects,
            typed.filter(pl.col("__reason").is_not_null()).select(
                pl.lit(source_file).alias("source_file"),
                pl.col(_LINE).alias("line_no"),
                pl.col(_RAW).alias("raw"),
                pl.col("__reason").alias("reason"),
            ),
        ]
    ).sort("line_no")
    return Parsed(rows, rejects, n_ignored)
