"""Years and boot times of kernel and torchrun logs are given, never guessed silently.

Syslog kernel lines and torchrun ``glog`` lines print no year: ``relia ingest --year``
(``RELIA_LOG_YEAR``) names the year the log ends in. ``dmesg`` lines stamped in seconds since
boot take ``--boot-time`` (``RELIA_BOOT_TIME``) plus those seconds; without it they are rejects
whose reason names the option. Expected times are worked out by hand in the comments.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from pipelines import warehouse
from pipelines.cli import app
from pipelines.ingest import file_options, identity_options
from pipelines.ingest.landing import LandingFile
from pipelines.ingest.sources import elastic, xid
from pipelines.runtime.settings import Settings, SettingsError
from tests.pipelines.sources.helpers import raw_bytes, reject_reasons

if TYPE_CHECKING:
    from pathlib import Path

    from pipelines.ingest.sources.common import Parsed

runner = CliRunner()
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
COPIED = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)  # the mtime of a 2024 log copied today
SOURCE = "/landing/kernel/gpu0003.log"

# a January 2024 slice of a node's kern.log: Xid 79 then 63 after a reboot
SYSLOG_2024 = """
    Jan 10 13:04:04 gpu0003 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, pid=1896, name=python3, GPU has fallen off the bus.
    Jan 10 13:04:05 gpu0003 kernel: [ 1235.001234] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.
    Jan 12 08:00:10 gpu0003 kernel: [   31.250000] NVRM: Xid (PCI:0000:18:00): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.
"""  # noqa: E501

# the same node's log across New Year
SYSLOG_NEW_YEAR = """
    Dec 31 23:59:00 gpu0003 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:18:00): 92, pid=1, name=x, High single-bit ECC error rate
    Jan  1 00:00:10 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.
    Jan  3 12:00:00 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
