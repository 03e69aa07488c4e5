"""One landing fence for every way into an ingest (issue 26, "Security" and "Filesystem shapes").

Folders, files named on the command line, shell globs, the flow and tracked runs all refuse, one
file at a time, what resolves outside its landing root, symbolic link loops, links to folders and
named pipes, and walk folders without recursion to a bounded depth. A refused file is never
opened: no byte of it reaches a table or the output, and the other files load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app

if TYPE_CHECKING:
    from collections.abc import Iterator

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
MARKER = "ZQXJ_OUTSIDE_BYTES_7731"
"""In the outside file only: found anywhere, the fence leaked."""

HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts\n"
)


def _sacct(job_id: int, name: str) -> str:
    return HEADER + (
        f"{job_id}|{job_id}|{name}|gpu|ml|alice|1|billing=8,cpu=8,gres/gpu=8,node=1|gpu0001|"
        "2026-06-01T00:00:00|2026-06-01T00:01:00|2026-06-01T02:01:00|02:00:00|COMPLETED|0:0|0\n"
    )


def _landing(tmp_path: Path) -> tuple[Path, Path]:
    """Return a landing with two good sacct dumps, and a dump outside it carrying the marker."""
    landing = tmp_path / "landing"
    (landing / "slurm").mkdir(parents=True)
    (landing / "slurm" / "sacct_a.txt").write_text(_sacct(101, "train"))
    (landing / "slurm" / "sacct_b.txt").write_text(_sacct(102, "eval"))
    outside = tmp_path / "elsewhere" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text(_sacct(999, MARKER))
    return landing, outside


def _job_ids(db: Path) -> list[str]:
    with warehouse.connect(db, read_only=True) as con:
        rows = con.execute("select job_id from raw_slurm_jobs order by job_id").fetchall()
    return [str(r[0]) for r in rows]


def _tables(db: Path) -> dict[str, int]:
    """Return the row count of every table of the warehouse."""
    with warehouse.connect(db, read_only=True) as con:
        names = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        return {n: con.execute(f'select count(*) from "{n}"').fetchone()[0] for n in names}


def _marker_rows(db: Path) -> list[tuple[str, str]]:
    """Return the (table, column) of every text cell, in every table, holding the marker."""
    with warehouse.connect(db, read_only=True) as con:
        columns = con.execute(
            "select c.table_name, c.column_name from information_schema.columns c "
            "join information_schema.tables t using (table_schema, table_name) "
            "where t.table_type = 'BASE TABLE' and c.data_type in ('VARCHAR', 'JSON', 'BLOB')"
        ).fetchall()
        assert len(columns) > 20  # raw tables, quarantine, lineage: all scanned
        return [
            (t, c)
            for t, c in columns
            if con.execute(
                f'select count(*) from "{t}" where cast("{c}" as varchar) like $m',
                {"m": f"%{MARKER}%"},
            ).fetchone()[0]
        ]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in its own process (a named pipe opened by mistake would block)."""
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        check=False,
    )


@pytest.mark.slow
def test_named_file_linking_out_of_its_root_is_refused_and_the_rest_loads(tmp_path: Path) -> None:
    landing, outside = _landing(tmp_path)
    link = landing / "slurm" / "sacct_link.txt"
    link.symlink_to(outside)
    db = tmp_path / "w.duckdb"
    named = [str(landing / "slurm" / "sacct_a.txt"), str(link)]
    first = runner.invoke(app, ["ingest", *named, "--db", str(db), "--json"])
    assert first.exit_code == 0, first.output
    counts = {Path(c["path"]).name: c for c in json.loads(first.stdout)}
    assert counts["sacct_link.txt"]["status"] == "refused: resolves outside the landing root"
    refusal = counts["sacct_link.txt"]
    assert (refusal["n_loaded"], refusal["n_quarantined"]) == (0, 1)  # one row with the reason
    assert counts["sacct_a.txt"]["n_loaded"] == 1
    assert f"warning: refused {link}: resolves outside the landing root" in first.stderr
    assert MARKER not in first.output
    assert _job_ids(db) == ["101"]
    assert _marker_rows(db) == []
    before = _tables(db)
    again = runner.invoke(app, ["ingest", *named, "--db", str(db), "--json"])
    assert again.exit_code == 0, again.output
    statuses = {Path(c["path"]).name: c["status"] for c in json.loads(again.stdout)}
    assert statuses == {
        "sacct_a.txt": "already loaded",
        "sacct_link.txt": "refused: resolves outside the landing root",
    }
    assert _tables(db) == before  # re-ingest adds no row anywhere, no duplicate refusal


