"""The file boundary of ``relia ingest`` (issue #12 §2): links out of the landing root, files
ingested under the wrong source, and files that are not telemetry at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app

runner = CliRunner()
SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "landing"

# sacct --parsable2 with the fields DESIGN.md lists (hand-written; two jobs)
SACCT = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts\n"
    "101|101|train|gpu|ml|alice|2|billing=16,cpu=16,gres/gpu=16,node=2|gpu[0001-0002]|"
    "2026-06-01T00:00:00|2026-06-01T00:01:00|2026-06-01T02:01:00|02:00:00|COMPLETED|0:0|0\n"
    "102|102|eval|gpu|ml|bob|1|billing=8,cpu=8,gres/gpu=8,node=1|gpu0003|"
    "2026-06-01T01:00:00|2026-06-01T01:00:30|2026-06-01T01:30:30|00:30:00|NODE_FAIL|1:0|0\n"
)


def _rows(db: Path, sql: str) -> list[tuple]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_file_ingested_under_the_wrong_source_loads_with_force(tmp_path: Path) -> None:
    dump = tmp_path / "incoming" / "sacct-2026-06-01.txt"
    dump.parent.mkdir()
    dump.write_text(SACCT)
    db = tmp_path / "w.duckdb"
    wrong = runner.invoke(
        app, ["ingest", str(dump), "--source", "repairs", "--db", str(db), "--json"]
    )
    assert wrong.exit_code == 0, wrong.output
    (first,) = json.loads(wrong.stdout)
    assert first["n_loaded"] == 0  # every line is a repairs reject
    assert first["n_quarantined"] >= 1
    # without --force the same bytes are "already loaded"
    again = runner.invoke(
        app, ["ingest", str(dump), "--source", "slurm", "--db", str(db), "--json"]
    )
    assert json.loads(again.stdout)[0]["skipped"] is True
    right = runner.invoke(
        app, ["ingest", str(dump), "--source", "slurm", "--force", "--db", str(db), "--json"]
    )
    assert right.exit_code == 0, right.output
    (forced,) = json.loads(right.stdout)
    assert (forced["n_loaded"], forced["n_quarantined"]) == (2, 0)
    assert forced["status"].startswith("replaced")
    assert _rows(db, "select job_id, state from raw_slurm_jobs order by 1") == [
        ("101", "COMPLETED"),
        ("102", "NODE_FAIL"),
    ]
    assert _rows(db, "select count(*) from raw_quarantine") == [(0,)]
    assert _rows(db, "select source, n_loaded from raw_ingest_files") == [("slurm", 2)]
    # rerunning changes nothing
    rerun = runner.invoke(
        app, ["ingest", str(dump), "--source", "slurm", "--db", str(db), "--json"]
    )
    assert json.loads(rerun.stdout)[0]["skipped"] is True
    assert _rows(db, "select count(*) from raw_slurm_jobs") == [(2,)]


def test_a_file_with_no_lines_of_a_source_does_not_block_the_right_source(tmp_path: Path) -> None:
    dump = tmp_path / "incoming" / "jobs.txt"
    dump.parent.mkdir()
    dump.write_text(SACCT)
    db = tmp_path / "w.duckdb"
    (as_kernel,) = ingest.ingest(db, ingest.discover([dump], source="kernel"))
    assert (as_kernel.n_read, as_kernel.n_ignored) == (0, 3)  # no Xid line in a sacct dump
    (as_slurm,) = ingest.ingest(db, ingest.discover([dump], source="slurm"))
    assert (as_slurm.n_loaded, as_slurm.skipped) == (2, False)


def test_one_bad_file_never_aborts_the_batch(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    shutil.copytree(SAMPLES, landing)
    (landing / "dcgm").mkdir()
    # dcgmi dmon prints its header lines before the first sample: a file cut right after them
    (landing / "dcgm" / "gpu0001_dmon.csv").write_text(
        "#Entity   TMPTR   POWER     ESVTL  EDVTL  RPSBE  XIDER\nID        C       W\n"
    )
    (landing / "slurm" / "core.bin").write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 4000)
    (landing / "repairs" / "empty.csv").write_bytes(b"")
    counts = {
        Path(c.path).name: c
        for c in ingest.ingest(tmp_path / "w.duckdb", ingest.discover([landing]))
    }
    binary = counts["core.bin"]
    assert (binary.n_loaded, binary.n_quarantined) == (0, 1)
    assert (counts["empty.csv"].n_loaded, counts["empty.csv"].n_quarantined) == (0, 1)
    assert counts["gpu0001_dmon.csv"].n_loaded == 0
    reasons = dict(
        (Path(f).name, r)
        for f, r in _rows(
            tmp_path / "w.duckdb",
            "select source_file, reason from raw_quarantine where line_no = 0",
        )
    )
    assert "binary file" in reasons["core.bin"]
    assert reasons["empty.csv"] == "empty file"
    # every other file loads exactly as it does without the bad ones beside it
    clean = {
        Path(c.path).name: (c.n_read, c.n_loaded, c.n_quarantined)
        for c in ingest.ingest(tmp_path / "clean.duckdb", ingest.discover([SAMPLES]))
    }
    assert {
        n: (c.n_read, c.n_loaded, c.n_quarantined) for n, c in counts.items() if n in clean
    } == clean
    assert sum(n for _, n, _ in clean.values()) > 100
    expected = {p.name for p in SAMPLES.rglob("*") if p.is_file() and p.parent != SAMPLES}
    assert expected <= set(counts)


def test_a_parser_crash_quarantines_only_its_file(tmp_path: Path, monkeypatch) -> None:
    from pipelines.ingest.sources import repairs

    def boom(data: bytes, **_: object) -> object:
        if b"BOOM" in data:
            raise RuntimeError("unexpected shape")
        return real(data, **_)

    real = repairs.parse
    monkeypatch.setattr(repairs, "parse", boom)
    folder = tmp_path / "repairs"
    shutil.copytree(SAMPLES / "repairs", folder)
    (folder / "zz_bad.csv").write_text("BOOM\n")
    counts = {
        Path(c.path).name: c
        for c in ingest.ingest(tmp_path / "w.duckdb", ingest.discover([folder]))
    }
    assert (counts["zz_bad.csv"].n_loaded, counts["zz_bad.csv"].n_quarantined) == (0, 1)
    assert all(c.n_loaded > 0 for n, c in counts.items() if n != "zz_bad.csv")
    [(reason, value)] = _rows(
        tmp_path / "w.duckdb", "select reason, reason_value from raw_quarantine where line_no = 0"
    )
    # the kind, and the parser's error as its value
    assert reason == "the repairs parser failed on this file: …"
    assert "RuntimeError: unexpected shape" in value


def test_the_cli_refuses_a_link_out_of_the_folder_it_was_given(tmp_path: Path) -> None:
    secret = tmp_path / "etc-passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    landing = tmp_path / "landing"
    (landing / "kernel").mkdir(parents=True)
    (landing / "kernel" / "kern.log").symlink_to(secret)
    inside = landing / "kernel" / "alias.log"
    (landing / "kernel" / "real.log").write_text("")
    inside.symlink_to(landing / "kernel" / "real.log")
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(db)])
    assert result.exit_code == 0, result.output  # refused on its own; the rest loads (issue 26)
    assert "kern.log: resolves outside the landing root" in result.stderr
    assert "Traceback" not in result.output
    assert "root:x:0:0" not in result.output
    assert _rows(db, "select reason, raw, stage from raw_quarantine") == [
        ("refused: resolves outside the landing root", "", "fence")  # the reason, no content
    ]
    (landing / "kernel" / "kern.log").unlink()
    ok = runner.invoke(app, ["ingest", str(landing), "--db", str(db)])  # the link inside is fine
    assert ok.exit_code == 0, ok.output
    assert "refused" not in ok.output


def test_host_option_names_the_node_of_a_dmesg_capture(tmp_path: Path) -> None:
    """A `dmesg -T` capture saved as dmesg.log names no host; `--host` does (#12 §3)."""
    log = tmp_path / "kernel" / "dmesg.log"
    log.parent.mkdir()
    log.write_text(
        "[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off the bus.\n"
    )
    db = tmp_path / "w.duckdb"
    without = runner.invoke(app, ["ingest", str(log), "--db", str(db), "--json"])
    (counts,) = json.loads(without.stdout)
    assert (counts["n_loaded"], counts["n_quarantined"]) == (0, 1)
    [(reason,)] = _rows(db, "select reason from raw_quarantine")
    assert "--host" in reason
    forced = runner.invoke(
        app, ["ingest", str(log), "--host", "gpu0042", "--force", "--db", str(db), "--json"]
    )
    assert forced.exit_code == 0, forced.output
    assert _rows(db, "select host, xid from raw_xid_events") == [("gpu0042", 79)]
    assert _rows(db, "select count(*) from raw_quarantine") == [(0,)]
