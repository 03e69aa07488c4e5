"""Values made ready for strict JSON: the one converter of the CLI's ``--json`` and the artifacts.

Strict JSON parsers reject ``NaN`` and ``Infinity``; an open or unknown bound becomes ``null``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["json_ready"]


def json_ready(value: Any, other: Callable[[Any], Any] | None = None) -> Any:
    """``value`` with every NaN or infinite float (numpy's too) made None, recursively.

    Mappings (keys as ``str``), lists, tuples and sets are walked; numpy scalars and arrays
    become Python values. Any other value is passed to ``other`` when given (e.g. dates to ISO
    text), else returned as it is (``json.dumps(default=str)`` can take it from there).
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): json_ready(item, other) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_ready(item, other) for item in value]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return json_ready(value.tolist(), other)  # numpy scalars and arrays
    return other(value) if other is not None else value
