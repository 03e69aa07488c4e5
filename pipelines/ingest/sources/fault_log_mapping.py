"""Validate a fault-log column mapping (YAML) into a ``FaultLogMapping``.

``load_mapping`` reads a file and ``mapping_from_dict`` checks what YAML gave: every key is
known, of the right type and consistent with the file's ``kind``; a bad key raises
``MappingError`` naming it. The keys are described in ``pipelines.ingest.sources.fault_log``; the
types built here are in ``pipelines.ingest.sources.fault_log_spec``.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl
import yaml

from pipelines.ingest.sources.common import COMPONENT_CLASSES, EARLIEST
from pipelines.ingest.sources.fault_log_spec import (
    TIME_UNITS_S,
    ClassRule,
    EventSpec,
    FaultLogMapping,
    GroupSpec,
    TimeSpec,
    absolute_ts,
    regex_names,
    value_text,
)

_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")


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
    dataset, kind, fmt, separator, null_values = _file_keys(raw, where)
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
    duration_col, duration_unit, tolerance = _duration_keys(raw, where)
    failed_col, failed_true, failed_false = _failed_keys(raw, where)
    events, categories = _events_keys(raw, where)
    rules, default_class = _classes(raw, where)
    cohorts = _cohorts(raw.get("cohorts", []), where)
    pattern = _cohort_pattern(raw, where)

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
        kind=kind,  # type: ignore[arg-type]  # checked against the Literal's values above
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


def _file_keys(
    raw: dict[str, Any], where: str
) -> tuple[str, str, Literal["csv", "json"] | None, str, tuple[str, ...]]:
    """Return the dataset, the kind, the format and the CSV separator and null values."""
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
    return dataset, kind, fmt, separator, null_values


def _duration_keys(raw: dict[str, Any], where: str) -> tuple[str | None, str, Any]:
    """Return the duration column, its unit and the tolerance (s) of start + duration = end."""
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
    return duration_col, duration_unit, tolerance


def _failed_keys(
    raw: dict[str, Any], where: str
) -> tuple[str | None, tuple[str, ...], tuple[str, ...] | None]:
    """Return the failed column and the values that mean failed and not failed."""
    failed_col: str | None = None
    failed_true: tuple[str, ...] = ()
    failed_false: tuple[str, ...] | None = None
    if "failed" in raw:
        section = _section(raw, "failed", where, {"column", "true_values", "false_values"})
        failed_col = _required_str(section, "column", where, "failed.column")
        failed_true = tuple(_value_list(section.get("true_values"), "failed.true_values", where))
        if not failed_true:
            _fail(where, "failed.true_values", "must list the values that mean failed")
        if section.get("false_values") is not None:
            failed_false = tuple(_value_list(section["false_values"], "failed.false_values", where))
    return failed_col, failed_true, failed_false


def _events_keys(raw: dict[str, Any], where: str) -> tuple[EventSpec | None, tuple[str, ...]]:
    """Return the events section (paired on the categories unless it says) and the categories."""
    events = None
    events_pair = None
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
    return events, categories


def _cohort_pattern(raw: dict[str, Any], where: str) -> tuple[str, str] | None:
    """Return the column and the named-group regex that cohorts are read from, if given."""
    if "cohort_pattern" not in raw:
        return None
    section = _section(raw, "cohort_pattern", where, {"column", "regex"})
    regex = _required_str(section, "regex", where, "cohort_pattern.regex")
    try:
        names = regex_names(regex)
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
    return (_required_str(section, "column", where, "cohort_pattern.column"), regex)


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


# a section of the mapping as parsed from YAML: a dict is the edge
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


def _value_list(value: object, key: str, where: str) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if any(isinstance(v, dict | list) for v in items):
        _fail(where, key, "must be a value or a list of plain values")
    return [value_text(v) for v in items]


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
        given = _mapping_time(section["earliest"], TimeSpec(timezone=tz), where, "time.earliest")
        assert given is not None  # None only for a None value, excluded above
        earliest = given
    # ambiguous is checked against its Literal values above; mypy cannot narrow a str to them
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
    """Return a time written in the mapping: a timestamp, or a number from the time origin."""
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
        parsed: datetime | None = (
            pl.DataFrame({"t": [str(value)]})
            .select(absolute_ts(pl.col("t").str.strip_chars(), text_spec))
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
        pairs.append((value_text(source), str(target)))
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
    """Read the ``groups`` section: a group column, a population column, per-group values."""
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
        key = f"groups.values[{value_text(group)!r}]"
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
        rows.append((value_text(group), population, own_start, own_end))
    return GroupSpec(
        column=column,
        population_column=population_column,
        values=tuple(rows),
        start_column=start_column,
        end_column=end_column,
        window_time=window_time,
        open_values=open_values,
    )
