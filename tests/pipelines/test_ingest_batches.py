"""The ingest streams in bounded batches: the batch size changes transactions, never the rows.

Memory is bounded by the batch (``batch_rows`` rows of one table, or ``batch_rows`` x
``BATCH_BYTES_PER_ROW`` bytes of input), not by the landing; ``RELIA_INGEST_BATCH_ROWS`` sets it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines import ingest, warehouse
from pipelines.runtime.settings import DEFAULT_INGEST_BATCH_ROWS, Settings, SettingsError

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "landing"


def _snapshot(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every raw table's rows and the lineage, without the load timestamps, in a fixed order."""
    out = {}
    with warehouse.connect(db, read_only=True) as con:
        for table in warehouse.RAW_TABLES:
            out[table] = con.execute(f"select * from {table} order by all").fetchall()
        out["files"] = con.execute(
            "select * exclude (loaded_at) from raw_ingest_files order by all"
        ).fetchall()
        out["quarantine"] = con.execute(
            "select * exclude (loaded_at) from raw_quarantine order by all"
        ).fetchall()
        out["streams"] = con.execute(
            "select * exclude (read_at) from raw_stream_reads order by all"
        ).fetchall()
    return out


def test_batch_size_changes_no_row_and_no_count(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    shutil.copytree(SAMPLES, landing)
    files = ingest.discover([landing])
    results = {}
    for batch_rows in (1, 37, 10**9):
        db = tmp_path / f"b{batch_rows}.duckdb"
        counts = ingest.ingest(db, files, batch_rows=batch_rows)
        results[batch_rows] = (
            sorted((c.path, c.n_read, c.n_loaded, c.n_quarantined, c.n_ignored) for c in counts),
            _snapshot(db),
        )
    assert results[1] == results[37] == results[10**9]
    counts, tables = results[1]
    assert sum(n_read for _, n_read, _, _, _ in counts) > 0
    assert all(tables[t] for t in warehouse.RAW_TABLES)


def _transactions(db: Path, sql: str) -> int:
    with warehouse.connect(db, read_only=True) as con:
        ((n,),) = con.execute(sql).fetchall()
    return int(n)


def test_rows_close_a_batch(tmp_path: Path) -> None:
    # the 13 sample sacct dumps of at least 256 bytes (one, a header alone, is left out): a batch
    # of 1 row (or 256 bytes) closes after every file (one transaction, one load time each); a
    # batch of 10**9 rows is the whole landing
    landing = tmp_path / "landing"
    (landing / "slurm").mkdir(parents=True)
    for path in (SAMPLES / "slurm").iterdir():
        if path.stat().st_size >= 256:
            shutil.copy(path, landing / "slurm" / path.name)
    files = ingest.discover([landing])
    assert len(files) == 13
    distinct = "select count(distinct loaded_at) from raw_ingest_files"
    ingest.ingest(tmp_path / "small.duckdb", files, batch_rows=1)
    ingest.ingest(tmp_path / "one.duckdb", files, batch_rows=10**9)
    assert _transactions(tmp_path / "small.duckdb", distinct) == 13
    assert _transactions(tmp_path / "one.duckdb", distinct) == 1


def test_bytes_close_a_batch_of_few_rows(tmp_path: Path) -> None:
    # six kernel logs of 10,000 bytes with one Xid line each: 6 rows never fill a batch of 100,
    # but 100 x 256 = 25,600 bytes are reached after three logs: two transactions
    xid = (
        "2026-06-01T00:00:00+0000 gpu{n:03d} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, "
        "name=python, GPU has fallen off the bus.\n"
    )
    noise = "2026-06-01T00:00:0{k}+0000 gpu{n:03d} systemd[1]: Started Session {k} of user root.\n"
    for n in range(6):
        text = xid.format(n=n)
        k = 0
        while len(text) <= 9_000:
            text += noise.format(n=n, k=k % 10)
            k += 1
        text += "#" * (9_999 - len(text)) + "\n"
        path = tmp_path / "landing" / "kernel" / f"gpu{n:03d}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        assert path.stat().st_size == 10_000
    files = ingest.discover([tmp_path / "landing"])
    distinct = "select count(distinct read_at) from raw_stream_reads"
    assert ingest.BATCH_BYTES_PER_ROW == 256
    small = ingest.ingest(tmp_path / "small.duckdb", files, batch_rows=100)
    whole = ingest.ingest(tmp_path / "one.duckdb", files, batch_rows=10**9)
    assert sum(c.n_loaded for c in small) == sum(c.n_loaded for c in whole) == 6
    assert _transactions(tmp_path / "small.duckdb", distinct) == 2
    assert _transactions(tmp_path / "one.duckdb", distinct) == 1


def test_batch_rows_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELIA_INGEST_BATCH_ROWS", raising=False)
    assert Settings.from_env().ingest_batch_rows == DEFAULT_INGEST_BATCH_ROWS == 200_000
    monkeypatch.setenv("RELIA_INGEST_BATCH_ROWS", "50_000")
    assert Settings.from_env().ingest_batch_rows == 50_000
    assert Settings.from_env(ingest_batch_rows=7).ingest_batch_rows == 7
    for bad in ("0", "-3", "many"):
        monkeypatch.setenv("RELIA_INGEST_BATCH_ROWS", bad)
        with pytest.raises(SettingsError, match="RELIA_INGEST_BATCH_ROWS"):
            Settings.from_env()


def test_views_are_made_again_only_when_something_changed(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    warehouse.apply_schema(con)
    names = warehouse.create_views(con, only_if_changed=True)
    first = names[0]

    def comment() -> object:
        ((text,),) = con.execute(
            "select comment from duckdb_views() where view_name = $v", {"v": first}
        ).fetchall()
        return text

    # a note left on a view survives a call that changes nothing (the views were not replaced)
    con.execute(f"comment on view {first} is 'left by hand'")
    warehouse.apply_schema(con)  # reloads the seeds: same tables, same columns
    assert warehouse.create_views(con, only_if_changed=True) == names
    assert comment() == "left by hand"
    # without only_if_changed every view is replaced (the note goes)
    warehouse.create_views(con)
    assert comment() is None
    # a view replaced by hand is put back
    con.execute(f"comment on view {first} is 'left by hand'")
    con.execute(f"create or replace view {names[-1]} as select 1 as x")
    warehouse.create_views(con, only_if_changed=True)
    assert comment() is None
    columns = con.execute(f"select * from {names[-1]} limit 0").description
    assert [c[0] for c in columns] != ["x"]
    # a table that gained a column: the views are made again
    con.execute(f"comment on view {first} is 'left by hand'")
    con.execute("alter table raw_fleet add column note varchar")
    warehouse.create_views(con, only_if_changed=True)
    assert comment() is None
    con.close()
