"""``relia synth --training-logs``: the written logs against the truth ``job_goodput``.

The truth comes from the generator's timeline; these tests rebuild the ledger of
``docs/goodput.md`` §3 from the written lines and the scheduler's attempts (a small, separate
implementation here), and check the hazard change against the exposure of the simulated units.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from synth import SynthConfig, synthesize
from synth import fleet as fleet_mod
from synth.core import simulate

if TYPE_CHECKING:
    from pathlib import Path

CATS = ("productive_s", "checkpoint_s", "wasted_s", "restart_s", "startup_s", "other_s")
RESTART = ("detect_s", "reschedule_s", "reload_s", "warmup_s")
INTERRUPTIONS = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL")
PINNED = {
    "training_step_s": (2.0, 2.0),
    "training_log_interval_steps": (1, 1),
    "training_checkpoint_interval_steps": (40, 40),
    "training_save_s": (30.0, 30.0),
    "training_startup_s": (120.0, 120.0),
    "training_load_s": (50.0, 50.0),
    "training_warmup_s": (25.0, 25.0),
}


def _config(**changes: Any) -> SynthConfig:
    return SynthConfig(nodes=32, days=30, seed=5, training_logs=True, **changes)


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    """A small fleet with every training draw pinned and one progress line per step."""
    config = _config(**PINNED)
    out = tmp_path_factory.mktemp("pinned")
    truth = synthesize(out, config)
    return out, truth, simulate(config)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    """The same fleet with the default draws (several steps per progress line)."""
    config = _config()
    out = tmp_path_factory.mktemp("drawn")
    truth = synthesize(out, config)
    return out, truth, simulate(config)


def _epoch(text: str) -> float:
    text = text.replace(",", ".")
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


_TS_TITAN = re.compile(r"\[titan\] (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - ")
_ITER = re.compile(
    r"^ \[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] iteration\s+(\d+)/.*elapsed time per iteration "
    r"\(ms\): ([\d.]+)"
)
_TITAN_STEP = re.compile(r"step:\s*(\d+)\s+loss:")
_TIMER = re.compile(r"^\s+save-checkpoint \.+: \(([\d.]+), ([\d.]+)\)$")


def _events(lines: list[str]) -> dict[str, Any]:
    """Steps, saves and load of one attempt's lines (times in epoch seconds)."""
    ev: dict[str, Any] = {"steps": [], "saves": [], "starts": [], "load": None, "load_end": None}
    last_t, last_step, st = None, 0, None
    for line in lines:
        m = _ITER.match(line)
        if m:
            last_t, last_step = _epoch(m[1]), int(m[2])
            st = st or float(m[3]) / 1000
            ev["steps"].append((last_step, last_t))
            continue
        if line.startswith("saving checkpoint at iteration"):
            ev["starts"].append((last_step, last_t))
        m = _TIMER.match(line)
        if m:
            start = ev["starts"][-1][1]
            ev["saves"].append((last_step, start + float(m[2]) / 1000, float(m[2]) / 1000))
        m = re.search(r"loading checkpoint from \S+ at iteration (\d+)", line)
        if m:
            ev["load"] = int(m[1])
        ts = _TS_TITAN.search(line)
        if not ts:
            continue
        t = _epoch(ts[1])
        m = _TITAN_STEP.search(line)
        if m:
            last_step = int(m[1])
            ev["steps"].append((last_step, t))
        elif "Saving the checkpoint" in line:
            ev["starts"].append((last_step, t))
        elif m := re.search(r"Finished saving the checkpoint .* in ([\d.]+) seconds\.", line):
            ev["saves"].append((last_step, t, float(m[1])))
        elif m := re.search(r"Loading the checkpoint at step (\d+)\.", line):
            ev["load"] = int(m[1])
        elif "Finished loading the checkpoint" in line:
            ev["load_end"] = t
    if st is None and len(ev["steps"]) >= 2:
        (n1, t1), (n2, t2) = ev["steps"][:2]
        st = (t2 - t1) / (n2 - n1)
    ev["st"] = st
    return ev


