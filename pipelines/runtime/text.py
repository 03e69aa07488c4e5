r"""Telemetry text made safe to show: no terminal control sequences, no control characters.

Strings from telemetry (job names, hosts, states, raw lines, file names) reach a terminal (the
CLI's tables, CSV, markdown, log and error lines), Prefect's artifacts and the weekly report.
There they must be data, never instructions: an ANSI escape in a job name must not clear a
screen, set a window title or write the clipboard (OSC), or ring a bell, and a bidirectional
override must not reorder what a reader sees. :func:`printable` is the one sanitiser of every
such output. It removes whole escape sequences (CSI ``ESC [ ... final``, OSC ``ESC ] ... BEL``
or ``ESC \``, DCS, their 8-bit forms, and two-byte ``ESC x`` escapes), then every remaining C0
and C1 control character (U+0000-U+001F, U+007F-U+009F), and shows each bidirectional control
(U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) as its code, ``<U+202E>``: visible,
neither obeyed nor silently dropped. :func:`install_log_sanitiser` applies it to the messages
of relia's own loggers (and of Prefect's flow and task run loggers), whichever handler shows
them.
"""

from __future__ import annotations

import logging
import re
from typing import Any

__all__ = [
    "BIDI_CONTROLS",
    "SANITISED_LOGGERS",
    "install_log_sanitiser",
    "printable",
    "printable_values",
]

_SEQUENCES = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x9c\x1b]*(?:\x07|\x9c|\x1b\\)?"  # OSC ... BEL / ST
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI parameters, intermediates, final byte
    r"|(?:\x1bP|\x90)[^\x9c\x1b]*(?:\x9c|\x1b\\)?"  # DCS ... ST
    r"|\x1b[ -/]*[0-~]?"  # two-byte escapes (ESC c, ESC 7, ...)
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_AND_LINES = re.compile(r"[\x00-\x1f\x7f-\x9f]")
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Unicode's bidirectional formatting characters (marks, embeddings, overrides, isolates)."""
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def printable(text: str, *, lines: bool = False) -> str:
    r"""``text`` without escape sequences and control characters, its bidi controls visible.

    Parameters
    ----------
    text
        Any string, typically from telemetry.
    lines
        Keep tabs and line breaks (multi-line messages); otherwise they become spaces.

    Returns
    -------
    str
        The text, safe to write to a terminal: no C0 or C1 control character, no escape
        sequence, and every bidirectional control shown as ``<U+XXXX>``.

    Examples
    --------
    >>> printable("gpu0001\x1b[2J\x07 \x1b]0;pwned\x07ok\x9b31m!")
    'gpu0001 ok!'
    >>> printable("invoice_\u202egnp.sh")
    'invoice_<U+202E>gnp.sh'
    """
    text = _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", _SEQUENCES.sub("", text))
    if lines:
        return _CONTROLS.sub("", text.replace("\r\n", "\n"))
    return _CONTROLS_AND_LINES.sub(lambda m: " " if m.group() in "\t\n\r" else "", text)


def printable_values(value: Any, *, lines: bool = False) -> Any:
    """Return ``value`` with every string in it (mapping keys, items, nested) made printable.

    Mappings stay mappings (a ``dict``), lists and tuples become lists, anything that is not a
    string is kept as it is.
    """
    if isinstance(value, str):
        return printable(value, lines=lines)
    if isinstance(value, dict):
        return {
            printable_values(k, lines=lines): printable_values(v, lines=lines)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [printable_values(v, lines=lines) for v in value]
    return value


SANITISED_LOGGERS = ("pipelines", "models", "synth", "prefect.flow_runs", "prefect.task_runs")
"""Loggers (and their children) whose messages :func:`install_log_sanitiser` makes printable."""


def _sanitised(name: str) -> bool:
    return any(name == root or name.startswith(f"{root}.") for root in SANITISED_LOGGERS)


def install_log_sanitiser() -> None:
    """Make every message of :data:`SANITISED_LOGGERS` printable when its record is made.

    The process's log-record factory is wrapped once (a second call changes nothing): a record
    of one of those loggers gets its formatted message through :func:`printable` (line breaks
    kept) and no arguments left, so no handler (a terminal's, a file's, Prefect's) sees an
    escape sequence or a control character from telemetry. Other loggers' records are kept.
    """
    previous = logging.getLogRecordFactory()
    if getattr(previous, "relia_printable", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _sanitised(record.name):
            try:
                message = record.getMessage()
            except (TypeError, ValueError):  # a bad format: logging reports it when emitting
                return record
            record.msg, record.args = printable(message, lines=True), ()
        return record

    factory.relia_printable = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
