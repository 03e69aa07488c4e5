"""Ingest landing files: find them, parse, validate, load (one transaction per file).

Every in-scope line of a file ends as a loaded row or a quarantine row with a reason (parse rejects
and rows failing a Great Expectations check), so ``n_read = n_loaded + n_quarantined`` per file.
Files are keyed by content hash: the same bytes are never loaded twice.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines import quality, warehouse
from pipelines.sources import PARSERS
from pipelines.sources.common import Parsed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import duckdb

log = logging.getLogger(__name__)

def _mtime(path: Path) -> dict[str, Any]:
    """Logs whose timestamps lack a year (syslog, torchrun's glog prefix) take it from the mtime."""
    return {"file_mtime": datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)}


_OPTION_BUILDERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "kernel": _mtime,
    "elastic": _mtime,
}


@dataclass(frozen=True)
class LandingFile:
    """One file to ingest and the source (parser) it belongs to."""

    path: Path
    source: str


def _visible_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def discover(paths: Iterable[Path], *, source: str | None = None) -> list[LandingFile]:
    """Expand folders and files into ``LandingFile``s.

    A folder named after a source (``slurm``, ``kernel``, ...) yields its files; any other folder
    yields the files of its source-named subfolders (a landing root). A file takes its source from
    its parent folder's name. ``source`` overrides all of that.

    Raises
    ------
    ValueError
        For a path that does not exist, or a file whose source cannot be told.
    """
    found: list[LandingFile] = []
    for path in paths:
        if not path.exists():
            msg = f"{path} does not exist; give a landing folder, a source folder or files"
            raise ValueError(msg)
        if path.is_file():
            name = source or path.parent.name
            if name not in PARSERS:
                msg = (
                    f"cannot tell the source of {path}: its folder is not one of "
                    f"{sorted(PARSERS)}; pass --source"
                )
                raise ValueError(msg)
            found.append(LandingFile(path, name))
        elif source is not None or path.name in PARSERS:
            name = source or path.name
            if name not in PARSERS:
                msg = f"unknown source {name!r}; choose one of {sorted(PARSERS)}"
                raise ValueError(msg)
            found.extend(LandingFile(p, name) for p in _visible_files(path))
        else:
            for sub in sorted(p for p in path.iterdir() if p.is_dir() and p.name in PARSERS):
                found.extend(LandingFile(p, sub.name) for p in _visible_files(sub))
    return found


def _component_classes(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute("select component_class from seed_component_class").fetchall()
    return [r[0] for r in rows]


def _raw_lines(data: bytes, line_nos: list[int]) -> list[str]:
    lines = data.split(b"\n")
    return [
        lines[n - 1].rstrip(b"\r").decode("utf-8", errors="backslashreplace")
        if 0 < n <= len(lines)
        else ""
        for n in line_nos
    ]


@dataclass
class _Pending:
    """A parsed file waiting for validation and loading."""

    item: LandingFile
    data: bytes
    sha256: str
    table: str
    parsed: Parsed


def _parse(
    item: LandingFile, data: bytes, sha256: str, extra: dict[str, Any] | None = None
) -> _Pending:
    table, parser = PARSERS[item.source]
    options = _OPTION_BUILDERS.get(item.source, lambda _p: {})(item.path) | (extra or {})
    parsed = parser.parse(data, source_file=str(item.path.resolve()), **options)
    return _Pending(item, data, sha256, table, parsed)


def _load(
    con: duckdb.DuckDBPyConnection,
    pending: _Pending,
    good: pl.DataFrame,
    bad: pl.DataFrame,
    results: list[dict[str, Any]],
) -> warehouse.LoadCounts:
    validation_rejects = pl.DataFrame(
        {
            "source_file": bad["source_file"],
            "line_no": bad["line_no"].cast(pl.Int64),
            "raw": pl.Series(_raw_lines(pending.data, bad["line_no"].to_list()), dtype=pl.String),
            "reason": bad["reason"],
        }
    )
    rejects = pl.concat(
        [
            pending.parsed.rejects.with_columns(stage=pl.lit("parse")),
            validation_rejects.with_columns(stage=pl.lit("validate")),
        ]
    )
    return warehouse.load_file(
        con,
        path=str(pending.item.path.resolve()),
        source=pending.item.source,
        table=pending.table,
        sha256=pending.sha256,
        rows=good,
        rejects=rejects,
        n_ignored=pending.parsed.n_ignored,
        quality_results=results,
    )


def _validate_and_load(
    con: duckdb.DuckDBPyConnection,
    batch: list[_Pending],
    *,
    now: datetime,
    component_classes: list[str],
) -> list[warehouse.LoadCounts]:
    """Validate a batch of parsed files of one table in one GX run, then load file by file."""
    table = batch[0].table
    tagged = pl.concat(
        [p.parsed.rows.with_columns(_file=pl.lit(i, pl.Int32)) for i, p in enumerate(batch)],
        how="vertical_relaxed",
    )
    checked = quality.validate(tagged, table=table, now=now, component_classes=component_classes)
    good_parts = checked.good.partition_by("_file", as_dict=True, include_key=False)
    bad_parts = checked.bad.partition_by("_file", as_dict=True, include_key=False)
    counts = []
    for i, pending in enumerate(batch):
        good = good_parts.get((i,), pending.parsed.rows.head(0))
        bad = bad_parts.get((i,), checked.bad.head(0).drop("_file"))
        n_bad = {r["expectation"]: 0 for r in checked.results}
        for reason in bad["reason"].to_list():
            for label in n_bad:
                n_bad[label] += label in reason
        results = [
            {**r, "success": n_bad[r["expectation"]] == 0, "n_unexpected": n_bad[r["expectation"]]}
            for r in checked.results
        ]
        counts.append(_load(con, pending, good, bad, results))
    return counts


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    item: LandingFile,
    *,
    now: datetime | None = None,
    component_classes: list[str] | None = None,
) -> warehouse.LoadCounts:
    """Parse, validate and load one file (skipped when the same bytes were loaded before)."""
    data = item.path.read_bytes()
    sha = warehouse.file_sha256(data)
    previous = warehouse.already_loaded(con, sha)
    if previous is not None:
        return previous
    return _validate_and_load(
        con,
        [_parse(item, data, sha)],
        now=now or datetime.now(UTC),
        component_classes=component_classes or _component_classes(con),
    )[0]