def _split(text: str) -> list[list[str]]:
    """One list of lines per attempt (each starts with the launcher's first line)."""
    parts: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("using world size:") or "Starting job:" in line:
            parts.append([])
        parts[-1].append(line)
    return parts


def _ledger(text: str, attempts: list[Any], st_knob: float) -> dict[str, float]:
    """Section 3 of docs/goodput.md, from the lines and the attempts (seconds)."""
    evs = [_events(lines) for lines in _split(text)]
    assert len(evs) == len(attempts)
    out = dict.fromkeys(CATS + RESTART, 0.0)
    resume = []
    last_save = 0
    for ev in evs:
        resume.append(ev["load"] if ev["load"] is not None else last_save)
        if ev["saves"]:
            last_save = ev["saves"][-1][0]
    for i, (ev, a) in enumerate(zip(evs, attempts, strict=True)):
        s, e = float(a.start_s), float(a.end_s)
        if i + 1 < len(attempts):
            out["reschedule_s"] += attempts[i + 1].start_s - e
        if not ev["steps"]:
            out["startup_s" if i == 0 else "warmup_s"] += e - s
            continue
        n1, t1 = ev["steps"][0]
        first = min(max(t1 - (n1 - resume[i]) * (ev["st"] or st_knob), s), e)
        times = [t for _, t in ev["steps"]] + [t for _, t in ev["starts"]]
        times += [t for _, t, _ in ev["saves"]]
        last = max(times)
        if i == 0:
            out["startup_s"] += first - s
        elif ev["load_end"] is not None:
            out["reload_s"] += ev["load_end"] - s
            out["warmup_s"] += first - ev["load_end"]
        else:
            out["warmup_s"] += first - s
        blocks = [(max(t - d, first), min(t, last)) for _, t, d in ev["saves"]]
        out["checkpoint_s"] += sum(b - a_ for a_, b in blocks)
        if i == len(attempts) - 1 and a.state == "COMPLETED":
            kept = last
        else:
            nxt = resume[i + 1] if i + 1 < len(attempts) else None
            if nxt is None:
                nxt = ev["saves"][-1][0] if ev["saves"] else -1
            cands = [t for n, t in ev["steps"] if n <= nxt] + [
                t for n, t, _ in ev["saves"] if n <= nxt
            ]
            kept = max(cands) if cands else first
        kept_saves = sum(max(0.0, min(b, kept) - a_) for a_, b in blocks)
        out["productive_s"] += kept - first - kept_saves
        out["wasted_s"] += last - kept - (sum(b - a_ for a_, b in blocks) - kept_saves)
        tail = "detect_s" if a.state.split(" ")[0] in INTERRUPTIONS else "other_s"
        out[tail] += e - last
    out["restart_s"] = sum(out[k] for k in RESTART)
    return out


def _attempts_by_label(data: dict[str, Any]) -> dict[str, list[Any]]:
    jobs = data["jobs"]
    out: dict[str, list[Any]] = {}
    for a in sorted(data["attempts"], key=lambda a: (a.job, a.number)):
        out.setdefault(jobs.label[a.job], []).append(a)
    return out


def test_every_job_sums_to_its_wall_time(drawn: tuple[Path, dict[str, Any], Any]) -> None:
    _, truth, data = drawn
    by_label = _attempts_by_label(data)
    rows = truth["job_goodput"]
    assert any(r["has_training_log"] for r in rows)
    assert any(not r["has_training_log"] for r in rows)
    assert any(r["n_attempts"] > 1 and r["has_training_log"] for r in rows)
    w1 = data["truth"]["window_end"]
    for r in rows:
        runs = by_label[r["job_id"]]
        assert runs[-1].end_s < datetime.fromisoformat(w1).timestamp()
        assert r["wall_s"] == runs[-1].end_s - runs[0].start_s
        assert sum(r[c] for c in CATS) == pytest.approx(r["wall_s"], abs=1e-6)
        assert r["restart_s"] == pytest.approx(sum(r[c] for c in RESTART), abs=1e-6)
        assert min(r[c] for c in CATS + RESTART) >= 0
        if not r["has_training_log"]:
            assert r["checkpoint_s"] == r["wasted_s"] == r["detect_s"] == 0
    # every ended Slurm job is there once, and only those
    ended = {
        label
        for label, runs in by_label.items()
        if runs[-1].end_s < datetime.fromisoformat(w1).timestamp()
    }
    assert sorted(r["job_id"] for r in rows) == sorted(ended)


