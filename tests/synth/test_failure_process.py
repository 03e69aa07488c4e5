"""The generator's failure process: fix kinds, tickets, evidence, bad units and its truth.

Fleets are small and their hazards raised (class scales divided by ``SPEED``) so that a few
seeds hold hundreds of failures; every bound is an exact binomial or Poisson interval at
``ALPHA`` (two-sided), never a tolerance picked to pass.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from synth import SynthConfig, simulate, synthesize
from synth import fleet as fleet_mod
from synth import truth as truth_mod
from synth.config import FAILURE_XIDS, GPU_CLASSES, NON_HARDWARE_CLASSES
from synth.fleet import PCI_BUSES
from synth.node_events import PLANNED_REASON, view_class

ALPHA = 0.001
SPEED = 15.0
SEEDS = (1, 2, 3, 4, 5, 6)
SEED_VOCABULARY = Path(__file__).resolve().parents[2] / "sql" / "seeds" / "dim_planned_reason.csv"


def _fast(config: SynthConfig, speed: float = SPEED) -> SynthConfig:
    """The same fleet with every hardware class's hazard ``speed`` times higher."""
    classes = {k: replace(v, scale_h=v.scale_h / speed) for k, v in config.classes.items()}
    rates = {k: v.rate_per_node_h * speed for k, v in config.non_hardware.items()}
    return replace(config, classes=classes).with_non_hardware(rates)


def _poisson_interval(n: int) -> tuple[float, float]:
    """Exact (Garwood) two-sided ``1 - ALPHA`` interval of a Poisson mean with ``n`` events."""
    lo = stats.chi2.ppf(ALPHA / 2, 2 * n) / 2 if n else 0.0
    hi = stats.chi2.ppf(1 - ALPHA / 2, 2 * n + 2) / 2
    return float(lo), float(hi)


def _binomial_interval(n: int, p: float) -> tuple[int, int]:
    """Two-sided ``1 - ALPHA`` range of a Binomial(n, p) count."""
    lo, hi = stats.binom.interval(1 - ALPHA, n, p)
    return int(lo), int(hi)


