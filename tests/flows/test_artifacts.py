"""Every flow publishes its Prefect artifacts under stable keys, read back through the client."""

from __future__ import annotations

import json
import math
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from models.exceptions import FewFailuresWarning
from pipelines import warehouse
from pipelines.flows.artifacts import KEYS, file_uri, ingest_count_rows, json_safe
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from uuid import UUID

SWEEPS = Path(__file__).resolve().parents[2] / "data_samples" / "sweeps"


def _artifacts(flow_run_id: UUID) -> dict[str, Any]:
    """The artifacts of one flow run, by key."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    by_key = {a.key: a for a in found}
    assert len(by_key) == len(found), "one artifact per key and run"
    return by_key


def _table(artifact: Any) -> list[dict[str, Any]]:
    assert artifact.type == "table"
    rows = json.loads(artifact.data)  # strict JSON: a NaN would not get this far
    assert isinstance(rows, list)
    return rows


def _run(flow: Any, **params: Any) -> tuple[Any, dict[str, Any]]:
    """Run ``flow``; its result and its artifacts by key."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        state = flow(**params, return_state=True)
    return state.result(), _artifacts(state.state_details.flow_run_id)


def test_json_safe_turns_nan_and_infinity_into_null() -> None:
    value = {"a": [1.5, math.nan, math.inf], "b": datetime(2026, 5, 4, tzinfo=UTC), "c": Path("x")}
    safe = json_safe(value)
    assert safe == {"a": [1.5, None, None], "b": "2026-05-04T00:00:00+00:00", "c": "x"}
    json.dumps(safe, allow_nan=False)


def test_ingest_counts_leave_skipped_files_out_of_the_row_counts() -> None:
    counts = [
        {
            "source": "dcgm",
            "skipped": False,
            "n_read": 5,
            "n_loaded": 4,
            "n_quarantined": 1,
            "n_ignored": 2,
            "n_held": 0,
        },
        {
            "source": "dcgm",
            "skipped": True,
            "n_read": 9,
            "n_loaded": 9,
            "n_quarantined": 0,
            "n_ignored": 0,
            "n_held": 0,
        },
    ]
    assert ingest_count_rows(counts) == [
        {
            "source": "dcgm",
            "files": 2,
            "new_files": 1,
            "read": 5,
            "loaded": 4,
            "quarantined": 1,
            "ignored": 2,
            "held": 0,
        }
    ]


@pytest.mark.prefect
@pytest.mark.slow
def test_ingest_flow_publishes_counts_and_quarantine_reasons(
    prefect_harness: None, tmp_path: Path
) -> None:
    from pipelines.flows.ingest_telemetry import ingest_telemetry

    landing = tmp_path / "landing"
    synthesize(
        landing, SynthConfig(nodes=8, days=10, seed=1, start=datetime(2026, 5, 4, tzinfo=UTC))
    )
    db = tmp_path / "relia.duckdb"
    counts, artifacts = _run(ingest_telemetry, landing_dir=landing, db_path=db)
    assert set(artifacts) == {KEYS["ingest_counts"], KEYS["ingest_quarantine"]}
    rows = _table(artifacts[KEYS["ingest_counts"]])
    assert {r["source"] for r in rows} == {c["source"] for c in counts}
    assert sum(r["files"] for r in rows) == sum(r["new_files"] for r in rows) == len(counts)
    for name in ("read", "loaded", "quarantined", "ignored", "held"):
        assert sum(r[name] for r in rows) == sum(c[f"n_{name}"] for c in counts), name
    reasons = _table(artifacts[KEYS["ingest_quarantine"]])
    n_quarantined = sum(c["n_quarantined"] for c in counts)
    assert n_quarantined > 0  # the generator's hostile lines
    assert sum(r["n_rows"] for r in reasons) == n_quarantined
    with warehouse.connect(db, read_only=True) as con:
        stored = con.execute("select count(distinct reason) from raw_quarantine").fetchone()[0]  # type: ignore[index]
    assert len({r["reason"] for r in reasons}) == stored

    again, artifacts = _run(ingest_telemetry, landing_dir=landing, db_path=db)  # nothing new
    assert all(c["skipped"] for c in again)
    rows = _table(artifacts[KEYS["ingest_counts"]])
    assert sum(r["files"] for r in rows) == len(again)
    assert sum(r["new_files"] + r["read"] + r["loaded"] for r in rows) == 0
    assert _table(artifacts[KEYS["ingest_quarantine"]]) == []