"""  # noqa: E501

# plain `dmesg`: seconds since boot
DMESG_RELATIVE = """
    [    5.123456] nvidia: module license 'NVIDIA' taints kernel.
    [ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, pid=1896, name=python3, GPU has fallen off the bus.
    [86400.000001] NVRM: Xid (PCI:0000:3b:00): 48, pid=2044, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.
"""  # noqa: E501
BOOT = datetime(2024, 1, 10, 8, 0, tzinfo=UTC)


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _xid(text: str, **options: object) -> Parsed:
    return xid.parse(raw_bytes(text), source_file=SOURCE, now=NOW, **options)  # type: ignore[arg-type]


def test_syslog_without_a_year_takes_the_mtime_year() -> None:
    # what happens without --year: the copy's mtime (2026) gives the year
    result = _xid(SYSLOG_2024, file_mtime=COPIED)
    assert result.rows["ts"].to_list() == [
        _utc("2026-01-10T13:04:04Z"),
        _utc("2026-01-12T08:00:10Z"),
    ]


def test_syslog_with_a_year_takes_it_whatever_the_mtime() -> None:
    result = _xid(SYSLOG_2024, file_mtime=COPIED, year=2024)
    assert result.rejects.height == 0
    assert result.rows.select("line_no", "ts", "xid").rows() == [
        (1, _utc("2024-01-10T13:04:04Z"), 79),
        (3, _utc("2024-01-12T08:00:10Z"), 63),
    ]


def test_syslog_year_is_the_year_the_log_ends_in_across_new_year() -> None:
    # the last line is Jan 3 2025; Dec 31 2025 would be after it, so Dec 31 is 2024
    result = _xid(SYSLOG_NEW_YEAR, file_mtime=COPIED, year=2025)
    assert result.rows["ts"].to_list() == [
        _utc("2024-12-31T23:59:00Z"),
        _utc("2025-01-01T00:00:10Z"),
        _utc("2025-01-03T12:00:00Z"),
    ]


def test_syslog_year_does_not_touch_lines_that_print_their_year() -> None:
    line = "[Wed Jan 10 13:04:04 2024] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus."
    result = _xid(line, year=2019)
    assert result.rows["ts"].to_list() == [_utc("2024-01-10T13:04:04Z")]


def test_dmesg_seconds_since_boot_take_the_boot_time() -> None:
    result = _xid(DMESG_RELATIVE, boot_time=BOOT)
    # 1234.567890 s = 20 min 34.567890 s; 86400.000001 s = one day and 1 µs
    assert result.rows.select("line_no", "ts", "xid", "pci_bus_id", "log_format").rows() == [
        (2, _utc("2024-01-10T08:20:34.567890Z"), 79, "0000:18:00", "dmesg_rel"),
        (3, _utc("2024-01-11T08:00:00.000001Z"), 48, "0000:3b:00", "dmesg_rel"),
    ]
    assert result.rows["host"].to_list() == ["gpu0003", "gpu0003"]
    assert result.n_ignored == 1


def test_dmesg_seconds_since_boot_without_a_boot_time_are_rejects_naming_the_option() -> None:
    result = _xid(DMESG_RELATIVE)
    assert result.rows.height == 0
    assert reject_reasons(result) == {
        line_no: f"time '{stamp}' is seconds since boot and the boot time is unknown: give "
        "--boot-time (RELIA_BOOT_TIME) or collect with dmesg -T / journalctl"
        for line_no, stamp in ((2, "1234.567890"), (3, "86400.000001"))
    }


def test_dmesg_seconds_since_boot_in_the_future_are_rejects() -> None:
    result = _xid(DMESG_RELATIVE, boot_time=datetime(2026, 11, 29, 11, 50, tzinfo=UTC))
    # the last line is 11:50 + 86400 s = Nov 30 11:50, less than a day after NOW (Nov 29 12:00)
    assert result.rows["line_no"].to_list() == [2, 3]
    result = _xid(DMESG_RELATIVE, boot_time=datetime(2026, 11, 30, 12, 10, tzinfo=UTC))
    # boot 24 h 10 min after NOW: every line is more than a day ahead
    assert result.rows.height == 0
    assert sorted(reject_reasons(result)) == [2, 3]


def test_glog_lines_with_a_year_end_in_it() -> None:
    text = """
        I1231 23:59:58.120000 4242 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1129] The node 'gpu0001_4242_0' has joined round 3 of the rendezvous 'eval-7' as rank 0 in a world of size 4.
        E0101 02:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:851] failed (exitcode: -9) local_rank: 0 (pid: 77) of binary: /opt/conda/bin/python
    """  # noqa: E501
    result = elastic.parse(
        raw_bytes(text), source_file="/landing/elastic/x.log", file_mtime=COPIED, now=NOW, year=2024
    )
    # the last glog line is Jan 1 2024; Dec 31 2024 would be after it: 2023
    assert result.rows["ts"].to_list() == [
        _utc("2023-12-31T23:59:58.12Z"),
        _utc("2024-01-01T02:00:00Z"),
    ]


def test_year_and_boot_time_go_only_to_the_parsers_that_take_them(tmp_path: Path) -> None:
    files = [
        LandingFile(tmp_path / name / "f.log", name) for name in ("kernel", "elastic", "slurm")
    ]
    options = identity_options(files, year=2024, boot_time=BOOT)
    assert options == {"kernel": {"year": 2024, "boot_time": BOOT}, "elastic": {"year": 2024}}
    path = tmp_path / "kernel" / "f.log"
    path.parent.mkdir()
    path.write_text("x\n")
    assert file_options(files[0], options["kernel"])["year"] == 2024


def test_settings_read_the_log_year_and_boot_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELIA_LOG_YEAR", raising=False)
    monkeypatch.delenv("RELIA_BOOT_TIME", raising=False)
    assert (Settings.from_env().log_year, Settings.from_env().boot_time) == (None, None)
    monkeypatch.setenv("RELIA_LOG_YEAR", "2024")
    monkeypatch.setenv("RELIA_BOOT_TIME", "2024-01-10T09:00:00+01:00")
    assert (Settings.from_env().log_year, Settings.from_env().boot_time) == (2024, BOOT)
    monkeypatch.setenv("RELIA_BOOT_TIME", "2024-01-10T08:00:00")  # no offset: UTC
    assert Settings.from_env().boot_time == BOOT
    monkeypatch.setenv("RELIA_LOG_YEAR", "24")
    with pytest.raises(SettingsError, match="RELIA_LOG_YEAR='24': expected a year such as 2024"):
        Settings.from_env()
    monkeypatch.setenv("RELIA_LOG_YEAR", "2024")
    monkeypatch.setenv("RELIA_BOOT_TIME", "yesterday")
    with pytest.raises(SettingsError, match="RELIA_BOOT_TIME='yesterday': expected an ISO 8601"):
        Settings.from_env()


def _landing(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "landing" / "kernel" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw_bytes(text))
    ns = int(COPIED.timestamp()) * 10**9
    os.utime(path, ns=(ns, ns))
    return path


def _ingest(args: list[str], env: dict[str, str] | None = None) -> list[dict[str, object]]:
    result = runner.invoke(app, ["ingest", *args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


def _xid_times(db: Path) -> list[tuple[object, ...]]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute("select ts, xid from raw_xid_events order by line_no").fetchall()


IN_2024 = [(_utc("2024-01-10T13:04:04Z"), 79), (_utc("2024-01-12T08:00:10Z"), 63)]


def test_cli_year_and_boot_time(tmp_path: Path) -> None:
    log = _landing(tmp_path, "gpu0003.log", SYSLOG_2024)
    db = tmp_path / "a.duckdb"
    _ingest([str(log), "--year", "2024", "--db", str(db)])
    assert _xid_times(db) == IN_2024
    db = tmp_path / "b.duckdb"
    _ingest([str(log), "--db", str(db)], env={"RELIA_LOG_YEAR": "2024"})
    assert _xid_times(db) == IN_2024
    dmesg = _landing(tmp_path, "gpu0004.log", DMESG_RELATIVE)
    db = tmp_path / "c.duckdb"
    _ingest([str(dmesg), "--boot-time", "2024-01-10T08:00:00Z", "--db", str(db)])
    assert _xid_times(db) == [
        (_utc("2024-01-10T08:20:34.567890Z"), 79),
        (_utc("2024-01-11T08:00:00.000001Z"), 48),
    ]


def test_cli_refuses_a_boot_time_that_is_not_iso(tmp_path: Path) -> None:
    log = _landing(tmp_path, "gpu0004.log", DMESG_RELATIVE)
    result = runner.invoke(
        app, ["ingest", str(log), "--boot-time", "monday", "--db", str(tmp_path / "w.duckdb")]
    )
    assert result.exit_code == 2
    assert "--boot-time: expected an ISO 8601 time such as 2024-01-10T08:00:00Z" in result.output


WARNING = (
    "year 2026 taken from the file's modification time; give --year (RELIA_LOG_YEAR) if the log "
    "is older"
)


def _lineage(db: Path) -> list[tuple[object, ...]]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute("select path, time_assumption from raw_ingest_files").fetchall()


def test_cli_warns_once_and_records_a_year_taken_from_the_mtime(tmp_path: Path) -> None:
    log = _landing(tmp_path, "gpu0003.log", SYSLOG_2024)
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(log), "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    [counts] = json.loads(result.stdout)
    assert counts["time_assumption"] == WARNING
    stderr = " ".join(result.stderr.split())  # rich may wrap the line
    assert stderr.count(WARNING) == 1
    assert str(log.resolve()) in stderr.replace(" ", "")
    assert _xid_times(db) == [
        (_utc("2026-01-10T13:04:04Z"), 79),
        (_utc("2026-01-12T08:00:10Z"), 63),
    ]
    assert _lineage(db) == [(str(log.resolve()), WARNING)]
    # the same file again: nothing new is loaded, the note stays
    again = runner.invoke(app, ["ingest", str(log), "--json", "--db", str(db)])
    assert again.exit_code == 0, again.output
    assert _lineage(db) == [(str(log.resolve()), WARNING)]
    assert len(_xid_times(db)) == 2


def test_cli_with_a_year_does_not_warn(tmp_path: Path) -> None:
    log = _landing(tmp_path, "gpu0003.log", SYSLOG_2024)
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(log), "--year", "2024", "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "taken from the file's modification time" not in result.stderr
    assert _lineage(db) == [(str(log.resolve()), None)]


def test_files_whose_lines_print_their_year_assume_nothing(tmp_path: Path) -> None:
    log = _landing(
        tmp_path,
        "gpu0005.log",
        "[Wed Jan 10 13:04:04 2024] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.",
    )
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(log), "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "taken from" not in result.stderr
    assert _lineage(db) == [(str(log.resolve()), None)]


def test_a_warehouse_made_before_gains_the_time_assumption_column(tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "old.duckdb"
    with duckdb.connect(str(db)) as con:
        warehouse.apply_schema(con)
        con.execute("alter table raw_ingest_files drop column time_assumption")
    log = _landing(tmp_path, "gpu0003.log", SYSLOG_2024)
    _ingest([str(log), "--db", str(db)])
    assert _lineage(db) == [(str(log.resolve()), WARNING)]


def test_flow_task_takes_the_year_and_boot_time_from_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.flows.ingest_telemetry import load_files
    from pipelines.ingest import discover

    monkeypatch.setenv("RELIA_LOG_YEAR", "2024")
    monkeypatch.setenv("RELIA_BOOT_TIME", "2024-01-10T08:00:00Z")
    _landing(tmp_path, "gpu0003.log", SYSLOG_2024)
    _landing(tmp_path, "gpu0004.log", DMESG_RELATIVE)
    db = tmp_path / "w.duckdb"
    counts = load_files.fn(db, discover([tmp_path / "landing"]), 5.0)
    assert [(c["n_loaded"], c["n_quarantined"], c["time_assumption"]) for c in counts] == [
        (2, 0, ""),
        (2, 0, ""),
    ]
    with warehouse.connect(db, read_only=True) as con:
        rows = con.execute("select host, ts, xid from raw_xid_events order by host, line_no")
        assert rows.fetchall() == [
            ("gpu0003", _utc("2024-01-10T13:04:04Z"), 79),
            ("gpu0003", _utc("2024-01-12T08:00:10Z"), 63),
            ("gpu0004", _utc("2024-01-10T08:20:34.567890Z"), 79),
            ("gpu0004", _utc("2024-01-11T08:00:00.000001Z"), 48),
        ]


# a kern.log slice whose middle line a collector stamped with a full ISO date (line 3)
SYSLOG_WITH_A_DATED_LINE = """
    Jan 10 13:04:04 gpu0003 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, pid=1896, name=python3, GPU has fallen off the bus.
    Jan 10 13:04:05 gpu0003 kernel: [ 1235.001234] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.
    2024-01-11T02:15:00.123456+00:00 gpu0003 kernel: [   12.000001] nvidia-nvswitch0: open (major=508)
    Jan 12 08:00:10 gpu0003 kernel: [   31.250000] NVRM: Xid (PCI:0000:18:00): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.
