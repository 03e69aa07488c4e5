"""Environment failures: a full disk, a read-only or corrupt warehouse, an ingest stopped half-way.

Each runs the real CLI in a child process (``python -m pipelines.cli``) on a real warehouse made
from the sample landing, and checks that the command prints one line ``error: ...`` naming the
real cause (no traceback), exits 1, and leaves the warehouse as it was (the row count and an
order-free hash of every table, and the list of views, or the file's bytes where DuckDB cannot
read it). A full disk is a small tmpfs, and an error injected where the views are made; a
read-only warehouse is an immutable file (``chattr +i``), an immutable folder and a read-only
mount; a corrupt one has bytes changed inside a data block.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app
from pipelines.warehouse import identifier, load, schema

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow  # each case runs the CLI in a child process (imports: seconds)

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data_samples" / "landing"
HEADERS = 3 * 4096
"""DuckDB's file starts with three 4 KiB headers; 256 KiB blocks follow."""
BLOCK = 256 * 1024


def relia(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a child process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RELIA_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a failing command printed; it exited 1 without a traceback."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def digest(db: Path) -> dict[str, tuple[int, str]]:
    """Row count and order-free hash of every table, and the names of the views."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()]
        out: dict[str, tuple[int, str]] = {}
        for table in tables:
            n, hashed = con.execute(
                f"select count(*), coalesce(sum(hash(t))::varchar, '') from \"{table}\" as t"
            ).fetchone() or (0, "")
            out[table] = (n, hashed)
        views = con.execute("select view_name from duckdb_views() where not internal").fetchall()
        out["<views>"] = (len(views), ",".join(sorted(v[0] for v in views)))
    finally:
        con.close()
    return out


def file_digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def landings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``first``: the sample slurm dumps and kernel logs; ``more``: the other sample sources."""
    root = tmp_path_factory.mktemp("landings")
    first, more = root / "first", root / "more"
    for source in sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()):
        target = first if source in ("slurm", "kernel") else more
        shutil.copytree(SAMPLES / source, target / source)
    return {"first": first, "more": more}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, landings: dict[str, Path]) -> Path:
    """A warehouse holding the first landing, views made."""
    db = tmp_path_factory.mktemp("base") / "base.duckdb"
    ingest.ingest(db, ingest.discover([landings["first"]]))
    return db


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs under ``tmp_path`` (skipped where mounting is not allowed)."""
    point = tmp_path / "disk"
    point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(point)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def _fill(point: Path) -> None:
    """Fill the file system at ``point`` to its last byte."""
    fd = os.open(point / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    if os.write(fd, b"\0" * size) < size:
                        break
    finally:
        os.close(fd)
    with pytest.raises(OSError, match="No space left"):
        (point / "probe").write_bytes(b"\0" * 4096)


def test_a_full_disk_is_one_line_and_leaves_the_warehouse_as_it_was(
    mounted: Path, base: Path, landings: dict[str, Path]
) -> None:
    db = mounted / "w.duckdb"
    shutil.copy(base, db)
    before = digest(db)
    _fill(mounted)
    line = one_line_error(relia("ingest", landings["more"], "--db", db))
    assert "No space left on device" in line
    assert line.startswith(f"error: no space left for the warehouse {db}")
    (mounted / "filler").unlink()
    assert digest(db) == before


def test_a_full_disk_while_a_batch_loads_rolls_it_back(
    tmp_path: Path, base: Path, landings: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ENOSPC injected where the batch records its files: one line, nothing of it kept."""
    db = tmp_path / "w.duckdb"
    shutil.copy(base, db)
    before = digest(db)
    real = load.insert

    def full_disk(con: duckdb.DuckDBPyConnection, table: str, frame: object) -> None:
        if table == "raw_ingest_files":
            msg = f'IO Error: Could not write file "{db}.wal": No space left on device'
            raise duckdb.IOException(msg)
        real(con, table, frame)  # type: ignore[arg-type]

    monkeypatch.setattr(load, "insert", full_disk)
    result = CliRunner().invoke(app, ["ingest", str(landings["more"]), "--db", str(db)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[-1].startswith(f"error: no space left for the warehouse {db}: ")
    assert "No space left on device" in lines[-1]
    assert digest(db) == before


def test_a_full_disk_while_the_views_are_made_leaves_them_and_summary_says_rerun(
    tmp_path: Path, base: Path, landings: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills (an injected ENOSPC) after the new files are loaded, while the views are
    rebuilt: the views stay as they were, every command says the ingest did not finish, and a
    rerun finishes it."""
    db = tmp_path / "w.duckdb"
    shutil.copy(base, db)
    real = schema.store_digest

    def full_disk(*args: object, **kwargs: object) -> None:
        # the views' digest is stored after every view and snapshot is made, in their transaction
        msg = f'IO Error: Could not write file "{db}.wal": No space left on device'
        raise duckdb.IOException(msg)

    before = digest(db)
    views_before = before["<views>"]
    monkeypatch.setattr(schema, "store_digest", full_disk)
    result = CliRunner().invoke(app, ["ingest", str(landings["more"]), "--db", str(db)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "No space left on device" in result.output
    monkeypatch.setattr(schema, "store_digest", real)
    after = digest(db)
    assert after["<views>"] == views_before
    for name in warehouse.MATERIALIZED:  # the snapshots, too, are those of before: rolled back
        assert after[name] == before[name], name
    assert after["ingest_pending"][0] == 1  # the ingest that stopped is on record
    # the files loaded before the failure are kept, whole: more recorded than before
    assert after["raw_ingest_files"][0] > digest(base)["raw_ingest_files"][0]
    line = one_line_error(relia("summary", "--db", db))
    assert "did not finish" in line
    assert f"rerun `relia ingest LANDING --db {db}`" in line
    done = relia("ingest", landings["more"], "--db", db)
    assert done.returncode == 0, done.stderr
    assert relia("summary", "--db", db).returncode == 0


def test_a_never_finished_ingest_is_not_an_empty_warehouse(
    tmp_path: Path, landings: dict[str, Path]
) -> None:
    """Rows were loaded but the views were never made (the process died first)."""
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([landings["first"]]))
    con = duckdb.connect(str(db))
    names = [p.stem for p in schema.view_files()]
    snapshots = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
    for name in reversed(names):  # the views, and the snapshots the ingest took in their place
        kind = "table" if name in snapshots else "view"
        con.execute(f"drop {kind} if exists {identifier(name)}")
    con.execute("insert into ingest_pending values (timestamptz '2026-06-01 12:00:00+00', 1)")
    con.close()
    line = one_line_error(relia("summary", "--db", db))
    assert "an ingest started at 2026-06-01 12:00:00 UTC did not finish" in line
    assert "nothing was ingested" not in line
    done = relia("ingest", landings["first"], "--db", db)
    assert done.returncode == 0, done.stderr
    assert relia("summary", "--db", db).returncode == 0


@pytest.mark.parametrize("what", ["file", "folder"])
def test_an_immutable_warehouse_is_one_line(
    tmp_path: Path, base: Path, landings: dict[str, Path], what: str
) -> None:
    db = tmp_path / "w" / "w.duckdb"
    db.parent.mkdir()
    shutil.copy(base, db)
    before = digest(db)
    target = db if what == "file" else db.parent
    made = subprocess.run(["chattr", "+i", str(target)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"this file system has no immutable flag: {made.stderr.decode().strip()}")
    try:
        line = one_line_error(relia("ingest", landings["more"], "--db", db))
        fit = one_line_error(relia("fit", "--db", db))
    finally:
        subprocess.run(["chattr", "-i", str(target)], check=True)
    assert line.startswith(f"error: cannot write the warehouse {db}")
    assert "Operation not permitted" in line
    assert "Operation not permitted" in fit
    assert digest(db) == before


def test_a_read_only_mount_is_one_line(
    mounted: Path, base: Path, landings: dict[str, Path]
) -> None:
    db = mounted / "w.duckdb"
    shutil.copy(base, db)
    before = file_digest(db)
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    line = one_line_error(relia("ingest", landings["more"], "--db", db))
    assert line.startswith(f"error: cannot write the warehouse {db}")
    assert "Read-only file system" in line
    assert "Read-only file system" in one_line_error(
        relia("report", "--db", db, "--reports-dir", mounted)
    )
    subprocess.run(["mount", "-o", "remount,rw", str(mounted)], check=True)
    assert file_digest(db) == before


def _data_block(db: Path, table: str) -> int:
    """Return the number of a block holding rows of ``table`` (DuckDB's own storage info)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "select block_id from pragma_storage_info($table) where block_id >= 0 "
            "order by block_id limit 1",
            {"table": table},
        ).fetchall()
    finally:
        con.close()
    assert rows, f"{table} has no block of its own"
    return int(rows[0][0])


def _damage(db: Path, block: int) -> None:
    """Change 64 bytes inside ``block`` (each byte xor-ed with a different non-zero value)."""
    data = bytearray(db.read_bytes())
    at = HEADERS + block * BLOCK + 4096
    data[at : at + 64] = bytes(b ^ (i * 37 % 255 + 1) for i, b in enumerate(data[at : at + 64]))
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["rows", "last"])
def test_a_corrupt_warehouse_fails_every_command_in_one_line(
    tmp_path: Path, base: Path, landings: dict[str, Path], where: str
) -> None:
    """``rows``: a block of the slurm jobs' rows, which an ingest with nothing new never reads
    (it succeeded before every open checked the checksums); ``last``: the file's last block."""
    db = tmp_path / "w.duckdb"
    shutil.copy(base, db)
    if where == "rows":
        block = _data_block(db, "raw_slurm_jobs")
    else:
        block = (db.stat().st_size - HEADERS) // BLOCK - 1
    _damage(db, block)
    before = file_digest(db)
    # nothing new to load: the ingest must not report success on a damaged file
    for args in (["ingest", landings["first"]], ["summary"], ["fit"]):
        line = one_line_error(relia(*args, "--db", db))
        assert line.startswith(f"error: the warehouse {db} is corrupt: "), line
        assert f"block at location {HEADERS + block * BLOCK}" in line or (
            f"block {block} at location {HEADERS + block * BLOCK}" in line
        )
        assert "restore it from a backup, or re-ingest the landing into a new file" in line
    assert file_digest(db) == before
