"""Landing files: find them, tell their source, and build the options their parser gets.

``discover`` expands folders and files into ``LandingFile``s (refusing links that lead outside
the landing root, capturing what a source's path pattern names); ``identity_options`` and
``file_options`` give each file's parser its keyword arguments (``--host``/``--run``, the mtime
of logs whose timestamps lack a year). :mod:`pipelines.ingest` parses, validates and loads them.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.sources import IDENTITY_OPTIONS, MTIME_OPTIONS, PARSERS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pipelines.path_patterns import PathPattern

log = logging.getLogger(__name__)


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
is never parsed joined with others (:mod:`pipelines.sources.batch`)."""


@dataclass(frozen=True)
class LandingFile:
    """One file to ingest and the source (parser) it belongs to."""

    path: Path
    source: str
    path_options: tuple[tuple[str, str], ...] = ()
    """``host`` / ``run`` / ``job`` the source's path pattern captured from this file's path."""

    @functools.cached_property
    def resolved(self) -> str:
        """The absolute path with links resolved: what rows record as ``source_file``."""
        return str(self.path.resolve())


def _visible_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def discover(
    paths: Iterable[Path],
    *,
    source: str | None = None,
    path_patterns: Iterable[PathPattern] = (),
) -> list[LandingFile]:
    """Expand folders and files into ``LandingFile``s.

    A folder named after a source (``slurm``, ``kernel``, ...) yields its files; any other folder
    yields the files of its source-named subfolders (a landing root). A file takes its source from
    its parent folder's name. ``source`` overrides all of that. A folder is the landing root of
    what it yields: a file under it that resolves outside it (a symbolic link to a system file) is
    refused; links inside it are fine.

    A file whose path relative to its source folder matches its source's pattern in
    ``path_patterns`` carries the values captured (``path_options``). The source folder of a
    file named on its own is its nearest folder named after its source, else its parent.

    Raises
    ------
    ValueError
        For a path that does not exist, a file whose source cannot be told, or a file that
        resolves outside the folder it was found in (naming the path).
    """
    found: list[LandingFile] = []
    roots: list[Path] = []  # the source folder of each file found
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
            roots.append(_source_folder(path, name))
            continue
        if source is not None or path.name in PARSERS:
            name = source or path.name
            if name not in PARSERS:
                msg = f"unknown source {name!r}; choose one of {sorted(PARSERS)}"
                raise ValueError(msg)
            inside = [LandingFile(p, name) for p in _visible_files(path)]
            roots.extend(path for _ in inside)
        else:
            inside = []
            for sub in sorted(p for p in path.iterdir() if p.is_dir() and p.name in PARSERS):
                files = [LandingFile(p, sub.name) for p in _visible_files(sub)]
                inside.extend(files)
                roots.extend(sub for _ in files)
        _refuse_escapes(path, inside)
        found.extend(inside)
    by_source = {p.source: p for p in path_patterns}
    if not by_source:
        return found
    return [
        _with_path_options(item, root, by_source.get(item.source))
        for item, root in zip(found, roots, strict=True)
    ]


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


def _refuse_escapes(root: Path, files: list[LandingFile]) -> None:
    real_root = Path(os.path.realpath(root))
    for item in files:
        resolved = Path(os.path.realpath(item.path))
        if not resolved.is_relative_to(real_root):
            msg = (
                f"refusing {item.path}: it resolves to {resolved}, outside the landing root "
                f"{real_root}"
            )
            raise ValueError(msg)
        # what ``resolved`` would compute again (Path.resolve is this realpath): keep it
        item.__dict__["resolved"] = str(resolved)


def identity_options(
    files: Iterable[LandingFile],
    *,
    host: str | None = None,
    run: str | None = None,
    time_from_mtime: bool = False,
    job: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Return parser options that name the host, run, job and sample time of files.

    These are for files whose content does not name them
    (``relia ingest --host/--run/--job/--time-from-mtime``), for each source of ``files`` whose
    parser takes them (:data:`pipelines.sources.IDENTITY_OPTIONS`,
    :data:`pipelines.sources.MTIME_OPTIONS`).

    ``time_from_mtime`` is kept as the option ``time_from_mtime=True``, which parsing turns into
    each file's own modification time under the parser's keyword (:func:`file_options`).
    """
    named = {"host": host, "run": run, "job": job}
    given = {k: v for k, v in named.items() if v is not None}
    options: dict[str, dict[str, Any]] = {}
    for source in sorted({f.source for f in files}):
        chosen: dict[str, str | bool] = {
            k: v for k, v in given.items() if k in IDENTITY_OPTIONS.get(source, ())
        }
        if time_from_mtime and source in MTIME_OPTIONS:
            chosen[TIME_FROM_MTIME] = True
        if chosen:
            options[source] = chosen
    return options


TIME_FROM_MTIME = "time_from_mtime"
"""The parser option (set by :func:`identity_options`) that asks for the file's mtime."""


def file_options(item: LandingFile, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the keyword arguments ``item``'s parser gets.

    First what the path gives (the mtime for logs without a year, :data:`OPTION_BUILDERS`; the
    values of the source's path pattern), then ``extra`` (the source's options:
    ``--host``/``--run``/``--job`` win over the path pattern). The option ``time_from_mtime``
    becomes the file's mtime under the parser's keyword (:data:`pipelines.sources.MTIME_OPTIONS`).
    """
    options = OPTION_BUILDERS.get(item.source, _no_options)(item.path)
    options |= dict(item.path_options) | (extra or {})
    if options.pop(TIME_FROM_MTIME, False):
        options[MTIME_OPTIONS[item.source]] = _mtime(item.path)["file_mtime"]
    return options


def _no_options(_path: Path) -> dict[str, Any]:
    return {}


def landing_files(
    landing_dir: Path, *, path_patterns: Iterable[PathPattern] = ()
) -> list[LandingFile]:
    """Return every file under a landing root, refusing links that lead outside it.

    Each comes with what the sources' ``path_patterns`` capture from its path, as in
    :func:`discover`.
    """
    return discover([landing_dir], path_patterns=path_patterns)
