"""Failure prediction end to end (issue #8): synthetic fleets with precursors planted before a
known share of the failures (and none), ingested, trained on the earlier weeks, tested on the
later ones; the as-of guard; ``relia predict train`` and ``score``."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from models import LeakageError, pr_auc_null
from pipelines import ingest, warehouse
from pipelines.analysis import predict
from pipelines.cli import app
from synth import SynthConfig, default_classes, synthesize

pytestmark = pytest.mark.slow


def _config(*, nodes: int, days: int, share: float, seed: int) -> SynthConfig:
    # memoryless lifetimes (shape 1), so nothing but the planted precursors announces a failure;
    # GPU failures 25 times, node failures 8 times as frequent as the default fleet's, quick
    # repairs so that nodes are mostly up and scraped
    classes = {
        name: replace(
            spec,
            shape=1.0,
            scale_h=spec.scale_h / (25 if spec.level == "gpu" else 8),
            repair_median_h=6.0,
        )
        for name, spec in default_classes().items()
    }
    # every failure replaced (a new GPU, a new DCGM series), as the generator did before fixes
    # existed: with the default fixes (most GPUs reset, keeping their UUID) recall at 0.7
    # precision measured 0.18-0.23 with a 0.2 h lead time on this fleet, against a precursor
    # share of 0.44; the predictor's handling of reset GPUs is a question of its own (issue 25)
    return SynthConfig(
        nodes=nodes,
        days=days,
        seed=seed,
        start=datetime(2026, 3, 2, tzinfo=UTC),
        classes=classes,
        dcgm_interval_s=3600,
        precursor_share=share,
    ).with_fixes({"all": {"replace": 1.0}})


def _fleet(root: Path, config: SynthConfig) -> tuple[Path, dict]:
    truth = synthesize(root / "landing", config)
    db = root / "relia.duckdb"
    ingest.ingest(db, ingest.discover([root / "landing"]))
    return db, truth


@pytest.fixture(scope="module")
def warned_fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """16 nodes (128 GPUs), 40 days, precursors before 60 % of the GPU failures."""
    return _fleet(tmp_path_factory.mktemp("warned"), _config(nodes=16, days=40, share=0.6, seed=11))


@pytest.fixture(scope="module")
def silent_fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """8 nodes, 30 days, background warnings but no precursor at all."""
    return _fleet(tmp_path_factory.mktemp("silent"), _config(nodes=8, days=30, share=0.0, seed=5))


def _truth_precursors(truth: dict) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "host": f["node"],
                "slot": f["slot"],
                "truth_ts": datetime.fromisoformat(f["failed_ts"].replace("Z", "+00:00")),
                "precursor": f["precursor"],
            }
            for f in truth["failures"]
        ]
    )


def _with_truth(events: pl.DataFrame, truth: dict) -> pl.DataFrame:
    """Match each test failure (Xid time; kernel clocks may be skewed by seconds) to the
    generator's failure on the same slot."""
    slot = (
        pl.when(pl.col("level") == "gpu")
        .then(pl.format("gpu{}", pl.col("gpu_index")))
        .otherwise(pl.col("component_class"))
    )
    matched = (
        events.with_columns(slot=slot)
        .join(_truth_precursors(truth), on=["host", "slot"], how="left")
        .filter((pl.col("truth_ts") - pl.col("failed_ts")).abs() < timedelta(minutes=2))
    )
    assert matched.height == events.height, "every failure the view found is in the truth"
    return matched


def test_recall_at_high_precision_is_the_share_of_failures_with_precursors(
    warned_fleet: tuple[Path, dict],
) -> None:
    db, truth = warned_fleet
    assert truth["precursors"]["n_planted"] > 30
    with warehouse.connect(db, read_only=True) as con:
        result = predict.train_model(con, horizon_h=24, as_of_checks=2, store=False)
    assert result.as_of_rows > 0  # features recomputed from truncated telemetry agree
    events = _with_truth(result.events, truth)
    n = events.height
    share = events.get_column("precursor").mean()
    tolerance = 3 * math.sqrt(share * (1 - share) / n)  # binomial standard error, 3 sigma
    model, rule, never = (result.metrics[k] for k in ("model", "sbe_rule", "never_predict"))
    assert n >= 40
    assert model["recall_at_target_precision"] == pytest.approx(share, abs=tolerance)
    # the operating threshold was chosen on the 6-day calibration slice, before the test period
    assert model["precision"] >= 0.7
    assert 0 < model["recall"] <= share + tolerance
    # only failures with a precursor are caught, each hours ahead
    caught = events.filter(pl.col("caught"))
    assert caught.get_column("precursor").mean() >= 0.9
    assert 1 < model["lead_time_h"] < 20
    # better than both baselines
    assert model["recall_at_target_precision"] > rule["recall"] + tolerance
    assert model["pr_auc"] > 2 * never["pr_auc"]
    assert never["pr_auc"] == pytest.approx(never["base_rate"])
    assert result.curve.columns[:5] == [
        "threshold",
        "precision",
        "recall",
        "lead_time_h",
        "alarms_per_day",
    ]


