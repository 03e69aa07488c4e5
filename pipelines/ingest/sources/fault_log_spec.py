"""The fault-log column mapping's types, and how a ``TimeSpec`` reads text as UTC time.

``pipelines.ingest.sources.fault_log_mapping`` validates a YAML mapping into a ``FaultLogMapping``;
``pipelines.ingest.sources.fault_log_records`` reads a file's records with it and
``pipelines.ingest.sources.fault_log`` types them. The helpers here (``absolute_ts``, ``time_of``,
``time_expr``, ``time_hint``, ``value_text``, ``regex_names``) are the ones both sides share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import polars as pl

from pipelines.ingest.sources.common import EARLIEST, UTC_TS

if TYPE_CHECKING:
    from datetime import datetime

TIME_UNITS_S: dict[str, float] = {"days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0}

_ISO_ZONED = ("%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f%#z")
_ISO_NAIVE = ("%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d")


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
        """Return the rule's ``{source value: component_class}``."""
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


def value_text(value: object) -> str:
    """Return a YAML or JSON scalar as the text a file's cell would hold (``true``, ``3``, ``a``).

    Parameters
    ----------
    value
        A plain value from a mapping or a JSON record.

    Returns
    -------
    str
        Booleans as ``true``/``false``, strings stripped, anything else as JSON.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value)


def regex_names(regex: str) -> list[str]:
    """Return the named groups of ``regex`` as polars compiles it (Rust ``regex``, which runs it).

    Parameters
    ----------
    regex
        A ``cohort_pattern.regex``.

    Returns
    -------
    list[str]
        The names of its named groups, in order.

    Raises
    ------
    polars.exceptions.PolarsError
        When that engine rejects the pattern (look-around, back-references: Python's ``re``
        accepts them, the parser could not run them).
    """
    dtype = pl.Series([""], dtype=pl.String).str.extract_groups(regex).dtype
    assert isinstance(dtype, pl.Struct)
    return [f.name for f in dtype.fields if not f.name.isdigit()]


def absolute_ts(raw: pl.Expr, spec: TimeSpec) -> pl.Expr:
    """Text to a UTC timestamp (null when it does not parse or the wall time does not exist).

    Parameters
    ----------
    raw
        The text, as a polars expression.
    spec
        The format, time zone and DST rule to read it with.

    Returns
    -------
    pl.Expr
        A ``Datetime(us, UTC)`` expression.
    """
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


def time_expr(column: str, spec: TimeSpec) -> pl.Expr:
    """Return a time column as ``Datetime(us, UTC)``: absolute text, or a number from the origin.

    Parameters
    ----------
    column
        The column holding the time text.
    spec
        How the file writes times.

    Returns
    -------
    pl.Expr
        ``time_of(pl.col(column), spec)``.
    """
    return time_of(pl.col(column), spec)


def time_of(raw: pl.Expr, spec: TimeSpec) -> pl.Expr:
    """Text as ``Datetime(us, UTC)``: absolute text, or a number from the origin.

    Parameters
    ----------
    raw
        The text, as a polars expression.
    spec
        How the file writes times.

    Returns
    -------
    pl.Expr
        A ``Datetime(us, UTC)`` expression, null where the text is not a time.
    """
    if not spec.relative:
        return absolute_ts(raw, spec)
    seconds = raw.cast(pl.Float64, strict=False) * TIME_UNITS_S[str(spec.unit)]
    micros = pl.when(seconds.is_finite() & (seconds.abs() < 1e13)).then(seconds * 1e6)
    return pl.lit(spec.origin, dtype=UTC_TS) + pl.duration(
        microseconds=micros.round(0).cast(pl.Int64)
    )


def time_hint(spec: TimeSpec) -> str:
    """How ``spec`` expects a time to be written, for a reject reason.

    Parameters
    ----------
    spec
        How the file writes times.

    Returns
    -------
    str
        ``a number of days`` or ``format ... in <zone>``.
    """
    if spec.relative:
        return f"a number of {spec.unit}"
    return f"format {spec.format or 'ISO 8601'} in {spec.timezone}"
