"""``bench/bench_dcgm.py`` times the ingest's steps by name: those names must still exist.

The benchmark wraps functions with timers through ``getattr``/``setattr`` on the modules the
ingest calls them from, which no import check sees; a module split that moves one would only
show up as a crash of ``make bench``.
"""

from __future__ import annotations

import importlib

import pytest

from bench.bench_dcgm import PHASES


@pytest.mark.parametrize(
    ("module", "name"), [target for targets in PHASES.values() for target in targets]
)
def test_timed_dcgm_ingest_steps_exist(module: str, name: str) -> None:
    assert callable(getattr(importlib.import_module(module), name))