def test_log_files_are_the_training_jobs(drawn: tuple[Path, dict[str, Any], Any]) -> None:
    out, truth, data = drawn
    names = {p.name for p in (out / "training").iterdir()}
    jobs = data["jobs"]
    training = {
        f"slurm-{jobs.label[a.job]}.out"
        for a in data["attempts"]
        if jobs.name[a.job].startswith("pretrain_")
        or jobs.name[a.job] in ("sft_chat", "vit_train", "diffusion_ft", "rlhf_ppo")
    }
    assert names == training
    assert truth["n_lines"]["training"] == sum(
        p.read_text().count("\n") for p in (out / "training").iterdir()
    )
    w1 = datetime.fromisoformat(truth["window_end"]).timestamp()
    stamp = re.compile(r"^(?: \[|\[rank0\]:\[titan\] )(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d{3})?)")
    for path in (out / "training").iterdir():
        times = [_epoch(m[1]) for line in path.read_text().splitlines() if (m := stamp.match(line))]
        assert times, path.name
        assert times == sorted(times), path.name
        assert times[-1] <= w1, path.name
    for r in truth["job_goodput"]:
        if r["framework"] == "megatron":
            assert r["job_name"].startswith("pretrain_")
            assert r["step_time_s"] == int(r["step_time_s"])
            assert r["save_s"] == int(r["save_s"])
        if r["has_training_log"]:
            assert r["checkpoint_interval_steps"] % r["log_interval_steps"] == 0
            assert r["checkpoint_interval_steps"] >= 2 * r["log_interval_steps"]


def test_pinned_startup_and_saves_from_the_lines(pinned: tuple[Path, dict[str, Any], Any]) -> None:
    out, truth, data = pinned
    by_label = _attempts_by_label(data)
    checked = 0
    for r in truth["job_goodput"]:
        if not r["has_training_log"]:
            continue
        assert (r["step_time_s"], r["log_interval_steps"], r["save_s"]) == (2.0, 1, 30.0)
        text = (out / "training" / f"slurm-{r['job_id']}.out").read_text()
        n_done = text.count("successfully saved checkpoint") + text.count("Finished saving")
        assert r["checkpoint_s"] == pytest.approx(30.0 * n_done)
        first = _events(_split(text)[0])
        runs = by_label[r["job_id"]]
        if first["steps"]:
            n1, t1 = first["steps"][0]
            assert n1 == 1
            # startup is only the first attempt's: t1 - one step time - S_1
            assert t1 - 2.0 - runs[0].start_s == pytest.approx(120.0)
            assert r["startup_s"] == pytest.approx(120.0)
            checked += 1
        loads = text.count("Finished loading the checkpoint in 50.00 seconds.")
        if r["framework"] == "torchtitan":
            assert r["reload_s"] == pytest.approx(50.0 * loads)
    assert checked > 10


def test_pinned_ledger_rebuilt_from_the_lines(pinned: tuple[Path, dict[str, Any], Any]) -> None:
    """One progress line per step: the §3 ledger of the lines equals the truth within 1 s."""
    out, truth, data = pinned
    by_label = _attempts_by_label(data)
    n_multi = 0
    for r in truth["job_goodput"]:
        if not r["has_training_log"]:
            continue
        text = (out / "training" / f"slurm-{r['job_id']}.out").read_text()
        runs = by_label[r["job_id"]]
        measured = _ledger(text, runs, r["step_time_s"])
        if r["framework"] == "megatron":  # its load lines carry no time: reload is not known
            measured["warmup_s"] += measured["reload_s"]
            measured["reload_s"] = r["reload_s"]
            measured["warmup_s"] -= r["reload_s"]
        for key in CATS + RESTART:
            assert measured[key] == pytest.approx(r[key], abs=1.0), (r["job_id"], key)
        n_multi += len(runs) > 1
    assert n_multi >= 3


