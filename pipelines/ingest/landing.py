"""Landing files: find them, tell their source, and build the options their parser gets.

``discover`` expands folders and files into ``LandingFile``s (marking those the landing fence
refuses, :mod:`pipelines.ingest.fence`; capturing what a source's path pattern names);
``identity_options`` and ``file_options`` give each file's parser its keyword arguments
(``--host``/``--run``, the mtime of logs whose timestamps lack a year).
:mod:`pipelines.ingest` parses, validates and loads them.
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.ingest import fence
from pipelines.ingest.sources import (
    BOOT_TIME_SOURCES,
    IDENTITY_OPTIONS,
    MTIME_OPTIONS,
    PARSERS,
    YEAR_SOURCES,
)
from pipelines.runtime.errors import InputMissingError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import polars as pl

    from pipelines.runtime.path_patterns import PathPattern

log = logging.getLogger(__name__)


# parser keyword options (parse(**options)): a dict is the edge
def _mtime(path: Path) -> dict[str, Any]:
    """Return a file's mtime as the ``file_mtime`` option, for logs whose stamps lack a year.

    Such logs (syslog, torchrun's glog prefix) take the year from the mtime.
    """
    return {"file_mtime": datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)}


OPTION_BUILDERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "kernel": _mtime,
    "elastic": _mtime,
}
"""Per source, what a file's path gives its parser (:func:`file_options`); a source listed here
is never parsed joined with others (:mod:`pipelines.ingest.sources.batch`)."""


@dataclass(frozen=True)
class LandingFile:
    """One file to ingest and the source (parser) it belongs to."""

    path: Path
    source: str
    path_options: tuple[tuple[str, str], ...] = ()
    """``host`` / ``run`` / ``job`` the source's path pattern captured from this file's path."""
    refused: str = ""
    """Why this file is not read (outside its landing root, a named pipe, ...): never opened."""

    @functools.cached_property
    def resolved(self) -> str:
        """The absolute path with links resolved: what rows record as ``source_file``."""
        return str(self.path.resolve())


def discover(
    paths: Iterable[Path],
    *,
    source: str | None = None,
    path_patterns: Iterable[PathPattern] = (),
    allow_outside_root: bool = False,
    max_depth: int = fence.DEFAULT_MAX_DEPTH,
    warnings: list[str] | None = None,
) -> list[LandingFile]:
    """Expand folders and files into ``LandingFile``s, each read or refused on its own.

    A folder named after a source (``slurm``, ``kernel``, ...) yields its files; any other folder
    yields the files of its source-named subfolders (a landing root). A file takes its source from
    its nearest folder named after a source (``landing/kernel/node4/dmesg.log`` is a kernel
    log, as it is when its landing is ingested). ``source`` overrides all of that.

    ``warnings`` (when given) receives one line for each folder of a landing root that is not
    named after a source (its files are not read) and for each folder given that yields no
    file, each naming the known source folders (:func:`unknown_folder_warning`).

    Every file has a landing root (:mod:`pipelines.ingest.fence`): a folder given is the root of
    what it yields; a file named on its own (or by a shell glob) has the folder its source folder
    lies in (``landing`` for ``landing/kernel/kern.log``), or, when no folder of its path is named
    after its source, its own folder. A file that resolves outside its root, a symbolic link loop, a
    link to a folder, a named pipe, a socket or a device, and a folder more than ``max_depth``
    levels below its source folder, come back refused (:attr:`LandingFile.refused`, the reason)
    and are never opened; the others are read. ``allow_outside_root`` reads files outside the
    root (``--allow-outside-root``). Names starting with "." are skipped.

    A file whose path relative to its source folder matches its source's pattern in
    ``path_patterns`` carries the values captured (``path_options``). The source folder of a
    file named on its own is its nearest folder named after its source, else its parent.

    Raises
    ------
    ValueError
        For a path that does not exist, a file whose source cannot be told (naming the path) or
        an unknown ``source`` (naming the closest known one, :func:`check_source`).
    """
    if source is not None:
        check_source(source)
    found: list[LandingFile] = []
    roots: list[Path] = []  # the source folder of each file found
    for given in paths:
        path = Path(given).absolute()
        if not os.path.lexists(path):
            msg = f"{given} does not exist; give a landing folder, a source folder or files"
            raise InputMissingError(msg)
        if not path.is_dir() or (path.is_symlink() and path.parent.name in PARSERS):
            name = source or _nearest_source(path)
            if name is None:
                msg = (
                    f"cannot tell the source of {given}: none of its folders is one of "
                    f"{sorted(PARSERS)}; pass --source"
                )
                raise ValueError(msg)
            folder = _source_folder(path, name)
            root = folder.parent if folder.name == name else folder
            why = fence.refusal(path, fence.real(root), allow_outside_root=allow_outside_root)
            found.append(_landing_file(path, name, why))
            roots.append(folder)
            continue
        real_root = fence.real(path)
        walked: list[tuple[Path, str]] = []  # (source folder, its source)
        n_before = len(found)
        if source is not None or path.name in PARSERS:
            walked.append((path, source or path.name))
        else:
            for sub in sorted(path.iterdir()):
                if sub.name not in PARSERS:
                    if warnings is not None and sub.is_dir() and not sub.name.startswith("."):
                        warnings.append(unknown_folder_warning(Path(given) / sub.name))
                    continue
                if sub.is_symlink():  # a source folder linked from elsewhere: not followed
                    why = fence.refusal(sub, real_root, allow_outside_root=allow_outside_root)
                    if why:
                        found.append(_landing_file(sub, sub.name, why))
                        roots.append(path)
                    continue
                if not sub.is_dir():
                    continue
                walked.append((sub, sub.name))
        for folder, name in walked:
            for entry, why, resolved in fence.walk(
                folder, real_root, max_depth=max_depth, allow_outside_root=allow_outside_root
            ):
                found.append(_landing_file(entry, name, why, resolved))
                roots.append(folder)
        if warnings is not None and len(found) == n_before:
            warnings.append(empty_folder_warning(given, landing=not walked))
    by_source = {p.source: p for p in path_patterns}
    if not by_source:
        return found
    return [
        item if item.refused else _with_path_options(item, root, by_source.get(item.source))
        for item, root in zip(found, roots, strict=True)
    ]


def check_source(source: str) -> None:
    """Raise ``ValueError`` for a source name no parser has, naming the closest known one.

    ``unknown source 'slurmm' (did you mean 'slurm'?)`` (:func:`difflib.get_close_matches`),
    else the list of known sources.
    """
    if source in PARSERS:
        return
    close = difflib.get_close_matches(source, sorted(PARSERS), n=1)
    known = ", ".join(sorted(PARSERS))
    hint = f"did you mean {close[0]!r}?" if close else f"known sources: {known}"
    msg = f"unknown source {source!r} ({hint})"
    raise ValueError(msg)


def _nearest_source(path: Path) -> str | None:
    """Return the source of a file named on its own: its nearest folder named after a source."""
    return next((p.name for p in path.parents if p.name in PARSERS), None)


def unknown_folder_warning(folder: Path) -> str:
    """Return the warning for a folder of a landing root not named after a source.

    It names the folder, the source folders it holds (when it is a landing itself) or else the
    source its name is close to (``nvidia-smi``: did you mean ``nvidia_smi``?), and the known
    source folder names.
    """
    inner = sorted(sub.name for sub in _listed(folder) if sub.name in PARSERS and sub.is_dir())
    close = difflib.get_close_matches(folder.name, sorted(PARSERS), n=1)
    if inner:
        hint = f"; it holds {', '.join(inner)}: give {folder} as a landing"
    elif close:
        hint = f"; did you mean {close[0]!r}?"
    else:
        hint = ""
    return (
        f"{folder}: not a source folder, not read{hint} "
        f"(source folders: {', '.join(sorted(PARSERS))})"
    )


def empty_folder_warning(given: Path, *, landing: bool) -> str:
    """Return the warning for a folder given that yields no file to ingest."""
    what = "no source folder and no file" if landing else "no file"
    return f"{given}: {what} to ingest (source folders: {', '.join(sorted(PARSERS))})"


def _listed(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def _landing_file(path: Path, source: str, refused: str, resolved: str = "") -> LandingFile:
    """Return a ``LandingFile``, its resolved path filled in (a refused one keeps its own path).

    A refused file is never resolved: a symbolic link loop has no end, and where an outside link
    leads is none of the warehouse's business. ``resolved`` is the resolved path when the caller
    knows it (:func:`fence.walk`), else it is resolved here.
    """
    item = LandingFile(path, source, refused=refused)
    # what ``resolved`` would compute again (Path.resolve is this realpath): keep it
    item.__dict__["resolved"] = str(path) if refused else resolved or fence.real(path)
    return item


def _source_folder(path: Path, source: str) -> Path:
    """Return the folder a file named on its own is under.

    That is its nearest folder named after its source, else its parent.
    """
    return next((p for p in path.parents if p.name == source), path.parent)


def _with_path_options(item: LandingFile, root: Path, pattern: PathPattern | None) -> LandingFile:
    if pattern is None:
        return item
    values = pattern.values(item.path.relative_to(root).as_posix())
    if not values:
        log.debug(
            "%s does not match the %s path pattern %r", item.path, item.source, pattern.pattern
        )
        return item
    return replace(item, path_options=tuple(values.items()))


def identity_options(
    files: Iterable[LandingFile],
    *,
    host: str | None = None,
    run: str | None = None,
    time_from_mtime: bool = False,
    job: str | None = None,
    year: int | None = None,
    boot_time: datetime | None = None,
) -> dict[str, dict[str, Any]]:
    """Return parser options that name the host, run, job and sample time of files.

    These are for files whose content does not name them
    (``relia ingest --host/--run/--job/--time-from-mtime``), for each source of ``files`` whose
    parser takes them (:data:`pipelines.ingest.sources.IDENTITY_OPTIONS`,
    :data:`pipelines.ingest.sources.MTIME_OPTIONS`).

    ``time_from_mtime`` is kept as the option ``time_from_mtime=True``, which parsing turns into
    each file's own modification time under the parser's keyword (:func:`file_options`).
    ``year`` (the year logs without one end in, ``--year``) goes to the sources of
    :data:`~pipelines.ingest.sources.YEAR_SOURCES`, ``boot_time`` (``--boot-time``, for
    ``dmesg`` lines in seconds since boot) to those of
    :data:`~pipelines.ingest.sources.BOOT_TIME_SOURCES`.
    """
    named = {"host": host, "run": run, "job": job}
    given = {k: v for k, v in named.items() if v is not None}
    options: dict[str, dict[str, Any]] = {}
    for source in sorted({f.source for f in files}):
        chosen: dict[str, str | bool | int | datetime] = {
            k: v for k, v in given.items() if k in IDENTITY_OPTIONS.get(source, ())
        }
        if time_from_mtime and source in MTIME_OPTIONS:
            chosen[TIME_FROM_MTIME] = True
        if year is not None and source in YEAR_SOURCES:
            chosen["year"] = year
        if boot_time is not None and source in BOOT_TIME_SOURCES:
            chosen["boot_time"] = boot_time
        if chosen:
            options[source] = chosen
    return options


TIME_FROM_MTIME = "time_from_mtime"
"""The parser option (set by :func:`identity_options`) that asks for the file's mtime."""


# parser keyword options (parse(**options)): a dict is the edge
def file_options(item: LandingFile, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the keyword arguments ``item``'s parser gets.

    First what the path gives (the mtime for logs without a year, :data:`OPTION_BUILDERS`; the
    values of the source's path pattern), then ``extra`` (the source's options:
    ``--host``/``--run``/``--job`` win over the path pattern). The option ``time_from_mtime``
    becomes the file's mtime under the parser's keyword
    (:data:`pipelines.ingest.sources.MTIME_OPTIONS`).
    """
    options = OPTION_BUILDERS.get(item.source, _no_options)(item.path)
    options |= dict(item.path_options) | (extra or {})
    if options.pop(TIME_FROM_MTIME, False):
        options[MTIME_OPTIONS[item.source]] = _mtime(item.path)["file_mtime"]
    return options


YEARLESS_FORMATS = frozenset({"syslog", "glog"})
"""``log_format`` values of lines that print no year (kernel syslog, torchrun glog)."""


_SMALL_COLUMN = 10_000
"""Rows up to which a column's values are tested as a Python list rather than by an expression."""


def time_assumption(options: dict[str, Any], rows: pl.DataFrame) -> str:
    """Return what a file's row times rest on that its lines do not print ("" for nothing).

    That is the year of syslog or glog rows (:data:`YEARLESS_FORMATS`) parsed without a
    ``year`` option: taken from the file's modification time (``file_mtime``). The text names
    the option that states it instead.
    """
    mtime = options.get("file_mtime")
    if options.get("year") is not None or options.get("dated") is not None:
        return ""
    if mtime is None or "log_format" not in rows.columns:
        return ""
    formats = rows.get_column("log_format")
    # a polars expression costs about a millisecond a call (once per file of a landing): a small
    # column is tested as a Python list, some 100x faster; a large one by the expression
    if formats.len() <= _SMALL_COLUMN:
        yearless = not YEARLESS_FORMATS.isdisjoint(formats.to_list())
    else:
        yearless = bool(formats.is_in(YEARLESS_FORMATS).any())
    if not yearless:
        return ""
    return (
        f"year {mtime.year} taken from the file's modification time; give --year "
        "(RELIA_LOG_YEAR) if the log is older"
    )


_SYSLOG = rb"[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} "
_SYSLOG_FIRST_LINE = re.compile(_SYSLOG)
_SYSLOG_LINE = re.compile(rb"\n" + _SYSLOG)
"""A syslog line (``Jan  1 00:00:00 ``): the first line matched, the others searched after a
literal newline (some 15x faster than a multi-line ``^`` over a kernel log with no such line)."""
_DATED = (
    rb"(?:\[[A-Z][a-z]{2} ([A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4})\]"
    rb"|([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}))"
)
"""What opens a line with a full date: ``dmesg -T``'s ``[Wed Jan 10 13:04:04 2024]`` or ISO 8601."""
_DATED_FIRST_LINE = re.compile(_DATED)
_DATED_LINE = re.compile(rb"\n" + _DATED)
"""A dated line after the first (a literal newline first: searched some 4x faster than ``^``)."""


# parser keyword options (parse(**options)): a dict is the edge
def content_options(source: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """Return ``options`` and, for a kernel log with syslog lines and no ``year``, its dates.

    The option ``dated`` (:func:`dated_lines`) lets syslog lines take their year from the
    file's own dated lines instead of its modification time.
    """
    if source != "kernel" or options.get("year") is not None:
        return options
    if not (_SYSLOG_FIRST_LINE.match(data) or _SYSLOG_LINE.search(data)):
        return options
    dated = dated_lines(data)
    return options if dated is None else options | {"dated": dated}


def dated_lines(data: bytes) -> tuple[int, datetime, int, datetime] | None:
    """Return the first and last line that open with a full date (number, UTC time).

    Only when every such line is in one year (None otherwise, or when there is none): that is
    the year of the file's yearless lines between them; see the ``dated`` option of
    :func:`pipelines.ingest.sources.xid.parse`. Times are read to the second; an ISO time's offset
    is left out (taken as UTC): the year is what matters.
    """
    found: list[tuple[int, datetime]] = []
    first_line = _DATED_FIRST_LINE.match(data)
    for match in (first_line, *_DATED_LINE.finditer(data)):
        if match is None:
            continue
        ctime, iso = match.group(1), match.group(2)
        try:
            if ctime:
                text = " ".join(ctime.decode().split())  # "Jan  1" -> "Jan 1"
                when = datetime.strptime(text, "%b %d %H:%M:%S %Y")
            else:
                when = datetime.fromisoformat(iso.decode())
        except ValueError:
            continue
        line_start = match.start() if match is first_line else match.start() + 1
        found.append((line_start, when.replace(tzinfo=UTC)))
    if not found or len({when.year for _, when in found}) != 1:
        return None
    (first_at, first), (last_at, last) = found[0], found[-1]
    return data.count(b"\n", 0, first_at) + 1, first, data.count(b"\n", 0, last_at) + 1, last


# parser keyword options (parse(**options)): a dict is the edge
def _no_options(_path: Path) -> dict[str, Any]:
    return {}


def landing_files(
    landing_dir: Path,
    *,
    path_patterns: Iterable[PathPattern] = (),
    allow_outside_root: bool = False,
    max_depth: int = fence.DEFAULT_MAX_DEPTH,
) -> list[LandingFile]:
    """Return every file under a landing root, those that may not be read marked refused.

    Each comes with what the sources' ``path_patterns`` capture from its path, as in
    :func:`discover` (which tells what is refused and why).
    """
    return discover(
        [landing_dir],
        path_patterns=path_patterns,
        allow_outside_root=allow_outside_root,
        max_depth=max_depth,
    )
