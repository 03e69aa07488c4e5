"""Fail-slow in the projection, the Monte Carlo and the what-if ranking.

The projection's fail-slow outputs are checked against :func:`models.failslow.combine_goodput`
of the fail-stop projection and :func:`models.failslow.project_slow` (called here directly,
with :func:`models.failslow.eviction_cost_s`); the Monte Carlo (its own draws of the episodes,
:mod:`models.simulate_slow`) against the projection within 3 standard errors at 1k, 16k and
100k GPUs with eviction on and off; the ranking of ``straggler_detect_s`` against projecting
each scenario.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from models import (
    FAIL_SLOW_KNOBS,
    KNOBS,
    LogNormalLaw,
    Mitigation,
    Scenario,
    SlowLaws,
    combine_goodput,
    eviction_cost_s,
    knob_gains,
    project,
    project_slow,
    simulate_job,
    sweep,
)

Z = 3.0  # standard errors
#: 1e-5 slow episodes per GPU-hour, a median of 30 min (sigma 1), a median slowdown of 1.3x.
LAW = SlowLaws(1e-5, LogNormalLaw(1800.0, 1.0), LogNormalLaw(0.3, 0.8))
NODE_LAW = SlowLaws(2e-5, LogNormalLaw(600.0, 0.5), LogNormalLaw(0.5, 0.0), unit="node")
SLOW_OUTPUTS = {
    "goodput_fail_stop",
    "slow_share",
    "slowdown",
    "expected_evictions",
    "lost_gpu_h_fail_stop",
    "lost_gpu_h_fail_slow",
    "lost_gpu_h_slow",
    "lost_gpu_h_eviction",
}


def _direct(s: Scenario) -> tuple[dict[str, float], object]:
    """The fail-stop projection and combine_goodput of it with project_slow, by hand."""
    fail_stop = project(replace(s, slow_laws=()))
    detect = math.inf if s.straggler_detect_s is None else s.straggler_detect_s
    cost = eviction_cost_s(s, fail_stop, how=s.straggler_evict) if math.isfinite(detect) else 0.0
    slow = project_slow(
        s.slow_laws,
        s.n_gpus,
        gpus_per_node=s.gpus_per_node,
        mitigation=Mitigation(detect, s.straggler_tolerance, s.straggler_evict_s, cost),
    )
    return dict(fail_stop), (combine_goodput(fail_stop, slow), slow)


class TestNoFailSlow:
    def test_fail_slow_knobs_default_to_none(self) -> None:
        defaults = {k.name: k.default for k in KNOBS}
        assert [k for k in FAIL_SLOW_KNOBS] == [
            "slow_laws",
            "straggler_detect_s",
            "straggler_tolerance",
            "straggler_evict",
            "straggler_evict_s",
        ]
        assert defaults["slow_laws"] == ()
        assert defaults["straggler_detect_s"] is None

    def test_straggler_knobs_without_slow_laws_change_nothing(self) -> None:
        base = project(Scenario(n_gpus=4096))
        acted = project(
            Scenario(
                n_gpus=4096,
                straggler_detect_s=60.0,
                straggler_tolerance=0.2,
                straggler_evict="hot_spare",
                straggler_evict_s=30.0,
            )
        )
        assert acted == base
        assert not SLOW_OUTPUTS & set(base)


class TestProjection:
    @pytest.mark.parametrize("evict", ["restart", "hot_spare", "planned"])
    @pytest.mark.parametrize("detect", [None, 600.0])
    def test_projection_is_combine_goodput(self, evict: str, detect: float | None) -> None:
        s = Scenario(
            n_gpus=16_384,
            slow_laws=(LAW, NODE_LAW),
            straggler_detect_s=detect,
            straggler_evict=evict,
            straggler_evict_s=120.0,
            straggler_tolerance=0.1,
        )
        out = project(s)
        fail_stop, (combined, slow) = _direct(s)
        assert set(out) >= SLOW_OUTPUTS
        assert out["goodput"] == pytest.approx(combined.goodput, rel=1e-12)
        assert out["goodput_fail_stop"] == fail_stop["goodput"]
        assert out["useful_gpu_h"] == pytest.approx(combined.useful_gpu_h, rel=1e-12)
        assert out["lost_gpu_h_total"] == pytest.approx(combined.lost_gpu_h_total, rel=1e-12)
        assert out["lost_gpu_h_fail_stop"] == fail_stop["lost_gpu_h_total"]
        assert out["lost_gpu_h_fail_slow"] == pytest.approx(
            combined.lost_gpu_h_fail_slow, rel=1e-12
        )
        by_cause = {(c.kind, c.cause): c.gpu_h for c in combined.by_cause}
        assert out["lost_gpu_h_eviction"] == pytest.approx(
            by_cause["fail_slow", "eviction"], rel=1e-12, abs=1e-9
        )
        slow_pace = by_cause["fail_slow", "slow_tolerated"]
        slow_pace += by_cause["fail_slow", "slow_above_tolerance"]
        assert out["lost_gpu_h_slow"] == pytest.approx(slow_pace, rel=1e-12)
        assert out["slow_share"] == pytest.approx(slow.share, rel=1e-12)
        assert out["slowdown"] == pytest.approx(1.0 / (1.0 - slow.share), rel=1e-12)
        hours = s.job_days * 24.0
        assert out["expected_evictions"] == pytest.approx(
            slow.evictions_per_h * fail_stop["goodput"] * hours, rel=1e-12
        )
        assert (out["expected_evictions"] > 0) == (detect is not None)
        # the fail-stop figures hold
        for key in ("mtti_h", "checkpoint_interval_min", "lost_gpu_h_restart"):
            assert out[key] == fail_stop[key]  # type: ignore[literal-required]
        energy = out["lost_gpu_h_fail_slow"] * s.gpu_power_w * s.pue / 1e6
        assert out["energy_lost_mwh"] == pytest.approx(fail_stop["energy_lost_mwh"] + energy)

    def test_sweep_rows_are_the_projections(self) -> None:
        base = Scenario(slow_laws=(LAW,), straggler_evict="planned")
        grid = {"n_gpus": [1024, 16_384, 100_000], "straggler_detect_s": [None, 600.0]}
        table = sweep(base, grid)
        assert table.height == 6
        for row in table.iter_rows(named=True):
            detect = (
                None if row["straggler_detect_s"] == "None" else float(row["straggler_detect_s"])
            )
            out = project(replace(base, n_gpus=row["n_gpus"], straggler_detect_s=detect))
            for key in ("goodput", "slow_share", "lost_gpu_h_eviction", "expected_evictions"):
                assert row[key] == pytest.approx(out[key], rel=1e-12, abs=1e-12)  # type: ignore[literal-required]

    def test_sampled_interval_counts_fail_slow(self) -> None:
        from models import ClassRate

        rate = ClassRate("node", "node", mtbf_h=3700.0, mtbf_lo_h=3000.0, mtbf_hi_h=4500.0)
        s = Scenario(n_gpus=16_384, rates=(rate,), slow_laws=(LAW,))
        out = project(s, n_samples=200, random_state=0)
        fail_stop = project(replace(s, slow_laws=()), n_samples=200, random_state=0)
        factor = out["goodput"] / out["goodput_fail_stop"]
        assert out["goodput_lo"] == pytest.approx(fail_stop["goodput_lo"] * factor, rel=1e-9)
        assert out["goodput_hi"] == pytest.approx(fail_stop["goodput_hi"] * factor, rel=1e-9)

    @pytest.mark.parametrize(
        ("knobs", "match"),
        [
            ({"straggler_detect_s": -1.0}, "straggler_detect_s must be 0 or more"),
            ({"straggler_evict": "reboot"}, "straggler_evict must be one of"),
            ({"straggler_tolerance": -0.1}, "straggler_tolerance must be zero or positive"),
            ({"straggler_evict_s": math.nan}, "straggler_evict_s must be zero or positive"),
        ],
    )
    def test_bad_straggler_knobs_are_refused(self, knobs: dict[str, object], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            Scenario(**knobs)  # type: ignore[arg-type]

    def test_slow_laws_must_be_slow_laws(self) -> None:
        assert Scenario(slow_laws=LAW).slow_laws == (LAW,)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="slow_laws must be SlowLaws"):
            Scenario(slow_laws=({"unit": "gpu"},))  # type: ignore[arg-type]


class TestMonteCarlo:
    """The acceptance: the projection against the Monte Carlo, which draws its own episodes."""

    @pytest.mark.parametrize("n_gpus", [1024, 16_384, 100_000])
    @pytest.mark.parametrize("detect", [None, 600.0])
    def test_goodput_within_three_standard_errors(self, n_gpus: int, detect: float | None) -> None:
        s = Scenario(
            n_gpus=n_gpus,
            job_days=7.0,
            slow_laws=(LAW,),
            straggler_detect_s=detect,
            straggler_tolerance=0.2,
            straggler_evict="planned",
        )
        analytic = project(s)
        mc = simulate_job(s, n_trials=200, random_state=7)
        trials = mc.trials
        fail_stop = (trials["goodput"] + trials["slow"] + trials["eviction"]).to_numpy()
        # fail-slow alone: the share of productive time it leaves, trial by trial
        factor = trials["goodput"].to_numpy() / fail_stop
        expected = analytic["goodput"] / analytic["goodput_fail_stop"]
        se = factor.std(ddof=1) / math.sqrt(factor.size)
        assert abs(factor.mean() - expected) <= Z * se
        share_se = mc.slow_share_se
        assert share_se is not None
        assert mc.slow_share is not None
        assert abs(mc.slow_share - analytic["slow_share"]) <= Z * share_se
        # both causes: the fail-stop model's own bound for the window's edges, as for fail-stop
        edge = analytic["goodput_error_bound"]
        assert abs(mc.goodput - analytic["goodput"]) <= Z * mc.goodput_se + edge
        assert mc.evictions is not None
        if detect is None:
            assert mc.evictions == 0
            assert analytic["expected_evictions"] == 0
        else:
            counts = trials["n_evictions"].to_numpy() * fail_stop
            ev_se = counts.std(ddof=1) / math.sqrt(counts.size)
            assert abs(mc.evictions - analytic["expected_evictions"]) <= Z * ev_se + 1e-9

    def test_fail_stop_trials_are_unchanged_without_slow_laws(self) -> None:
        s = Scenario(n_gpus=4096, job_days=7.0)
        mc = simulate_job(s, n_trials=20, random_state=3)
        assert mc.slow_share is None
        assert "slow_share" not in mc.to_dict()
        assert "slow_share" not in mc.trials.columns


class TestWhatIf:
    def test_straggler_detection_ranks_beside_the_other_knobs(self) -> None:
        baseline = Scenario(
            n_gpus=100_000,
            slow_laws=(LAW,),
            straggler_evict="hot_spare",
            strategy="restart",
        )
        grid = {
            "straggler_detect_s": [None, 3600.0, 600.0, 60.0],
            "checkpoint_s": [60.0, 10.0],
            "hot_spares": [0, 16],
            "failure_domain_gpus": [8, 72],
        }
        ranking = knob_gains(baseline, grid)
        base = project(baseline)["goodput"]
        rows = {r["knob"]: r for r in ranking.gains.iter_rows(named=True)}
        assert set(rows) == set(grid)
        for knob, values in grid.items():
            direct = [project(replace(baseline, **{knob: v}))["goodput"] for v in values]
            best = int(np.argmax(direct))
            assert rows[knob]["goodputs"] == pytest.approx(direct, rel=1e-12)
            assert rows[knob]["gain"] == pytest.approx(direct[best] - base, rel=1e-12, abs=1e-15)
        gains = [r["gain"] for r in ranking.gains.iter_rows(named=True)]
        assert gains == sorted(gains, reverse=True)
        # a hot-spare swap within a minute pays here; within 10 min it evicts more medium
        # episodes, each costing more than what is left of it, than within the hour
        detect = rows["straggler_detect_s"]["goodputs"]
        assert detect[0] < detect[2] < detect[1] < detect[3]
        assert rows["straggler_detect_s"]["best_value"] == "60.0"

    def test_a_restart_per_eviction_does_not_pay_at_this_rate(self) -> None:
        baseline = Scenario(n_gpus=100_000, slow_laws=(LAW,), straggler_evict="restart")
        ranking = knob_gains(baseline, {"straggler_detect_s": [None, 3600.0, 600.0, 60.0]})
        (row,) = ranking.gains.iter_rows(named=True)
        assert row["best_value"] == "None"
        assert row["gain"] == 0.0
        assert max(row["goodputs"][1:]) < row["goodputs"][0]
