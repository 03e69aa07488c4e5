"""Time an ingest's steps by wrapping the functions that do them (shared by the ingest benches)."""

from __future__ import annotations

import functools
import importlib
import time
from typing import Any


def time_phases(phases: dict[str, list[tuple[str, str]]]) -> dict[str, float]:
    """Wrap each phase's functions with timers; returns the totals they add up, by phase.

    Parameters
    ----------
    phases
        Phase name -> ``(module, function)`` pairs, patched where their callers look them up.

    Returns
    -------
    dict[str, float]
        Seconds spent in each phase's functions since the call (filled in as they run).
    """
    totals = dict.fromkeys(phases, 0.0)
    for phase, targets in phases.items():
        for module_name, name in targets:
            module = importlib.import_module(module_name)
            original = getattr(module, name)

            @functools.wraps(original)
            def timed(*args: Any, _f: Any = original, _p: str = phase, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return _f(*args, **kwargs)
                finally:
                    totals[_p] += time.perf_counter() - started

            setattr(module, name, timed)
    return totals
