"""What-if grids by Monte Carlo (issue #13 part 3): agreement, error, seeding, the automatic switch.

Agreement is checked within 3 standard errors on exponential scenarios whose window-edge bias (a
restart and a segment in 60 days, see tests/models/test_simulate.py) is a small fraction of one
standard error at 200 trials.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import models.goodput
from models import Scenario, auto_sweep, point_seed, simulate_sweep, sweep
from models.mc_sweep import grid_points

BASE = Scenario(
    node_failures_per_1000_node_days=6.5,
    job_days=60.0,
    checkpoint_s=10.0,
    hot_spares=64,
    repair_h=1.0,
)
GRID: dict[str, list[Any]] = {
    "n_gpus": [16_384, 131_072],
    "strategy": ["restart", "hot_spare"],
    "detect_s": [60.0, 120.0],
}


class TestSimulateSweep:
    def test_table_has_the_sweep_shape_plus_the_error(self) -> None:
        analytical = sweep(BASE, GRID)
        result = simulate_sweep(BASE, GRID, n_trials=20, random_state=0)
        assert result.columns == [*analytical.columns, "goodput_se", "n_trials", "method"]
        assert result.height == analytical.height == 8
        keys = list(GRID)
        assert_frame_equal(result.select(keys), analytical.select(keys))
        assert set(result["method"]) == {"monte_carlo"}
        assert (result["n_trials"] == 20).all()
        assert (result["goodput_se"] > 0).all()
        # the simulation measures these; the analytical intervals stay as they were
        assert not result["goodput"].equals(analytical["goodput"])
        assert result["checkpoint_interval_min"].equals(analytical["checkpoint_interval_min"])

    def test_grid_points_follow_the_sweep_rows(self) -> None:
        grid = {"checkpoint_s": [10.0, 60.0], "strategy": ["restart", "elastic"], "n_gpus": [8, 16]}
        table = sweep(Scenario(), grid)
        points = grid_points(grid)
        for key in grid:
            assert table[key].to_list() == [p[key] for p in points]

    def test_agrees_with_the_analysis_within_three_standard_errors(self) -> None:
        analytical = sweep(BASE, GRID)
        result = simulate_sweep(BASE, GRID, n_trials=200, random_state=7)
        z = (result["goodput"] - analytical["goodput"]) / result["goodput_se"]
        assert (z.abs() < 3.0).all(), z.to_list()
        # the edge bias the two models differ by is negligible here: under a third of one SE
        tau_s = analytical["checkpoint_interval_min"] * 60.0
        restart_s = BASE.detect_s + BASE.reschedule_s + BASE.reload_s + BASE.warmup_s
        edge = (restart_s + tau_s + BASE.checkpoint_s) / (BASE.job_days * 86_400.0)
        assert (edge < result["goodput_se"] * 3.0).all()
        counts = result["expected_interruptions"] / analytical["expected_interruptions"]
        assert ((counts - 1.0).abs() < 0.01).all()

    def test_standard_error_shrinks_like_one_over_root_trials(self) -> None:
        grid = {"n_gpus": [16_384]}
        small = simulate_sweep(BASE, grid, n_trials=100, random_state=1)["goodput_se"][0]
        large = simulate_sweep(BASE, grid, n_trials=1600, random_state=1)["goodput_se"][0]
        assert small / large == pytest.approx(math.sqrt(1600 / 100), rel=0.3)

    def test_same_seed_same_table_whatever_the_slices_and_order(self) -> None:
        whole = simulate_sweep(BASE, GRID, n_trials=30, random_state=3)
        # cut along the outer loop (strategy), as the what-if flow's slices are
        slices = [{**GRID, "strategy": [value]} for value in GRID["strategy"]]
        parts = [simulate_sweep(BASE, g, n_trials=30, random_state=3) for g in reversed(slices)]
        assert_frame_equal(pl.concat(parts[::-1], how="vertical_relaxed"), whole)
        assert_frame_equal(simulate_sweep(BASE, GRID, n_trials=30, random_state=3), whole)
        other = simulate_sweep(BASE, GRID, n_trials=30, random_state=4)
        assert not other["goodput"].equals(whole["goodput"])

    def test_point_seed_depends_on_the_scenario_not_the_grid(self) -> None:
        a = point_seed(Scenario(n_gpus=1024), 0).generate_state(4)
        b = point_seed(Scenario(n_gpus=1024), 0).generate_state(4)
        c = point_seed(Scenario(n_gpus=2048), 0).generate_state(4)
        d = point_seed(Scenario(n_gpus=1024), 1).generate_state(4)
        assert np.array_equal(a, b)
        assert not np.array_equal(a, c)
        assert not np.array_equal(a, d)

    def test_rows_simulates_only_the_chosen_points(self) -> None:
        whole = simulate_sweep(BASE, GRID, n_trials=30, random_state=5)
        analytical = sweep(BASE, GRID)
        chosen = np.array([1, 6])
        part = simulate_sweep(BASE, GRID, n_trials=30, random_state=5, rows=chosen)
        mask = np.isin(np.arange(part.height), chosen)
        assert part["method"].to_list() == ["monte_carlo" if m else "analytical" for m in mask]
        assert_frame_equal(part.filter(mask), whole.filter(mask))
        rest = part.filter(~mask)
        assert rest["goodput_se"].is_null().all()
        assert (rest["n_trials"] == 0).all()
        assert_frame_equal(rest.select(analytical.columns), analytical.filter(~mask))

    @pytest.mark.parametrize("bad", [{"n_trials": 0}, {"random_state": -1}])
    def test_bad_arguments_say_what_to_do(self, bad: dict[str, int]) -> None:
        with pytest.raises(ValueError, match=r"n_trials|random_state"):
            simulate_sweep(BASE, {"n_gpus": [1024]}, **{"n_trials": 10, **bad})


class TestAutoSweep:
    def test_without_an_error_bound_the_table_is_the_analytical_sweep(self) -> None:
        table = auto_sweep(BASE, GRID)
        analytical = sweep(BASE, GRID)
        assert set(table["method"]) == {"analytical"}
        assert table["goodput_se"].is_null().all()
        assert_frame_equal(table.select(analytical.columns), analytical)

    def test_simulate_evaluates_every_point(self) -> None:
        table = auto_sweep(BASE, GRID, simulate=25, random_state=2)
        assert_frame_equal(table, simulate_sweep(BASE, GRID, n_trials=25, random_state=2))

    def test_points_whose_bound_exceeds_one_percent_switch_to_monte_carlo(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        original = models.goodput._project_arrays

        def with_bound(s: Scenario, *args: Any, **kwargs: Any) -> dict[str, Any]:
            out = original(s, *args, **kwargs)
            n_gpus = np.asarray(kwargs.get("over", args[0] if args else {}).get("n_gpus", s.n_gpus))
            share = np.where(n_gpus.astype(float) > 100_000, 0.02, 0.005)  # 2 % vs 0.5 %
            out["goodput_error_bound"] = share * out["goodput"]
            return out

        monkeypatch.setattr(models.goodput, "_project_arrays", with_bound)
        table = auto_sweep(BASE, GRID, random_state=0, auto_trials=40)
        switched = (table["n_gpus"] > 100_000).to_list()
        assert table["method"].to_list() == ["monte_carlo" if s else "analytical" for s in switched]
        assert table.filter(pl.col("method") == "monte_carlo")["n_trials"].unique().to_list() == [
            40
        ]
        assert "goodput_error_bound" in table.columns
        reference = simulate_sweep(BASE, GRID, n_trials=40, random_state=0, rows=switched)
        assert_frame_equal(table, reference)


def test_auto_switch_is_capped_widest_bounds_first_and_says_so() -> None:
    """A grid of contended spare pools: the bound flags many points; at most max_points are
    simulated, the widest relative bounds first, and the rest say why they stayed analytical."""
    base = Scenario(strategy="hot_spare", repair_h=24.0)
    grid = {"n_gpus": [16_384, 32_768], "hot_spares": [2, 4, 6, 8]}
    analytical = sweep(base, grid)
    relative = (analytical["goodput_error_bound"] / analytical["goodput"]).to_numpy()
    flagged = relative > 0.01
    assert flagged.sum() >= 4
    table = auto_sweep(base, grid, auto_trials=50, max_points=2)
    simulated = (table["method"] == "monte_carlo").to_numpy()
    assert simulated.sum() == 2
    widest = np.argsort(-np.where(flagged, relative, -1.0), kind="stable")[:2]
    assert set(np.flatnonzero(simulated)) == set(widest)
    left = table["method"].str.starts_with("analytical: error bound above 1%").to_numpy()
    assert (left == (flagged & ~simulated)).all()
    # cut in slices that only label, then decided once on the whole: the same table
    from models.mc_sweep import switch_flagged

    labelled = auto_sweep(base, grid, max_points=0)
    assert (labelled["method"] != "monte_carlo").all()
    again = switch_flagged(labelled, base, grid, auto_trials=50, max_points=2)
    assert again.equals(table)