"""  # noqa: E501


def _xid_with_content(text: str, **options: object) -> Parsed:
    from pipelines.ingest.landing import content_options

    data = raw_bytes(text)
    chosen = content_options("kernel", data, {"file_mtime": COPIED, **options})
    return xid.parse(data, source_file=SOURCE, now=NOW, **chosen)


def test_dated_lines_are_the_first_and_last_full_dates_of_one_year() -> None:
    from pipelines.ingest.landing import dated_lines

    data = raw_bytes(SYSLOG_WITH_A_DATED_LINE)
    when = _utc("2024-01-11T02:15:00Z")  # to the second, the offset left out
    assert dated_lines(data) == (3, when, 3, when)
    two_years = (
        data + b"[Mon Jan  1 00:00:05 2025] NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n"
    )
    assert dated_lines(two_years) is None
    assert dated_lines(raw_bytes(SYSLOG_2024)) is None


def test_syslog_takes_the_year_of_a_dated_line_in_the_file() -> None:
    result = _xid_with_content(SYSLOG_WITH_A_DATED_LINE)
    assert result.rows.select("line_no", "ts").rows() == [
        (1, _utc("2024-01-10T13:04:04Z")),
        (4, _utc("2024-01-12T08:00:10Z")),
    ]
    # --year wins over the content
    result = _xid_with_content(SYSLOG_WITH_A_DATED_LINE, year=2023)
    assert result.rows["ts"].to_list() == [
        _utc("2023-01-10T13:04:04Z"),
        _utc("2023-01-12T08:00:10Z"),
    ]


def test_a_dated_line_gives_the_years_on_both_sides_of_new_year() -> None:
    text = """
        Dec 30 23:00:00 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 92, pid=1, name=x, High single-bit ECC error rate
        [Tue Dec 31 12:00:00 2024] NVRM: GPU 0000:18:00.0: RmInitAdapter succeeded
        Jan  2 01:00:00 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
    """  # noqa: E501
    result = _xid_with_content(text)
    # Dec 30 is before the dated line and before it in 2024: 2024; Jan 2 is after it and would be
    # a year before it in 2024: 2025
    assert result.rows["ts"].to_list() == [
        _utc("2024-12-30T23:00:00Z"),
        _utc("2025-01-02T01:00:00Z"),
    ]


def test_cli_takes_a_dated_line_year_without_a_warning(tmp_path: Path) -> None:
    log = _landing(tmp_path, "gpu0003.log", SYSLOG_WITH_A_DATED_LINE)
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(log), "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "taken from" not in result.stderr
    assert _xid_times(db) == IN_2024
    assert _lineage(db) == [(str(log.resolve()), None)]
