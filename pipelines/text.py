r"""Telemetry text made safe to show: no terminal control sequences, no control characters.

Strings from telemetry (job names, hosts, states, raw lines) reach a terminal (the CLI) and the
weekly report. There they must be data, never instructions: an ANSI escape in a job name must not
clear a screen, set a window title (OSC) or ring a bell. :func:`printable` removes whole escape
sequences (CSI ``ESC [ ... final``, OSC ``ESC ] ... BEL`` or ``ESC \``, their 8-bit forms, and
two-byte ``ESC x`` escapes) and then every remaining C0 and C1 control character (U+0000-U+001F,
U+007F-U+009F).
"""

from __future__ import annotations

import re

_SEQUENCES = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x9c\x1b]*(?:\x07|\x9c|\x1b\\)?"  # OSC ... BEL / ST
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI parameters, intermediates, final byte
    r"|(?:\x1bP|\x90)[^\x9c\x1b]*(?:\x9c|\x1b\\)?"  # DCS ... ST
    r"|\x1b[ -/]*[0-~]?"  # two-byte escapes (ESC c, ESC 7, ...)
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_AND_LINES = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str, *, lines: bool = False) -> str:
    r"""``text`` without escape sequences and control characters.

    Parameters
    ----------
    text
        Any string, typically from telemetry.
    lines
        Keep tabs and line breaks (multi-line messages); otherwise they become spaces.

    Examples
    --------
    >>> printable("gpu0001\x1b[2J\x07 \x1b]0;pwned\x07ok\x9b31m!")
    'gpu0001 ok!'
    """
    text = _SEQUENCES.sub("", text)
    if lines:
        return _CONTROLS.sub("", text.replace("\r\n", "\n"))
    return _CONTROLS_AND_LINES.sub(lambda m: " " if m.group() in "\t\n\r" else "", text)
