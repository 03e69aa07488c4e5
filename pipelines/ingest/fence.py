"""The landing fence: what an entry of the landing is, and whether it may be read.

Every way into an ingest (a landing root, a source folder, files named on the command line or by
a shell glob, the ``ingest-telemetry`` flow, tracked runs) goes through :func:`refusal` for each
file and :func:`walk` for each folder. A file is read only when it is a regular file, or a link to
one, that resolves inside its landing root; anything else is refused with a reason, one entry
each, and never opened (opening a named pipe blocks). Folders are walked without recursion, at
most ``max_depth`` levels below the source folder.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.runtime.settings import DEFAULT_LANDING_MAX_DEPTH

if TYPE_CHECKING:
    from collections.abc import Iterator

DEFAULT_MAX_DEPTH = DEFAULT_LANDING_MAX_DEPTH
"""Folder levels below a source folder an ingest walks (``RELIA_LANDING_MAX_DEPTH``)."""

OUTSIDE = "resolves outside the landing root"
"""The reason of a file refused because it resolves outside its landing root."""


def real(path: Path | str) -> str:
    """Return ``path`` made absolute, with every link resolved (never raises on a loop)."""
    return os.path.realpath(path)


def inside(resolved: str, real_root: str) -> bool:
    """Return whether the resolved path ``resolved`` lies in the resolved folder ``real_root``."""
    return Path(resolved).is_relative_to(real_root)


def _special(mode: int) -> str:
    """Return what a non-regular, non-folder entry is, in words ("" for a regular file)."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode):
        return ""
    return "not a regular file"


def refusal(
    path: Path, real_root: str, *, allow_outside_root: bool = False, walked: bool = False
) -> str:
    """Return why ``path`` may not be read ("" when it may), without opening it.

    Parameters
    ----------
    path
        A file of the landing (not a folder given on its own).
    real_root
        Its landing root, links resolved (:func:`real`).
    allow_outside_root
        Read files that resolve outside ``real_root`` (``--allow-outside-root``).
    walked
        ``path`` was found by :func:`walk`, which enters no link: unless it is a link itself it
        lies inside the root, and is not resolved again.

    Returns
    -------
    str
        "" for a regular file (or a link to one) inside the root; else the reason: a symbolic
        link loop, a broken symbolic link, :data:`OUTSIDE`, a link to a folder (not followed), a
        named pipe, a socket or a device (or a link to one).
    """
    try:
        own = path.lstat()
    except OSError as error:
        return f"cannot be read: {error.strerror}"
    link = stat.S_ISLNK(own.st_mode)
    if link:
        try:
            target = path.stat()
        except OSError as error:
            if error.errno == errno.ELOOP:
                return "symbolic link loop"
            return "a broken symbolic link"
    else:
        target = own
    if (link or not walked) and not allow_outside_root and not inside(real(path), real_root):
        return OUTSIDE
    if stat.S_ISDIR(target.st_mode):
        return "a link to a folder, not followed" if link else "a folder"
    kind = _special(target.st_mode)
    if kind and link:
        return f"a link to {kind.removeprefix('a ')}, not followed"
    return kind


def _child(real_folder: str, name: str) -> str:
    """Return the resolved path of ``name`` (not a link) in the resolved folder ``real_folder``."""
    return f"{real_folder.rstrip('/')}/{name}"


def walk(
    folder: Path, real_root: str, *, max_depth: int, allow_outside_root: bool = False
) -> Iterator[tuple[Path, str, str]]:
    """Yield every entry under ``folder``: why it may not be read ("" when it may), resolved path.

    The walk keeps an explicit stack of folders (no recursion, so no depth makes it crash) and
    enters no link. Names starting with "." are skipped, folders included. A folder more than
    ``max_depth`` levels below ``folder`` is yielded, not entered, with the reason; so is a
    folder that cannot be listed. Entries come in path order.

    The resolved path (what :func:`real` gives) is "" for an entry refused; a regular file
    resolves as its folder's resolved path and its name (the walk enters no link, so only
    ``folder`` itself is resolved, once), a link by :func:`real`. A regular file (its type is
    in the folder's listing) is not looked at again.
    """
    found: list[tuple[Path, str, str]] = []
    stack: list[tuple[Path, int, str]] = [(folder, 0, real(folder))]
    while stack:
        current, depth, real_current = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = [e for e in listing if not e.name.startswith(".")]
        except OSError as error:
            found.append((current, f"folder cannot be listed: {error.strerror}", ""))
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                is_folder = is_file = False
            if is_file:  # a regular file, not a link: inside the root, nothing to refuse
                found.append((path, "", _child(real_current, entry.name)))
            elif not is_folder:
                why = refusal(path, real_root, allow_outside_root=allow_outside_root, walked=True)
                found.append((path, why, "" if why else real(path)))
            elif depth >= max_depth:
                found.append(
                    (
                        path,
                        f"a folder more than {max_depth} levels below its source folder, not read",
                        "",
                    )
                )
            else:
                stack.append((path, depth + 1, _child(real_current, entry.name)))
    found.sort(key=lambda item: item[0].parts)  # Path order, without Path comparisons
    yield from found
