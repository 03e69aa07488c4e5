"""Shared fixtures: one synthetic fleet ingested once for every pipeline test that reads it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from pipelines import ingest
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from pathlib import Path

CONFIG = SynthConfig(
    nodes=48, gpus_per_node=8, days=45, seed=7, start=datetime(2026, 3, 2, tzinfo=UTC)
)


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """(warehouse path, landing folder, ground truth) of a 48-node, 45-day synthetic fleet."""
    root = tmp_path_factory.mktemp("fleet")
    landing = root / "landing"
    truth = synthesize(landing, CONFIG)
    db = root / "relia.duckdb"
    counts = ingest.ingest(db, ingest.discover([landing]))
    assert all(not c.skipped for c in counts)
    return db, landing, truth
