"""Path patterns: a landing layout that names a file's host, run or job (``{host}/{run}.log``).

A pattern belongs to a source and is matched against a file's path relative to the source's
landing folder (``elastic/gpu0001/llm-3.log`` → ``gpu0001/llm-3.log``), with ``/`` between folders
whatever the platform. ``{host}`` and ``{run}`` capture one or more characters within one folder
or file name; ``*`` matches any characters within one folder or file name; everything else is
literal. ``{job}`` (training logs: ``training={job}/*``) captures the Slurm job id the same
way. The whole relative path must match; a file that does not gets nothing from the pattern.

Captured values are parser options (``host=`` / ``run=`` / ``job=``) below what the content names
and the ``--host`` / ``--run`` / ``--job`` options, above a parser's own file-name convention
(Slurm's ``slurm-<id>.out`` for training logs). A placeholder is allowed only for a source whose
parser takes that option (:data:`~pipelines.runtime.source_names.IDENTITY_OPTIONS`). Patterns
come from settings (``RELIA_PATH_PATTERNS``, :class:`pipelines.runtime.settings.Settings`), written
``source=pattern`` and separated by ``;``::

    RELIA_PATH_PATTERNS='elastic={host}/{run}.log*;kernel={host}/*;training={host}/{job}.log'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.runtime.source_names import IDENTITY_OPTIONS, RAW_TABLES

PLACEHOLDERS = ("host", "run", "job")
"""The names a pattern may capture."""

_TOKEN = re.compile(r"\{([^{}]*)\}|\*|[{}]")


class PathPatternError(ValueError):
    """A path pattern setting that cannot be used (the message says how to fix it)."""


@dataclass(frozen=True)
class PathPattern:
    """One source's path pattern, checked and compiled.

    Attributes
    ----------
    source
        The landing folder (source) whose files it applies to.
    pattern
        The pattern as written.
    names
        The placeholders it captures, in order.
    """

    source: str
    pattern: str
    names: tuple[str, ...]
    regex: re.Pattern[str]

    def values(self, relative: str) -> dict[str, str]:
        """Return the values a relative path gives.

        The values ``relative`` (a path under the source folder, ``/``-separated) gives;
        empty when it does not match.
        """
        match = self.regex.fullmatch(relative)
        return {} if match is None else dict(match.groupdict())


def compile_pattern(source: str, pattern: str, *, takes: tuple[str, ...]) -> PathPattern:
    """Check and compile ``pattern`` for ``source``, whose parser takes the options ``takes``.

    Raises
    ------
    PathPatternError
        For an empty or absolute pattern, a ``..`` folder, an unknown or repeated placeholder, a
        stray brace, a placeholder the source's parser does not take, or no placeholder at all.
    """
    where = f"path pattern {source}={pattern!r}"
    if not pattern or pattern.startswith("/") or ".." in pattern.split("/"):
        msg = f"{where}: write a path relative to the {source}/ folder, e.g. {{host}}/{{run}}.log"
        raise PathPatternError(msg)
    parts: list[str] = []
    names: list[str] = []
    at = 0
    for token in _TOKEN.finditer(pattern):
        parts.append(re.escape(pattern[at : token.start()]))
        at = token.end()
        name = token.group(1)
        if token.group(0) == "*":
            parts.append("[^/]*")
            continue
        if name is None:
            msg = f"{where}: stray {token.group(0)!r}; placeholders are {_listed(PLACEHOLDERS)}"
            raise PathPatternError(msg)
        if name not in PLACEHOLDERS:
            use = " or ".join(f"{{{n}}}" for n in takes) if "job" in takes else "{host} or {run}"
            msg = f"{where}: unknown placeholder {{{name}}}; use {use}"
            raise PathPatternError(msg)
        if name not in takes:
            msg = f"{where}: the {source} parser takes no {name}; it takes {_listed(takes)}"
            raise PathPatternError(msg)
        if name in names:
            msg = f"{where}: {{{name}}} appears twice; capture it once"
            raise PathPatternError(msg)
        names.append(name)
        parts.append(f"(?P<{name}>[^/]+?)")
    parts.append(re.escape(pattern[at:]))
    if not names:
        wanted = " or ".join(f"{{{name}}}" for name in takes)
        msg = f"{where}: it captures nothing; put {wanted} in it"
        raise PathPatternError(msg)
    return PathPattern(source, pattern, tuple(names), re.compile("".join(parts)))


def parse_patterns(text: str | dict[str, str]) -> tuple[PathPattern, ...]:
    """Path patterns from the setting ``source=pattern;source=pattern`` (or a mapping).

    Raises
    ------
    PathPatternError
        For an entry without ``=``, a source named twice or unknown, a source whose parser takes
        no host, run or job, or a pattern :func:`compile_pattern` refuses.
    """
    if not text:
        return ()
    if isinstance(text, dict):
        entries = list(text.items())
    else:
        entries = []
        for entry in (e.strip() for e in text.split(";")):
            if not entry:
                continue
            source, sep, pattern = entry.partition("=")
            if not sep:
                msg = f"path pattern {entry!r}: write source=pattern, e.g. elastic={{host}}/*.log"
                raise PathPatternError(msg)
            entries.append((source.strip(), pattern.strip()))
    patterns: dict[str, PathPattern] = {}
    for source, pattern in entries:
        if source in patterns:
            msg = f"path pattern for {source} given twice; keep one"
            raise PathPatternError(msg)
        takes = IDENTITY_OPTIONS.get(source)
        if takes is None:
            known = source in RAW_TABLES
            what = "its parser takes no host or run (nor job)" if known else "not a source"
            msg = (
                f"path pattern for {source!r}: {what}; patterns apply to "
                f"{_listed(sorted(IDENTITY_OPTIONS))}"
            )
            raise PathPatternError(msg)
        patterns[source] = compile_pattern(source, pattern, takes=takes)
    return tuple(patterns.values())


def _listed(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"{{{n}}}" if n in PLACEHOLDERS else n for n in names)
