"""Read a fault-log file's records (CSV or JSON) as text, one row per record.

Each record keeps the mapped columns (stripped, the mapping's null values as nulls), its 1-based
line number (``LINE``), its raw text (``RAW``) and a reason to reject it found while reading
(``PRE``: a line that is not UTF-8, a wrong number of fields, a JSON value that is not an
object). ``pipelines.ingest.sources.fault_log`` types them.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from pipelines.ingest.sources.common import REJECT_SCHEMA, split_lines
from pipelines.ingest.sources.fault_log_spec import FaultLogMapping, value_text

_MAX_RAW = 2000  # characters of a JSON record kept in a reject's raw text

# internal column names (shared with fault_log); the double underscore keeps them apart from the
# file's own columns
LINE, RAW, PRE = "__line_no", "__raw", "__pre_reason"


@dataclass(frozen=True)
class Records:
    """The file's records as strings, one row per record, with line numbers and raw text."""

    frame: pl.DataFrame  # the mapped columns plus LINE, RAW, PRE
    n_ignored: int
    file_rejects: pl.DataFrame  # rejects that belong to no record (JSON that stops parsing)


def _detect_format(data: bytes) -> Literal["csv", "json"]:
    head = data.removeprefix(_BOM).lstrip()[:1]
    return "json" if head in (b"[", b"{") else "csv"


def read_records(data: bytes, mapping: FaultLogMapping, source_file: str) -> Records:
    """Read the records of one non-empty file, in the mapping's format (else told by the bytes).

    Parameters
    ----------
    data
        The file's bytes.
    mapping
        The column mapping.
    source_file
        Path named in file-level rejects and errors.

    Returns
    -------
    Records
        The records, the number of lines ignored (headers, blank lines) and file-level rejects.

    Raises
    ------
    ValueError
        When a column named in the mapping is not in the file.
    """
    fmt = mapping.format or _detect_format(data)
    reader = _json_records if fmt == "json" else _csv_records
    return reader(data, mapping, source_file)


def _csv_records(data: bytes, mapping: FaultLogMapping, source_file: str) -> Records:
    lines = split_lines(data)
    nonblank = lines.filter(pl.col("line").str.strip_chars() != "")
    n_blank = lines.height - nonblank.height
    empty = pl.DataFrame(schema=REJECT_SCHEMA)
    if nonblank.height == 0:
        return Records(pl.DataFrame(), n_blank, empty)
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
        meta = body.select(pl.col("line_no").alias(LINE), pl.col("line").alias(RAW), pre.alias(PRE))
        frame = pl.concat([frame, meta], how="horizontal")
    else:
        frame = _csv_quoted(text, body, names, sep)
    return Records(_clean(frame, mapping), 1 + n_blank, empty)


def _csv_quoted(text: str, body: pl.DataFrame, names: list[str], sep: str) -> pl.DataFrame:
    """Read records with quoted line breaks: the csv module tracks where each record starts."""
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
        pl.Series(LINE, starts, dtype=pl.Int64),
        pl.Series(RAW, raws, dtype=pl.String),
        pl.Series(PRE, reasons, dtype=pl.String),
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


def _json_records(data: bytes, mapping: FaultLogMapping, source_file: str) -> Records:
    """Read a JSON array of objects (or one object per line); nested keys are dotted paths."""
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
        raws.append(_utf8(json.dumps(record, ensure_ascii=False)[:_MAX_RAW]))
        if not isinstance(record, dict):
            pre.append("record is not a JSON object")
            record = {}
        else:
            pre.append(None)
        for p in paths:
            value = _json_get(record, p)
            if value is not _MISSING:
                seen[p] = True
            text_value = None if value is _MISSING or value is None else value_text(value)
            values[p].append(None if text_value is None else _utf8(text_value))
        pos = end
    if line_nos:
        _require_columns(mapping, [p for p, ok in seen.items() if ok], source_file)
    frame = pl.DataFrame(
        {
            **{p: pl.Series(p, v, dtype=pl.String) for p, v in values.items()},
            LINE: pl.Series(LINE, line_nos, dtype=pl.Int64),
            RAW: pl.Series(RAW, raws, dtype=pl.String),
            PRE: pl.Series(PRE, pre, dtype=pl.String),
        }
    )
    rejects = pl.DataFrame(file_rejects, schema=REJECT_SCHEMA, orient="row")
    return Records(_clean(frame, mapping), 0, rejects)


def _utf8(text: str) -> str:
    r"""Return ``text`` with any lone surrogate written as ``\ud800``.

    JSON allows ``"\ud800"`` escapes; they are written as the file's undecodable bytes are:
    polars strings must be valid UTF-8.
    """
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


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
