"""Failure prediction on hand-built GPU-hour frames with known precursors (issue #8)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from models import (
    FEATURES,
    FailurePredictor,
    LeakageError,
    assert_same_features,
    check_leakage,
    choose_threshold,
    evaluate,
    never_predict,
    operating_curve,
    pr_auc_null,
    sbe_rule,
    time_split,
)

T0 = datetime(2026, 6, 1, tzinfo=UTC)
H = 24.0


def gpu_hours(
    rng: np.random.Generator,
    *,
    n_gpus: int = 64,
    days: int = 40,
    n_failures: int = 160,
    share: float = 0.6,
    lead_h: tuple[int, int] = (6, 16),
    n_background: int = 150,
) -> tuple[pl.DataFrame, set[str]]:
    """GPU-hours of ``n_gpus`` GPUs with ``n_failures`` failures at random hours; a ``share`` of
    them announced by a single-bit ECC ramp over ``lead_h`` hours; background bursts (1-3 h, at
    most a quarter of a precursor's peak) on random GPUs. Returns the frame and the ids of the
    failures with a precursor."""
    n_hours = days * 24
    ts = pl.datetime_range(
        T0 + timedelta(hours=1), T0 + timedelta(hours=n_hours), "1h", time_zone="UTC", eager=True
    )
    sbe = rng.poisson(0.05, (n_gpus, n_hours)).astype(float)
    fail_gpu = rng.integers(0, n_gpus, n_failures)
    fail_hour = rng.integers(30, n_hours, n_failures) + rng.random(n_failures)
    warned = rng.random(n_failures) < share
    for g, f, w in zip(fail_gpu, fail_hour, warned, strict=True):
        if w:
            lead = int(rng.integers(*lead_h))
            peak = rng.uniform(40, 200)
            for k in range(1, lead + 1):
                h = int(f) - lead + k  # prediction time h + 1 <= f
                if 0 <= h < n_hours and h + 1 <= f:
                    sbe[g, h] += rng.poisson(peak * (k / lead) ** 2)
    for g, h, n in zip(
        rng.integers(0, n_gpus, n_background),
        rng.integers(0, n_hours, n_background),
        rng.integers(1, 4, n_background),
        strict=True,
    ):
        sbe[g, h : h + n] += rng.poisson(rng.uniform(1, 10), min(n, n_hours - h))
    sbe_6h = np.stack([np.convolve(row, np.ones(6))[:n_hours] for row in sbe])
    ids = np.array([f"f{i}" for i in range(n_failures)])
    rows = []
    for g in range(n_gpus):
        mine = np.flatnonzero(fail_gpu == g)
        order = mine[np.argsort(fail_hour[mine])]
        times = fail_hour[order]
        t = np.arange(n_hours) + 1.0  # prediction time in hours since T0
        k = np.searchsorted(times, t, side="left")
        if times.size:
            nearest = np.minimum(k, times.size - 1)
            hours_to = np.where(k < times.size, times[nearest] - t, np.nan)
            nxt = np.where(k < times.size, ids[order][nearest], None)
        else:
            hours_to, nxt = np.full(n_hours, np.nan), np.full(n_hours, None)
        rows.append(
            pl.DataFrame(
                {
                    "host": [f"n{g // 8:03d}"] * n_hours,
                    "gpu_index": [g % 8] * n_hours,
                    "uuid": [f"GPU-{g}"] * n_hours,
                    "prediction_ts": ts,
                    "sbe_1h": sbe[g],
                    "sbe_6h": sbe_6h[g],
                    "hours_to_failure": hours_to,
                    "next_failure_id": pl.Series(nxt, dtype=pl.String),
                },
                nan_to_null=True,
            )
        )
    frame = pl.concat(rows).with_columns(
        next_failure_level=pl.when(pl.col("next_failure_id").is_not_null()).then(pl.lit("gpu")),
        next_failure_class=pl.when(pl.col("next_failure_id").is_not_null()).then(
            pl.lit("gpu_memory")
        ),
        next_failure_ts=pl.col("prediction_ts")
        + pl.duration(seconds=(pl.col("hours_to_failure") * 3600).round().cast(pl.Int64)),
        **{f: pl.lit(0.0) for f in FEATURES if f not in ("sbe_1h", "sbe_6h")},
    )
    return frame, set(ids[warned].tolist())


@pytest.fixture(scope="module")
def fleet_hours() -> tuple[pl.DataFrame, set[str]]:
    return gpu_hours(np.random.default_rng(0))


def _events_in(frame: pl.DataFrame) -> list[str]:
    return (
        frame.filter(pl.col("hours_to_failure") < H)
        .get_column("next_failure_id")
        .unique()
        .to_list()
    )


def test_time_split_is_ordered_and_purges_label_windows(
    fleet_hours: tuple[pl.DataFrame, set[str]],
) -> None:
    frame, _ = fleet_hours
    split = time_split(frame, horizon_h=H)
    b = split.bounds
    assert b["train_start"] < b["train_end"] == b["calibration_start"]
    assert b["calibration_start"] < b["calibration_end"] == b["test_start"] < b["test_end"]
    horizon = timedelta(hours=H)
    assert split.train.get_column("prediction_ts").max() + horizon <= b["train_end"]
    assert split.calibration.get_column("prediction_ts").min() >= b["calibration_start"]
    assert split.calibration.get_column("prediction_ts").max() + horizon <= b["test_start"]
    assert split.test.get_column("prediction_ts").min() >= b["test_start"]
    assert (
        split.test.get_column("prediction_ts").max() + horizon
        <= frame.get_column("prediction_ts").max()
    )
    with pytest.raises(ValueError, match="several horizons"):
        time_split(frame.head(50), horizon_h=H)


def test_operating_curve_counts_precision_recall_lead_and_alarms() -> None:
    # one GPU, 10 hours; a failure at hour 8.5 (rows at 1..8 precede it), horizon 4 h:
    # rows 5..8 are positive. Scores alarm at rows 2, 3 (a false run) and 6, 7, 8 (true run).
    ts = [T0 + timedelta(hours=h) for h in range(1, 11)]
    hours_to = [8.5 - h if h <= 8 else None for h in range(1, 11)]
    frame = pl.DataFrame(
        {
            "host": ["a"] * 10,
            "gpu_index": [0] * 10,
            "uuid": ["u"] * 10,
            "prediction_ts": ts,
            "hours_to_failure": hours_to,
            "next_failure_id": ["f1" if h <= 8 else None for h in range(1, 11)],
        }
    )
    scores = np.array([0, 0.9, 0.9, 0, 0, 0.9, 0.95, 0.9, 0, 0])
    curve = operating_curve(frame, scores, horizon_h=4.0, thresholds=[0.5, 0.92])
    low, high = curve.row(0, named=True), curve.row(1, named=True)
    assert low["precision"] == pytest.approx(3 / 5)
    assert low["recall"] == 1.0
    assert low["lead_time_h"] == pytest.approx(2.5)  # first true alarm at hour 6
    assert low["n_alarms"] == 2  # runs 2-3 and 6-8
    assert low["alarms_per_day"] == pytest.approx(2 / (10 / 24))
    assert low["row_recall"] == pytest.approx(3 / 4)
    assert low["alarm_precision"] == pytest.approx(1 / 2)  # the run 6-8 precedes the failure
    assert (high["precision"], high["recall"], high["lead_time_h"]) == (1.0, 1.0, 1.5)
    metrics = evaluate(frame, scores, horizon_h=4.0, threshold=0.5)
    assert metrics.n_failures == 1
    assert metrics.base_rate == pytest.approx(0.4)


def test_classifier_recall_at_high_precision_matches_precursor_share(
    fleet_hours: tuple[pl.DataFrame, set[str]],
) -> None:
    frame, warned = fleet_hours
    split = time_split(frame, horizon_h=H)
    model = FailurePredictor(horizon_h=H, features=("sbe_1h", "sbe_6h")).fit(
        split.train, split.calibration
    )
    prob = model.predict_proba(split.test)
    assert np.all((prob >= 0) & (prob <= 1))
    curve = operating_curve(split.test, prob, horizon_h=H)
    recall = curve.filter(pl.col("precision") >= 0.9).get_column("recall").max()
    events = _events_in(split.test)
    share = sum(e in warned for e in events) / len(events)
    tolerance = 3 * math.sqrt(share * (1 - share) / len(events))
    assert recall == pytest.approx(share, abs=tolerance)
    at_threshold = evaluate(split.test, prob, horizon_h=H, threshold=model.threshold_)
    assert at_threshold.precision >= 0.8
    assert at_threshold.recall == pytest.approx(share, abs=tolerance)
    assert 0 < at_threshold.lead_time_h < 16
    assert at_threshold.pr_auc > 2 * at_threshold.base_rate
    # baselines: never predict ranks nothing; the SBE rule's N comes from the training period
    never = never_predict(split.test, horizon_h=H)
    assert (never.recall, never.pr_auc) == (0.0, pytest.approx(never.base_rate))
    rule = sbe_rule(split.train, split.test, horizon_h=H)
    assert rule.n_sbe_per_h is not None
    assert rule.n_sbe_per_h >= 1


def test_shifted_label_in_a_feature_raises_leakage_error(
    fleet_hours: tuple[pl.DataFrame, set[str]],
) -> None:
    frame, _ = fleet_hours
    # "a failure within 26 h": the label seen two hours further, computed from the future
    leaky = frame.with_columns(
        sbe_24h=(pl.col("hours_to_failure") < H + 2).fill_null(False).cast(pl.Float64)
    )
    split = time_split(leaky, horizon_h=H)
    with pytest.raises(LeakageError, match="sbe_24h"):
        FailurePredictor(horizon_h=H).fit(split.train, split.calibration)
    with pytest.raises(LeakageError, match="label columns"):
        check_leakage(frame, horizon_h=H, features=("sbe_6h", "hours_to_failure"))
    aucs = check_leakage(frame, horizon_h=H, features=("sbe_6h",))
    assert 0.5 < aucs["sbe_6h"] < 0.995


def test_assert_same_features_names_the_feature_that_read_the_future() -> None:
    stored = pl.DataFrame(
        {
            "host": ["a", "a"],
            "gpu_index": [0, 1],
            "uuid": ["u0", "u1"],
            "prediction_ts": [T0, T0],
            "sbe_6h": [3.0, None],
            "sbe_24h": [5.0, 1.0],
        }
    )
    same = assert_same_features(stored, stored, features=("sbe_6h", "sbe_24h"))
    assert same == 2
    future = stored.with_columns(pl.Series("sbe_24h", [5.0, 4.0]))
    with pytest.raises(LeakageError, match=r"sbe_24h': 1"):
        assert_same_features(stored, future, features=("sbe_6h", "sbe_24h"))
    with pytest.raises(LeakageError, match="depends on later data"):
        assert_same_features(stored, stored.head(1), features=("sbe_6h",))


def test_threshold_is_never_when_the_target_precision_is_out_of_reach() -> None:
    curve = pl.DataFrame({"threshold": [0.1, 0.5], "precision": [0.2, 0.6], "recall": [0.9, 0.3]})
    assert choose_threshold(curve, target_precision=0.9) == math.inf
    assert choose_threshold(curve, target_precision=0.5) == 0.5


def test_pr_auc_of_uninformative_scores_is_the_base_rate(
    fleet_hours: tuple[pl.DataFrame, set[str]],
) -> None:
    frame, _ = fleet_hours
    rng = np.random.default_rng(1)
    scores = rng.random(frame.height)
    metrics = evaluate(frame, scores, horizon_h=H, threshold=0.5)
    null = pr_auc_null(frame, scores, horizon_h=H, n_draws=10)
    assert null["mean"] == pytest.approx(metrics.base_rate, rel=0.05)
    assert abs(metrics.pr_auc - null["mean"]) < 4 * null["sd"] + 1e-3
