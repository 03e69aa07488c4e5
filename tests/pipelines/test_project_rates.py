"""Projections take the per-class interruption rates of a fit run (``fit_rates``).

A copy of the shared synthetic fleet (48 nodes x 8 GPUs x 45 days, tickets and a fleet register)
with three runs stored in this order: the failure process (``fct_component_lives``), replacement
lives (``fct_replacement_lives``) and a fault log's lives (the InfiniteHBD trace ingested beside
it, ``int_fault_lives``). ``latest`` must take the failure process's run although it is the
oldest; the others only when asked for.
"""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

from models.exceptions import FewFailuresWarning
from pipelines import ingest, warehouse
from pipelines.analysis import fit, project
from pipelines.cli import app
from pipelines.ingest.sources import fault_log

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
HBD = REPO.parent / "shared" / "real" / "infinitehbd-gpu-fault-trace" / "fault_trace.json"
N_GPUS, JOB_DAYS = 1024, 10.0


@pytest.fixture(scope="module")
def runs(fleet: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory) -> dict:
    db = tmp_path_factory.mktemp("rates") / "relia.duckdb"
    shutil.copy(fleet[0], db)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        failure = fit.run_fit(db)["run_id"]
        replacement = fit.run_fit(db, lives="fct_replacement_lives")["run_id"]
        mapping = fault_log.load_mapping(REPO / "data_samples" / "mappings" / "infinitehbd.yaml")
        ingest.ingest(
            db,
            ingest.discover([HBD], source="fault_log"),
            parser_options={"fault_log": {"mapping": mapping}},
        )
        fault = fit.run_fit(db, lives="int_fault_lives", dataset="infinitehbd")["run_id"]
    with warehouse.connect(db, read_only=True) as con:
        rates = warehouse.query(
            con, "select * from rpt_class_rates where run_id = $id", {"id": failure}
        )
        levels = dict(
            con.execute("select component_class, unit_level from seed_component_class").fetchall()
        )
    return {
        "db": db,
        "failure": failure,
        "replacement": replacement,
        "fault": fault,
        "rates": rates,
        "levels": levels,
    }


def _project(runs: dict, fit_run: str, **kwargs: Any) -> dict[str, Any]:
    knobs = {"n_gpus": N_GPUS, "gpus_per_node": 8, "job_days": JOB_DAYS} | kwargs.pop("knobs", {})
    result = project.run_projection(runs["db"], knobs, fit_run=fit_run, n_samples=0, **kwargs)
    return result.to_json_dict()


def test_latest_is_the_newest_failure_process_run_not_a_newer_other_one(runs: dict) -> None:
    result = _project(runs, "latest")
    assert result["fit_run_id"] == runs["failure"]
    assert (result["rate_process"], result["rate_lives"]) == ("failure", "fct_component_lives")
    assert result["rate_source"].startswith(f"fit run {runs['failure']}: interruption rates")
    failing = runs["rates"].filter(pl.col("n_failures") > 0)
    assert [r["component_class"] for r in result["scenario"]["rates"]] == sorted(
        failing["component_class"]
    )
    assert result["classes_without_failures"] == sorted(
        runs["rates"].filter(pl.col("n_failures") == 0)["component_class"]
    )


def test_the_rates_are_the_runs_stored_headlines(runs: dict) -> None:
    """Each class's MTBF and bounds are its fit_rates headline; level none projects per node."""
    result = _project(runs, runs["failure"])
    stored = {r["component_class"]: r for r in runs["rates"].iter_rows(named=True)}
    for rate in result["scenario"]["rates"]:
        row = stored[rate["component_class"]]
        assert rate["mtbf_h"] == pytest.approx(row["headline_mtbf_h"], rel=1e-12)
        assert rate["mtbf_lo_h"] == pytest.approx(row["headline_mtbf_lo_h"], rel=1e-12)
        assert rate["mtbf_hi_h"] == pytest.approx(row["headline_mtbf_hi_h"], rel=1e-12)
        assert rate["weibull_shape"] == 1.0
        assert rate["level"] == (
            "gpu" if runs["levels"][rate["component_class"]] == "gpu" else "node"
        )
    # the default fleet has non-hardware interruptions: classes of no unit of their own
    none_level = [
        r for r in result["scenario"]["rates"] if runs["levels"][r["component_class"]] == "none"
    ]
    assert none_level, "the fleet's software / network / maintenance interruptions are projected"


