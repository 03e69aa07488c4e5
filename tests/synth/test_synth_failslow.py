"""Fail-slow in the synthetic fleet (``synth.failslow``): the truth against the written lines.

The truth's ``slow_jobs`` is recomputed here from the log lines alone (Megatron's printed mean
per log interval, torchtitan's millisecond stamps), with the ledger's rule for rolled-back
steps; ``M(t)`` is checked on a hand-built case; and with the knobs off the generator writes
the bytes it wrote before fail-slow existed (hashes recorded from that code).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from synth import SynthConfig, synthesize
from synth.core import simulate
from synth.failslow import Episodes, attempt_pace, plan_episodes, slow_steps, with_slow_preset

HASHES = Path(__file__).parent / "fixtures" / "default_hashes.json"
"""sha256 of every file of two default runs, recorded with the generator of commit dfbedff
(before fail-slow) by the same ``synthesize`` calls as below."""
HASHED = {
    "training_dcgm": {
        "nodes": 16,
        "days": 10,
        "seed": 2,
        "training_logs": True,
        "training_log_only_jobs": 2,
        "dcgm_interval_s": 3600,
    },
    "plain": {"nodes": 8, "days": 30, "seed": 3},
}
SLOW = {
    "nodes": 16,
    "days": 6,
    "seed": 11,
    "training_logs": True,
    "dcgm_interval_s": 900,
    "slow_rate_per_gpu_hour": 5e-3,
    "slow_dcgm_share": 0.5,
}


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("name", sorted(HASHED))
def test_knobs_off_write_the_same_bytes_as_before(name: str, tmp_path: Path) -> None:
    synthesize(tmp_path, SynthConfig(**HASHED[name]))
    assert _hashes(tmp_path) == json.loads(HASHES.read_text())[name]


def test_knobs_off_by_default_and_out_of_params() -> None:
    config = SynthConfig()
    assert config.slow_rate_per_gpu_hour == 0
    assert config.straggler_lines is None
    assert config.slow_dcgm_share == 0
    params = SynthConfig(training_logs=True).to_params()
    assert not [k for k in params if k.startswith(("slow_", "straggler_"))]


def test_knobs_refused_with_a_hint() -> None:
    with pytest.raises(ValueError, match="needs training_logs on"):
        SynthConfig(slow_rate_per_gpu_hour=1e-4)
    with pytest.raises(ValueError, match="needs slow_rate_per_gpu_hour > 0"):
        SynthConfig(training_logs=True, straggler_lines="megatron")
    with pytest.raises(ValueError, match="slow_unit must be 'gpu' or 'node'"):
        SynthConfig(training_logs=True, slow_rate_per_gpu_hour=1e-4, slow_unit="rack")
    with pytest.raises(ValueError, match="unknown slow preset"):
        with_slow_preset(SynthConfig(training_logs=True), "nope")


# --- M(t) on a hand-built case ---------------------------------------------------------------


def _two_episodes() -> Episodes:
    """Node 0 GPU 1 slow x1.5 over [10 s, 30 s); node 1 GPU 0 slow x2 over [20 s, 40 s)."""
    return Episodes(
        node=np.array([0, 1]),
        gpu=np.array([1, 0]),
        start=np.array([10_000, 20_000]),
        end=np.array([30_000, 40_000]),
        factor=np.array([1.5, 2.0]),
        signature=np.array([0, 0x88]),
    )


def test_pace_of_two_overlapping_episodes_by_hand() -> None:
    pace = attempt_pace(_two_episodes(), (1, 0), ["gpu0001", "gpu0002"], 8, 0, 60_000)
    assert pace is not None
    # M = 1 before 10 s, 1.5 on [10, 20), max(1.5, 2) = 2 on [20, 30), 2 on [30, 40), then 1
    t = np.array([0, 9_999, 10_000, 19_999, 20_000, 29_999, 30_000, 39_999, 40_000, 50_000])
    assert pace.m_at(t).tolist() == [1, 1, 1.5, 1.5, 2, 2, 2, 2, 1, 1]
    # ranks: nodes in host-name order, rank = node_index x 8 + gpu
    assert sorted(pace.ranks.tolist()) == [1, 8]
    assert pace.hosts == ["gpu0001", "gpu0002"]
    assert pace.signature_clocks(25_000) == {8: 990}
    # 4 s steps from 0: a step takes 4 s x M at its start
    steps, ends, durs = slow_steps(pace, 0, 60_000, 0, 4_000, 100, 1_000)
    assert steps.tolist() == list(range(1, 13))
    assert (ends // 1000).tolist() == [4, 8, 12, 18, 24, 32, 40, 44, 48, 52, 56, 60]
    assert (durs // 1000).tolist() == [4, 4, 4, 6, 6, 8, 8, 4, 4, 4, 4, 4]
    assert int((durs - 4_000).sum()) == 2_000 + 2_000 + 4_000 + 4_000


def test_saves_are_not_slowed_by_hand() -> None:
    pace = attempt_pace(_two_episodes(), (0,), ["gpu0001"], 8, 0, 60_000)
    assert pace is not None
    # 4 s steps, a 1 s save after every 3rd: 4, 8, 12, save to 13; 13 -> 19, 25 and 25 -> 31
    # (started at 25 s, before the episode ends at 30 s: x1.5), save to 32; 36, 40 healthy
    steps, ends, _ = slow_steps(pace, 0, 40_000, 0, 4_000, 3, 1_000)
    assert (ends // 1000).tolist() == [4, 8, 12, 19, 25, 31, 36, 40]
    assert steps.tolist() == [1, 2, 3, 4, 5, 6, 7, 8]


# --- the truth against the lines ---------------------------------------------------------------


_ITER = re.compile(
    r"^ \[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] iteration\s+(\d+)/.*elapsed time per iteration "
    r"\(ms\): ([\d.]+)"
)
_TITAN = re.compile(r"\[titan\] (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - root - INFO - (.*)$")
_MXRTT = re.compile(r"MnRtt/Rnk: ([\d.]+)ms/(\d+) \| MxRtt/Rnk: ([\d.]+)ms/(\d+) \|")


def _ms(text: str) -> int:
    t = datetime.fromisoformat(text.replace(",", ".")).replace(tzinfo=UTC)
    return round(t.timestamp() * 1000)


def _attempts(text: str) -> list[list[str]]:
    parts: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("using world size:") or "Starting job:" in line:
            parts.append([])
        parts[-1].append(line)
    return parts


def _saved(lines: list[str]) -> list[int]:
    """Steps whose save completed in the attempt."""
    out = []
    step = 0
    for line in lines:
        m = re.search(r"successfully saved checkpoint at iteration\s+(\d+)", line)
        if m:
            out.append(int(m[1]))
        t = _TITAN.search(line)
        if t and (m := re.match(r"step:\s*(\d+)", t[2])):
            step = int(m[1])
        if t and t[2].startswith("Finished saving the checkpoint"):
            out.append(step)
    return out


def _line_extra(lines: list[str], st_ms: float, k: int) -> tuple[list[tuple[int, float]], float]:
    """Per progress line (step, ms above the healthy pace over its interval), and the bound."""
    out: list[tuple[int, float]] = []
    prev: int | None = None
    save_ms = 0.0
    for line in lines:
        m = _ITER.match(line)
        if m:
            out.append((int(m[2]), k * (float(m[3]) - st_ms)))
            continue
        t = _TITAN.search(line)
        if not t:
            continue
        msg = t[2]
        if msg.startswith("Training starts at step"):
            prev = _ms(t[1])
        elif (s := re.match(r"step:\s*(\d+)", msg)) and prev is not None:
            now = _ms(t[1])
            out.append((int(s[1]), now - prev - save_ms - k * st_ms))
            prev, save_ms = now, 0.0
        elif s := re.search(r"Finished saving the checkpoint .* in ([\d.]+) seconds", msg):
            save_ms += float(s[1]) * 1000
    megatron = any(_ITER.match(line) for line in lines)
    return out, (0.05 * k if megatron else 0.0)


def _from_lines(text: str, entry: dict[str, Any], completed: bool) -> tuple[float, float]:
    """Seconds above the healthy pace in the kept, logged steps of one job, and the bound."""
    st_ms, k = entry["step_time_s"] * 1000, entry["log_interval_steps"]
    parts = _attempts(text)
    total = bound = 0.0
    for i, lines in enumerate(parts):
        # the ledger keeps every step of a completed job's last attempt, else the steps up to
        # the attempt's last completed save (the rest is redone by the next attempt)
        last_of_completed = i + 1 == len(parts) and completed
        kept_to = 1 << 60 if last_of_completed else max(_saved(lines), default=-1)
        extra, per_line = _line_extra(lines, st_ms, k)
        kept = [x for n, x in extra if n <= kept_to]
        total += sum(kept)
        bound += per_line * len(kept)
    return total / 1000, bound / 1000


@pytest.fixture(scope="module")
def slow_fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    config = SynthConfig(**SLOW, straggler_lines="megatron")
    out = tmp_path_factory.mktemp("slow")
    return out, synthesize(out, config), simulate(config)


def test_slow_truth_equals_the_lines(slow_fleet: tuple[Path, dict[str, Any], Any]) -> None:
    out, truth, data = slow_fleet
    states = {}
    for a in sorted(data["attempts"], key=lambda a: (a.job, a.number)):
        states[data["jobs"].label[a.job]] = a.state
    slowed = 0
    for entry in truth["job_goodput"]:
        if not entry["has_training_log"]:
            continue
        job = entry["job_id"]
        text = (out / "training" / f"slurm-{job}.out").read_text()
        measured, bound = _from_lines(text, entry, states[job] == "COMPLETED")
        expected = truth["slow_jobs"][job] - truth["slow_job_parts"][job]["unlogged_s"]
        assert abs(measured - expected) <= bound + 1e-6, job
        slowed += truth["slow_jobs"][job] > 0
    assert slowed >= 3  # the fleet does exercise slow jobs
    assert set(truth["slow_jobs"]) == {
        e["job_id"] for e in truth["job_goodput"] if e["has_training_log"]
    }


def test_episode_rows_name_the_job_units(slow_fleet: tuple[Path, dict[str, Any], Any]) -> None:
    _, truth, data = slow_fleet
    rows = truth["slow_episodes"]
    assert rows
    assert truth["slow_fleet"]["n_episodes"] >= truth["slow_fleet"]["n_episodes_touching_jobs"]
    assert truth["slow_laws"]["slow_rate_per_gpu_hour"] == SLOW["slow_rate_per_gpu_hour"]
    by_label: dict[str, dict[int, Any]] = {}
    for a in data["attempts"]:
        by_label.setdefault(data["jobs"].label[a.job], {})[a.number] = a
    names = data["fleet"].names
    for row in rows:
        a = by_label[row["job_id"]][row["attempt"]]
        hosts = sorted(names[n] for n in a.nodes)
        assert row["host"] == hosts[row["rank"] // 8]
        assert row["rank"] % 8 == row["gpu"]
        assert row["factor"] > 1
        assert row["start"] < row["end"]
        assert row["dcgm_signature"] in (None, 0x4, 0x8, 0x40, 0x80, 0x88)


def test_megatron_mxrtt_is_the_slow_rank(slow_fleet: tuple[Path, dict[str, Any], Any]) -> None:
    out, truth, _ = slow_fleet
    ranks: dict[str, set[int]] = {}
    for row in truth["slow_episodes"]:
        ranks.setdefault(row["job_id"], set()).add(row["rank"])
    seen = 0
    for path in sorted((out / "training").glob("slurm-*.out")):
        job = path.name[6:-4]
        for m in _MXRTT.finditer(path.read_text()):
            if float(m[3]) / float(m[1]) > 1.01:  # a spread over the 0.4 % noise: a slow rank
                assert int(m[4]) in ranks[job], (job, m[0])
                seen += 1
    assert seen


def test_dcgm_signature_on_the_slow_gpu(slow_fleet: tuple[Path, dict[str, Any], Any]) -> None:
    out, truth, _ = slow_fleet
    signed = [r for r in truth["slow_episodes"] if r["dcgm_signature"]]
    assert signed
    checked = 0
    for row in signed:
        (prom,) = (out / "dcgm").glob(f"{row['host']}.*.prom")
        start, end = (_ms(row[k][:-1]) for k in ("start", "end"))
        pat = re.compile(
            r'^DCGM_FI_DEV_(SM_CLOCK|CLOCK_THROTTLE_REASONS)\{gpu="'
            + str(row["gpu"])
            + r'",.*\} (\d+) (\d+)$',
            re.M,
        )
        for m in pat.finditer(prom.read_text()):
            t = int(m[3])
            if start <= t < end:
                if m[1] == "CLOCK_THROTTLE_REASONS":
                    assert int(m[2]) & row["dcgm_signature"] == row["dcgm_signature"]
                else:
                    assert int(m[2]) <= round(1980 / row["factor"])
                checked += 1
    assert checked


def test_silent_episodes_leave_dcgm_alone(tmp_path: Path) -> None:
    config = SynthConfig(**(SLOW | {"slow_dcgm_share": 0.0, "days": 3}))
    synthesize(tmp_path, config)
    reasons = re.findall(
        r"^DCGM_FI_DEV_CLOCK_THROTTLE_REASONS\{.*\} (\d+) \d+$",
        "".join(p.read_text() for p in sorted((tmp_path / "dcgm").glob("*.prom"))),
        re.M,
    )
    assert reasons
    assert {int(r) for r in reasons} <= {0, 1}


def test_fail_slow_leaves_the_other_sources_alone(tmp_path: Path) -> None:
    base = SynthConfig(**{k: v for k, v in SLOW.items() if not k.startswith(("slow_", "dcgm_"))})
    synthesize(tmp_path / "off", base)
    synthesize(tmp_path / "on", replace(base, slow_rate_per_gpu_hour=2e-3))
    for path in sorted((tmp_path / "off").rglob("*")):
        rel = path.relative_to(tmp_path / "off")
        if path.is_file() and rel.parts[0] not in ("training", "dcgm", "ground_truth.json"):
            assert (tmp_path / "on" / rel).read_bytes() == path.read_bytes(), rel


def test_nvrx_reports_and_node_episodes(tmp_path: Path) -> None:
    knobs = SLOW | {"dcgm_interval_s": None, "slow_dcgm_share": 0.0}
    config = SynthConfig(**knobs, straggler_lines="nvrx", slow_unit="node", straggler_report_s=600)
    truth = synthesize(tmp_path, config)
    text = "".join(p.read_text() for p in sorted((tmp_path / "training").glob("slurm-*.out")))
    assert "GPU relative performance:" in text
    scores = [float(s) for s in re.findall(r"^  Rank=\d+ Node=\S+ Score=([\d.]+)$", text, re.M)]
    assert scores
    assert all(0 <= s <= 1 for s in scores)
    rows = truth["slow_episodes"]
    assert rows
    assert all(r["unit"] == "node" and r["gpu"] is None and r["rank"] % 8 == 0 for r in rows)


def test_episode_law_follows_the_knobs() -> None:
    config = SynthConfig(
        nodes=64, days=30, training_logs=True, slow_rate_per_gpu_hour=1e-3, slow_dcgm_share=0.25
    )
    from synth import fleet as fleet_mod

    fleet = fleet_mod.build_fleet(config, np.random.default_rng(0))
    ep = plan_episodes(config, fleet)
    expected = 1e-3 * 64 * 8 * 30 * 24  # 368.64
    assert abs(ep.size - expected) < 4 * expected**0.5
    dur_s = (ep.end - ep.start) / 1000
    assert abs(np.median(dur_s) / 1470 - 1) < 0.2
    assert abs(np.median(ep.factor - 1) / 0.1 - 1) < 0.2
    assert abs(np.mean(ep.signature > 0) - 0.25) < 0.08


# --- relia synth ---------------------------------------------------------------------------


def test_cli_preset_and_overrides(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pipelines.cli import app

    out = tmp_path / "landing"
    args = ["synth", "--out", str(out), "--nodes", "8", "--days", "4", "--training-logs"]
    more = ["--slow-preset", "published", "--slow-rate-per-gpu-hour", "1e-3"]
    more += ["--slow-duration-s", "600", "1.0", "--straggler-lines", "nvrx", "--json"]
    result = CliRunner().invoke(app, [*args, *more])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    truth = json.loads((out / "ground_truth.json").read_text())
    laws = truth["slow_laws"]
    assert laws["slow_preset"] == "published"
    assert laws["slow_rate_per_gpu_hour"] == 1e-3  # the option wins over the preset
    assert laws["slow_duration_s"] == [600.0, 1.0]
    assert laws["slow_factor"] == [0.1, 1.0]  # the preset's
    assert laws["slow_dcgm_share"] == 0.3
    assert truth["params"]["straggler_lines"] == "nvrx"
    assert summary["slow_episodes"] == truth["slow_fleet"]["n_episodes"]
    assert summary["straggling_jobs"] == sum(1 for s in truth["slow_jobs"].values() if s > 0)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--slow-rate-per-gpu-hour", "1e-3"], "needs training_logs on"),
        (["--training-logs", "--slow-preset", "nope"], "unknown slow preset 'nope'"),
        (["--training-logs", "--straggler-lines", "megatron"], "needs slow_rate_per_gpu_hour > 0"),
        (["--step-jitter", "0.01"], "needs training_logs on"),
        (
            ["--training-logs", "--slow-rate-per-gpu-hour", "1e-3", "--slow-unit", "rack"],
            "slow_unit must be 'gpu' or 'node'",
        ),
    ],
)
def test_cli_bad_slow_options_are_one_line_errors(
    tmp_path: Path, option: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from pipelines.cli import app

    out = tmp_path / "landing"
    result = CliRunner().invoke(app, ["synth", "--out", str(out), "--nodes", "4", *option])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


# --- faint slowness and step jitter ----------------------------------------------------------


@pytest.mark.parametrize(("factor", "faint"), [((0.02, 0.0), True), ((0.5, 0.0), False)])
def test_faint_slowness_is_split_out_of_slow_s(
    tmp_path: Path, factor: tuple[float, float], faint: bool
) -> None:
    # every episode slows by S = 1.02 (under 1 + visible_floor: all of the logged slow time is
    # faint) or by S = 1.5 (none of it)
    config = SynthConfig(**(SLOW | {"days": 3, "slow_factor": factor, "dcgm_interval_s": None}))
    truth = synthesize(tmp_path, config)
    assert truth["slow_laws"]["visible_floor"] == 0.05
    assert "relia's default detection floor" in truth["slow_laws"]["faint_s"]
    slowed = [job for job, s in truth["slow_jobs"].items() if s > 0]
    assert slowed
    for job in slowed:
        parts = truth["slow_job_parts"][job]
        logged = truth["slow_jobs"][job] - parts["unlogged_s"]
        assert parts["faint_s"] == pytest.approx(logged if faint else 0.0, abs=1e-6), job


def test_step_jitter_is_off_by_default_and_refused_without_logs() -> None:
    assert SynthConfig().training_step_jitter == 0
    assert "training_step_jitter" not in SynthConfig(training_logs=True).to_params()
    with pytest.raises(ValueError, match="needs training_logs on"):
        SynthConfig(training_step_jitter=0.01)
    with pytest.raises(ValueError, match=r"must be in \[0, 0.5\]"):
        SynthConfig(training_logs=True, training_step_jitter=-0.1)
    assert with_slow_preset(SynthConfig(training_logs=True), "published").training_step_jitter == (
        0.01
    )


def test_step_jitter_moves_only_the_step_times(tmp_path: Path) -> None:
    base = SynthConfig(nodes=8, days=4, seed=5, training_logs=True)
    truth = synthesize(tmp_path / "off", base)
    jittered = synthesize(tmp_path / "on", replace(base, training_step_jitter=0.01))
    assert jittered["params"]["training_step_jitter"] == 0.01
    for path in sorted((tmp_path / "off").rglob("*")):
        rel = path.relative_to(tmp_path / "off")
        if path.is_file() and rel.parts[0] not in ("training", "ground_truth.json"):
            assert (tmp_path / "on" / rel).read_bytes() == path.read_bytes(), rel
    # the ledger still sums to the wall time, job by job, and the knobs drawn are the same
    for before, after in zip(truth["job_goodput"], jittered["job_goodput"], strict=True):
        assert before["step_time_s"] == after["step_time_s"]
        parts = ("productive_s", "checkpoint_s", "wasted_s", "restart_s", "startup_s", "other_s")
        assert sum(after[k] for k in parts) == pytest.approx(after["wall_s"])
    # Megatron's printed step time scatters around the drawn one: the mean of k lognormal(0,
    # 0.01) draws, about 1 % / sqrt(k) (k = 10-100 steps a line)
    ratios = []
    for entry in jittered["job_goodput"]:
        if entry["framework"] != "megatron":
            continue
        text = (tmp_path / "on" / "training" / f"slurm-{entry['job_id']}.out").read_text()
        ms = [float(m[3]) for line in text.splitlines() if (m := _ITER.match(line))]
        ratios += [x / (entry["step_time_s"] * 1000) for x in ms]
    assert len(ratios) > 100
    assert len(set(ratios)) > len(ratios) // 2
    assert abs(float(np.median(ratios)) - 1) < 0.002
    assert 0.0005 < float(np.std(ratios)) < 0.005
