"""Fit runs on the synthetic warehouse: stored rows, AIC choice, closed forms, trend, Cox."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import polars as pl
import pytest

from models.exceptions import FewFailuresWarning
from pipelines import warehouse
from pipelines.analysis import fit

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def run(fleet: tuple[Path, Path, dict]) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        return fit.run_fit(fleet[0])


def test_run_is_stored_with_one_choice_per_class(run: dict, fleet: tuple) -> None:
    with warehouse.connect(fleet[0], read_only=True) as con:
        stored = fit.read_fit(con, run["run_id"])
        window = con.execute(
            "select window_start, window_end from fit_runs where run_id = $id",
            {"id": run["run_id"]},
        ).fetchone()
        classes = {
            r[0]
            for r in con.execute(
                "select distinct component_class from fct_component_lives"
            ).fetchall()
        }
    assert window == fit.read_window(warehouse.duckdb.connect(str(fleet[0]), read_only=True))
    assert set(stored["component_class"]) == classes
    chosen = stored.filter(pl.col("chosen")).group_by("component_class").len()
    assert chosen["len"].to_list() == [1] * len(classes)
    many = stored.filter(pl.col("n_failures") >= 2)
    assert set(many["family"]) == {"exponential", "weibull", "lognormal", "loglogistic"}


def test_exponential_rows_are_the_closed_form(run: dict, fleet: tuple) -> None:
    with warehouse.connect(fleet[0], read_only=True) as con:
        sums = dict(
            (cls, (n, h))
            for cls, n, h in con.execute(
                "select component_class, count(*) filter (where failed), sum(exit_h - entry_h) "
                "from fct_component_lives group by 1"
            ).fetchall()
        )
    exp = run["results"].filter(pl.col("family") == "exponential")
    for row in exp.iter_rows(named=True):
        n, hours = sums[row["component_class"]]
        assert row["n_failures"] == n
        assert row["exposure_h"] == pytest.approx(hours, rel=1e-12)
        if n:
            assert row["mtbf_h"] == pytest.approx(hours / n, rel=1e-9)
        else:
            assert math.isnan(row["mtbf_h"])
            assert 0 < row["mtbf_lo_h"] < math.inf


def test_failure_counts_match_truth(run: dict, fleet: tuple) -> None:
    # the failure process: every in-window failure, whatever fixed it (data contract §6)
    truth = {c: row["n_failures"] for c, row in fleet[2]["failure_process"].items()}
    exp = run["results"].filter(pl.col("family") == "exponential")
    counts = dict(zip(exp["component_class"], exp["n_failures"], strict=True))
    assert {cls: counts.get(cls, 0) for cls in truth} == truth
    rates = dict(zip(run["rates"]["component_class"], run["rates"]["n_failures"], strict=True))
    assert rates == counts


def test_replacement_counts_match_the_ticket_truth(fleet: tuple) -> None:
    # replacement lives are cut by replace tickets only: the truth's ticket-based counts
    truth = fleet[2]["failures_by_class"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        outcome = fit.run_fit(fleet[0], lives="fct_replacement_lives")
    assert outcome["quantity"] == "replacement"
    rates = outcome["rates"]
    assert set(rates["process"]) == {"replacement"}
    counts = dict(zip(rates["component_class"], rates["n_failures"], strict=True))
    assert {cls: counts[cls] for cls in truth} == truth
    assert sum(counts.values()) == sum(truth.values())


def test_cohort_split_labels_each_fit(fleet: tuple) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        outcome = fit.run_fit(fleet[0], by=["batch"])
    cohorts = set(outcome["results"]["cohort"])
    assert cohorts
    assert all(c.startswith("batch=") for c in cohorts)


def test_fleet_trend_counts_every_node_failure(fleet: tuple) -> None:
    with warehouse.connect(fleet[0], read_only=True) as con:
        recurrence = fit.read_node_recurrence(con)
    trend = fit.fleet_trend(recurrence)
    # every job-stopping failure of the window, of every class (not only replacements)
    process = fleet[2]["failure_process"]
    assert trend.n_failures == sum(row["n_failures"] for row in process.values())
    assert trend.n_nodes == fleet[2]["n_nodes"]
    assert trend.crow_amsaa.verdict in {"improving", "stable", "degrading"}
    assert trend.lemons.height == trend.n_nodes
    assert trend.mcf["mcf"].is_sorted()


def test_cox_reports_hazard_ratios_or_says_why_not(fleet: tuple) -> None:
    table = fit.run_cox(fleet[0], ["batch"])
    assert table.height > 0
    estimated = table.filter(pl.col("hazard_ratio").is_not_null())
    assert (estimated["hr_lo"] <= estimated["hazard_ratio"]).all()
    assert (estimated["hazard_ratio"] <= estimated["hr_hi"]).all()


def test_unknown_cohort_column_is_a_clear_error(fleet: tuple) -> None:
    with pytest.raises(ValueError, match="cohort columns are"):
        fit.run_fit(fleet[0], by=["colour"])