def test_per_class_expected_interruptions_are_rate_times_units_times_hours(runs: dict) -> None:
    """Units x hours x the class's rate, with the exact Poisson bounds of its count."""
    result = _project(runs, "latest")
    by_class = result["expected_interruptions_by_class"]
    hours = JOB_DAYS * 24.0
    for row in runs["rates"].filter(pl.col("n_failures") > 0).iter_rows(named=True):
        r, exposure = row["n_failures"], row["exposure_h"]
        units = N_GPUS if row["unit_level"] == "gpu" else N_GPUS // 8
        lo = stats.chi2.ppf(0.025, 2 * r) / 2.0 / exposure
        hi = stats.chi2.ppf(0.975, 2 * r + 2) / 2.0 / exposure
        got = by_class[row["component_class"]]
        assert got["units"] == units
        assert got["expected"] == pytest.approx(units * hours * r / exposure, rel=1e-9)
        assert got["expected_lo"] == pytest.approx(units * hours * lo, rel=1e-9)
        assert got["expected_hi"] == pytest.approx(units * hours * hi, rel=1e-9)
    assert sum(v["expected"] for v in by_class.values()) == pytest.approx(
        result["expected_interruptions"], rel=1e-12
    )


def test_at_given_ages_each_class_is_its_weibull_fit_with_the_headlines_bounds(
    runs: dict,
) -> None:
    result = _project(runs, "latest", knobs={"fleet_age": "new"})
    with warehouse.connect(runs["db"], read_only=True) as con:
        weibull = warehouse.query(
            con,
            "select component_class, mtbf_h, shape from fit_results where run_id = $id "
            "and cohort = 'all' and family = 'weibull' and n_failures > 0",
            {"id": runs["failure"]},
        )
    fitted = {r["component_class"]: r for r in weibull.iter_rows(named=True)}
    stored = {r["component_class"]: r for r in runs["rates"].iter_rows(named=True)}
    for rate in result["scenario"]["rates"]:
        name = rate["component_class"]
        w, head = fitted[name], stored[name]
        if not math.isfinite(w["mtbf_h"]):
            continue
        assert (rate["mtbf_h"], rate["weibull_shape"]) == (w["mtbf_h"], w["shape"])
        # the bounds move as the rate to the power -1/shape
        ratio = head["headline_mtbf_lo_h"] / head["headline_mtbf_h"]
        assert rate["mtbf_lo_h"] == pytest.approx(w["mtbf_h"] * ratio ** (1 / w["shape"]))
    by_class = result["expected_interruptions_by_class"]
    assert sum(v["expected"] for v in by_class.values()) == pytest.approx(
        result["expected_interruptions"], rel=1e-12
    )


def test_replacement_lifetimes_only_when_asked_for(runs: dict) -> None:
    asked = _project(runs, "latest", rate_process="replacement")
    assert asked["fit_run_id"] == runs["replacement"]
    assert (asked["rate_process"], asked["rate_lives"]) == ("replacement", "fct_replacement_lives")
    assert "replacement lifetimes" in asked["rate_source"]
    by_id = _project(runs, runs["replacement"])
    assert by_id["rate_process"] == "replacement"
    with pytest.raises(ValueError, match="not the failure process"):
        _project(runs, runs["replacement"], rate_process="failure")


def test_a_fault_logs_run_only_by_its_id(runs: dict) -> None:
    result = _project(runs, runs["fault"])
    assert (result["fit_run_id"], result["rate_lives"]) == (runs["fault"], "int_fault_lives")
    assert result["rate_process"] == "failure"
    assert all(r["level"] == "node" for r in result["scenario"]["rates"])


def test_cli_prints_the_class_table_and_names_the_process(runs: dict) -> None:
    db = str(runs["db"])
    args = ["project", "--from-fits", "latest", "--gpus", str(N_GPUS), "--db", db]
    table = runner.invoke(app, [*args, "--job-days", "10"], terminal_width=200)
    assert table.exit_code == 0, table.output
    text = " ".join(table.stdout.split())
    assert "expected interruptions by class over 10 days" in text
    assert "rate_process: failure" in text
    payload = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert payload["rate_process"] == "failure"
    assert set(payload["expected_interruptions_by_class"]) == {
        r["component_class"] for r in payload["scenario"]["rates"]
    }
    replacement = json.loads(
        runner.invoke(app, [*args, "--process", "replacement", "--json"]).stdout
    )
    assert replacement["fit_run_id"] == runs["replacement"]
    alone = runner.invoke(app, ["project", "--process", "replacement", "--db", db])
    assert alone.exit_code == 2
    assert alone.stderr.strip().count("\n") == 0
    assert "--process" in alone.stderr


def test_a_sweep_takes_the_same_rates(runs: dict, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "from_fits: latest\nrate_process: replacement\n"
        "grid: {n_gpus: [1024, 4096], checkpoint_s: [60, 10]}\n"
    )
    result = project.run_sweep_file(sweep, out_dir=tmp_path / "out", db_path=runs["db"])
    assert (result["fit_run_id"], result["rate_process"]) == (runs["replacement"], "replacement")
    sweep.write_text("from_fits: latest\ngrid: {n_gpus: [1024, 4096]}\n")
    result = project.run_sweep_file(sweep, out_dir=tmp_path / "out", db_path=runs["db"])
    assert (result["fit_run_id"], result["rate_process"]) == (runs["failure"], "failure")
