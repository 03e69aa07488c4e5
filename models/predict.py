r"""GPU failure prediction: whether a GPU (or its node) fails within ``horizon_h`` hours.

Rows are GPU-hours (``fct_gpu_hour_features``): one per GPU and hour of telemetry, with features
computed as of the end of that hour (``prediction_ts``, data strictly before it) and the time to
the next failure of the GPU or its node (``hours_to_failure``, the label; never a feature). A row
is positive when ``hours_to_failure < horizon_h``.

:class:`FailurePredictor` is a gradient-boosted tree classifier
(:class:`~sklearn.ensemble.HistGradientBoostingClassifier`) whose probabilities are calibrated on
a later, time-ordered slice (sigmoid, never shuffled), with an operating threshold chosen on that
slice. :func:`time_split` cuts a frame into train, calibration and test periods in time order and
purges rows whose label window reaches into the next period. :func:`operating_curve` and
:func:`evaluate` measure a score on a period, next to the baselines :func:`never_predict` and
:func:`sbe_rule` ("drain after N single-bit ECC errors in an hour").

Metrics (each row may carry a ``sample_weight``, the inverse of its sampling rate):

- an *alarm* is a GPU-hour whose score reaches the threshold;
- ``precision``: weighted share of alarms followed by a failure within ``horizon_h`` (row level,
  the precision of the precision-recall curve);
- ``recall``: share of the period's failures with at least one alarm in the ``horizon_h`` hours
  before them (event level; a node failure counts once, whichever of its GPUs alarmed);
- ``row_recall``: weighted share of positive GPU-hours that alarm;
- ``pr_auc``: average precision of the score over GPU-hours (the base rate for a score that
  knows nothing);
- ``lead_time_h``: median over caught failures of the hours from the first alarm (within
  ``horizon_h``) to the failure;
- ``alarms_per_day``: new alarms (the first hour of a run of consecutive alarming hours on one
  GPU: a drain request) per day; null when the frame is sampled (weights other than 1);
- ``alarm_precision``: share of those new alarms followed by a failure within ``horizon_h``
  (the precision of drain requests rather than of GPU-hours); null when sampled.

Features, labels, the time split and the leakage guards (:func:`check_leakage`,
:func:`assert_same_features`) are in :mod:`models.predict_features`.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import average_precision_score
from sklearn.utils.validation import check_is_fitted

from models.predict_features import (
    FEATURES,
    MONOTONIC,
    check_leakage,
    labels,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray


__all__ = [
    "FailurePredictor",
    "choose_threshold",
    "evaluate",
    "never_predict",
    "operating_curve",
    "pr_auc_null",
    "sbe_rule",
]

_EVIDENCE = (
    "sbe_6h",
    "sbe_24h",
    "dbe_24h",
    "retired_pages_24h",
    "row_remaps_24h",
    "nvlink_crc_6h",
    "pcie_replays_6h",
    "temp_over_peers_6h_c",
    "power_over_peers_6h_w",
    "warning_xids_24h",
    "xid_gauge_changes_24h",
)


# --------------------------------------------------------------------------------------------
# metrics


@dataclass(frozen=True)
class _Prepared:
    """A period's rows in the shapes the metrics need."""

    scores: NDArray[np.float64]
    y: NDArray[np.bool_]
    w: NDArray[np.float64]
    prev: NDArray[np.float64]  # score of the previous hour of the same series, else -inf
    event_codes: NDArray[np.int64]  # per positive row, index of its failure
    pos_scores: NDArray[np.float64]
    pos_hours: NDArray[np.float64]  # hours to failure of positive rows
    n_events: int
    days: float
    complete: bool


