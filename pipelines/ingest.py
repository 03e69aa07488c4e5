"""Ingest landing files: find them, parse, validate, load (one transaction per batch).

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

from pipelines import lake, quality, warehouse
from pipelines.sources import PARSERS, batch
from pipelines.sources.common import Parsed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

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
class ParsedFile:
    """A parsed file waiting for validation and loading (picklable: it may come from a worker)."""

    item: LandingFile
    data: bytes
    sha256: str
    table: str
    parsed: Parsed


def _parse(
    item: LandingFile, data: bytes, sha256: str, extra: dict[str, Any] | None = None
) -> ParsedFile:
    table, parser = PARSERS[item.source]
    options = _OPTION_BUILDERS.get(item.source, lambda _p: {})(item.path) | (extra or {})
    parsed = parser.parse(data, source_file=str(item.path.resolve()), **options)
    return ParsedFile(item, data, sha256, table, parsed)


def parse_files(
    items: list[LandingFile], parser_options: dict[str, dict[str, Any]] | None = None
) -> list[ParsedFile]:
    """Read, hash and parse landing files (the step an ingest can fan out to workers); small
    files of one kind are parsed joined. ``parser_options`` maps a source to extra parser keyword
    arguments, as in :func:`ingest`."""
    extra = parser_options or {}
    return [parsed for chunk in _hashed_chunks(items) for parsed in _parse_read(chunk, extra)]


def _parse_read(
    read: list[tuple[LandingFile, bytes, str]], extra: dict[str, dict[str, Any]]
) -> Iterator[ParsedFile]:
    """Parse files already read; files :mod:`pipelines.sources.batch` can join go in groups."""
    groups: dict[tuple[str, bytes], list[tuple[LandingFile, bytes, str]]] = {}
    for item, data, sha in read:
        parser = PARSERS[item.source][1]
        header = None
        if batch.supports(parser) and item.source not in _OPTION_BUILDERS and not extra.get(
            item.source
        ):
            header = batch.groupable(data)
        if header is None:
            yield _parse(item, data, sha, extra.get(item.source))
        else:
            groups.setdefault((item.source, header), []).append((item, data, sha))
    for (source, _), members in groups.items():
        table, parser = PARSERS[source]
        results = batch.parse_joined(
            parser, [(str(item.path.resolve()), data) for item, data, _ in members]
        )
        for (item, data, sha), parsed in zip(members, results, strict=True):
            yield ParsedFile(item, data, sha, table, parsed)


def _file_load(
    pending: ParsedFile, good: pl.DataFrame, bad: pl.DataFrame, results: list[dict[str, Any]]
) -> warehouse.FileLoad:
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
    return warehouse.FileLoad(
        path=str(pending.item.path.resolve()),
        source=pending.item.source,
        table=pending.table,
        sha256=pending.sha256,
        rows=good,
        rejects=rejects,
        n_ignored=pending.parsed.n_ignored,
        quality_results=tuple(results),
    )


def _validate_and_load(
    con: duckdb.DuckDBPyConnection,
    batch: list[ParsedFile],
    *,
    now: datetime,
    component_classes: list[str],
    lake_dir: Path | None = None,
) -> list[warehouse.LoadCounts]:
    """Validate a batch of parsed files of one table in one GX run and load it in one transaction.

    Each file keeps its own rows, rejects, quality results and lineage row, so it is still
    wholly loaded or not at all.
    """
    table = batch[0].table
    tagged = pl.concat(
        [p.parsed.rows.with_columns(_file=pl.lit(i, pl.Int32)) for i, p in enumerate(batch)],
        how="vertical_relaxed",
    )
    checked = quality.validate(tagged, table=table, now=now, component_classes=component_classes)
    good_parts = checked.good.partition_by("_file", as_dict=True, include_key=False)
    bad_parts = checked.bad.partition_by("_file", as_dict=True, include_key=False)
    loads = []
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
        loads.append(_file_load(pending, good, bad, results))
    return warehouse.load_files(con, loads, lake_dir=lake_dir)


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
    lake_dir: Path | None = None,
    parse_many: Callable[[list[LandingFile]], Iterable[ParsedFile]] | None = None,
) -> list[warehouse.LoadCounts]:
    """Ingest ``files`` into the warehouse at ``db_path`` and rebuild the views.

    Files are read and hashed in chunks (one lookup of the chunk's hashes), parsed (small files
    of one kind joined, :mod:`pipelines.sources.batch`) and validated in batches of about
    ``batch_rows`` rows per raw table (one Great Expectations run per batch: its per-call overhead
    dwarfs a small file); each batch is loaded in one transaction that records every file with
    its rows, so no file is ever half-loaded. ``parser_options`` maps a source to extra parser
    keyword arguments (the fault-log ``mapping``).

    With ``lake_dir``, loaded rows go to Parquet parts under it (:mod:`pipelines.lake`) instead
    of the raw tables, which become views over the lake. ``parse_many`` takes over parsing: it
    gets the files not loaded before and yields their :class:`ParsedFile` in any order (a flow
    fans :func:`parse_files` out to its task runner); validation and loading stay here, in the
    one process that holds the warehouse's write lock.
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
        lake.check_warehouse(con, lake_dir)
        classes = _component_classes(con)
        queues: dict[str, list[ParsedFile]] = {}
        queued_rows: dict[str, int] = {}
        for pending in _parsed_new_files(con, files, extra, parse_many, on_known=emit):
            queue = queues.setdefault(pending.table, [])
            queue.append(pending)
            n_rows = queued_rows.get(pending.table, 0) + pending.parsed.rows.height
            queued_rows[pending.table] = n_rows
            if n_rows >= batch_rows:
                emit(_validate_and_load(con, queue, now=now, component_classes=classes,
                                        lake_dir=lake_dir))  # fmt: skip
                queue.clear()
                queued_rows[pending.table] = 0
        for queue in queues.values():
            if queue:
                emit(_validate_and_load(con, queue, now=now, component_classes=classes,
                                        lake_dir=lake_dir))  # fmt: skip
        if lake_dir is not None:
            lake.attach(con, lake_dir)
        warehouse.create_views(con)
    return results


