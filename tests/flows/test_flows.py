"""``fit-reliability`` and ``what-if`` as real flow runs under the Prefect test harness
(``small_warehouse`` is in conftest.py)."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import yaml

from models import ClassRate, Scenario, project
from models.exceptions import FewFailuresWarning
from pipelines import warehouse

pytestmark = [pytest.mark.prefect, pytest.mark.slow]
SWEEPS = Path(__file__).resolve().parents[2] / "data_samples" / "sweeps"


def test_fit_reliability_flow_stores_a_run(prefect_harness: None, small_warehouse: Path) -> None:
    from pipelines.flows.fit_reliability import fit_reliability

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        outcome = fit_reliability(db_path=small_warehouse)
    with warehouse.connect(small_warehouse, read_only=True) as con:
        stored = con.execute(
            "select count(*), count(*) filter (where chosen) from fit_results where run_id = $id",
            {"id": outcome["run_id"]},
        ).fetchall()[0]
    assert stored == (outcome["results"].height, outcome["results"]["chosen"].sum())


def test_backtest_goodput_flow_stores_a_run_of_the_jobs_of_min_gpus(
    prefect_harness: None, small_warehouse: Path
) -> None:
    from pipelines.flows.backtest_goodput import backtest_goodput

    run_id = backtest_goodput(db_path=small_warehouse, min_gpus=9)
    with warehouse.connect(small_warehouse, read_only=True) as con:
        (min_gpus, n_jobs) = con.execute(
            "select min_gpus, n_jobs from backtest_runs where run_id = $id", {"id": run_id}
        ).fetchall()[0]
        (n_ledger,) = con.execute(
            "select count(*) from fct_job_goodput where n_gpus >= 9"
        ).fetchall()[0]
        buckets = {
            r[0] for r in con.execute("select bucket from rpt_projection_backtest").fetchall()
        }
    assert (min_gpus, n_jobs) == (9, n_ledger)
    assert n_ledger > 0
    assert "1-8" not in buckets
    assert "all" in buckets


def test_what_if_flow_ranks_knobs_from_the_latest_fit(
    prefect_harness: None, small_warehouse: Path, tmp_path: Path
) -> None:
    from pipelines.flows.what_if import what_if

    result = what_if(
        sweep_file=SWEEPS / "scale_checkpoint_domain.yaml",
        out_dir=tmp_path,
        db_path=small_warehouse,
    )
    assert result["fit_run_id"]
    table = pl.read_parquet(result["table"])
    assert table.height == result["n_points"] == 5 * 3 * 2 * 3
    # the best knob computed here, straight from the projection: the baseline the flow reports
    # (the file's baseline at its target scale, with the fitted rates), each knob changed alone
    # to each of its grid values, the knob whose best value gains the most goodput
    spec = yaml.safe_load((SWEEPS / "scale_checkpoint_domain.yaml").read_text())
    fields = result["baseline"]
    baseline = Scenario(**{**fields, "rates": tuple(ClassRate(**r) for r in fields["rates"])})
    assert (baseline.n_gpus, baseline.checkpoint_s, baseline.failure_domain_gpus) == (
        spec["target_gpus"],
        spec["baseline"]["checkpoint_s"],
        spec["baseline"]["failure_domain_gpus"],
    )
    assert baseline.strategy == spec["baseline"]["strategy"]
    at_baseline = project(baseline)["goodput"]
    gains = {
        knob: max(project(replace(baseline, **{knob: v}))["goodput"] for v in values) - at_baseline
        for knob, values in spec["grid"].items()
        if knob != "n_gpus"
    }
    best = max(gains, key=lambda knob: gains[knob])
    assert gains[best] > 0
    assert result["best_knob"]["knob"] == best
    assert result["best_knob"]["gain"] == pytest.approx(gains[best], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_cli_report_tracked_runs_the_weekly_report_flow(
    prefect_harness: None, small_warehouse: Path, tmp_path: Path, as_json: bool
) -> None:
    """``relia report --tracked`` once read ``.path`` off the flow's ``str`` result."""
    from typer.testing import CliRunner

    from pipelines.cli import app

    reports = tmp_path / "reports"
    args = ["report", "--tracked", "--db", str(small_warehouse), "--reports-dir", str(reports)]
    result = CliRunner().invoke(app, [*args, "--json"] if as_json else args)
    assert result.exit_code == 0, result.output
    [written] = reports.glob("*.html")
    if as_json:
        payload = json.loads(result.stdout)
        assert payload["path"] == str(written)
        assert payload["artifact"] == "weekly-report-headline"
    else:
        assert str(written) in result.stdout.replace("\n", "")
