"""The landing's edges: folders relia does not know, host subfolders, a mistyped --source, files
nothing loaded from, quarantine reasons as kinds, and lines too long to load.

Raw text is what the tools print: ``sacct --parsable2`` with ``SLURM_TIME_FORMAT=%s`` (epoch
seconds, which the parser does not read), and kernel ``NVRM: Xid`` lines as journald forwards
them (ISO time, host, ``kernel:``).
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app
from pipelines.ingest.long_lines import cut_long_lines
from pipelines.ingest.sources import PARSERS
from pipelines.warehouse.reasons import VALUE, split_reason, split_reasons

runner = CliRunner()
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "sql" / "schema"

SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts"
)
# one job of a sacct dump taken with SLURM_TIME_FORMAT=%s: its times are epoch seconds
EPOCH_JOB = (
    "{job}|{job}|train|gpu|ml|ada|2|billing=16,cpu=16,gres/gpu=16,node=2|gpu[001-002]|"
    "{submit}|1780272060|1780290000|04:59:00|COMPLETED|0:0|0"
)
GOOD_JOB = (
    "{job}|{job}|{name}|gpu|ml|ada|1|billing=8,cpu=8,gres/gpu=8,node=1|gpu003|"
    "2026-06-01T00:00:00|2026-06-01T00:01:00|2026-06-01T05:00:00|04:59:00|COMPLETED|0:0|0"
)
XID = (
    "2026-06-03T11:09:{s:02d}.000000+00:00 gpu0001 kernel: NVRM: Xid (PCI:0000:2a:00): 79, "
    "pid=2169508, name=python, GPU has fallen off the bus.{tail}"
)
SOURCES = ", ".join(sorted(PARSERS))


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _epoch_dump(n_jobs: int) -> str:
    jobs = [EPOCH_JOB.format(job=101 + i, submit=1780272000 + 60 * i) for i in range(n_jobs)]
    return "\n".join([SACCT_HEADER, *jobs]) + "\n"


# ---------------------------------------------------------------------------------------------
# folders relia does not know, an empty landing


def test_discover_warns_of_unknown_folders_and_empty_landings(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "odd" / "sacct" / "sacct_20260601.txt", _epoch_dump(1))
    _write(landing / "nvidia-smi" / "gpu0001__20260601T000000Z.csv", "timestamp, index\n")
    _write(landing / "slurm" / "sacct_20260602.txt", _epoch_dump(1))
    (landing / ".cache").mkdir()  # hidden: skipped without a word
    empty = tmp_path / "empty"
    empty.mkdir()
    inner = tmp_path / "site"
    _write(inner / "pod7" / "slurm" / "sacct.txt", _epoch_dump(1))
    warnings: list[str] = []
    files = ingest.discover([landing, empty, inner], warnings=warnings)
    assert [(f.path.name, f.source) for f in files] == [("sacct_20260602.txt", "slurm")]
    assert warnings == [
        f"{landing / 'nvidia-smi'}: not a source folder, not read; did you mean 'nvidia_smi'? "
        f"(source folders: {SOURCES})",
        f"{landing / 'odd'}: not a source folder, not read (source folders: {SOURCES})",
        f"{empty}: no source folder and no file to ingest (source folders: {SOURCES})",
        f"{inner / 'pod7'}: not a source folder, not read; it holds slurm: give "
        f"{inner / 'pod7'} as a landing (source folders: {SOURCES})",
        f"{inner}: no source folder and no file to ingest (source folders: {SOURCES})",
    ]


def test_empty_source_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "slurm").mkdir()
    warnings: list[str] = []
    assert ingest.discover([tmp_path / "slurm"], warnings=warnings) == []
    assert warnings == [f"{tmp_path / 'slurm'}: no file to ingest (source folders: {SOURCES})"]


def test_cli_warns_of_unknown_folder_on_stderr(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "odd" / "sacct" / "sacct_20260601.txt", _epoch_dump(1))
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 0, result.output
    assert (
        f"warning: {landing / 'odd'}: not a source folder, not read (source folders: "
        in " ".join(result.stderr.split())
    )


# ---------------------------------------------------------------------------------------------
# a single file in a host subfolder, a mistyped --source


def test_single_file_takes_its_nearest_source_folder(tmp_path: Path) -> None:
    log = _write(tmp_path / "landing" / "kernel" / "node4" / "dmesg.log", XID.format(s=5, tail=""))
    (alone,) = ingest.discover([log])
    (walked,) = ingest.discover([tmp_path / "landing"])
    assert (alone.source, alone.path) == ("kernel", walked.path) == ("kernel", log)
    # a path pattern sees the same relative path (node4/dmesg.log) either way
    from pipelines.runtime.path_patterns import parse_patterns

    patterns = parse_patterns("kernel={host}/*.log")
    (alone,) = ingest.discover([log], path_patterns=patterns)
    (walked,) = ingest.discover([tmp_path / "landing"], path_patterns=patterns)
    assert alone.path_options == walked.path_options == (("host", "node4"),)


def test_file_under_no_source_folder_still_needs_source(tmp_path: Path) -> None:
    log = _write(tmp_path / "odd" / "node4" / "dmesg.log", XID.format(s=5, tail=""))
    with pytest.raises(ValueError, match=r"cannot tell the source of .*dmesg.log.*pass --source"):
        ingest.discover([log])


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("slurmm", "unknown source 'slurmm' (did you mean 'slurm'?)"),
        ("k8s_event", "unknown source 'k8s_event' (did you mean 'k8s_events'?)"),
        ("syslog", f"unknown source 'syslog' (known sources: {SOURCES})"),
    ],
)
def test_unknown_source_names_the_closest(tmp_path: Path, given: str, message: str) -> None:
    dump = _write(tmp_path / "x" / "sacct.txt", _epoch_dump(1))
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        ingest.discover([dump], source=given)
    with pytest.raises(ValueError, match=r"did you mean|known sources"):
        ingest.discover([dump.parent], source=given)
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(dump), "--source", given, "--db", str(db)])
    assert result.exit_code == 2
    assert " ".join(result.output.split()) == f"error: {message}"
    assert not db.exists()


# ---------------------------------------------------------------------------------------------
# a file nothing loaded from; reasons as kinds; the ingest names them


def test_all_quarantined_file_is_quarantined_and_reasons_are_kinds(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "slurm" / "sacct_epoch.txt", _epoch_dump(52))
    good = "\n".join([SACCT_HEADER, GOOD_JOB.format(job=900, name="eval")]) + "\n"
    _write(landing / "slurm" / "sacct_iso.txt", good)
    db = tmp_path / "w.duckdb"
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([landing]))}
    epoch, iso = counts["sacct_epoch.txt"], counts["sacct_iso.txt"]
    assert (epoch.n_read, epoch.n_loaded, epoch.n_quarantined, epoch.outcome) == (
        52,
        0,
        52,
        "quarantined",
    )
    assert (iso.n_loaded, iso.outcome) == (1, "loaded")
    with warehouse.connect(db, read_only=True) as con:
        kinds = con.execute(
            "select reason, n_rows, n_values, example_value from rpt_quarantine_reasons"
        ).fetchall()
        values = con.execute(
            "select reason_value from rpt_quarantine_lines order by line_no"
        ).fetchall()
        summed = con.execute(
            "select n_rows_with_reason from rpt_ingest_quality where reason is not null"
        ).fetchall()
    # 52 jobs, 52 submit times: one kind, its 52 values apart
    assert kinds == [("malformed Submit time '…'", 52, 52, "1780272000")]
    assert [v for (v,) in values] == [str(1780272000 + 60 * i) for i in range(52)]
    assert summed == [(52,)]
    again = ingest.ingest(db, ingest.discover([landing]))
    assert {c.outcome for c in again} == {"already loaded"}


def test_cli_prints_top_quarantine_kinds(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    lines = [SACCT_HEADER]
    # seven kinds of bad line, the first with three lines
    for job in (201, 202, 203):
        lines.append(EPOCH_JOB.format(job=job, submit=1780272000 + job))
    good = GOOD_JOB.format(job=300, name="ok")
    lines += [
        good.replace("COMPLETED", "EXPLODED"),  # unknown State
        good.replace("gres/gpu=8,", "gres/gpu=x,"),  # malformed AllocTRES
        good.replace("|gpu003|", "|gpu_003!|"),  # not a Slurm hostlist (a validate check)
        good.replace("2026-06-01T00:01:00", "2026-06-01T00:01:61"),  # malformed Start time
        good.replace("2026-06-01T05:00:00", "2026-06-01T05:00:99"),  # malformed End time
        good.rsplit("|", 3)[0],  # cut short: 13 fields
        good,
    ]
    _write(landing / "slurm" / "sacct_mixed.txt", "\n".join(lines) + "\n")
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(db)])
    assert result.exit_code == 0, result.output
    out = result.stdout[result.stdout.index("quarantined lines by reason") :].splitlines()
    with duckdb.connect(str(db), read_only=True) as con:
        kinds = con.execute(
            "select stage, reason, n_rows from rpt_quarantine_reasons "
            "order by n_rows desc, stage, reason"
        ).fetchall()
    assert len(kinds) == 7
    assert kinds[0] == ("parse", "malformed Submit time '…'", 3)
    assert out[0] == "quarantined lines by reason (values in raw_quarantine.reason_value):"
    assert out[1:6] == [f"  {n}  {stage}: {reason}" for stage, reason, n in kinds[:5]]
    assert out[6] == "  … 2 more kinds (2 lines): see rpt_quarantine_reasons"
    again = runner.invoke(app, ["ingest", str(landing), "--db", str(db)])
    assert "quarantined lines by reason" not in again.stdout  # nothing new quarantined


@pytest.mark.parametrize(
    ("reason", "kind", "value"),
    [
        # parsers (pipelines/ingest/sources/*.py)
        ("malformed JobID '30x'", f"malformed JobID '{VALUE}'", "30x"),
        ("unknown State 'EXPLODED'", f"unknown State '{VALUE}'", "EXPLODED"),
        ("malformed gres/gpu 'gpu:a100:x'", f"malformed gres/gpu '{VALUE}'", "gpu:a100:x"),
        (
            "expected 16 fields separated by '|', found 13",
            f"expected 16 fields separated by '|', found {VALUE}",
            "13",
        ),
        (
            "timestamp in the future: 2099-06-09T14:05:34.000000+00:00",
            f"timestamp in the future: {VALUE}",
            "2099-06-09T14:05:34.000000+00:00",
        ),
        (
            "Start time in the future: 2099-01-20T22:53:57",
            f"Start time in the future: {VALUE}",
            "2099-01-20T22:53:57",
        ),
        (
            "time '12345.678901' is seconds since boot and the boot time is unknown: give "
            "--boot-time",
            f"time '{VALUE}' is seconds since boot and the boot time is unknown: give --boot-time",
            "12345.678901",
        ),
        (
            "bad start time '2017-04-09 21:36:19' in column insert (expected format "
            "%m/%d/%Y %H:%M:%S in America/New_York)",
            f"bad start time '{VALUE}' in column insert (expected format %m/%d/%Y %H:%M:%S in "
            "America/New_York)",
            "2017-04-09 21:36:19",
        ),
        (
            "event type 'pause' in column type is neither a start ['start'] nor an end ['end']",
            f"event type '{VALUE}' in column type is neither a start ['start'] nor an end ['end']",
            "pause",
        ),
        ("malformed NodeName 'gpu 01'", f"malformed NodeName '{VALUE}'", "gpu 01"),
        ("unknown State 'it's'", f"unknown State '{VALUE}'", "it's"),
        (
            "unknown State ''; drop table raw_fleet; --'",
            f"unknown State '{VALUE}'",
            "'; drop table raw_fleet; --",
        ),
        (
            "slurm header is missing columns End: expected a first line naming JobID|End "
            "(separated by '|')",
            "slurm header is missing columns End: expected a first line naming JobID|End "
            f"(separated by '{VALUE}')",
            "|",
        ),
        (
            "the kernel parser failed on this file: ValueError: bad: x",
            f"the kernel parser failed on this file: {VALUE}",
            "ValueError: bad: x",
        ),
        ("line over 1048576 bytes: 10485760", f"line over 1048576 bytes: {VALUE}", "10485760"),
        # no value: kept whole
        ("line is not valid UTF-8", "line is not valid UTF-8", None),
        ("empty file", "empty file", None),
        ("malformed or truncated PCI bus id", "malformed or truncated PCI bus id", None),
        ("refused: symbolic link loop", "refused: symbolic link loop", None),
        (
            "refused: cannot be read: Permission denied",
            "refused: cannot be read: Permission denied",
            None,
        ),
        (
            "gzip archive of 1.0 KiB inflates past 4.0 GiB, the limit: not read",
            "gzip archive of 1.0 KiB inflates past 4.0 GiB, the limit: not read",
            None,
        ),
        # Great Expectations checks: their labels quote constants
        (
            "ExpectColumnPairValuesAToBeGreaterThanB: end_ts >= start_ts",
            "ExpectColumnPairValuesAToBeGreaterThanB: end_ts >= start_ts",
            None,
        ),
        (
            "ExpectColumnValuesToMatchRegex: host is a host name (letters, digits, '-', '.', "
            "'_'; at most 253 characters)",
            "ExpectColumnValuesToMatchRegex: host is a host name (letters, digits, '-', '.', "
            "'_'; at most 253 characters)",
            None,
        ),
    ],
)
def test_split_reason(reason: str, kind: str, value: str | None) -> None:
    assert split_reason(reason) == (kind, value)


def test_split_reasons_splits_each_distinct_reason_once() -> None:
    reasons = pl.Series("reason", ["malformed JobID '1x'", "empty file", "malformed JobID '2x'"])
    kinds, values = split_reasons(reasons)
    assert kinds.to_list() == [f"malformed JobID '{VALUE}'", "empty file", kinds[0]]
    assert values.to_list() == ["1x", None, "2x"]


def test_older_warehouse_gains_reason_value_and_reingest_changes_nothing(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "slurm" / "sacct_epoch.txt", _epoch_dump(3))
    db = tmp_path / "w.duckdb"
    # a warehouse made before the column: the schema without its migration
    with duckdb.connect(str(db)) as con:
        for path in sorted(SCHEMA_DIR.glob("*.sql")):
            if path.name != "016_quarantine_reason_value.sql":
                con.execute(path.read_text())
        con.execute(
            "insert into raw_quarantine values ('old', 'old.txt', 2, 'raw_slurm_jobs', 'x', "
            "'unknown State ''WIBBLE''', 'parse', now())"
        )
    ingest.ingest(db, ingest.discover([landing]))
    with warehouse.connect(db) as con:
        before = con.execute("select * from raw_quarantine order by all").fetchall()
    assert len(before) == 4
    assert ("unknown State 'WIBBLE'", None) in [(r[5], r[8]) for r in before]
    again = ingest.ingest(db, ingest.discover([landing]))
    assert [c.outcome for c in again] == ["already loaded"]
    with warehouse.connect(db) as con:
        assert con.execute("select * from raw_quarantine order by all").fetchall() == before


# ---------------------------------------------------------------------------------------------
# lines too long to load


def test_cut_long_lines_blanks_them_and_names_their_length() -> None:
    limit = 100
    line = b"x" * limit  # at the limit: loaded
    long = b"y" * (limit + 1)
    data = b"\n".join([line, long, b"a", b"z" * 350, b"b\r", line]) + b"\n" + b"w" * 101
    cut, rejects = cut_long_lines(data, limit, source_file="f")
    assert cut == b"\n".join([line, b"", b"a", b"", b"b\r", line]) + b"\n"
    assert rejects is not None
    assert rejects.rows() == [
        ("f", 2, "y" * 101 + "…", "line over 100 bytes: 101"),
        ("f", 4, "z" * 200 + "…", "line over 100 bytes: 350"),
        ("f", 7, "w" * 101 + "…", "line over 100 bytes: 101"),
    ]
    assert cut_long_lines(data[:100], limit, source_file="f") == (data[:100], None)
    short = b"\n".join([line] * 50)
    assert cut_long_lines(short, limit, source_file="f")[1] is None
    document = b'{"items": [' + b"1," * 500 + b"1]}"
    assert cut_long_lines(document, limit, source_file="f") == (document, None)


def test_long_job_name_and_xid_line_are_quarantined_not_loaded(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    sacct = [
        SACCT_HEADER,
        GOOD_JOB.format(job=401, name="train"),
        GOOD_JOB.format(job=402, name="j" * 10_000_000),  # a 10 MB job name
        GOOD_JOB.format(job=403, name="eval"),
    ]
    _write(landing / "slurm" / "sacct_long.txt", "\n".join(sacct) + "\n")
    xid = [
        XID.format(s=5, tail=""),
        XID.format(s=6, tail=" " + "0x1f" * 1_250_000),  # a 5 MB Xid line
        XID.format(s=7, tail=""),
        "2026-06-03T11:09:08.000000+00:00 gpu0001 systemd[1]: Started Session 5 of user root.",
    ]
    _write(landing / "kernel" / "gpu0001.log", "\n".join(xid) + "\n")
    db = tmp_path / "w.duckdb"
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([landing]))}
    jobs, log = counts["sacct_long.txt"], counts["gpu0001.log"]
    assert (jobs.n_read, jobs.n_loaded, jobs.n_quarantined, jobs.n_ignored) == (3, 2, 1, 1)
    assert (log.n_read, log.n_loaded, log.n_quarantined, log.n_ignored) == (3, 2, 1, 1)
    with warehouse.connect(db, read_only=True) as con:
        rows = con.execute(
            "select target_table, line_no, reason, reason_value, length(raw) "
            "from raw_quarantine order by target_table"
        ).fetchall()
        names = con.execute("select max(length(job_name)) from raw_slurm_jobs").fetchone()
    xid_len = len(XID.format(s=6, tail=" " + "0x1f" * 1_250_000))
    job_len = len(GOOD_JOB.format(job=402, name="j" * 10_000_000))
    assert rows == [
        ("raw_slurm_jobs", 3, "line over 1048576 bytes: …", str(job_len), 201),
        ("raw_xid_events", 2, "line over 1048576 bytes: …", str(xid_len), 201),
    ]
    assert names == (5,)


def test_line_limit_is_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.runtime.settings import Settings, SettingsError

    monkeypatch.setenv("RELIA_MAX_LINE_BYTES", "4096")
    assert Settings.from_env().max_line_bytes == 4096
    monkeypatch.setenv("RELIA_MAX_LINE_BYTES", "-1")
    with pytest.raises(SettingsError, match="RELIA_MAX_LINE_BYTES"):
        Settings.from_env()
    monkeypatch.setenv("RELIA_MAX_LINE_BYTES", "200")
    landing = tmp_path / "landing"
    sacct = [SACCT_HEADER, GOOD_JOB.format(job=1, name="a" * 300), GOOD_JOB.format(job=2, name="b")]
    _write(landing / "slurm" / "sacct.txt", "\n".join(sacct) + "\n")
    db = tmp_path / "w.duckdb"
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    with warehouse.connect(db, read_only=True) as con:
        assert con.execute("select reason from raw_quarantine").fetchall() == [
            ("line over 200 bytes: …",)
        ]