@pytest.mark.prefect
@pytest.mark.slow
def test_ingest_files_flow_publishes_under_its_own_keys(
    prefect_harness: None, tmp_path: Path
) -> None:
    from pipelines.flows.ingest_telemetry import ingest_paths_flow

    landing = tmp_path / "landing"
    synthesize(
        landing, SynthConfig(nodes=4, days=7, seed=2, start=datetime(2026, 5, 4, tzinfo=UTC))
    )
    counts, artifacts = _run(ingest_paths_flow, paths=[landing], db_path=tmp_path / "r.duckdb")
    assert set(artifacts) == {KEYS["ingest_files_counts"], KEYS["ingest_files_quarantine"]}
    rows = _table(artifacts[KEYS["ingest_files_counts"]])
    assert sum(r["loaded"] for r in rows) == sum(c["n_loaded"] for c in counts) > 0
    reasons = _table(artifacts[KEYS["ingest_files_quarantine"]])
    assert sum(r["n_rows"] for r in reasons) == sum(c["n_quarantined"] for c in counts) > 0


@pytest.mark.prefect
@pytest.mark.slow
def test_fit_flow_publishes_one_row_per_class_of_its_run(
    prefect_harness: None, small_warehouse: Path
) -> None:
    from pipelines.flows.fit_reliability import fit_reliability

    outcome, artifacts = _run(fit_reliability, db_path=small_warehouse)
    assert set(artifacts) == {KEYS["fit_mtbf"]}
    rows = _table(artifacts[KEYS["fit_mtbf"]])
    # the rows of rpt_class_rates, the one home of the run's headline
    with warehouse.connect(small_warehouse, read_only=True) as con:
        stored = con.execute(
            "select component_class, n_failures, headline_method, headline_mtbf_h, "
            "headline_mtbf_lo_h, headline_mtbf_hi_h, rate_per_1000_node_days "
            "from rpt_class_rates where run_id = $id",
            {"id": outcome["run_id"]},
        ).fetchall()
        families = dict(
            con.execute(
                "select component_class, family from fit_results where run_id = $id and chosen",
                {"id": outcome["run_id"]},
            ).fetchall()
        )
    assert len(rows) == len(stored) == outcome["results"]["component_class"].n_unique()
    assert sorted(
        (
            r["component_class"],
            r["n_failures"],
            r["method"],
            r["mtbf_h"],
            r["mtbf_lo_h"],
            r["mtbf_hi_h"],
            r["rate_per_1000_node_days"],
        )
        for r in rows
    ) == sorted(stored)
    assert {r["component_class"]: r["family"] for r in rows} == families
    for r in rows:
        assert {
            "unit_years",
            "afr_observed_pct",
            "afr_observed_lo_pct",
            "afr_observed_hi_pct",
            "rate_per_1e6_gpu_h",
            "trend",
            "lifetime_mtbf_h",
            "lifetime_extrapolated",
        } <= set(r)
        if r["n_failures"]:
            assert r["mtbf_lo_h"] <= r["mtbf_h"] <= r["mtbf_hi_h"]
        else:  # no failure: only a lower bound (chi-square), the rest null, as stored
            assert r["method"] == "chi_square_bound"
            assert r["mtbf_lo_h"] > 0
            assert r["mtbf_h"] is None
            assert r["mtbf_hi_h"] is None


