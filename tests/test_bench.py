"""The benchmarks time the ingest's steps by name: those names must still exist.

``bench/bench_ingest.py`` wraps functions with timers through ``getattr``/``setattr`` on the
modules that call them, which no import check sees; a module split that moves one would only
show up as a crash of ``make bench``.
"""

from __future__ import annotations

import importlib

import pytest

from bench.bench_ingest import PHASES, START_UP


@pytest.mark.parametrize(
    ("module", "name"),
    [target for timed in (PHASES, START_UP) for targets in timed.values() for target in targets],
)
def test_timed_ingest_steps_exist(module: str, name: str) -> None:
    assert callable(getattr(importlib.import_module(module), name))