def _epoch(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("process")
    config = _fast(SynthConfig(nodes=24, days=30, seed=7))
    return out, synthesize(out, config)


@pytest.fixture(scope="module")
def pooled() -> list[dict[str, Any]]:
    """Ground truths of several seeds of a fast fleet: mixed families, a hazard change.

    Half the nodes arrive during the window (a fleet 400 days old at this speed has replaced
    its bad units long before), a fifth of the units bad.
    """
    families = {"gpu": "lognormal", "nvlink": "loglogistic", "nic": "exponential"}
    base = SynthConfig(
        nodes=32,
        days=30,
        bad_unit_share=0.2,
        installed_in_window_share=0.5,
        hazard_change_at_frac=0.5,
        hazard_change_factor=2.0,
    ).with_families(families)
    return [simulate(replace(_fast(base), seed=seed))["truth"] for seed in SEEDS]


def test_fix_shares_are_realised_within_binomial_bounds(pooled: list[dict[str, Any]]) -> None:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for truth in pooled:
        for row in truth["failures"]:
            if row["in_window"] and not row["forced"]:  # forced failures are always replaced
                counts[row["component_class"]][row["fix"]] += 1
    config = SynthConfig()
    checked = 0
    for cls, fixes in counts.items():
        n = sum(fixes.values())
        shares = config.fixes_of(cls) if cls in config.classes else {"recover": 1.0}
        assert set(fixes) <= set(shares), (cls, fixes)
        for fix, share in shares.items():
            lo, hi = _binomial_interval(n, share)
            assert lo <= fixes[fix] <= hi, (cls, fix, fixes[fix], n, share)
            checked += 1
    assert checked >= 25
    replaced = sum(f["replace"] for c, f in counts.items() if c not in NON_HARDWARE_CLASSES)
    hardware = sum(sum(f.values()) for c, f in counts.items() if c not in NON_HARDWARE_CLASSES)
    assert 0.2 < replaced / hardware < 0.45, "most failures replace nothing"


def test_compensator_covers_the_realised_failures(pooled: list[dict[str, Any]]) -> None:
    n = Counter[str]()
    expected: Counter[str] = Counter()
    for truth in pooled:
        for cls, row in truth["failure_process"].items():
            n[cls] += row["n_failures"] - row["n_forced"]
            expected[cls] += row["compensator"]
            assert row["expected_failures"] == pytest.approx(row["compensator"] + row["n_forced"])
            assert row["rate_per_unit_h"] == pytest.approx(
                row["expected_failures"] / row["exposure_h"]
            )
    assert set(n) == set(SynthConfig().fleet_classes)
    for cls in n:
        lo, hi = _poisson_interval(n[cls])
        assert lo <= expected[cls] <= hi, (cls, n[cls], expected[cls])
    assert sum(n.values()) > 1_000


def test_compensator_tells_a_wrong_truth_apart() -> None:
    """The check above has power: leaving out the bad units' factor is rejected."""
    config = _fast(
        SynthConfig(nodes=32, days=30, bad_unit_share=0.3, installed_in_window_share=0.5)
    )
    n = Counter[str]()
    right: Counter[str] = Counter()
    wrong: Counter[str] = Counter()
    for seed in SEEDS[:3]:
        run = replace(config, seed=seed, n_ambiguous=0)
        root = np.random.default_rng(run.seed)
        streams = root.spawn(13)
        fleet = fleet_mod.build_fleet(run, streams[0])
        fleet_mod.simulate_lifetimes(run, streams[1], fleet)
        fleet_mod.remove_nodes(run, streams[2], fleet)
        good = truth_mod.failure_process(run, fleet, [], [])
        blind = truth_mod.failure_process(replace(run, bad_unit_factor=1.0), fleet, [], [])
        for cls in ("gpu", "gpu_memory", "nvlink", "pcie"):
            n["gpu"] += good[cls]["n_failures"]
            right["gpu"] += good[cls]["compensator"]
            wrong["gpu"] += blind[cls]["compensator"]
    lo, hi = _poisson_interval(n["gpu"])
    assert lo <= right["gpu"] <= hi
    assert not lo <= wrong["gpu"] <= hi


def test_bad_units_fail_more(pooled: list[dict[str, Any]]) -> None:
    """Bad units fail as their own compensator says, at the factor above a normal unit's."""
    n = n_bad = 0
    expected = expected_bad = 0.0
    for truth in pooled:
        for row in truth["failure_process"].values():
            if row["hardware"]:
                n += row["n_failures"] - row["n_forced"]
                n_bad += row["n_bad_unit"]
                expected += row["compensator"]
                expected_bad += row["bad_unit_compensator"]
    # given the failures, the bad units' count is binomial with their compensator's share
    lo, hi = _binomial_interval(n, expected_bad / expected)
    assert lo <= n_bad <= hi, (n_bad, n, expected_bad / expected)
    assert n_bad > 300
    # an exponential class: per unit-hour a bad unit fails at the factor; at its exposure
    # share (no factor) it would fail far less often
    nic = [t["failure_process"]["nic"] for t in pooled]
    n_nic = sum(r["n_failures"] - r["n_forced"] for r in nic)
    n_nic_bad = sum(r["n_bad_unit"] for r in nic)
    share = sum(r["bad_unit_exposure_h"] for r in nic) / sum(r["exposure_h"] for r in nic)
    assert n_nic_bad > _binomial_interval(n_nic, share)[1], (n_nic_bad, n_nic, share)
    # a bad unit fails again and again: most units with 3+ failures in the window are bad
    repeat = Counter[tuple[int, str, bool]]()
    for k, truth in enumerate(pooled):
        for f in truth["failures"]:
            if f["in_window"] and f["component_class"] in GPU_CLASSES:
                repeat[(k, f["node"] + "/" + f["slot"], f["bad_unit"])] += 1
    many = [bad for (_, _, bad), count in repeat.items() if count >= 3]
    assert len(many) >= 10
    assert sum(many) / len(many) > 0.5


def test_only_replacements_write_tickets(
    landing: tuple[Path, dict[str, Any]],
) -> None:
    out, truth = landing
    with (out / "repairs" / "tickets.csv").open(newline="") as f:
        tickets = list(csv.DictReader(f))
    replace_tickets = {
        (t["node"], t["slot"], t["component_class"], t["opened"])
        for t in tickets
        if t["action"] == "replace"
    }
    failures = truth["failures"]
    with_ticket = {
        (r["node"], r["slot"], r["component_class"], r["failed_ts"])
        for r in failures
        if r["ticket"]
    }
    assert with_ticket == replace_tickets
    assert all(r["ticket"] == (r["fix"] == "replace") for r in failures)
    others = [r for r in failures if r["fix"] != "replace"]
    assert len(others) > len(with_ticket)  # most failures replace nothing
    opened = {(t["node"], t["slot"], t["opened"]) for t in tickets}
    assert not any((r["node"], r["slot"], r["failed_ts"]) in opened for r in others)


def test_serials_change_only_at_replacements(landing: tuple[Path, dict[str, Any]]) -> None:
    out, truth = landing
    w0 = _epoch(truth["window_start"])
    serials: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for path in sorted((out / "nvidia_smi").glob("*.csv")):
        host = path.stem.split("__")[0]
        for line in path.read_text().splitlines()[1:]:
            stamp, index, _, serial, _, _ = line.split(", ")
            ts = int(
                datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.000").replace(tzinfo=UTC).timestamp()
            )
            serials[(host, f"gpu{index}")].append((ts, serial))
    with (out / "repairs" / "tickets.csv").open(newline="") as f:
        swaps = [
            t
            for t in csv.DictReader(f)
            if t["action"] in ("replace", "planned_replace")
            and t["closed"]
            and w0 <= _epoch(t["closed"])
            and t["slot"].startswith("gpu")
        ]
    for (host, slot), seen in serials.items():
        seen.sort()
        changes = [(b[0], a[1], b[1]) for a, b in itertools.pairwise(seen) if a[1] != b[1]]
        mine = sorted(
            (_epoch(t["closed"]), t["serial_out"], t["serial_in"])
            for t in swaps
            if (t["node"], t["slot"]) == (host, slot) and _epoch(t["closed"]) <= seen[-1][0]
        )
        assert changes == mine, (host, slot)
    # GPU failures fixed without a replacement kept their serial: no swap at their repair
    kept = [
        r
        for r in truth["failures"]
        if r["in_window"] and r["slot"].startswith("gpu") and r["fix"] != "replace"
    ]
    assert kept
    swapped_at = {(t["node"], t["slot"], t["closed"]) for t in swaps}
    assert not any((r["node"], r["slot"], r["repaired_ts"]) in swapped_at for r in kept)


def _xid_lines(out: Path) -> list[tuple[str, str, int, int]]:
    """(host, PCI bus, code, epoch) of every Xid line, read with relia's kernel-log parser."""
    from pipelines.ingest.sources import xid

    files = []
    for path in sorted((out / "kernel").glob("*.log")):
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        files.append((path.read_bytes(), str(path), {"file_mtime": mtime, "host": None}))
    rows = []
    for parsed in xid.parse_many(files, now=datetime(2100, 1, 1, tzinfo=UTC)):
        for host, bus, code, ts in parsed.rows.select(
            "host", "pci_bus_id", "xid", "ts"
        ).iter_rows():
            rows.append((host, bus, int(code), int(ts.timestamp())))
    return rows


def _node_events(out: Path) -> list[dict[str, Any]]:
    """Rows of every node event, read with relia's sacctmgr parser."""
    from pipelines.ingest.sources import node_events

    rows: list[dict[str, Any]] = []
    for path in sorted((out / "node_events").glob("*.txt")):
        parsed = node_events.parse(
            path.read_bytes(), source_file=str(path), now=datetime(2100, 1, 1, tzinfo=UTC)
        )
        rows += parsed.rows.to_dicts()
    return rows


def test_every_failure_leaves_evidence_besides_tickets(
    landing: tuple[Path, dict[str, Any]],
) -> None:
    """GPU failures print their Xid and drain the node; node-level ones leave node events."""
    out, truth = landing
    xids = _xid_lines(out)
    events = _node_events(out)
    fix_seen = Counter[str]()
    checked = 0
    for f in truth["failures"]:
        t = _epoch(f["failed_ts"])
        if not f["in_window"] or t > _epoch(truth["window_end"]) - 600:
            continue
        node = f["node"]
        starting = [
            e for e in events if node in e["nodes"] and t <= e["start_ts"].timestamp() <= t + 40
        ]
        assert starting, f  # a drain or a down within 40 s of every failure
        assert not any(e["event_reason"].startswith(PLANNED_REASON) for e in starting), f
        if f["slot"].startswith("gpu"):
            bus = "0000:" + PCI_BUSES[int(f["slot"][3:])] + ":00"
            codes = {
                code
                for host, b, code, ts in xids
                if host == node and b == bus and abs(ts - t) <= 20 + 300
            }
            assert codes & set(FAILURE_XIDS[f["component_class"]]), f
            if f["fix"] in ("reboot", "reseat"):  # the node goes down while it is off
                end = _epoch(f["repaired_ts"]) if f["repaired_ts"] else None
                downs = [
                    e
                    for e in events
                    if node in e["nodes"]
                    and e["state"] == "DOWN*"
                    and t < e["start_ts"].timestamp() < (end or 2**40)
                ]
                assert downs, f
        else:
            assert any(e["state"] in ("DOWN*", "DOWN", "DRAIN") for e in starting), f
        fix_seen[f["fix"]] += 1
        checked += 1
    assert checked > 50
    assert set(fix_seen) == {"replace", "reset", "reboot", "reseat", "recover"}, fix_seen


def _planned_vocabulary() -> list[tuple[re.Pattern[str], bool]]:
    with SEED_VOCABULARY.open(newline="") as f:
        return [
            (re.compile(row["pattern"], re.IGNORECASE), row["is_planned"] == "true")
            for row in csv.DictReader(f)
        ]


def test_node_event_reasons_are_planned_only_for_planned_work(
    landing: tuple[Path, dict[str, Any]],
) -> None:
    """Under the seed vocabulary, failure reasons never read as planned work; planned ones do."""
    out, _ = landing
    vocabulary = _planned_vocabulary()
    reasons = {e["event_reason"] for e in _node_events(out)}
    assert any(r.startswith("NCCL watchdog") for r in reasons)
    for reason in reasons:
        hits = [planned for pattern, planned in vocabulary if pattern.search(reason)]
        is_planned = bool(hits) and all(hits)
        assert is_planned == reason.startswith(PLANNED_REASON), reason
        if hits and not re.search(r"(?i)xid|nvlink|ecc|dbe|fallen off", reason):
            assert view_class(reason) == "maintenance", reason


def test_non_hardware_interruptions_stop_jobs_and_have_their_truth(
    landing: tuple[Path, dict[str, Any]],
) -> None:
    _, truth = landing
    block = truth["non_hardware"]
    assert set(block) == set(NON_HARDWARE_CLASSES)
    for cls, row in block.items():
        process = truth["failure_process"][cls]
        assert row["n_interruptions"] == process["n_failures"]
        assert row["expected_interruptions"] == pytest.approx(
            row["rate_per_node_h"] * row["exposure_node_h"]
        )
        assert process["family"] == "exponential"
        assert process["n_by_fix"] == {"recover": row["n_interruptions"]}
    stopped = Counter(
        (r["true_class"], r["state"]) for r in truth["interruptions"] if r["true_class"]
    )
    assert stopped[("maintenance", "NODE_FAIL")] + stopped[("software", "FAILED")] > 0
    assert not any(
        state == "NODE_FAIL" for (cls, state) in stopped if cls in ("software", "nccl", "driver")
    )
    assert sum(r["n_attempts_interrupted"] for r in block.values()) == sum(
        n for (cls, _), n in stopped.items() if cls in NON_HARDWARE_CLASSES
    )


def test_llama3_preset_expects_the_published_counts() -> None:
    from synth import llama3
    from synth.presets import LLAMA3_TABLE5, llama3_counts, preset_truth

    assert sum(n for _, n, _ in LLAMA3_TABLE5) == 419
    config = llama3()
    assert (config.nodes, config.gpus_per_node, config.days) == (2_048, 8, 54)
    block = preset_truth(config)
    assert block is not None
    published = llama3_counts()
    assert set(config.fleet_classes) == set(published)
    for cls, n in published.items():
        assert block["expected_nominal"][cls] == pytest.approx(n, rel=1e-12)
        assert config.fleet_classes[cls].family == "exponential"
    # bits other presets could set off: nothing moves the expectation off the published count
    assert config.bad_unit_share == 0
    assert config.installed_in_window_share == 0
    assert config.removed_fraction == 0
    assert config.n_ambiguous == 0


@pytest.mark.slow
def test_llama3_fleet_truth_and_realised_counts() -> None:
    from synth import llama3

    truth = simulate(llama3(seed=3))["truth"]
    published = truth["preset"]["published"]
    process = truth["failure_process"]
    total_n = total_expected = 0.0
    for cls, n_published in published.items():
        row = process[cls]
        # downtime is not at risk: the compensator is the published count less the units'
        # share of time in repair (well under 1 % of a unit's 54 days)
        assert 0.99 * n_published <= row["expected_failures"] <= n_published, cls
        lo, hi = _poisson_interval(row["n_failures"])
        assert lo <= row["expected_failures"] <= hi, (cls, row["n_failures"])
        total_n += row["n_failures"]
        total_expected += row["expected_failures"]
    lo, hi = _poisson_interval(int(total_n))
    assert lo <= total_expected <= hi
    assert truth["n_gpus"] == 16_384
    assert truth["params"]["preset"] == "llama3"