def ingest(
    db_path: Path,
    files: list[LandingFile],
    *,
    lock_timeout_s: float = 60.0,
    batch_rows: int = 500_000,
    parser_options: dict[str, dict[str, Any]] | None = None,
    on_file: Callable[[warehouse.LoadCounts], None] | None = None,
) -> list[warehouse.LoadCounts]:
    """Ingest ``files`` into the warehouse at ``db_path`` and rebuild the views.

    Files are parsed one by one and validated in batches of about ``batch_rows`` rows per raw
    table (one Great Expectations run per batch: its per-call overhead dwarfs a small file), then
    each file is loaded in its own transaction. ``parser_options`` maps a source to extra parser
    keyword arguments (the fault-log ``mapping``).
    """
    extra = parser_options or {}
    if any(f.source == "fault_log" for f in files) and "mapping" not in extra.get("fault_log", {}):
        msg = "fault_log files need a column mapping: pass --mapping mapping.yaml"
        raise ValueError(msg)
    now = datetime.now(UTC)
    results: list[warehouse.LoadCounts] = []

    def emit(counts: list[warehouse.LoadCounts]) -> None:
        results.extend(counts)
        if on_file is not None:
            for c in counts:
                on_file(c)

    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        classes = _component_classes(con)
        queues: dict[str, list[_Pending]] = {}
        queued: set[str] = set()
        for item in files:
            data = item.path.read_bytes()
            sha = warehouse.file_sha256(data)
            previous = warehouse.already_loaded(con, sha)
            if previous is not None or sha in queued:
                emit([previous or _duplicate(item, sha)])
                continue
            pending = _parse(item, data, sha, extra.get(item.source))
            queued.add(sha)
            queue = queues.setdefault(pending.table, [])
            queue.append(pending)
            if sum(p.parsed.rows.height for p in queue) >= batch_rows:
                emit(_validate_and_load(con, queue, now=now, component_classes=classes))
                queue.clear()
        for queue in queues.values():
            if queue:
                emit(_validate_and_load(con, queue, now=now, component_classes=classes))
        warehouse.create_views(con)
    return results


def _duplicate(item: LandingFile, sha: str) -> warehouse.LoadCounts:
    """Counts for a file whose bytes equal another file's in the same run (loaded once)."""
    table, _ = PARSERS[item.source]
    return warehouse.LoadCounts(str(item.path.resolve()), item.source, table, 0, 0, 0, 0, True)


def landing_files(landing_dir: Path) -> list[LandingFile]:
    """Every file under a landing root, refusing links that lead outside it."""
    root = landing_dir.resolve()
    files = discover([landing_dir])
    for item in files:
        resolved = Path(os.path.realpath(item.path))
        if not resolved.is_relative_to(root):
            msg = (
                f"refusing {item.path}: it resolves to {resolved}, outside the landing root {root}"
            )
            raise ValueError(msg)
    return files