@pytest.mark.slow
def test_a_glob_through_the_api_refuses_the_outside_link_only(tmp_path: Path) -> None:
    landing, outside = _landing(tmp_path)
    (landing / "slurm" / "sacct_c.txt").symlink_to(outside)
    (landing / "slurm" / "sacct_inside.txt").symlink_to(Path("sacct_b.txt"))  # inside: fine
    globbed = sorted((landing / "slurm").glob("sacct_*.txt"))
    assert len(globbed) == 4
    db = tmp_path / "w.duckdb"
    counts = ingest.ingest(db, ingest.discover(globbed))
    # an inside link is read under the path it resolves to: sacct_b's bytes, loaded once
    assert sorted((Path(c.path).name, c.outcome) for c in counts) == [
        ("sacct_a.txt", "loaded"),
        ("sacct_b.txt", "already loaded"),
        ("sacct_b.txt", "loaded"),
        ("sacct_c.txt", "refused: resolves outside the landing root"),
    ]
    assert _job_ids(db) == ["101", "102"]
    assert _marker_rows(db) == []


def test_a_refusal_is_one_lineage_and_quarantine_row_without_content(tmp_path: Path) -> None:
    landing, outside = _landing(tmp_path)
    link = landing / "slurm" / "sacct_c.txt"
    link.symlink_to(outside)
    db = tmp_path / "w.duckdb"
    files = ingest.discover([landing / "slurm" / "sacct_a.txt", link])
    reason = "refused: resolves outside the landing root"
    for _ in range(2):  # the second run finds the refusal recorded and adds nothing
        counts = {Path(c.path).name: c for c in ingest.ingest(db, files)}
        assert counts["sacct_c.txt"].outcome == reason
    with warehouse.connect(db, read_only=True) as con:
        quarantined = con.execute(
            "select source_file, line_no, raw, reason, stage, target_table from raw_quarantine"
        ).fetchall()
        lineage = con.execute(
            "select path, n_read, n_loaded, n_quarantined from raw_ingest_files order by path"
        ).fetchall()
    assert quarantined == [(str(link), 0, "", reason, "fence", "raw_slurm_jobs")]
    assert lineage == [
        (str(landing / "slurm" / "sacct_a.txt"), 1, 1, 0),
        (str(link), 1, 0, 1),  # one file-level reject, as for an empty or binary file
    ]
    assert _job_ids(db) == ["101"]
    assert _marker_rows(db) == []


@pytest.mark.slow
def test_a_folder_with_an_outside_link_loads_its_other_files(tmp_path: Path) -> None:
    landing, outside = _landing(tmp_path)
    (landing / "slurm" / "zz_secret.txt").symlink_to(outside)
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "refused" in result.stdout
    assert "zz_secret.txt" in result.stdout
    assert "zz_secret.txt: resolves outside the landing root" in result.stderr
    assert MARKER not in result.output
    assert "Traceback" not in result.output
    assert _job_ids(db) == ["101", "102"]
    assert _marker_rows(db) == []


@pytest.mark.slow
def test_allow_outside_root_reads_the_outside_file(tmp_path: Path) -> None:
    landing, outside = _landing(tmp_path)
    (landing / "slurm" / "zz_secret.txt").symlink_to(outside)
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(db), "--allow-outside-root"])
    assert result.exit_code == 0, result.output
    assert "refused" not in result.output
    assert _job_ids(db) == ["101", "102", "999"]
    other = tmp_path / "env.duckdb"
    by_env = runner.invoke(
        app, ["ingest", str(landing), "--db", str(other)], env={"RELIA_ALLOW_OUTSIDE_ROOT": "1"}
    )
    assert by_env.exit_code == 0, by_env.output
    assert _job_ids(other) == ["101", "102", "999"]