def _prepare(frame: pl.DataFrame, scores: NDArray[np.float64], horizon_h: float) -> _Prepared:
    if len(scores) != frame.height:
        msg = f"{len(scores)} scores for {frame.height} rows; score every row of the frame."
        raise ValueError(msg)
    work = (
        frame.select(
            "host",
            "gpu_index",
            "uuid",
            "prediction_ts",
            "hours_to_failure",
            "next_failure_id",
            (pl.col("sample_weight") if "sample_weight" in frame.columns else pl.lit(1.0))
            .cast(pl.Float64)
            .alias("w"),
        )
        .with_columns(
            score=pl.Series(np.asarray(scores, dtype=np.float64)),
            y=(pl.col("hours_to_failure") < horizon_h).fill_null(False),
        )
        .with_row_index("row")
    )
    ordered = work.sort("host", "gpu_index", "uuid", "prediction_ts")
    series = ["host", "gpu_index", "uuid"]
    contiguous = (pl.col("prediction_ts").diff().over(series) == pl.duration(hours=1)).fill_null(
        False
    )
    prev = (
        ordered.select(
            "row",
            pl.when(contiguous)
            .then(pl.col("score").shift().over(series))
            .otherwise(-np.inf)
            .alias("prev"),
        )
        .sort("row")
        .get_column("prev")
        .to_numpy()
    )
    pos = work.filter(pl.col("y")).sort("next_failure_id")
    _, event_codes = np.unique(pos.get_column("next_failure_id").to_numpy(), return_inverse=True)
    ts = work.get_column("prediction_ts")
    span_h = (ts.max() - ts.min()).total_seconds() / 3600.0 + 1.0 if work.height else 0.0  # type: ignore[operator, union-attr]
    w = work.get_column("w").to_numpy()
    return _Prepared(
        scores=work.get_column("score").to_numpy(),
        y=work.get_column("y").to_numpy(),
        w=w,
        prev=prev,
        event_codes=event_codes.astype(np.int64),
        pos_scores=pos.get_column("score").to_numpy(),
        pos_hours=pos.get_column("hours_to_failure").to_numpy(),
        n_events=int(event_codes.max() + 1) if event_codes.size else 0,
        days=span_h / 24.0,
        complete=bool(np.all(w == 1.0)),
    )


