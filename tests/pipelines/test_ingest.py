"""Ingest of hostile input: every bad line ends in quarantine with a reason; nothing crashes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipelines import ingest, warehouse

SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts"
)


def _write(root: Path, source: str, name: str, data: bytes) -> Path:
    path = root / source / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def hostile_landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    good = "101|101|train|gpu|ml|ada|2|billing=16,cpu=16,gres/gpu=16,node=2|gpu[001-002]|2026-06-01T00:00:00|2026-06-01T00:01:00|2026-06-01T05:00:00|04:59:00|COMPLETED|0:0|0"
    sacct = "\n".join(
        [
            SACCT_HEADER,
            good,
            # End before Start: parses, fails the expectation end_ts >= start_ts
            "102|102|train|gpu|ml|ada|1|gres/gpu=8|gpu003|2026-06-01T00:00:00|2026-06-01T06:00:00|2026-06-01T05:00:00|00:00:00|FAILED|1:0|0",
            # unknown state
            "103|103|train|gpu|ml|ada|1|gres/gpu=8|gpu003|2026-06-01T00:00:00|2026-06-01T01:00:00|2026-06-01T02:00:00|01:00:00|WIBBLE|0:0|0",
            # truncated line
            "104|104|train|gpu|ml|ada|1|gres/gpu=8|gpu0",
            # start in the future
            "105|105|train|gpu|ml|ada|1|gres/gpu=8|gpu003|2099-06-01T00:00:00|2099-06-01T01:00:00|2099-06-01T02:00:00|01:00:00|COMPLETED|0:0|0",
        ]
    )
    _write(root, "slurm", "sacct_ok.txt", (sacct + "\n").encode())
    _write(root, "slurm", "sacct_empty.txt", b"")
    _write(
        root,
        "slurm",
        "sacct_commas.txt",
        (SACCT_HEADER.replace("|", ",") + "\n" + good.replace("|", ",") + "\n").encode(),
    )
    kernel = (
        textwrap.dedent(
            """\
        2026-06-01T00:00:00+0000 gpu001 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=python, GPU has fallen off the bus.
        2026-06-01T00:00:05+0000 gpu001 kernel: NVRM: Xid (PCI:0000:18:0
        2026-06-01T00:00:06+0000 gpu001 systemd[1]: Started Session 5 of user root.
        2099-06-01T00:00:00+0000 gpu001 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=python, GPU has fallen off the bus.
        """
        ).encode()
        + b"2026-06-01T00:00:07+0000 gpu001 kernel: NVRM: Xid (PCI:0000:18:00): 92, \xff\xfe bad\n"
    )
    _write(root, "kernel", "gpu001.log", kernel)
    return root


def test_hostile_files_are_quarantined_with_reasons(hostile_landing: Path, tmp_path: Path) -> None:
    db = tmp_path / "relia.duckdb"
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([hostile_landing]))}
    for c in counts.values():
        assert c.n_read == c.n_loaded + c.n_quarantined
    assert (counts["sacct_ok.txt"].n_loaded, counts["sacct_ok.txt"].n_quarantined) == (1, 4)
    assert (counts["sacct_empty.txt"].n_loaded, counts["sacct_empty.txt"].n_quarantined) == (0, 1)
    assert counts["sacct_commas.txt"].n_loaded == 0
    assert counts["sacct_commas.txt"].n_quarantined >= 1
    assert (counts["gpu001.log"].n_loaded, counts["gpu001.log"].n_quarantined) == (1, 3)
    assert counts["gpu001.log"].n_ignored == 1
    with warehouse.connect(db, read_only=True) as con:
        reasons = con.execute(
            "select source_file, line_no, stage, reason, reason_value from raw_quarantine "
            "order by all"
        ).fetchall()
    by_line = {(Path(f).name, n): (stage, reason) for f, n, stage, reason, _ in reasons}
    values = {(Path(f).name, n): value for f, n, _, _, value in reasons}
    assert by_line[("sacct_ok.txt", 3)][0] == "validate"
    assert "end_ts >= start_ts" in by_line[("sacct_ok.txt", 3)][1]
    # the reason is the kind; the value it refused is apart
    assert by_line[("sacct_ok.txt", 4)][1] == "unknown State '…'"
    assert values[("sacct_ok.txt", 4)] == "WIBBLE"
    assert by_line[("sacct_empty.txt", 0)] == ("parse", "empty file")
    assert "future" in by_line[("gpu001.log", 4)][1]
    assert "UTF-8" in by_line[("gpu001.log", 5)][1]
    assert all(reason for _, reason in by_line.values())


def test_a_file_whose_source_cannot_be_told_is_refused(tmp_path: Path) -> None:
    stray = tmp_path / "misc" / "dump.txt"
    stray.parent.mkdir()
    stray.write_text("x")
    with pytest.raises(ValueError, match="--source"):
        ingest.discover([stray])
    assert ingest.discover([stray], source="slurm")[0].source == "slurm"


def test_landing_links_outside_the_root_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not telemetry")
    link = tmp_path / "landing" / "slurm" / "sacct.txt"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    [refused] = ingest.landing_files(tmp_path / "landing")
    assert refused.refused == "resolves outside the landing root"  # per file (issue 26)


def test_fault_logs_need_a_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path, "fault_log", "trace.json", b"[]")
    with pytest.raises(ValueError, match="--mapping"):
        ingest.ingest(tmp_path / "db.duckdb", ingest.discover([path]))