@pytest.mark.slow
def test_loops_folder_links_and_pipes_are_refused_with_their_reason(tmp_path: Path) -> None:
    landing, _ = _landing(tmp_path)
    slurm = landing / "slurm"
    (slurm / "loop_a.txt").symlink_to("loop_b.txt")
    (slurm / "loop_b.txt").symlink_to("loop_a.txt")
    (landing / "archive").mkdir()
    (landing / "archive" / "sacct_old.txt").write_text(_sacct(555, "old"))
    (slurm / "archive_link").symlink_to(landing / "archive", target_is_directory=True)
    os.mkfifo(slurm / "pipe.txt")
    (slurm / ".hidden.txt").write_text(_sacct(777, "hidden"))
    db = tmp_path / "w.duckdb"
    result = _cli("ingest", str(landing), "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    statuses = {Path(c["path"]).name: c["status"] for c in json.loads(result.stdout)}
    assert statuses == {
        "archive_link": "refused: a link to a folder, not followed",
        "loop_a.txt": "refused: symbolic link loop",
        "loop_b.txt": "refused: symbolic link loop",
        "pipe.txt": "refused: a named pipe (FIFO)",
        "sacct_a.txt": "loaded",
        "sacct_b.txt": "loaded",
    }
    for name in ("archive_link", "loop_a.txt", "loop_b.txt", "pipe.txt"):
        assert f"{slurm / name}: " in result.stderr
    assert "Traceback" not in result.stderr
    assert _job_ids(db) == ["101", "102"]  # nothing through the folder link, nor hidden


@pytest.mark.slow
def test_a_named_pipe_named_directly_is_refused_not_opened(tmp_path: Path) -> None:
    landing, _ = _landing(tmp_path)
    pipe = landing / "slurm" / "pipe.txt"
    os.mkfifo(pipe)
    db = tmp_path / "w.duckdb"
    result = _cli("ingest", str(pipe), str(landing / "slurm" / "sacct_a.txt"), "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert f"warning: refused {pipe}: a named pipe (FIFO)" in result.stderr
    assert "Traceback" not in result.stderr
    assert _job_ids(db) == ["101"]


@pytest.fixture
def deep_landing(tmp_path: Path) -> Iterator[Path]:
    """Return a landing folder; its deep chain of folders is removed bottom-up afterwards.

    ``shutil.rmtree`` (and so pytest's clean-up of old temporary folders) recurses once a level.
    """
    landing = tmp_path / "landing"
    yield landing
    chain = [landing / "kernel"]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain):
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        folder.rmdir()


def _deep(landing: Path, levels: int) -> Path:
    """Return a folder ``levels`` levels below the kernel folder, made one level at a time."""
    folder = landing / "kernel"
    folder.mkdir(parents=True)
    for _ in range(levels):
        folder = folder / "d"
        folder.mkdir()  # os.makedirs recurses: it cannot make this
    return folder


KERNEL_LINE = (
    "2026-06-01T02:09:50.376060+00:00 gpu0001 kernel: NVRM: Xid (PCI:0000:18:00): 79, "
    "pid=1, name=x, GPU has fallen off the bus.\n"
)


@pytest.mark.slow
def test_a_landing_a_thousand_folders_deep_is_walked_to_its_bound(
    tmp_path: Path, deep_landing: Path
) -> None:
    landing = deep_landing
    bottom = _deep(landing, 1000)
    (bottom / "gpu0002.log").write_text(KERNEL_LINE.replace("gpu0001", "gpu0002"))
    (landing / "kernel" / "gpu0001.log").write_text(KERNEL_LINE)
    (landing / "kernel" / "d" / "gpu0003.log").write_text(KERNEL_LINE.replace("gpu0001", "gpu0003"))
    files = ingest.discover([landing])
    refused = [f for f in files if f.refused]
    assert [(len(f.path.relative_to(landing / "kernel").parts), f.refused) for f in refused] == [
        (33, "a folder more than 32 levels below its source folder, not read")
    ]
    read = sorted(f.path.name for f in files if not f.refused)
    assert read == ["gpu0001.log", "gpu0003.log"]
    db = tmp_path / "w.duckdb"
    counts = ingest.ingest(db, files)
    assert sorted(c.outcome for c in counts) == [
        "loaded",
        "loaded",
        "refused: a folder more than 32 levels below its source folder, not read",
    ]
    # with a bound past the bottom the walk reaches it, one level at a time, without recursion
    deep = ingest.discover([landing], max_depth=1000)
    assert sorted(f.path.name for f in deep if not f.refused) == [
        "gpu0001.log",
        "gpu0002.log",
        "gpu0003.log",
    ]


@pytest.mark.slow
def test_the_depth_bound_is_a_setting(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (_deep(landing, 3) / "gpu0002.log").write_text(KERNEL_LINE)
    db = tmp_path / "w.duckdb"
    result = runner.invoke(
        app,
        ["ingest", str(landing), "--db", str(db), "--json"],
        env={"RELIA_LANDING_MAX_DEPTH": "2"},
    )
    assert result.exit_code == 0, result.output
    [count] = json.loads(result.stdout)
    assert (
        count["status"] == "refused: a folder more than 2 levels below its source folder, not read"
    )
    assert count["path"] == str(landing / "kernel" / "d" / "d" / "d")
    assert "levels below its source folder" in result.stderr


@pytest.mark.parametrize("value", ["maybe", "2"])
def test_a_bad_allow_outside_root_setting_is_one_line(tmp_path: Path, value: str) -> None:
    landing, _ = _landing(tmp_path)
    result = runner.invoke(
        app,
        ["ingest", str(landing), "--db", str(tmp_path / "w.duckdb")],
        env={"RELIA_ALLOW_OUTSIDE_ROOT": value},
    )
    assert result.exit_code != 0
    assert "RELIA_ALLOW_OUTSIDE_ROOT" in result.output
    assert "Traceback" not in result.output