def test_without_precursors_the_classifier_does_no_better_than_the_baselines(
    silent_fleet: tuple[Path, dict],
) -> None:
    db, truth = silent_fleet
    assert truth["precursors"]["n_planted"] == 0
    with warehouse.connect(db, read_only=True) as con:
        result = predict.train_model(con, horizon_h=24, as_of_checks=0, store=False)
        test = predict.read_features(
            con, start=result.bounds["test_start"], end=result.bounds["test_end"]
        )
    prob = result.model.predict_proba(test)
    null = pr_auc_null(test, prob, horizon_h=24, n_draws=30)
    model, rule = result.metrics["model"], result.metrics["sbe_rule"]
    n = result.metrics["sizes"]["n_failures_test"]
    assert n >= 10
    # PR-AUC within the noise of a score that knows nothing
    assert model["pr_auc"] <= null["mean"] + 3 * null["sd"]
    # no operating point reaches the target precision beyond a chance failure or two
    assert model["recall_at_target_precision"] <= 2 / n
    assert model["recall"] <= rule["recall"] + 2 / n


def test_as_of_guard_recomputes_features_and_catches_a_window_into_the_future(
    warned_fleet: tuple[Path, dict],
) -> None:
    db, _ = warned_fleet
    with warehouse.connect(db, read_only=True) as con:
        assert predict.check_as_of(con, n_times=2) > 0
        honest = predict._feature_sql()
        leaky = honest.replace(
            "range between interval 5 hours preceding and current row",
            "range between interval 5 hours preceding and interval 6 hours following",
        )
        assert leaky != honest
        with pytest.raises(LeakageError, match="after the prediction time are removed"):
            predict.check_as_of(con, n_times=2, feature_sql=leaky)


def test_cli_trains_stores_and_scores(silent_fleet: tuple[Path, dict], tmp_path: Path) -> None:
    db = tmp_path / "relia.duckdb"
    shutil.copy(silent_fleet[0], db)
    runner = CliRunner()
    trained = runner.invoke(
        app, ["predict", "train", "--db", str(db), "--as-of-checks", "1", "--json"]
    )
    assert trained.exit_code == 0, trained.output
    payload = json.loads(trained.stdout)
    assert set(payload["metrics"]) >= {"model", "sbe_rule", "never_predict", "sizes"}
    assert payload["as_of_rows_checked"] > 0
    scored = runner.invoke(app, ["predict", "score", "--db", str(db), "--json", "--top", "5"])
    assert scored.exit_code == 0, scored.output
    scores = json.loads(scored.stdout)
    assert scores["model_id"] == payload["model_id"]
    assert scores["n_scored"] > 0
    assert len(scores["scores"]) == 5
    table = runner.invoke(
        app, ["predict", "train", "--db", str(db), "--as-of-checks", "0"], env={"COLUMNS": "200"}
    )
    assert table.exit_code == 0, table.output
    assert "never predict" in table.output
    assert "SBE rule" in table.output
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from predict_models").fetchone() == (2,)
        stored = con.execute(
            "select count(*) from predict_scores where model_id = ?", [payload["model_id"]]
        ).fetchone()
    assert stored == (scores["n_scored"],)
    with warehouse.connect(db, read_only=True) as con:
        at_risk = predict.gpus_at_risk(con, model_id=payload["model_id"], min_prob=0.0, limit=3)
    assert at_risk.height == 3


def test_trained_model_drives_the_report_and_the_threshold_sweep(
    warned_fleet: tuple[Path, dict], tmp_path: Path
) -> None:
    """A stored model feeds the weekly report's "GPUs at risk" section (scored by the flow's
    task) and ``relia whatif --drain-model latest`` (goodput at each threshold of its curve)."""
    from pipelines.flows.weekly_report import score_fleet
    from pipelines.report import build_report

    db = tmp_path / "relia.duckdb"
    shutil.copy(warned_fleet[0], db)
    with warehouse.connect(db) as con:
        trained = predict.train_model(con, as_of_checks=0)
    n_at_risk = score_fleet.fn(db, 30.0)
    assert n_at_risk is not None
    with warehouse.connect(db, read_only=True) as con:
        stored = con.execute(
            "select count(*), count(*) filter (where at_risk) from predict_scores "
            "where model_id = $id",
            {"id": trained.model_id},
        ).fetchone()
    assert stored is not None
    assert stored[0] > 0
    assert stored[1] == n_at_risk
    report = build_report(db, week=None, reports_dir=tmp_path / "reports")
    html = report.path.read_text()
    section = html[html.index('<section id="prediction">') : html.index('<section id="goodput">')]
    assert trained.model_id in section
    assert "never predict" in section
    assert "drain after N SBEs" in section
    assert section.count("<tr>") - 1 - 3 == min(n_at_risk, 25)  # header + 3 metric rows

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "target_gpus: 16384\n"
        "base: {gpus_per_node: 8, node_failures_per_1000_node_days: 6.5, job_days: 30,\n"
        "       checkpoint_s: 300, drain_migration_s: 120}\n"
        "grid: {n_gpus: [1024, 16384], checkpoint_s: [60, 300]}\n"
    )
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "whatif",
            str(sweep),
            "--out",
            str(tmp_path / "whatif"),
            "--db",
            str(db),
            "--drain-model",
            "latest",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    drain = payload["drain"]
    assert drain["model_id"] == trained.model_id
    table = pl.read_parquet(drain["table"])
    # a drain is one alarm: the knob's precision is the curve's alarm precision
    curve = trained.curve.filter(
        pl.col("recall").is_not_null() & ((pl.col("recall") == 0) | (pl.col("alarm_precision") > 0))
    )
    assert table.height == curve.height > 0
    assert table["precision"].to_list() == curve["alarm_precision"].to_list()
    # each threshold's goodput is the model's own recall and precision put into the projection
    best = table.sort("goodput", descending=True).row(0, named=True)
    assert drain["best"]["goodput"] == pytest.approx(best["goodput"])
    assert best["goodput_gain"] > 0  # a precise predictor of half the failures buys goodput
    assert Path(drain["plot"]).is_file()
