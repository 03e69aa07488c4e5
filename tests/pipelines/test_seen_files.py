"""A landing moved, copied or touched: its files are read and hashed once, then skipped by stat.

Before ``ingest_seen_files``, a whole file whose content was loaded from another path (or from this
path before its mtime changed) was found "already loaded" by its hash on every scheduled tick:
read and hashed again each time, forever. Here the landing's whole files are the committed
samples (sacct, nvidia-smi, fleet, repairs, node events), copied with their mtimes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pipelines import ingest, warehouse
from pipelines.ingest import plan

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "landing"
WHOLE = ("slurm", "nvidia_smi", "fleet", "repairs", "node_events")


def _landing(where: Path) -> Path:
    for source in WHOLE:
        shutil.copytree(SAMPLES / source, where / source)  # copy2: mtimes kept
    return where


def _table_counts(db: Path) -> dict[str, int]:
    with warehouse.connect(db, read_only=True) as con:
        return {
            table: int(
                con.execute(f"select count(*) from {warehouse.identifier(table)}").fetchone()[0]
            )  # type: ignore[index]
            for table in ("raw_slurm_jobs", "raw_ingest_files", "raw_quarantine")
        }


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the ingest reads and hashes whole (the files it could not skip by stat)."""
    read: list[str] = []
    real = plan.hashed_chunks

    def spy(files, **kwargs):  # type: ignore[no-untyped-def]
        listed = list(files)
        read.extend(item.resolved for item in listed)
        return real(iter(listed), **kwargs)

    monkeypatch.setattr(plan, "hashed_chunks", spy)
    return read


def test_a_moved_landing_is_hashed_once_then_skipped_by_stat(
    tmp_path: Path, hashed: list[str]
) -> None:
    first = _landing(tmp_path / "first")
    db = tmp_path / "w.duckdb"
    loaded = ingest.ingest(db, ingest.discover([first]))
    n_files = len(loaded)
    assert n_files >= len(WHOLE)
    assert len(hashed) == n_files  # a first ingest reads everything
    before = _table_counts(db)

    moved = tmp_path / "moved"
    first.rename(moved)  # same files, same mtimes, another path
    hashed.clear()
    again = ingest.ingest(db, ingest.discover([moved]))
    assert {c.outcome for c in again} == {"already loaded"}
    assert len(hashed) == n_files  # known only by content: read and hashed this once
    assert _table_counts(db) == before

    hashed.clear()
    third = ingest.ingest(db, ingest.discover([moved]))
    assert {c.outcome for c in third} == {"already loaded"}
    assert hashed == []  # skipped by path, size and mtime
    assert [(c.path, c.n_read, c.n_loaded) for c in third] == [
        (c.path, c.n_read, c.n_loaded) for c in again
    ]
    assert _table_counts(db) == before


def test_a_touched_file_is_hashed_once_and_a_changed_one_is_read(
    tmp_path: Path, hashed: list[str]
) -> None:
    landing = _landing(tmp_path / "landing")
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    sacct = sorted((landing / "slurm").iterdir())[0]
    later = sacct.stat().st_mtime_ns + 10**9
    os.utime(sacct, ns=(later, later))  # touched: same bytes
    hashed.clear()
    ingest.ingest(db, ingest.discover([landing]))
    assert hashed == [str(sacct.resolve())]
    hashed.clear()
    ingest.ingest(db, ingest.discover([landing]))
    assert hashed == []

    # the same path with new content (a recorded stat no longer matches): read again
    with sacct.open("ab") as handle:
        handle.write(b"\n")
    hashed.clear()
    ingest.ingest(db, ingest.discover([landing]))
    assert hashed == [str(sacct.resolve())]


def test_a_seen_record_whose_load_is_gone_does_not_skip(tmp_path: Path, hashed: list[str]) -> None:
    landing = _landing(tmp_path / "landing")
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    moved = tmp_path / "moved"
    landing.rename(moved)
    ingest.ingest(db, ingest.discover([moved]))
    with warehouse.connect(db) as con:
        n_seen = con.execute("select count(*) from ingest_seen_files").fetchone()
        assert n_seen is not None
        assert n_seen[0] > 0
        # the earlier loads are forgotten: a seen record alone must not skip a file
        con.execute("update ingest_seen_files set file_sha256 = 'gone:' || file_sha256")
    hashed.clear()
    ingest.ingest(db, ingest.discover([moved]))
    assert len(hashed) == int(n_seen[0])