LOOKUP_FILES = 512
"""Files read and hashed ahead, then looked up in ``raw_ingest_files`` with one query."""
LOOKUP_BYTES = 128 * 2**20
"""...or fewer, when their bytes reach this much (bounded read-ahead memory)."""


def _hashed_chunks(files: list[LandingFile]) -> Iterator[list[tuple[LandingFile, bytes, str]]]:
    chunk: list[tuple[LandingFile, bytes, str]] = []
    size = 0
    for item in files:
        data = item.path.read_bytes()
        chunk.append((item, data, warehouse.file_sha256(data)))
        size += len(data)
        if len(chunk) >= LOOKUP_FILES or size >= LOOKUP_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _parsed_new_files(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    extra: dict[str, dict[str, Any]],
    parse_many: Callable[[list[LandingFile]], Iterable[ParsedFile]] | None,
    *,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
) -> Iterator[ParsedFile]:
    """Parse the files whose bytes were not loaded before (nor seen earlier in this run).

    Files loaded before, and repeats of a file's bytes, go to ``on_known`` at once. Files are
    read and hashed a chunk at a time (:data:`LOOKUP_FILES`, :data:`LOOKUP_BYTES`) and the
    chunk's hashes are looked up in one query. Without ``parse_many`` each new file is parsed as
    it is reached, so one chunk of files at a time is in memory.
    """
    queued: set[str] = set()
    new: list[LandingFile] = []
    for chunk in _hashed_chunks(files):
        before = warehouse.loaded_before(con, [sha for _, _, sha in chunk])
        fresh = []
        for item, data, sha in chunk:
            previous = before.get(sha)
            if previous is not None or sha in queued:
                on_known([previous or _duplicate(item, sha)])
                continue
            queued.add(sha)
            fresh.append((item, data, sha))
        if parse_many is None:
            yield from _parse_read(fresh, extra)
        else:
            new.extend(item for item, _, _ in fresh)
    if new and parse_many is not None:
        yield from parse_many(new)


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