def test_drawn_wasted_is_under_measured_by_at_most_a_line(
    drawn: tuple[Path, dict[str, Any], Any],
) -> None:
    """With ``k`` steps a line, the lines miss at most ``k`` step times of wasted work."""
    out, truth, data = drawn
    by_label = _attempts_by_label(data)
    n = 0
    for r in truth["job_goodput"]:
        if not r["has_training_log"]:
            continue
        text = (out / "training" / f"slurm-{r['job_id']}.out").read_text()
        runs = by_label[r["job_id"]]
        measured = _ledger(text, runs, r["step_time_s"])
        gap = r["wasted_s"] - measured["wasted_s"]
        bound = r["log_interval_steps"] * r["step_time_s"] * len(runs) + 1.0
        assert -1.0 <= gap <= bound, r["job_id"]
        assert measured["checkpoint_s"] == pytest.approx(r["checkpoint_s"], abs=1.0)
        assert sum(measured[c] for c in CATS) == pytest.approx(r["wall_s"], abs=1e-3)
        n += 1
    assert n > 20


def test_training_logs_leave_every_other_file_alone(tmp_path: Path) -> None:
    base = SynthConfig(nodes=16, days=10, seed=2)
    off = synthesize(tmp_path / "off", base)
    on = synthesize(tmp_path / "on", replace(base, training_logs=True))
    assert "job_goodput" not in off
    assert not (tmp_path / "off" / "training").exists()
    assert "training_logs" not in off["params"]
    assert "hazard_change_factor" not in off["params"]
    for path in sorted((tmp_path / "off").rglob("*")):
        if path.is_file() and path.name != "ground_truth.json":
            rel = path.relative_to(tmp_path / "off")
            assert (tmp_path / "on" / rel).read_bytes() == path.read_bytes(), rel
    for key in set(off) - {"params", "n_lines"}:
        assert on[key] == off[key], key


def _exposure_h(fleet: fleet_mod.Fleet, t0: int, t1: int, w1: int) -> np.ndarray:
    """Hours each unit was in service (not in repair) within ``[t0, t1)``."""
    n_units = fleet.unit_node.size
    start = np.maximum(fleet.installed[fleet.unit_node], t0)
    up = np.maximum(0, min(t1, w1) - start).astype(float)
    lo = np.maximum(fleet.ev_open, t0)
    hi = np.minimum(np.minimum(fleet.ev_close, w1), t1)
    down = np.maximum(0, hi - lo)
    np.subtract.at(up, fleet.ev_unit, down)
    assert up.size == n_units
    return up / 3600.0


