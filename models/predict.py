r"""GPU failure prediction: whether a GPU (or its node) fails within ``horizon_h`` hours.

Rows are GPU-hours (``fct_gpu_hour_features``): one per GPU and hour of telemetry, with features
computed as of the end of that hour (``prediction_ts``, data strictly before it) and the time to
the next failure of the GPU or its node (``hours_to_failure``, the label; never a feature). A row
is positive when ``hours_to_failure < horizon_h``.

:class:`FailurePredictor` is a gradient-boosted tree classifier
(:class:`~sklearn.ensemble.HistGradientBoostingClassifier`) whose probabilities are calibrated on
a later, time-ordered slice (sigmoid, never shuffled), with an operating threshold chosen on that
slice. :func:`time_split` cuts a frame into train, calibration and test periods in time order and
purges rows whose label window reaches into the next period.

The metrics (:func:`operating_curve`, :func:`evaluate`) and the baselines are in
:mod:`models.predict_metrics`.

Features, labels, the time split and the leakage guards (:func:`check_leakage`,
:func:`assert_same_features`) are in :mod:`models.predict_features`.
"""

from __future__ import annotations

import json
import warnings
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.utils.validation import check_is_fitted

from models.predict_features import (
    FEATURES,
    MONOTONIC,
    check_leakage,
    labels,
)
from models.predict_metrics import choose_threshold, operating_curve

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray


__all__ = ["FailurePredictor"]

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
