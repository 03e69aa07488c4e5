"""The real public data sets, each file ingested once per test module through ``relia ingest``.

The files sit beside the repository in ``shared/real`` (provenance and licences in each folder's
README). Every fixture runs the production path: ``ingest.discover`` with ``source="fault_log"``,
the YAML mapping from ``data_samples/mappings``, ``ingest.ingest`` (parse, Great Expectations,
load, views) into a DuckDB file under pytest's tmp directory, then a read-only connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pipelines import ingest, warehouse
from pipelines.ingest.sources import fault_log

if TYPE_CHECKING:
    from collections.abc import Iterator

    import duckdb

REPO = Path(__file__).resolve().parents[2]
MAPPINGS = REPO / "data_samples" / "mappings"
REAL = REPO.parent / "shared" / "real"
TITAN = REAL / "titan-gpu-lifetimes"
HBD = REAL / "infinitehbd-gpu-fault-trace"

TITAN_FILES = (
    (TITAN / "gc_summary_loc.csv", "titan_gc_summary"),
    (TITAN / "gc_full.csv", "titan_gc_full"),
)
HBD_FILES = ((HBD / "fault_trace.json", "infinitehbd"),)


@dataclass(frozen=True)
class RealWarehouse:
    """A warehouse holding real files: the read-only connection and the per-file load counts."""

    con: duckdb.DuckDBPyConnection
    loads: dict[str, warehouse.LoadCounts]  # by mapping (dataset) name


def _ingest_real(
    tmp_path_factory: pytest.TempPathFactory, name: str, files: tuple[tuple[Path, str], ...]
) -> Iterator[RealWarehouse]:
    missing = [str(path) for path, _ in files if not path.is_file()]
    if missing:
        # CI clones the repository beside ../shared; a missing trace is a broken set-up, not a skip
        pytest.fail(f"real data not found (expected ../shared/real beside the repo): {missing}")
    db_path = tmp_path_factory.mktemp(name) / "relia.duckdb"
    loads = {}
    for path, mapping_name in files:
        counts = ingest.ingest(
            db_path,
            ingest.discover([path], source="fault_log"),
            parser_options={
                "fault_log": {"mapping": fault_log.load_mapping(MAPPINGS / f"{mapping_name}.yaml")}
            },
        )
        assert len(counts) == 1
        loads[mapping_name] = counts[0]
    with warehouse.connect(db_path, read_only=True) as con:
        yield RealWarehouse(con, loads)


@pytest.fixture(scope="module")
def titan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWarehouse]:
    """Titan's per-GPU summary and per-segment history, ingested into one warehouse."""
    yield from _ingest_real(tmp_path_factory, "titan", TITAN_FILES)


@pytest.fixture(scope="module")
def infinitehbd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWarehouse]:
    """InfiniteHBD's node fault trace (400 servers, 349 days), ingested."""
    yield from _ingest_real(tmp_path_factory, "infinitehbd", HBD_FILES)