@pytest.mark.prefect
@pytest.mark.slow
def test_fit_flow_on_replacement_lives_publishes_replacements(
    prefect_harness: None, small_warehouse: Path
) -> None:
    from pipelines.flows.fit_reliability import fit_reliability

    outcome, artifacts = _run(
        fit_reliability, db_path=small_warehouse, lives="fct_replacement_lives"
    )
    assert set(artifacts) == {KEYS["fit_replacement"]}
    rows = _table(artifacts[KEYS["fit_replacement"]])
    assert len(rows) == outcome["rates"].height
    assert sum(r["n_replacements"] for r in rows) == outcome["rates"]["n_failures"].sum()
    for r in rows:
        assert not [k for k in r if "failure" in k or "mtbf" in k], r
        assert {"mtbr_h", "replacement_afr_observed_pct"} <= set(r)


@pytest.mark.prefect
@pytest.mark.slow
def test_fit_flow_on_repairs_publishes_mttr(prefect_harness: None, small_warehouse: Path) -> None:
    from pipelines.flows.fit_reliability import fit_reliability

    outcome, artifacts = _run(fit_reliability, db_path=small_warehouse, lives="stg_repairs")
    assert set(artifacts) == {KEYS["fit_mttr"]}
    rows = _table(artifacts[KEYS["fit_mttr"]])
    chosen = outcome["results"].filter("chosen")
    assert len(rows) == chosen.height
    assert sum(r["n_repaired"] for r in rows) == chosen["n_failures"].sum()
    assert all("mttr_h" in r and "afr_observed_pct" not in r for r in rows)


@pytest.mark.prefect
@pytest.mark.slow
def test_what_if_flow_publishes_its_ranking_and_a_link_to_its_table(
    prefect_harness: None, small_warehouse: Path, tmp_path: Path
) -> None:
    from pipelines.flows.what_if import what_if

    result, artifacts = _run(
        what_if,
        sweep_file=SWEEPS / "scale_checkpoint_domain.yaml",
        out_dir=tmp_path,
        db_path=small_warehouse,
    )
    assert set(artifacts) == {KEYS["whatif_ranking"], KEYS["whatif_table"]}
    rows = _table(artifacts[KEYS["whatif_ranking"]])
    assert [r["knob"] for r in rows] == [g["knob"] for g in result["gains"]]
    link = artifacts[KEYS["whatif_table"]]
    assert link.type == "markdown"  # Prefect stores a link artifact as markdown: [text](uri)
    assert f"({file_uri(result['table'])})" in link.data
    assert link.data.count("file://") == 1


@pytest.mark.prefect
@pytest.mark.slow
def test_backtest_flow_publishes_the_rows_of_its_run(
    prefect_harness: None, small_warehouse: Path
) -> None:
    from pipelines.flows.backtest_goodput import backtest_goodput

    run_id, artifacts = _run(backtest_goodput, db_path=small_warehouse, min_gpus=1)
    rows = _table(artifacts[KEYS["backtest"]])
    with warehouse.connect(small_warehouse, read_only=True) as con:
        stored = con.execute(
            "select bucket, period, n_jobs from backtest_buckets where run_id = $id "
            "order by bucket, period",
            {"id": run_id},
        ).fetchall()
    assert sorted((r["bucket"], r["period"], r["n_jobs"]) for r in rows) == sorted(stored)
    assert set(rows[0]) >= {"oe_ratio", "oe_lo", "oe_hi", "goodput_predicted"}


def test_weekly_report_flow_publishes_a_link_and_its_headline(
    prefect_harness: None, small_warehouse: Path, tmp_path: Path
) -> None:
    from pipelines.flows.weekly_report import weekly_report

    path, artifacts = _run(weekly_report, db_path=small_warehouse, reports_dir=tmp_path)
    # the back-test stage it runs first publishes its table too
    assert set(artifacts) == {KEYS["weekly_report"], KEYS["weekly_headline"], KEYS["backtest"]}
    link = artifacts[KEYS["weekly_report"]]
    assert link.type == "markdown"
    assert f"({Path(path).resolve().as_uri()})" in link.data
    headline = artifacts[KEYS["weekly_headline"]]
    assert headline.type == "markdown"
    assert headline.data.strip()
    assert Path(path).stem in headline.description
