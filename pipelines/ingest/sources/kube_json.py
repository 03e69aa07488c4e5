"""Items of a ``kubectl get <kind> -A -o json`` list, each with the line it starts on.

``kubectl ... -o json`` prints one ``List`` object whose ``items`` array holds the objects. The
array is decoded item by item with :class:`json.JSONDecoder` (the C decoder of the standard
library), so every item keeps the 1-based line number of its opening brace and a syntax error
loses only the items from the broken one on.
"""

from __future__ import annotations

import bisect
import json
import re
from datetime import datetime
from typing import Any, NamedTuple

import polars as pl

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
RAW_LIMIT = 2000
"""Characters of an item kept in a reject's ``raw`` (its compact JSON)."""


class Items(NamedTuple):
    """Decoded items, their line numbers, and file-level problems."""

    items: list[Any]
    line_nos: list[int]
    problems: list[tuple[int, str, str]]  # (line_no, raw, reason)


def list_items(data: bytes, *, kind: str) -> Items:
    """Decode the ``items`` of a ``kubectl get ... -o json`` list.

    Parameters
    ----------
    data
        The file's bytes (not empty).
    kind
        What the items are (``"Pod"``), for the reasons.

    Returns
    -------
    Items
        The items in file order with the line of each one's first character, and problems that
        end the reading (bytes that are not UTF-8, a document that is not a ``List``, invalid
        JSON), each ``(line_no, raw line, reason)``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_no = data[: error.start].count(b"\n") + 1
        raw = data.split(b"\n")[line_no - 1].decode("utf-8", errors="backslashreplace")
        return Items([], [], [(line_no, raw, "file is not valid UTF-8")])
    text = text.removeprefix("\ufeff")
    newlines = [m.start() for m in re.finditer("\n", text)]

    # A position at the very end of a text that ends with a newline belongs to the last line,
    # not to a line past the end.
    n_lines = max(1, len(newlines) + (not text.endswith("\n")))

    def line_of(pos: int) -> int:
        return min(bisect.bisect_left(newlines, pos) + 1, n_lines)

    def raw_line(pos: int) -> str:
        n = line_of(pos)
        start = newlines[n - 2] + 1 if n > 1 else 0
        end = newlines[n - 1] if n - 1 < len(newlines) else len(text)
        return text[start:end].rstrip("\r")

    def failure(pos: int, message: str) -> Items:
        return Items(items, line_nos, [(line_of(pos), raw_line(pos), message)])

    items: list[Any] = []
    line_nos: list[int] = []
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if pos >= len(text) or text[pos] != "{":
        return failure(pos, f"expected the JSON object of 'kubectl get {kind.lower()}s -o json'")
    pos += 1
    seen_items = False
    while True:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos < len(text) and text[pos] == "}":
            break
        try:
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos : pos + 1] != ":":
                return failure(pos, "invalid JSON: expected ':' after a key")
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            if key == "items" and text[pos : pos + 1] == "[":
                seen_items = True
                pos = _read_array(text, pos + 1, items, line_nos, line_of)
            else:
                _, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as error:
            return failure(error.pos, f"invalid JSON: {error.msg}; the items from here on are lost")
        except _ArrayError as error:
            return failure(error.pos, f"invalid JSON: {error}; the items from here on are lost")
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] == ",":
            pos += 1
        elif text[pos : pos + 1] != "}":
            return failure(pos, "invalid JSON: expected ',' or '}' in the list object")
    if not seen_items:
        return failure(
            0, f"no 'items' array: not the output of 'kubectl get {kind.lower()}s -o json'"
        )
    return Items(items, line_nos, [])


class _ArrayError(ValueError):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


def _read_array(text: str, pos: int, items: list[Any], line_nos: list[int], line_of: Any) -> int:
    """Decode array elements from ``pos`` (after ``[``); returns the position after ``]``."""
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] == "]":
        return pos + 1
    while True:
        item, end = _DECODER.raw_decode(text, pos)
        items.append(item)
        line_nos.append(line_of(pos))
        pos = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] == ",":
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
        elif text[pos : pos + 1] == "]":
            return pos + 1
        else:
            raise _ArrayError("expected ',' or ']' between items", pos)


def compact(item: Any) -> str:
    """Return an item as one line of compact JSON (cut at :data:`RAW_LIMIT` characters)."""
    return json.dumps(item, separators=(",", ":"), sort_keys=True)[:RAW_LIMIT]


def dig(obj: Any, *path: str) -> Any:
    """``obj[p0][p1]...``, or None where a step is missing or not an object."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def text_or_none(value: Any) -> str | None:
    """Return a JSON scalar as text (None for null, empty text and objects/arrays)."""
    if value is None or value == "" or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def kube_time(text: pl.Expr) -> pl.Expr:
    """Return RFC 3339 times as Kubernetes prints them as UTC timestamps.

    RFC 3339 times as Kubernetes prints them (``2026-06-01T00:00:00Z``, micro-times with a
    fraction) as UTC timestamps; anything else is null.
    """
    return text.str.strptime(pl.Datetime("us", "UTC"), "%Y-%m-%dT%H:%M:%S%.f%#z", strict=False)


def snapshot_time(source_file: str) -> datetime | None:
    """Return the time in a file name ending ``_<YYYYmmddTHHMMSSZ>.json`` (None without one)."""
    match = re.search(r"_([0-9]{8}T[0-9]{6})Z\.[A-Za-z]+$", source_file)
    if match is None:
        return None
    from datetime import UTC

    try:
        return datetime.strptime(match.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None
