"""Path patterns (``RELIA_PATH_PATTERNS``): a landing laid out as ``{host}/{run}.log`` names the
host and run of logs whose content does not; content wins, then ``--host/--run``, then the
pattern, then the parser's file-name fallback; an invalid pattern is a one-line settings error."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app
from pipelines.flows.ingest_telemetry import find_landing_files
from pipelines.runtime.path_patterns import PathPatternError, parse_patterns
from pipelines.runtime.settings import Settings, SettingsError

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()

AGENT = "torch.distributed.elastic.agent.server.api"
MP = "torch.distributed.elastic.multiprocessing.api"

# a torchrun agent log that names neither its run nor its host (no rendezvous line, no launch
# config, no master_addr): a worker-group start and a failure
ANONYMOUS = (
    f"[2026-06-03 08:00:05,100] {AGENT}: [INFO] Starting worker group\n"
    f"[2026-06-03 10:00:00,000] {MP}: [ERROR] failed (exitcode: 1) local_rank: 3 (pid: 4242) of "
    "binary: /usr/bin/python3\n"
)
# the same with the launch configuration, which names the run (llm-content)
NAMES_ITS_RUN = (
    "[2026-06-03 07:59:59,000] torch.distributed.launcher.api: [INFO] Starting elastic_operator "
    "with launch configs:\n"
    "  entrypoint       : train.py\n"
    "  run_id           : llm-content\n"
    "  rdzv_backend     : static\n"
    "\n" + ANONYMOUS
)
STARTED = datetime(2026, 6, 3, 8, 0, 5, 100_000, tzinfo=UTC)
FAILED = datetime(2026, 6, 3, 10, tzinfo=UTC)

ELASTIC = {"RELIA_PATH_PATTERNS": "elastic={host}/{run}.log"}


def _rows(db: Path, sql: str) -> list[tuple]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _ingest(args: list[str], env: dict[str, str] | None = None) -> list[dict]:
    result = runner.invoke(app, ["ingest", *args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- the pattern itself ------------------------------------------------------------------------


def test_path_pattern_captures_host_and_run_from_a_relative_path() -> None:
    elastic, kernel = parse_patterns("elastic={host}/{run}.log* ; kernel={host}/*")
    assert elastic.values("gpu0007/llm-9.log") == {"host": "gpu0007", "run": "llm-9"}
    assert elastic.values("gpu0007/llm-9.log.1") == {"host": "gpu0007", "run": "llm-9"}
    assert kernel.values("gpu0042/kern.log.2.gz") == {"host": "gpu0042"}
    # no match, no values: a file outside the layout, a deeper one, one with another suffix
    assert elastic.values("llm-9.log") == {}
    assert elastic.values("gpu0007/extra/llm-9.log") == {}
    assert parse_patterns({"elastic": "{host}/{run}.log"})[0].values("gpu0007/llm-9.txt") == {}


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("elastic", "write source=pattern"),
        ("elastic=/abs/{host}.log", "relative to the elastic/ folder"),
        ("elastic=../{host}.log", "relative to the elastic/ folder"),
        ("elastic={node}.log", "unknown placeholder {node}; use {host} or {run}"),
        ("kernel={host}/{run}.log", "the kernel parser takes no run; it takes {host}"),
        ("dcgm={host}/{run}.prom", "the dcgm parser takes no run"),
        ("elastic=agent.log", "captures nothing; put {host} or {run} in it"),
        ("elastic={host}/{host}.log", "{host} appears twice"),
        ("elastic={host.log", "stray '{'"),
        ("slurm={host}.txt", "'slurm': its parser takes no host or run"),
        ("torchrun={host}.log", "'torchrun': not a source; patterns apply to dcgm, elastic"),
        ("elastic={host}.log;elastic={run}.log", "given twice"),
    ],
)
def test_invalid_path_pattern_is_an_error_naming_the_fix(setting: str, message: str) -> None:
    with pytest.raises(PathPatternError) as raised:
        parse_patterns(setting)
    assert message in str(raised.value)


def test_settings_check_path_patterns_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELIA_PATH_PATTERNS", "elastic={host}/{run}.log")
    [pattern] = Settings.from_env().path_patterns
    assert (pattern.source, pattern.names) == ("elastic", ("host", "run"))
    # an override (a flow parameter) wins over the environment
    [pattern] = Settings.from_env(path_patterns={"kernel": "{host}/*"}).path_patterns
    assert pattern.source == "kernel"
    monkeypatch.setenv("RELIA_PATH_PATTERNS", "elastic={node}/x.log")
    with pytest.raises(SettingsError, match=r"^RELIA_PATH_PATTERNS: path pattern elastic="):
        Settings.from_env()


def test_cli_invalid_path_pattern_is_one_line_and_exit_2(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "elastic" / "gpu0007" / "llm-9.log", ANONYMOUS)
    db = tmp_path / "w.duckdb"
    env = {"RELIA_PATH_PATTERNS": "elastic={host}/{node}.log"}
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(db)], env=env)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    [line] = result.output.strip().splitlines()
    assert line == (
        "error: RELIA_PATH_PATTERNS: path pattern elastic='{host}/{node}.log': unknown "
        "placeholder {node}; use {host} or {run}"
    )
    assert not db.exists()


# --- relia ingest on a {host}/{run}.log landing ------------------------------------------------


def test_ingest_takes_host_and_run_from_the_path_pattern(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "elastic" / "gpu0007" / "llm-9.log", ANONYMOUS)
    _write(landing / "elastic" / "gpu0008" / "llm-9.log", ANONYMOUS)
    # the content names its run (llm-content): it wins over the path's llm-side
    _write(landing / "elastic" / "gpu0009" / "llm-side.log", NAMES_ITS_RUN)
    db = tmp_path / "w.duckdb"
    counts = _ingest([str(landing), "--db", str(db)], env=ELASTIC)
    assert [(c["n_loaded"], c["n_quarantined"]) for c in counts] == [(2, 0)] * 3
    assert _rows(
        db, "select run_id, host, ts, event, exit_code from raw_elastic_events order by host, ts"
    ) == [
        ("llm-9", "gpu0007", STARTED, "workers_started", None),
        ("llm-9", "gpu0007", FAILED, "worker_failed", 1),
        ("llm-9", "gpu0008", STARTED, "workers_started", None),
        ("llm-9", "gpu0008", FAILED, "worker_failed", 1),
        ("llm-content", "gpu0009", STARTED, "workers_started", None),
        ("llm-content", "gpu0009", FAILED, "worker_failed", 1),
    ]
    assert _rows(db, "select count(*) from raw_quarantine") == [(0,)]
    again = _ingest([str(landing), "--db", str(db)], env=ELASTIC)
    assert all(c["skipped"] for c in again)


def test_ingest_without_a_pattern_quarantines_with_a_reason_naming_the_fixes(
    tmp_path: Path,
) -> None:
    landing = tmp_path / "landing"
    _write(landing / "elastic" / "gpu0007" / "llm-9.log", ANONYMOUS)
    db = tmp_path / "w.duckdb"
    [counts] = _ingest([str(landing), "--db", str(db)], env={"RELIA_PATH_PATTERNS": ""})
    assert (counts["n_loaded"], counts["n_quarantined"]) == (0, 2)
    reasons = _rows(db, "select distinct reason from raw_quarantine")
    assert reasons == [
        (
            "cannot tell the run and host: the log names neither (no rendezvous line); pass "
            "--run and --host, set an elastic path pattern such as {host}/{run}.log "
            "(RELIA_PATH_PATTERNS), or name the file <run>__<host>.log",
        )
    ]


def test_ingest_file_outside_the_pattern_gets_nothing_from_it(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "elastic" / "gpu0007" / "llm-9.log", ANONYMOUS)
    _write(landing / "elastic" / "loose.log", ANONYMOUS)  # not {host}/{run}.log: not an error
    db = tmp_path / "w.duckdb"
    counts = _ingest([str(landing), "--db", str(db)], env=ELASTIC)
    by_name = {c["path"].rsplit("/", 1)[1]: (c["n_loaded"], c["n_quarantined"]) for c in counts}
    assert by_name == {"llm-9.log": (2, 0), "loose.log": (0, 2)}
    assert _rows(db, "select distinct host, run_id from raw_elastic_events") == [
        ("gpu0007", "llm-9")
    ]
    [(reason,)] = _rows(db, "select distinct reason from raw_quarantine")
    assert "--host" in reason
    assert "RELIA_PATH_PATTERNS" in reason


def test_ingest_host_and_run_options_win_over_the_pattern(tmp_path: Path) -> None:
    log = _write(tmp_path / "landing" / "elastic" / "gpu0007" / "llm-9.log", ANONYMOUS)
    db = tmp_path / "w.duckdb"
    _ingest([str(log), "--source", "elastic", "--host", "gpu0100", "--db", str(db)], env=ELASTIC)
    # --host wins; the run, not given as an option, still comes from the pattern
    assert _rows(db, "select distinct run_id, host from raw_elastic_events") == [
        ("llm-9", "gpu0100")
    ]
    _ingest(
        [str(log), "--source", "elastic", "--run", "r-opt", "--force", "--db", str(db)], env=ELASTIC
    )
    assert _rows(db, "select distinct run_id, host from raw_elastic_events") == [
        ("r-opt", "gpu0007")
    ]


def test_ingest_kernel_pattern_beats_the_folder_fallback_and_a_printed_host_beats_both(
    tmp_path: Path,
) -> None:
    landing = tmp_path / "landing"
    # dmesg -T prints no host; the folder fallback would say "boot-2", the pattern says gpu0042
    _write(
        landing / "kernel" / "gpu0042" / "boot-2" / "dmesg.log",
        "[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off the bus.\n",
    )
    # syslog prints its host (gpu0007): content wins over the pattern's gpu0043
    _write(
        landing / "kernel" / "gpu0043" / "boot-1" / "syslog",
        "2026-06-01T00:00:01+00:00 gpu0007 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, "
        "name=x, DBE.\n",
    )
    db = tmp_path / "w.duckdb"
    env = {"RELIA_PATH_PATTERNS": "kernel={host}/*/*"}
    counts = _ingest([str(landing), "--db", str(db)], env=env)
    assert all(c["n_quarantined"] == 0 for c in counts)
    assert _rows(db, "select host, pci_bus_id, xid from raw_xid_events order by ts") == [
        ("gpu0042", "0000:18:00", 79),
        ("gpu0007", "0000:3b:00", 48),
    ]
    without = tmp_path / "without.duckdb"
    _ingest([str(landing), "--db", str(without)], env={"RELIA_PATH_PATTERNS": ""})
    assert _rows(without, "select host from raw_xid_events order by ts") == [
        ("boot-2",),
        ("gpu0007",),
    ]


def test_discover_matches_a_file_named_on_its_own_from_its_source_folder(tmp_path: Path) -> None:
    log = _write(tmp_path / "landing" / "elastic" / "gpu0007" / "llm-9.log", ANONYMOUS)
    patterns = parse_patterns(ELASTIC["RELIA_PATH_PATTERNS"])
    [named] = ingest.discover([log], source="elastic", path_patterns=patterns)
    [under] = ingest.discover([tmp_path / "landing"], path_patterns=patterns)
    [given] = ingest.discover([log.parent], source="elastic", path_patterns=patterns)
    assert named.path_options == under.path_options == (("host", "gpu0007"), ("run", "llm-9"))
    assert given.path_options == ()  # relative to the folder given: llm-9.log does not match


def test_flow_task_finds_landing_files_with_their_pattern_values(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _write(landing / "elastic" / "gpu0007" / "llm-9.log", ANONYMOUS)
    [found] = find_landing_files.fn(landing, {"elastic": "{host}/{run}.log"})
    assert found.path_options == (("host", "gpu0007"), ("run", "llm-9"))
    [plain] = find_landing_files.fn(landing)
    assert plain.path_options == ()