@pytest.mark.slow
def test_hazard_change_multiplies_the_failure_rate() -> None:
    """Exponential classes, hazard x2 from mid-window: failures after vs before follow exposure."""
    # each unit's hazard is the sum of its hardware classes' rates: no bad units, no
    # non-hardware classes (test_failure_process checks the hazard change with both)
    base = SynthConfig(
        nodes=64, days=60, seed=11, n_ambiguous=0, bad_unit_share=0.0, non_hardware={}
    ).with_families({"all": "exponential"})
    classes = {k: replace(v, scale_h=v.scale_h / 40) for k, v in base.classes.items()}
    factor = 2.0
    config = replace(base, classes=classes, hazard_change_at_frac=0.5, hazard_change_factor=factor)
    rng = np.random.default_rng(config.seed)
    fleet = fleet_mod.build_fleet(config, rng)
    fleet_mod.simulate_lifetimes(config, rng, fleet)
    w0, w1 = config.window_start_s, config.window_end_s
    mid = w0 + 30 * 86_400
    fail = (fleet.ev_action == fleet_mod.FAIL) & (fleet.ev_open >= w0) & (fleet.ev_open < w1)
    n_before = int(np.sum(fail & (fleet.ev_open < mid)))
    n_after = int(np.sum(fail & (fleet.ev_open >= mid)))
    # hazard of each unit: the sum of its competing classes' rates (1 / mean)
    gpu_rate = sum(1 / s.scale_h for s in classes.values() if s.level == "gpu")
    node_rate = [1 / classes[fleet.class_names[c]].scale_h for c in fleet.node_class_idx]
    rate = np.concatenate([np.full(fleet.n_gpu_units, gpu_rate), np.tile(node_rate, fleet.n_nodes)])
    r_before = float(np.sum(rate * _exposure_h(fleet, w0, mid, w1)))
    r_after = float(np.sum(rate * _exposure_h(fleet, mid, w1, w1)))
    n = n_before + n_after
    assert n > 1500
    p = factor * r_after / (r_before + factor * r_after)
    assert abs(n_after - n * p) <= 4 * math.sqrt(n * p * (1 - p))
    p_unchanged = r_after / (r_before + r_after)
    assert abs(n_after - n * p_unchanged) > 8 * math.sqrt(n * p * (1 - p))
    ratio = (n_after / r_after) / (n_before / r_before)
    assert ratio == pytest.approx(factor, rel=0.15)


def _law(family: str) -> tuple[Any, float, float]:
    """A scipy law of each family (shape, scale in hours) as the generator parametrises it."""
    from scipy import stats

    shape, scale = {"weibull": (0.8, 900.0), "exponential": (1.0, 700.0)}.get(
        family, (0.9, 500.0) if family == "lognormal" else (2.5, 600.0)
    )
    law = {
        "weibull": stats.weibull_min(shape, scale=scale),
        "exponential": stats.expon(scale=scale),
        "lognormal": stats.lognorm(shape, scale=scale),
        "loglogistic": stats.fisk(shape, scale=scale),
    }[family]
    return law, shape, scale


@pytest.mark.parametrize("family", ["weibull", "exponential", "lognormal", "loglogistic"])
def test_hazard_change_is_exact_for_every_family(family: str) -> None:
    """Lives at age ``a`` on under a hazard x3: ``S'(x) = S(a) (S(x) / S(a))**3`` past ``a``."""
    from scipy import stats

    law, shape, scale = _law(family)
    rng = np.random.default_rng(7)
    n, age, factor = 20_000, 300.0, 3.0
    draws = law.rvs(size=(n, 1), random_state=rng)
    changed = fleet_mod.hazard_changed(
        draws, [family], np.array([shape]), np.array([scale]), np.full(n, age), factor
    )[:, 0]
    before = draws[:, 0] <= age
    assert np.array_equal(changed[before], draws[before, 0])
    s_a = law.sf(age)

    def cdf(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        late = 1 - s_a * (law.sf(x) / s_a) ** factor
        return np.where(x <= age, law.cdf(x), late)

    assert stats.kstest(changed, cdf).pvalue > 1e-3
    # and the unchanged law is rejected: the test can tell
    assert stats.kstest(changed, law.cdf).pvalue < 1e-6
    # a life that starts after the change has the hazard x3 from age 0: S(x)**3
    fresh = fleet_mod.hazard_changed(
        draws, [family], np.array([shape]), np.array([scale]), np.full(n, -5.0), factor
    )[:, 0]
    assert stats.kstest(fresh, lambda x: 1 - law.sf(x) ** factor).pvalue > 1e-3


def test_cli_writes_training_logs(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from pipelines.cli import app

    args = ["synth", "--out", str(tmp_path), "--nodes", "8", "--days", "10", "--seed", "3"]
    result = CliRunner().invoke(app, [*args, "--training-logs", "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    truth = json.loads((tmp_path / "ground_truth.json").read_text())
    logs = sorted((tmp_path / "training").glob("slurm-*.out"))
    assert payload["training_jobs"] == sum(r["has_training_log"] for r in truth["job_goodput"])
    assert len(logs) >= payload["training_jobs"] > 0
    assert truth["params"]["training_logs"] is True