def _curve(p: _Prepared, thresholds: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Metrics at each threshold (vectorised over thresholds)."""
    order = np.argsort(-p.scores, kind="stable")
    s_sorted = p.scores[order]
    cw = np.concatenate([[0.0], np.cumsum(p.w[order])])
    cwp = np.concatenate([[0.0], np.cumsum((p.w * p.y)[order])])
    # number of rows with score >= t: rows before the first score < t in descending order
    k = np.searchsorted(-s_sorted, -thresholds, side="right")
    w_alarm, w_tp = cw[k], cwp[k]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(w_alarm > 0, w_tp / w_alarm, np.nan)
    w_pos = cwp[-1]
    row_recall = w_tp / w_pos if w_pos > 0 else np.full(thresholds.size, np.nan)
    n = len(thresholds)
    recall = np.full(n, np.nan)
    lead = np.full(n, np.nan)
    caught = np.zeros(n)
    if p.n_events:
        # positive rows are sorted by failure: reduce each failure's block
        starts = np.flatnonzero(np.diff(p.event_codes, prepend=-1))
        for lo in range(0, n, 256):
            t = thresholds[lo : lo + 256, None]
            hours = np.where(p.pos_scores[None, :] >= t, p.pos_hours[None, :], -np.inf)
            first = np.maximum.reduceat(hours, starts, axis=1)  # earliest alarm: most hours
            got = np.isfinite(first)
            caught[lo : lo + 256] = got.sum(axis=1)
            recall[lo : lo + 256] = got.mean(axis=1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # no failure caught: NaN
                lead[lo : lo + 256] = np.nanmedian(np.where(got, first, np.nan), axis=1)
    if p.complete:
        n_alarms = _onsets(p.scores, p.prev, thresholds)
        true_alarms = _onsets(p.scores[p.y], p.prev[p.y], thresholds)
        per_day = n_alarms / p.days if p.days > 0 else np.full(n, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            alarm_precision = np.where(n_alarms > 0, true_alarms / n_alarms, np.nan)
    else:
        n_alarms = np.full(n, np.nan)
        per_day = np.full(n, np.nan)
        alarm_precision = np.full(n, np.nan)
    return {
        "threshold": thresholds,
        "precision": precision,
        "recall": recall,
        "lead_time_h": lead,
        "alarms_per_day": per_day,
        "row_recall": row_recall,
        "alarm_precision": alarm_precision,
        "n_caught": caught,
        "n_alarms": n_alarms,
    }


def _onsets(
    scores: NDArray[np.float64], prev: NDArray[np.float64], thresholds: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Rows that start a run of alarms at each threshold: score >= t > previous hour's."""
    starts = np.sort(scores)
    both = np.sort(np.minimum(scores, prev))
    at_or_above = starts.size - np.searchsorted(starts, thresholds, side="left")
    still_on = both.size - np.searchsorted(both, thresholds, side="left")
    return (at_or_above - still_on).astype(np.float64)


def operating_curve(
    frame: pl.DataFrame,
    scores: ArrayLike,
    *,
    horizon_h: float,
    thresholds: ArrayLike | None = None,
    max_thresholds: int = 400,
) -> pl.DataFrame:
    """Precision, recall, lead time and alarm rate of ``scores`` at each threshold.

    Parameters
    ----------
    frame
        The period's GPU-hours (``host, gpu_index, uuid, prediction_ts, hours_to_failure,
        next_failure_id``, optional ``sample_weight``).
    scores
        One score per row (a probability, or any number that grows with the risk).
    thresholds
        Default: the distinct scores of positive rows and the upper quantiles of all scores,
        at most ``max_thresholds``.

    Returns
    -------
    polars.DataFrame
        ``threshold, precision, recall, lead_time_h, alarms_per_day, row_recall,
        alarm_precision, n_caught, n_alarms`` by increasing threshold (definitions in the module
        docstring; precision is null where nothing alarms).
    """
    p = _prepare(frame, np.asarray(scores, dtype=np.float64), horizon_h)
    if thresholds is None:
        grid = _default_thresholds(p, max_thresholds)
    else:
        grid = np.unique(np.asarray(thresholds, dtype=np.float64))
    return (
        pl.DataFrame(_curve(p, grid))
        .with_columns(
            pl.col("n_caught").cast(pl.Int64), pl.col("n_alarms").cast(pl.Int64, strict=False)
        )
        .fill_nan(None)
    )


def _default_thresholds(p: _Prepared, max_thresholds: int) -> NDArray[np.float64]:
    half = max(max_thresholds // 2, 2)
    pos = np.unique(p.pos_scores)
    if pos.size > half:
        pos = np.quantile(pos, np.linspace(0, 1, half))
    upper: NDArray[np.float64] | list[float] = (
        np.quantile(p.scores, 1.0 - np.logspace(-5, 0, half)) if p.scores.size else []
    )
    return np.unique(np.concatenate([pos, upper]))


def choose_threshold(curve: pl.DataFrame, *, target_precision: float) -> float:
    """Choose the operating threshold: the best recall at a precision of at least a target.

    Among thresholds with precision at or above ``target_precision``, the one with the best
    recall wins (the highest such threshold on ties).

    When no threshold reaches that precision it returns ``inf``: never alarm. A drain policy
    that is wrong more often than the target allows costs more than it saves; lower
    ``target_precision`` to accept that.
    """
    ok = curve.filter(pl.col("precision") >= target_precision, pl.col("recall") > 0)
    if ok.height == 0:
        return math.inf
    best = ok.sort(["recall", "threshold"], descending=[True, True]).row(0, named=True)
    return float(best["threshold"])


def evaluate(
    frame: pl.DataFrame, scores: ArrayLike, *, horizon_h: float, threshold: float
) -> dict[str, Any]:
    """Metrics of ``scores`` at one threshold (definitions in the module docstring).

    Returns
    -------
    dict
        ``threshold, precision, recall, lead_time_h, alarms_per_day, row_recall,
        alarm_precision, n_caught, n_alarms, pr_auc, n_failures, n_rows, n_positive_rows,
        base_rate``.
    """
    s = np.asarray(scores, dtype=np.float64)
    p = _prepare(frame, s, horizon_h)
    at = _curve(p, np.array([threshold], dtype=np.float64))
    w_pos = float((p.w * p.y).sum())
    base_rate = w_pos / float(p.w.sum()) if p.w.size else math.nan
    if p.y.any() and not p.y.all():
        pr_auc = float(average_precision_score(p.y, p.scores, sample_weight=p.w))
    else:
        pr_auc = math.nan
    return {
        "threshold": float(threshold),
        **{k: _num(float(v[0])) for k, v in at.items() if k != "threshold"},
        "pr_auc": pr_auc,
        "n_failures": p.n_events,
        "n_rows": int(p.y.size),
        "n_positive_rows": int(p.y.sum()),
        "base_rate": base_rate,
    }


def _num(v: float) -> float | None:
    return None if v is None or math.isnan(v) else float(v)


def pr_auc_null(
    frame: pl.DataFrame,
    scores: ArrayLike,
    *,
    horizon_h: float,
    n_draws: int = 30,
    random_state: int = 0,
) -> dict[str, float]:
    """Return the PR-AUC of ``scores`` when they carry no information about the label.

    This is the noise of the base rate.

    Each draw rolls every GPU series' scores in time by a random offset, which keeps how
    scores and failures cluster in time and on GPUs but breaks their alignment; the PR-AUC of
    the rolled scores is a draw from what a score that knows nothing would reach.

    Returns
    -------
    dict
        ``mean`` and ``sd`` of the null PR-AUC over ``n_draws`` draws.
    """
    rng = np.random.default_rng(random_state)
    work = frame.with_columns(
        score=pl.Series(np.asarray(scores, dtype=np.float64)),
        y=(pl.col("hours_to_failure") < horizon_h).fill_null(False),
        w=(pl.col("sample_weight") if "sample_weight" in frame.columns else pl.lit(1.0)).cast(
            pl.Float64
        ),
    ).sort("host", "gpu_index", "uuid", "prediction_ts")
    y, w, s = (work.get_column(c).to_numpy() for c in ("y", "w", "score"))
    if not y.any() or y.all():
        return {"mean": math.nan, "sd": math.nan}
    group = work.select(pl.struct("host", "gpu_index", "uuid").rank("dense") - 1).to_series()
    g = group.to_numpy().astype(np.int64)
    lengths = np.bincount(g)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pos = np.arange(g.size) - starts[g]
    draws = []
    for _ in range(n_draws):
        offset = (rng.random(lengths.size) * lengths).astype(np.int64)
        rolled = s[starts[g] + (pos + offset[g]) % lengths[g]]
        draws.append(average_precision_score(y, rolled, sample_weight=w))
    return {"mean": float(np.mean(draws)), "sd": float(np.std(draws, ddof=1))}


def never_predict(frame: pl.DataFrame, *, horizon_h: float) -> dict[str, Any]:
    """Measure the "never predict" baseline: no alarm, recall 0, PR-AUC = the base rate."""
    out = evaluate(frame, np.zeros(frame.height), horizon_h=horizon_h, threshold=math.inf)
    out["pr_auc"] = out["base_rate"]  # a constant score ranks nothing: AP = positive share
    out["threshold"] = None
    return out


def sbe_rule(
    train: pl.DataFrame,
    test: pl.DataFrame,
    *,
    horizon_h: float,
    target_precision: float = 0.9,
    column: str = "sbe_1h",
) -> dict[str, Any]:
    """Measure the "drain after N single-bit ECC errors in an hour" baseline.

    N is chosen on ``train`` by :func:`choose_threshold` over the observed counts, then the rule
    is measured on ``test`` (its PR-AUC ranks GPU-hours by the count).
    """
    counts = train.get_column(column).fill_null(0).to_numpy().astype(np.float64)
    grid = np.unique(counts[counts > 0])
    if grid.size > 400:
        grid = np.unique(np.quantile(grid, np.linspace(0, 1, 400)).round())
    curve = operating_curve(train, counts, horizon_h=horizon_h, thresholds=grid)
    n = choose_threshold(curve, target_precision=target_precision) if grid.size else math.inf
    scores = test.get_column(column).fill_null(0).to_numpy().astype(np.float64)
    out = evaluate(test, scores, horizon_h=horizon_h, threshold=n)
    out["n_sbe_per_h"] = None if math.isinf(n) else n
    return out


# --------------------------------------------------------------------------------------------
# the estimator


# sklearn ships no type information, so BaseEstimator is Any to mypy
class FailurePredictor(BaseEstimator):  # type: ignore[misc]
    """Calibrated probability that a GPU or its node fails within ``horizon_h`` hours.

    Parameters
    ----------
    horizon_h
        Label horizon in hours.
    features
        Feature columns (default :data:`FEATURES`).
    max_iter, learning_rate, max_leaf_nodes, min_samples_leaf, l2_regularization
        Of the :class:`~sklearn.ensemble.HistGradientBoostingClassifier`.
    monotonic
        Feature -> +1 (risk may only grow with it), -1 (only fall) or 0; default
        :data:`MONOTONIC` (features not named are unconstrained). The constraints keep the booster
        from memorising when and where the training failures happened.
    calibration
        ``"sigmoid"`` (default; few positives) or ``"isotonic"``.
    target_precision
        The operating threshold is the best recall at this precision on the calibration slice.
    max_auc
        :func:`check_leakage` refuses a feature whose ROC AUC alone reaches this.
    random_state
        Seed of the booster.

    Attributes
    ----------
    features_
        Features used: those with at least one value in the training rows.
    booster_
        The fitted booster (uncalibrated).
    calibrated_
        The sigmoid/isotonic calibration of ``booster_`` fitted on the calibration slice.
    calibration_method_
        ``calibration``, or ``"isotonic"`` when the sigmoid fitted on the calibration slice
        decreased (it would have reversed the ranking).
    threshold_
        Operating threshold on the calibrated probability; ``inf`` (never alarm) when no
        threshold reaches ``target_precision`` on the calibration slice.
    feature_auc_
        ROC AUC of each feature alone on the training rows (:func:`check_leakage`).
    feature_p99_
        99th percentile of each evidence feature over the training rows.
    n_train_, n_positive_train_, n_calibration_
        Rows used.

    Examples
    --------
    >>> split = time_split(frame, horizon_h=24)  # doctest: +SKIP
    >>> model = FailurePredictor(horizon_h=24).fit(split.train, split.calibration)  # doctest: +SKIP
    >>> prob = model.predict_proba(split.test)  # doctest: +SKIP
    """

    def __init__(
        self,
        horizon_h: float = 24.0,
        features: tuple[str, ...] | None = None,
        max_iter: int = 100,
        learning_rate: float = 0.1,
        max_leaf_nodes: int = 31,
        min_samples_leaf: int = 20,
        l2_regularization: float = 0.0,
        monotonic: dict[str, int] | None = None,
        calibration: str = "sigmoid",
        target_precision: float = 0.9,
        max_auc: float = 0.995,
        random_state: int = 0,
    ) -> None:
        self.horizon_h = horizon_h
        self.features = features
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.monotonic = monotonic
        self.calibration = calibration
        self.target_precision = target_precision
        self.max_auc = max_auc
        self.random_state = random_state

    def _features(self) -> tuple[str, ...]:
        return tuple(self.features) if self.features is not None else FEATURES

    def _matrix(self, frame: pl.DataFrame, features: Sequence[str]) -> NDArray[np.float64]:
        missing = [f for f in features if f not in frame.columns]
        if missing:
            msg = (
                f"the frame lacks feature column(s) {missing}; read rows from "
                "fct_gpu_hour_features (pipelines.analysis.predict.read_features)."
            )
            raise ValueError(msg)
        return (
            frame.select([pl.col(f).cast(pl.Float64) for f in features])
            .fill_null(np.nan)
            .to_numpy()
        )

    def fit(self, train: pl.DataFrame, calibration: pl.DataFrame | None = None) -> FailurePredictor:
        """Fit the booster on ``train``, calibrate it on ``calibration`` (a later period).

        Parameters
        ----------
        train
            Earlier GPU-hours: features, ``hours_to_failure``, ``next_failure_id``, optional
            ``sample_weight``.
        calibration
            Later GPU-hours for the calibration and the threshold; default the last 20 % of
            ``train`` by ``prediction_ts`` (and the booster fits the rest).

        Raises
        ------
        LeakageError
            From :func:`check_leakage`.
        ValueError
            When a period has no positive or no negative row, or a column is missing.
        """
        if self.calibration not in ("sigmoid", "isotonic"):
            msg = f"calibration must be 'sigmoid' or 'isotonic', got {self.calibration!r}."
            raise ValueError(msg)
        if calibration is None:
            cut = train.get_column("prediction_ts").quantile(0.8, interpolation="lower")
            horizon = timedelta(hours=self.horizon_h)
            train, calibration = (
                train.filter(pl.col("prediction_ts") < cut - horizon),  # type: ignore[operator]
                train.filter(pl.col("prediction_ts") >= cut),
            )
        self.feature_auc_ = check_leakage(
            train, horizon_h=self.horizon_h, features=self._features(), max_auc=self.max_auc
        )
        missing = [f for f in self._features() if f not in train.columns]
        if missing:
            msg = f"train lacks feature column(s) {missing}; read fct_gpu_hour_features."
            raise ValueError(msg)
        # a feature with no value at all in training (a metric the fleet does not export) is
        # left out: the booster cannot bin it, and it carries nothing
        self.features_ = tuple(
            f for f in self._features() if train.get_column(f).null_count() < train.height
        )
        X, y, w = self._xyw(train, "train")
        Xc, yc, wc = self._xyw(calibration, "calibration")
        directions = MONOTONIC if self.monotonic is None else self.monotonic
        self.booster_ = HistGradientBoostingClassifier(
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf,
            l2_regularization=self.l2_regularization,
            monotonic_cst=[int(directions.get(f, 0)) for f in self.features_],
            early_stopping=False,
            random_state=self.random_state,
        ).fit(X, y, sample_weight=w)
        self.calibration_method_ = self.calibration
        self.calibrated_ = self._calibrate(Xc, yc, wc, self.calibration)
        if self.calibration == "sigmoid" and not self._increasing(Xc):
            # Platt scaling fits the bulk of the scores; when the many failures without a
            # warning sit low there, the slope can turn negative and reverse the ranking of the
            # warned ones. Isotonic regression is increasing by construction.
            self.calibration_method_ = "isotonic"
            self.calibrated_ = self._calibrate(Xc, yc, wc, "isotonic")
        prob = self.calibrated_.predict_proba(Xc)[:, 1]
        curve = operating_curve(calibration, prob, horizon_h=self.horizon_h)
        self.threshold_ = choose_threshold(curve, target_precision=self.target_precision)
        evidence = [f for f in _EVIDENCE if f in self._features()]
        self.feature_p99_ = {
            f: float(np.nan_to_num(train.get_column(f).cast(pl.Float64).quantile(0.99) or 0.0))
            for f in evidence
        }
        self.n_train_ = int(y.size)
        self.n_positive_train_ = int(y.sum())
        self.n_calibration_ = int(yc.size)
        return self

    def _calibrate(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.bool_],
        w: NDArray[np.float64],
        method: str,
    ) -> CalibratedClassifierCV:
        with warnings.catch_warnings():
            # the frozen booster takes no weights; the calibration map does, which is the point
            warnings.filterwarnings("ignore", message=".*FrozenEstimator does not appear to accept")
            return CalibratedClassifierCV(FrozenEstimator(self.booster_), method=method).fit(
                X, y, sample_weight=w
            )

    def _increasing(self, X: NDArray[np.float64]) -> bool:
        """Whether the calibrated probability grows with the booster's score."""
        raw = self.booster_.decision_function(X)
        lo, hi = np.argmin(raw), np.argmax(raw)
        prob = self.calibrated_.predict_proba(X[[lo, hi]])[:, 1]
        return bool(raw[hi] == raw[lo] or prob[1] >= prob[0])

    def _xyw(
        self, frame: pl.DataFrame, name: str
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]:
        y = labels(frame, horizon_h=self.horizon_h)
        if y.all() or not y.any():
            msg = (
                f"the {name} period has {int(y.sum())} positive GPU-hours of {y.size}; it needs "
                "both failures and healthy hours. Use a longer window or a longer horizon_h."
            )
            raise ValueError(msg)
        w = (
            frame.get_column("sample_weight").cast(pl.Float64).to_numpy()
            if "sample_weight" in frame.columns
            else np.ones(frame.height)
        )
        return self._matrix(frame, self.features_), y, w

    def predict_proba(self, frame: pl.DataFrame) -> NDArray[np.float64]:
        """Calibrated probability of a failure within ``horizon_h``, one per row."""
        check_is_fitted(self, "calibrated_")
        if frame.height == 0:
            return np.zeros(0)
        proba: NDArray[np.float64] = self.calibrated_.predict_proba(
            self._matrix(frame, self.features_)
        )[:, 1]
        return proba

    def evidence(self, frame: pl.DataFrame) -> list[str]:
        """Return per row a JSON object of the warning features above the training p99.

        The objects read ``{"sbe_6h": 412.0, ...}`` (values above the training 99th percentile,
        largest excess first); ``{}`` when none is.
        """
        check_is_fitted(self, "feature_p99_")
        out: list[dict[str, float]] = [{} for _ in range(frame.height)]
        for name, p99 in self.feature_p99_.items():
            values = frame.get_column(name).cast(pl.Float64).fill_null(0.0).to_numpy()
            for i in np.flatnonzero(values > max(p99, 0.0)).tolist():
                out[i][name] = round(float(values[i]), 3)
        return [
            json.dumps(
                dict(
                    sorted(
                        row.items(),
                        key=lambda kv: -kv[1] / max(self.feature_p99_[kv[0]], 1.0),
                    )
                )
            )
            for row in out
        ]
