"""Tests of the synthetic fleet generator (``relia synth``).

The files are only split into fields here (the real parsers live in ``pipelines/sources``); the
checks are about formats, determinism and the internal consistency of the ground truth.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import hostlist
import numpy as np
import pytest

from synth import ClassSpec, SynthConfig, simulate, synthesize
from synth.formats import SITE_FORMAT, elapsed

if TYPE_CHECKING:
    from pathlib import Path

CONFIG = SynthConfig(
    nodes=40,
    days=30,
    seed=11,
    planned_replace_per_unit_year=0.3,
    minor_tickets_per_node_year=1.0,
    n_ambiguous=3,
)
SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts"
)
# Shape of a real line (leptonai/gpud components/accelerator/nvidia/xid/testdata/
# dmesg-with-xid-119.log @ 4a8de33, Apache-2.0).
REAL_XID = (
    "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, "
    "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 "
    "(GSP_RM_ALLOC) (0x2081 0x4)."
)
XID_SHAPE = re.compile(
    r"NVRM: Xid \(PCI:[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\): (\d+), pid=[^,]+, name=[^,]+, .+$"
)
STYLE_PREFIX = {
    "dmesg_t": re.compile(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] "),
    "journal_iso": re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000 gpu\d{4} kernel: "),
    "syslog": re.compile(r"^\w{3} [ \d]\d \d\d:\d\d:\d\d gpu\d{4} kernel: \[ *\d+\.\d{6}\] "),
    "rfc3339": re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00 gpu\d{4} kernel: "),
    "dmesg_iso": re.compile(r"^kern  :warn  : \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}\+00:00 "),
}


def _epoch(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("landing")
    return out, synthesize(out, CONFIG)


@pytest.fixture(scope="module")
def sacct_rows(landing: tuple[Path, dict[str, Any]]) -> list[list[str]]:
    out, _ = landing
    rows = []
    names = SACCT_HEADER.split("|")
    for k, path in enumerate(sorted((out / "slurm").glob("sacct_*.txt"))):
        lines = path.read_text().splitlines()
        if k % 3 != 2:
            assert lines[0] == SACCT_HEADER
            rows += [line.split("|") for line in lines[1:]]
            continue
        # every third dump: the site format (';', trailing ';', other order and fields)
        assert lines[0] == ";".join(SITE_FORMAT) + ";"
        renamed = {"NNodes": "AllocNodes", "ReqTRES": "AllocTRES", "ElapsedRaw": "Elapsed"}
        for line in lines[1:]:
            assert line.endswith(";")
            fields = line[:-1].split(";")
            value = dict(zip([renamed.get(n, n) for n in SITE_FORMAT], fields, strict=False))
            if "Elapsed" in value:
                value["Elapsed"] = elapsed(int(value["Elapsed"]))
            rows.append([value[n] for n in names if n in value])
    return rows


@pytest.fixture(scope="module")
def tickets(landing: tuple[Path, dict[str, Any]]) -> list[dict[str, str]]:
    out, _ = landing
    with (out / "repairs" / "tickets.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_synthesize_is_deterministic(tmp_path: Path) -> None:
    config = SynthConfig(nodes=12, days=10, seed=3)
    first = synthesize(tmp_path / "a", config)
    second = synthesize(tmp_path / "b", config)
    assert first == second
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    other = synthesize(tmp_path / "c", replace(config, seed=4))
    assert _files(tmp_path / "c") != _files(tmp_path / "a")
    assert other["seed"] == 4


def test_synthesize_writes_the_contract_layout(landing: tuple[Path, dict[str, Any]]) -> None:
    out, truth = landing
    assert sorted(p.name for p in out.iterdir()) == [
        "fleet",
        "ground_truth.json",
        "kernel",
        "node_events",  # on by default: every Slurm cluster records them
        "nvidia_smi",
        "repairs",
        "slurm",
    ]
    assert json.loads((out / "ground_truth.json").read_text()) == truth
    days = sorted(p.name for p in (out / "slurm").iterdir())
    assert days[0] == "sacct_20260601.txt"
    assert len(days) == CONFIG.days
    assert len(list((out / "kernel").glob("gpu*.log"))) == CONFIG.nodes
    assert truth["window_start"] == "2026-06-01T00:00:00Z"
    assert truth["window_end"] == "2026-07-01T00:00:00Z"
    assert truth["n_gpus"] == CONFIG.nodes * CONFIG.gpus_per_node


def test_sacct_fields_and_steps(
    landing: tuple[Path, dict[str, Any]], sacct_rows: list[list[str]]
) -> None:
    _, truth = landing
    bad = [row for row in sacct_rows if len(row) != 16]
    assert len(bad) == 1  # the hostile short row
    rows = [row for row in sacct_rows if len(row) == 16]
    states = Counter(row[13].split(" ")[0] for row in rows if "." not in row[1])
    assert {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"} <= set(states)
    assert states["EXPLODED"] == 1
    parent = None
    for row in rows:
        raw, _, step = row[1].partition(".")
        if not step:
            parent = raw
            assert re.fullmatch(r"\d+(_\d+)?", row[0])
            assert re.fullmatch(r"\d+", raw)
        else:
            assert raw == parent, "steps follow their allocation row"
            assert step in ("batch", "extern", "0")
        assert re.fullmatch(r"(\d+-)?\d\d:\d\d:\d\d", row[12])
        assert re.fullmatch(r"\d+:\d+", row[14])
    assert any("_" in row[0] for row in rows), "job arrays are present"
    assert any(row[11] == "Unknown" and row[13] == "RUNNING" for row in rows)
    assert any(row[13].startswith("CANCELLED by ") for row in rows)
    n_alloc = sum(1 for row in rows if "." not in row[1])
    assert n_alloc - 3 == truth["n_attempts"]  # minus the hostile rows with 16 fields
    assert len(rows) - 3 == truth["expected_rows"]["raw_slurm_jobs"]


def test_sacct_hostlists_roundtrip(sacct_rows: list[list[str]]) -> None:
    for row in (r for r in sacct_rows if len(r) == 16):
        nodes = hostlist.expand_hostlist(row[8])
        assert hostlist.collect_hostlist(nodes) == row[8]
        assert all(re.fullmatch(r"gpu\d{4}", n) for n in nodes)
        assert len(nodes) == int(row[6])
        tres = dict(item.split("=") for item in row[7].split(","))
        assert tres["node"] == row[6]
        assert int(tres["gres/gpu"]) == CONFIG.gpus_per_node * len(nodes)
    assert any("[" in r[8] for r in sacct_rows if len(r) == 16), "multi-node lists compress"


def test_xid_lines_match_the_real_shape(landing: tuple[Path, dict[str, Any]]) -> None:
    out, truth = landing
    assert XID_SHAPE.search(REAL_XID)
    n_good, n_bad, styles = 0, 0, Counter()
    for path in sorted((out / "kernel").glob("*.log")):
        for raw in path.read_bytes().splitlines():
            if b"NVRM: Xid" not in raw:
                continue
            try:
                line = raw.decode()
            except UnicodeDecodeError:
                n_bad += 1
                continue
            if line.startswith("{ "):  # a journalctl -o json record
                try:
                    record = json.loads(line)
                except ValueError:
                    n_bad += 1
                    continue
                year = datetime.fromtimestamp(int(record["__REALTIME_TIMESTAMP"]) / 1e6, UTC).year
                assert record["_TRANSPORT"] == "kernel"
                assert record["_HOSTNAME"] == path.stem
                if XID_SHAPE.search(record["MESSAGE"]) is None or year == 2099:
                    n_bad += 1
                    continue
                n_good += 1
                styles.update(["journal_json"])
                continue
            match = XID_SHAPE.search(line)
            if match is None or " 2099" in line[:40] or "2099-" in line[:40]:
                n_bad += 1
                continue
            n_good += 1
            styles.update(s for s, p in STYLE_PREFIX.items() if p.match(line))
    assert n_good == truth["expected_rows"]["raw_xid_events"]
    assert n_bad == truth["expected_quarantine"]["raw_xid_events"] == 3
    assert set(styles) == {*STYLE_PREFIX, "journal_json"}, "all six kernel-log styles are used"


def test_kernel_logs_carry_noise_and_window_mtime(landing: tuple[Path, dict[str, Any]]) -> None:
    out, _ = landing
    w1 = CONFIG.window_end_s
    n_lines, n_xid = 0, 0
    for path in (out / "kernel").glob("*.log"):
        data = path.read_bytes()
        n_lines += data.count(b"\n")
        n_xid += data.count(b"NVRM: Xid")
        assert int(path.stat().st_mtime) == w1
    assert n_lines > 10 * n_xid


def test_xid_bursts_and_quiet_margins() -> None:
    data = simulate(CONFIG)
    xids, fleet = data["xids"], data["fleet"]
    failure = np.isin(xids.code, [48, 62, 74, 79, 95])
    assert failure.any()
    assert np.isin(xids.code[~failure], [13, 31, 43, 63, 92]).all()
    skew = xids.ts - xids.true_ts
    assert np.abs(skew).max() <= CONFIG.max_skew_s
    assert np.all(skew == fleet.skew_s[xids.node]), "skew is constant per host"
    for node, slot in {(int(n), int(s)) for n, s in zip(xids.node, xids.slot, strict=True)}:
        mine = (xids.node == node) & (xids.slot == slot)
        f_ts = np.sort(xids.ts[mine & failure])
        other = xids.ts[mine & ~failure]
        if f_ts.size and other.size:
            assert np.abs(other[:, None] - f_ts[None, :]).min() >= 1800
        gaps = np.diff(f_ts)
        assert np.all((gaps < 600) | (gaps > 3000)), "bursts stay tight and apart"


def test_nvidia_smi_snapshots(landing: tuple[Path, dict[str, Any]]) -> None:
    out, truth = landing
    files = sorted((out / "nvidia_smi").glob("*.csv"))
    stamps = {p.stem.split("__")[1] for p in files}
    assert {"20260601T000000Z", "20260701T000000Z"} <= stamps
    n_rows = 0
    for path in files:
        lines = path.read_text().splitlines()
        assert lines[0] == "timestamp, index, pci.bus_id, serial, uuid, name"
        for k, line in enumerate(lines[1:]):
            ts, index, bus, serial, uuid, name = line.split(", ")
            assert re.fullmatch(r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.000", ts)
            assert int(index) == k
            assert re.fullmatch(r"00000000:[0-9A-F]{2}:00\.0", bus)
            assert re.fullmatch(r"\d{13}", serial)
            assert re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", uuid)
            assert name == "NVIDIA H100 80GB HBM3"
            n_rows += 1
    assert n_rows == truth["expected_rows"]["raw_inventory"]
    assert len(stamps) > 2, "snapshots follow GPU replacements"


def test_failures_agree_with_lives(landing: tuple[Path, dict[str, Any]]) -> None:
    """Replaced failures are the ticket lives' failures; all of them, the failure process's."""
    _, truth = landing
    failures = [f for f in truth["failures"] if f["in_window"]]
    replaced = Counter(f["component_class"] for f in failures if f["ticket"])
    for cls, lives in truth["lives_by_class"].items():
        assert lives["n_failed"] == replaced[cls] == truth["failures_by_class"][cls]
    assert sum(replaced.values()) > 0
    assert set(replaced) <= set(CONFIG.classes)
    every = Counter(f["component_class"] for f in failures)
    for cls, process in truth["failure_process"].items():
        assert process["n_failures"] == every[cls]
        assert sum(process["n_by_fix"].values()) == every[cls]
    assert len(failures) > sum(replaced.values()), "most failures replace nothing"


def test_lives_recomputed_from_files(
    landing: tuple[Path, dict[str, Any]], tickets: list[dict[str, str]]
) -> None:
    out, truth = landing
    w0, w1 = CONFIG.window_start_s, CONFIG.window_end_s
    with (out / "fleet" / "fleet.csv").open(newline="") as f:
        fleet = list(csv.DictReader(f))
    gpu_slots = {p.stem.split("__")[0] for p in (out / "nvidia_smi").glob("*.csv")}
    chains: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for t in tickets:
        if t["action"] in ("replace", "planned_replace") and (
            not t["closed"] or _epoch(t["closed"]) >= _epoch(t["opened"])
        ):
            chains[(t["node"], t["slot"])].append(t)
    gpu_classes = [c for c, s in CONFIG.classes.items() if s.level == "gpu"]
    node_classes = [c for c, s in CONFIG.classes.items() if s.level == "node"]
    got = {c: [0, 0, 0] for c in CONFIG.classes}
    for row in fleet:
        assert row["node"] in gpu_slots
        start0 = _epoch(row["installed"])
        end0 = _epoch(row["removed"]) if row["removed"] else w1
        slots = [(f"gpu{i}", gpu_classes) for i in range(CONFIG.gpus_per_node)]
        slots += [(c, [c]) for c in node_classes]
        for slot, classes in slots:
            chain = sorted(chains[(row["node"], slot)], key=lambda t: t["opened"])
            starts = [start0] + [_epoch(t["closed"]) if t["closed"] else w1 for t in chain]
            ends = [_epoch(t["opened"]) for t in chain] + [end0]
            ended_by = [*chain, None]
            for start, end, ticket in zip(starts, ends, ended_by, strict=True):
                if end <= w0 or start >= w1:
                    continue
                for cls in classes:
                    failed = (
                        ticket is not None
                        and ticket["action"] == "replace"
                        and ticket["component_class"] == cls
                    )
                    got[cls][0] += 1
                    got[cls][1] += failed
                    got[cls][2] += min(end, w1) - max(start, w0)
    for cls, (n_lives, n_failed, exposure_s) in got.items():
        assert truth["lives_by_class"][cls] == {
            "n_lives": n_lives,
            "n_failed": n_failed,
            "exposure_s": exposure_s,
        }


def test_left_truncation_and_censoring(
    landing: tuple[Path, dict[str, Any]], tickets: list[dict[str, str]]
) -> None:
    out, truth = landing
    w0, w1 = CONFIG.window_start_s, CONFIG.window_end_s
    with (out / "fleet" / "fleet.csv").open(newline="") as f:
        fleet = list(csv.DictReader(f))
    installed = [_epoch(r["installed"]) for r in fleet]
    assert min(installed) < w0 - 300 * 86_400, "lives start long before the window"
    assert any(w0 <= t < w1 for t in installed), "a batch arrives during the window"
    assert any(r["removed"] for r in fleet), "a node is decommissioned"
    assert any(_epoch(t["opened"]) < w0 for t in tickets), "history before the window"
    actions = Counter(t["action"] for t in tickets if w0 <= _epoch(t["opened"]) < w1)
    assert actions["planned_replace"] > 0
    assert {"replace", "reseat", "no_fault_found"} <= {t["action"] for t in tickets}
    lives = truth["lives_by_class"]
    assert all(v["n_lives"] > v["n_failed"] for v in lives.values()), "most lives are censored"
    bad = [t for t in tickets if t["closed"] and _epoch(t["closed"]) < _epoch(t["opened"])]
    assert len(bad) == truth["expected_quarantine"]["raw_repairs"] == 1


def test_interruptions_exist_in_sacct(
    landing: tuple[Path, dict[str, Any]], sacct_rows: list[list[str]]
) -> None:
    _, truth = landing
    attempts: dict[str, list[list[str]]] = defaultdict(list)
    for row in sacct_rows:
        if len(row) == 16 and "." not in row[1]:
            attempts[row[1]].append(row)
    assert truth["interruptions"]
    for item in truth["interruptions"]:
        rows = sorted(attempts[item["job_id_raw"]], key=lambda r: r[10])
        row = rows[item["attempt"] - 1]
        assert row[13].split(" ")[0] == item["state"]
        assert row[11] + "Z" == item["end_ts"]
        assert int(row[15]) == item["attempt"] - 1
        if item["restart_overhead_s"] is not None:
            nxt = rows[item["attempt"]]
            assert _epoch(nxt[10] + "Z") - _epoch(row[11] + "Z") == item["restart_overhead_s"]
    causes = Counter(i["attribution"] for i in truth["interruptions"])
    assert {"hardware-confirmed", "scheduler-only", "application", "ambiguous"} <= set(causes)
    total = sum(c["n"] for c in truth["interruptions_by_cause"])
    assert total == len(truth["interruptions"])


def test_deliberately_ambiguous_are_labelled(landing: tuple[Path, dict[str, Any]]) -> None:
    _, truth = landing
    chosen = [i for i in truth["interruptions"] if i["deliberately_ambiguous"]]
    assert len(chosen) == CONFIG.n_ambiguous
    assert all(i["cause_class"] == i["attribution"] == "ambiguous" for i in chosen)
    assert all(i["state"] in ("FAILED", "NODE_FAIL") for i in chosen)


def test_quiet_fleet_has_no_malformed_lines(tmp_path: Path) -> None:
    truth = synthesize(tmp_path, SynthConfig(nodes=8, days=7, seed=5, hostile=False))
    assert set(truth["expected_quarantine"].values()) == {0}
    for path in (tmp_path / "slurm").iterdir():
        lines = path.read_text().splitlines()
        site = lines[0].endswith(";")  # a dump in the site format: 16 fields and a trailing ';'
        assert all(len(line.split(";" if site else "|")) == 16 + site for line in lines)
    for path in (tmp_path / "kernel").iterdir():
        path.read_bytes().decode("utf-8")


def test_rerun_replaces_own_output_but_refuses_foreign_files(tmp_path: Path) -> None:
    config = SynthConfig(nodes=4, days=3, seed=1)
    synthesize(tmp_path / "own", config)
    synthesize(tmp_path / "own", replace(config, nodes=2))
    assert len(list((tmp_path / "own" / "kernel").iterdir())) == 2
    foreign = tmp_path / "foreign" / "slurm"
    foreign.mkdir(parents=True)
    (foreign / "sacct_real.txt").write_text("JobID\n")
    with pytest.raises(FileExistsError, match="empty or new folder"):
        synthesize(tmp_path / "foreign", config)


@pytest.mark.parametrize(
    ("changes", "hint"),
    [
        ({"start": datetime(2026, 6, 1, 12, tzinfo=UTC)}, "midnight"),
        ({"start": datetime(2026, 6, 1)}, "timezone-aware"),
        ({"nodes": 0}, "nodes must be at least 1"),
        ({"gpus_per_node": 17}, "between 1 and 16"),
        ({"classes": {"nvswitch": ClassSpec("gpu", 1.0, 1e5, 24.0)}}, "no Xid code"),
        ({"job_size_mix": (0.5, 0.5, 0.5)}, "summing to 1"),
    ],
)
def test_config_rejects_bad_values(changes: dict[str, Any], hint: str) -> None:
    with pytest.raises(ValueError, match=hint):
        SynthConfig(**changes)


@pytest.mark.slow
def test_default_fleet_failure_counts() -> None:
    truth = simulate(SynthConfig())["truth"]
    process = truth["failure_process"]
    per_class = {c: v["n_failures"] for c, v in process.items() if v["hardware"]}
    assert 150 <= sum(per_class.values()) <= 350
    assert all(n > 0 for n in per_class.values())
    assert max(per_class, key=per_class.get) == "gpu_memory"
    # every class is also replaced (tickets), about a third of the failures overall
    replaced = truth["failures_by_class"]
    assert all(n > 0 for n in replaced.values())
    assert 0.2 <= sum(replaced.values()) / sum(per_class.values()) <= 0.45
    # the non-hardware interruptions are a small share
    others = sum(v["n_failures"] for v in process.values() if not v["hardware"])
    assert 0 < others < 0.25 * sum(per_class.values())
