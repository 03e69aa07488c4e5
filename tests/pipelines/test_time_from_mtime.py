"""``relia ingest --time-from-mtime``: dcgm-exporter scrapes whose samples carry no timestamp and
whose file name gives no scrape time take the file's modification time; without the option such
samples are quarantined with a reason naming it. A sample's own timestamp and a file name's
``_<YYYYmmddTHHMMSSZ>`` time win over the mtime."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app
from pipelines.flows.ingest_telemetry import load_files
from pipelines.ingest.sources import dcgm
from pipelines.runtime.path_patterns import parse_patterns

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()

LABELS = (
    'UUID="GPU-{i}",pci_bus_id="00000000:{bus}:00.0",device="nvidia{i}",'
    'modelName="NVIDIA H100 80GB HBM3"'
)


def _sample(metric: str, gpu: int, value: float, *, host: str | None, ms: int | None = None) -> str:
    bus = ("18", "2a")[gpu]
    labels = f'gpu="{gpu}",' + LABELS.format(i=gpu, bus=bus)
    if host is not None:
        labels += f',Hostname="{host}"'
    stamp = "" if ms is None else f" {ms}"
    return f"{metric}{{{labels}}} {value}{stamp}\n"


def _scrape(host: str | None) -> str:
    """A scrape of two GPUs without sample timestamps (dcgm-exporter's default)."""
    return (
        "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
        + _sample("DCGM_FI_DEV_GPU_TEMP", 0, 41, host=host)
        + _sample("DCGM_FI_DEV_GPU_TEMP", 1, 43, host=host)
        + _sample("DCGM_FI_DEV_POWER_USAGE", 0, 312.5, host=host)
    )


MTIME = datetime(2026, 6, 1, 0, 30, 0, 250_000, tzinfo=UTC)
SAMPLE_TS = datetime(2026, 6, 1, tzinfo=UTC)  # 1780272000000 ms


def _write(path: Path, text: str, mtime: datetime = MTIME) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    ns = int(mtime.timestamp()) * 10**9 + mtime.microsecond * 1000
    os.utime(path, ns=(ns, ns))
    return path


def _rows(db: Path, sql: str) -> list[tuple]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def _ingest(args: list[str], env: dict[str, str] | None = None) -> list[dict]:
    result = runner.invoke(app, ["ingest", *args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


SAMPLES = "select host, ts, gpu_index, gpu_temp_c, power_w from raw_dcgm_samples order by gpu_index"


def test_scrape_without_times_is_quarantined_naming_the_option_then_loads_with_it(
    tmp_path: Path,
) -> None:
    scrape = _write(tmp_path / "landing" / "dcgm" / "metrics.prom", _scrape("gpu0003"))
    db = tmp_path / "w.duckdb"
    [without] = _ingest([str(scrape), "--db", str(db)])
    assert (without["n_loaded"], without["n_quarantined"]) == (0, 3)
    assert _rows(db, "select line_no, reason from raw_quarantine order by line_no") == [
        (
            line_no,
            "sample without a timestamp, and the file name gives no scrape time: pass "
            "--time-from-mtime (the file's modification time) or name the file "
            "<host>_<YYYYmmddTHHMMSSZ>.prom",
        )
        for line_no in (3, 4, 5)
    ]
    [forced] = _ingest([str(scrape), "--time-from-mtime", "--force", "--db", str(db)])
    assert (forced["n_loaded"], forced["n_quarantined"]) == (2, 0)
    assert _rows(db, SAMPLES) == [
        ("gpu0003", MTIME, 0, 41.0, 312.5),
        ("gpu0003", MTIME, 1, 43.0, None),
    ]
    assert _rows(db, "select count(*) from raw_quarantine") == [(0,)]


def test_sample_timestamps_and_a_file_name_time_win_over_the_mtime(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    # GPU 0's samples carry their time, GPU 1's take the mtime
    mixed = _sample("DCGM_FI_DEV_GPU_TEMP", 0, 41, host="gpu0003", ms=1780272000000) + _sample(
        "DCGM_FI_DEV_GPU_TEMP", 1, 43, host="gpu0003"
    )
    _write(landing / "dcgm" / "gpu0003.prom", mixed)
    _write(landing / "dcgm" / "gpu0004_20260601T003500Z.prom", _scrape("gpu0004"))
    db = tmp_path / "w.duckdb"
    counts = _ingest([str(landing), "--time-from-mtime", "--db", str(db)])
    assert all(c["n_quarantined"] == 0 for c in counts)
    named = datetime(2026, 6, 1, 0, 35, tzinfo=UTC)
    ordered = "select host, gpu_index, ts from raw_dcgm_samples order by host, gpu_index"
    assert _rows(db, ordered) == [
        ("gpu0003", 0, SAMPLE_TS),
        ("gpu0003", 1, MTIME),
        ("gpu0004", 0, named),
        ("gpu0004", 1, named),
    ]


def test_scrapes_in_host_folders_take_host_from_the_pattern_and_time_from_the_mtime(
    tmp_path: Path,
) -> None:
    landing = tmp_path / "landing"
    # no Hostname label: the file-name fallback would say "metrics"; the pattern says the folder
    _write(landing / "dcgm" / "gpu0005" / "metrics.prom", _scrape(None))
    later = datetime(2026, 6, 1, 0, 31, tzinfo=UTC)
    _write(landing / "dcgm" / "gpu0006" / "metrics.prom", _scrape(None), later)
    db = tmp_path / "w.duckdb"
    env = {"RELIA_PATH_PATTERNS": "dcgm={host}/*.prom"}
    counts = _ingest([str(landing), "--time-from-mtime", "--db", str(db)], env=env)
    # the same bytes in two host folders are two hosts' samples, not one file loaded once
    assert [(c["n_loaded"], c["n_quarantined"], c["skipped"]) for c in counts] == [
        (2, 0, False),
        (2, 0, False),
    ]
    ordered = "select host, ts, gpu_index from raw_dcgm_samples order by host, gpu_index"
    assert _rows(db, ordered) == [
        ("gpu0005", MTIME, 0),
        ("gpu0005", MTIME, 1),
        ("gpu0006", later, 0),
        ("gpu0006", later, 1),
    ]


def test_flow_task_passes_time_from_mtime(tmp_path: Path) -> None:
    scrape = _write(tmp_path / "landing" / "dcgm" / "gpu0005" / "metrics.prom", _scrape(None))
    patterns = parse_patterns({"dcgm": "{host}/*.prom"})
    files = ingest.discover([tmp_path / "landing"], path_patterns=patterns)
    db = tmp_path / "w.duckdb"
    [counts] = load_files.fn(db, files, 5.0, time_from_mtime=True)
    assert (counts["n_loaded"], counts["n_quarantined"]) == (2, 0)
    assert counts["path"] == str(scrape.resolve())
    assert _rows(db, "select distinct host, ts from raw_dcgm_samples") == [("gpu0005", MTIME)]


def test_identity_options_ask_only_dcgm_for_the_mtime(tmp_path: Path) -> None:
    files = [
        ingest.LandingFile(tmp_path / "a.prom", "dcgm"),
        ingest.LandingFile(tmp_path / "a.log", "elastic"),
    ]
    assert ingest.identity_options(files, time_from_mtime=True) == {
        "dcgm": {"time_from_mtime": True}
    }
    scrape = _write(tmp_path / "a.prom", "")
    assert ingest.file_options(files[0], {"time_from_mtime": True}) == {"scrape_ts": MTIME}
    assert ingest.file_options(ingest.LandingFile(scrape, "dcgm")) == {}


def test_dcgm_parser_scrape_ts_is_below_the_file_name_time() -> None:
    text = _scrape("gpu0003").encode()
    now = datetime(2026, 9, 1, tzinfo=UTC)
    given = dcgm.parse(text, source_file="/l/dcgm/metrics.prom", now=now, scrape_ts=MTIME)
    assert given.rows["ts"].to_list() == [MTIME, MTIME]
    named = dcgm.parse(
        text, source_file="/l/dcgm/gpu0003_20260601T003500Z.prom", now=now, scrape_ts=MTIME
    )
    assert named.rows["ts"].to_list() == [datetime(2026, 6, 1, 0, 35, tzinfo=UTC)] * 2
    # dmon output carries its time on every line: scrape_ts is not used for it
    dmon = b"#Entity TMPTR\nID C\nGPU 0 41\n"
    rejected = dcgm.parse(dmon, source_file="/l/dcgm/gpu0003.dmon", now=now, scrape_ts=MTIME)
    assert rejected.rows.height == 0
    assert "leading timestamp" in rejected.rejects["reason"][0]
