"""The small synthetic warehouse the flow tests share (the Prefect harness: tests/conftest.py)."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="session")
def small_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse of a small synthetic fleet (24 nodes, 30 days) with one fit run stored."""
    from models.exceptions import FewFailuresWarning
    from pipelines import ingest
    from pipelines.analysis import fit
    from synth import SynthConfig, synthesize

    root = tmp_path_factory.mktemp("flows")
    synthesize(
        root / "landing",
        SynthConfig(nodes=24, days=30, seed=3, start=datetime(2026, 4, 6, tzinfo=UTC)),
    )
    db = root / "relia.duckdb"
    ingest.ingest(db, ingest.discover([root / "landing"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        fit.run_fit(db)  # the sweep reads rates from the latest fit run
    return db
