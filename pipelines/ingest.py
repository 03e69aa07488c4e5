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

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import duckdb

log = logging.getLogger(__name__)

_OPTION_BUILDERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "kernel": lambda path: {
        "file_mtime": datetime.fromtimestamp(path.stat().st_mtime, tz=UTC),
    },
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
    table, parser = PARSERS[item.source]
    previous = warehouse.already_loaded(con, sha)
    if previous is not None:
        return previous
    source_file = str(item.path.resolve())
    options = _OPTION_BUILDERS.get(item.source, lambda _p: {})(item.path)
    parsed = parser.parse(data, source_file=source_file, **options)
    checked = quality.validate(
        parsed.rows,
        table=table,
        now=now,
        component_classes=component_classes if component_classes is not None else [],
    )
    bad = checked.bad
    validation_rejects = pl.DataFrame(
        {
            "source_file": bad["source_file"] if bad.height else [],
            "line_no": bad["line_no"].cast(pl.Int64) if bad.height else [],
            "raw": _raw_lines(data, bad["line_no"].to_list()) if bad.height else [],
            "reason": bad["reason"] if bad.height else [],
        },
        schema={"source_file": pl.String, "line_no": pl.Int64, "raw": pl.String, "reason": pl.String},
    )
    rejects = pl.concat(
        [
            parsed.rejects.with_columns(stage=pl.lit("parse")),
            validation_rejects.with_columns(stage=pl.lit("validate")),
        ]
    )
    return warehouse.load_file(
        con,
        path=source_file,
        source=item.source,
        table=table,
        sha256=sha,
        rows=checked.good,
        rejects=rejects,
        n_ignored=parsed.n_ignored,
        quality_results=checked.results,
    )


def ingest(
    db_path: Path,
    files: list[LandingFile],
    *,
    lock_timeout_s: float = 60.0,
    on_file: Callable[[warehouse.LoadCounts], None] | None = None,
) -> list[warehouse.LoadCounts]:
    """Ingest ``files`` into the warehouse at ``db_path`` and rebuild the views."""
    now = datetime.now(UTC)
    results = []
    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        classes = _component_classes(con)
        for item in files:
            counts = ingest_file(con, item, now=now, component_classes=classes)
            results.append(counts)
            if on_file is not None:
                on_file(counts)
        warehouse.create_views(con)
    return results


def landing_files(landing_dir: Path) -> list[LandingFile]:
    """Every file under a landing root, refusing links that lead outside it."""
    root = landing_dir.resolve()
    files = discover([landing_dir])
    for item in files:
        resolved = Path(os.path.realpath(item.path))
        if not resolved.is_relative_to(root):
            msg = f"refusing {item.path}: it resolves to {resolved}, outside the landing root {root}"
            raise ValueError(msg)
    return files
