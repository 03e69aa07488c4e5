r"""GPU failure prediction, the data side: features, labels, time splits and leakage guards.

Rows are GPU-hours (``fct_gpu_hour_features``): one per GPU and hour of telemetry, with features
computed as of the end of that hour (``prediction_ts``, data strictly before it) and the time to
the next failure of the GPU or its node (``hours_to_failure``, the label; never a feature). A row
is positive when ``hours_to_failure < horizon_h``.

:func:`time_split` cuts a frame into train, calibration and test periods in time order and
purges rows whose label window reaches into the next period. The model is in
:mod:`models.predict`, its metrics in :mod:`models.predict_metrics`.


Leakage guards: :func:`check_leakage` refuses label columns as features and any single feature
that separates the label almost perfectly (a label copied or shifted into a feature);
:func:`assert_same_features` compares features recomputed from data truncated at the prediction
time with the stored ones (``pipelines.analysis.predict.check_as_of`` does the I/O).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from numpy.typing import NDArray


__all__ = [
    "EXTRA_FEATURES",
    "FEATURES",
    "HISTORY_FEATURES",
    "KEYS",
    "LABEL_COLUMNS",
    "MONOTONIC",
    "SIGNAL_FEATURES",
    "LeakageError",
    "Split",
    "assert_same_features",
    "check_leakage",
    "labels",
    "split_bounds",
    "time_split",
]

#: Warning signals (``fct_gpu_hour_features``; units in the names, windows end at the prediction
#: time). The booster may only raise the risk as one of them grows (monotonic constraint).
SIGNAL_FEATURES: tuple[str, ...] = (
    "sbe_1h",
    "sbe_6h",
    "sbe_24h",
    "sbe_168h",
    "sbe_rate_ratio",
    "dbe_24h",
    "retired_pages_24h",
    "retired_pending_24h",
    "row_remaps_24h",
    "row_remap_failure_24h",
    "nvlink_crc_6h",
    "nvlink_crc_24h",
    "pcie_replays_6h",
    "pcie_replays_24h",
    "temp_over_peers_6h_c",
    "power_over_peers_6h_w",
    "memory_temp_max_6h_c",
    "warning_xids_24h",
    "warning_xids_168h",
    "xid_gauge_changes_24h",
)
#: Failure history, each with the direction it may move the risk in. Off by default: on the
#: synthetic fleets (memoryless lifetimes) they carry nothing, and even constrained they pulled
#: the Platt calibration the wrong way and halved the test PR-AUC; pass
#: ``features=FEATURES + tuple(HISTORY_FEATURES)`` where failures do cluster on a GPU or node.
HISTORY_FEATURES: dict[str, int] = {
    "n_failures_gpu_30d": 1,
    "n_failures_node_30d": 1,
    "hours_since_node_failure": -1,
    "hours_since_warning_xid": -1,
}
#: The default features: the warning signals.
FEATURES: tuple[str, ...] = SIGNAL_FEATURES
#: Direction each signal and history feature may move the risk in (+1 up, -1 down).
MONOTONIC: dict[str, int] = {**dict.fromkeys(SIGNAL_FEATURES, 1), **HISTORY_FEATURES}
#: Further columns of the view, off by default and unconstrained when passed: load-driven
#: absolutes (temperature, power, counter resets) and ages. Unconstrained continuous features that
#: differ per GPU and hour let the booster memorise when the training failures happened (on the
#: synthetic fleets they multiplied the training PR-AUC by six and lowered the test one), so pass
#: them only with a fleet whose failures really depend on them, and check the test metrics.
EXTRA_FEATURES: tuple[str, ...] = (
    "temp_max_6h_c",
    "power_max_6h_w",
    "counter_resets_24h",
    "gpu_age_h",
    "series_age_h",
)
#: One row per GPU series and prediction time.
KEYS: tuple[str, ...] = ("host", "gpu_index", "uuid", "prediction_ts")
#: Columns that describe the future: the label and its bookkeeping, never features.
LABEL_COLUMNS: tuple[str, ...] = (
    "hours_to_failure",
    "next_failure_ts",
    "next_failure_id",
    "next_failure_level",
    "next_failure_class",
)
_LABEL_HINTS = ("next_", "to_failure", "label", "future")
#: Features shown as evidence for an alarm when above the training period's 99th percentile.


class LeakageError(ValueError):
    """A feature uses information from at or after the prediction time (or is the label)."""


# --------------------------------------------------------------------------------------------
# labels and time split


def labels(frame: pl.DataFrame, *, horizon_h: float) -> NDArray[np.bool_]:
    """Return True where the GPU or its node fails within ``horizon_h`` h of the prediction time."""
    return (
        frame.select((pl.col("hours_to_failure") < horizon_h).fill_null(False))
        .to_series()
        .to_numpy()
    )


@dataclass(frozen=True)
class Split:
    """Train, calibration and test rows of a time split, and the periods' bounds.

    ``bounds`` is :func:`split_bounds`. Rows of a period are those with ``prediction_ts`` in it
    whose label window ``[prediction_ts, prediction_ts + horizon_h)`` ends inside it (purged),
    so no label reads the next period.
    """

    train: pl.DataFrame
    calibration: pl.DataFrame
    test: pl.DataFrame
    bounds: dict[str, datetime]


def split_bounds(
    start: datetime,
    end: datetime,
    *,
    horizon_h: float,
    calibration_fraction: float = 0.15,
    test_fraction: float = 0.3,
) -> dict[str, datetime]:
    """Train, calibration and test periods over the prediction times ``[start, end - horizon_h]``.

    The span is cut in time order at whole hours: train first, then ``calibration_fraction`` of
    it, then the last ``test_fraction``. ``train_end = calibration_start`` and
    ``calibration_end = test_start`` are exclusive; ``test_end = end - horizon_h`` is the last
    prediction time whose label window ends by ``end`` (inclusive).

    Raises
    ------
    ValueError
        When the fractions leave no training period or the span is under four horizons.
    """
    fractions = (calibration_fraction, test_fraction)
    if min(fractions) <= 0 or sum(fractions) >= 0.9:
        msg = (
            "calibration_fraction and test_fraction must be positive and sum below 0.9, got "
            f"{calibration_fraction} and {test_fraction}; e.g. pass 0.15 and 0.3."
        )
        raise ValueError(msg)
    horizon = timedelta(hours=horizon_h)
    last = end - horizon
    span = last - start
    if span <= 4 * horizon:
        msg = (
            f"the telemetry spans {span} of prediction times after leaving out the last "
            f"{horizon_h} h (their labels are censored); a time split needs several horizons. "
            "Ingest more days or lower horizon_h."
        )
        raise ValueError(msg)

    def hour(t: datetime) -> datetime:
        return t.replace(minute=0, second=0, microsecond=0)

    test_start = hour(start + span * (1 - test_fraction))
    calibration_start = hour(test_start - span * calibration_fraction)
    return {
        "train_start": start,
        "train_end": calibration_start,
        "calibration_start": calibration_start,
        "calibration_end": test_start,
        "test_start": test_start,
        "test_end": last,
    }


def time_split(
    frame: pl.DataFrame,
    *,
    horizon_h: float,
    calibration_fraction: float = 0.15,
    test_fraction: float = 0.3,
    data_start: datetime | None = None,
    data_end: datetime | None = None,
) -> Split:
    """Cut ``frame`` in time order: train, then calibration, then test; never shuffled.

    Parameters
    ----------
    frame
        GPU-hour rows with ``prediction_ts``.
    horizon_h
        Label horizon. A training or calibration row whose label window ``[prediction_ts,
        prediction_ts + horizon_h)`` reaches into the next period is dropped (purged); test rows
        end at ``data_end - horizon_h`` (later labels are censored).
    calibration_fraction, test_fraction
        Shares of the prediction-time span (:func:`split_bounds`).
    data_start
        First prediction time; default the first ``prediction_ts`` of ``frame``.
    data_end
        End of the observation (failures after it are unseen); default the last
        ``prediction_ts``.

    Raises
    ------
    ValueError
        From :func:`split_bounds`.
    """
    ts = frame.get_column("prediction_ts")
    start = data_start if data_start is not None else ts.min()
    end = data_end if data_end is not None else ts.max()
    if start is None or end is None:
        msg = "the frame has no rows; read GPU-hours from fct_gpu_hour_features first."
        raise ValueError(msg)
    bounds = split_bounds(
        start,  # type: ignore[arg-type]
        end,  # type: ignore[arg-type]
        horizon_h=horizon_h,
        calibration_fraction=calibration_fraction,
        test_fraction=test_fraction,
    )
    horizon = timedelta(hours=horizon_h)
    t = pl.col("prediction_ts")
    return Split(
        train=frame.filter(t >= bounds["train_start"], t < bounds["train_end"] - horizon),
        calibration=frame.filter(
            t >= bounds["calibration_start"], t < bounds["calibration_end"] - horizon
        ),
        test=frame.filter(t >= bounds["test_start"], t <= bounds["test_end"]),
        bounds=bounds,
    )


# --------------------------------------------------------------------------------------------
# leakage guards


def check_leakage(
    frame: pl.DataFrame,
    *,
    horizon_h: float,
    features: Sequence[str] = FEATURES,
    max_auc: float = 0.995,
) -> dict[str, float]:
    """Refuse label columns as features and any feature that predicts the label almost perfectly.

    Real precursors are noisy and show before only some failures, so a single feature whose
    ranking separates positive from negative GPU-hours with a ROC AUC of ``max_auc`` or more
    (either way round) is a label copied, shifted or computed from the future.

    Returns
    -------
    dict
        ROC AUC of each feature alone (nulls ranked lowest), as ``max(auc, 1 - auc)``.

    Raises
    ------
    LeakageError
        Naming the feature(s) and the fix.
    """
    named = [f for f in features if f in LABEL_COLUMNS or any(h in f for h in _LABEL_HINTS)]
    if named:
        msg = (
            f"feature(s) {named} are label columns (or named like one: {_LABEL_HINTS}); the "
            "label describes the future and must never be a feature. Drop them from features."
        )
        raise LeakageError(msg)
    y = labels(frame, horizon_h=horizon_h)
    n_pos = int(y.sum())
    aucs: dict[str, float] = {}
    if n_pos == 0 or n_pos == y.size:
        return aucs
    for name in features:
        x = frame.get_column(name).cast(pl.Float64).fill_nan(None).to_numpy()
        x = np.where(np.isnan(x), -np.inf, x)
        auc = _roc_auc(x, y)
        aucs[name] = max(auc, 1.0 - auc)
    suspects = {k: round(v, 5) for k, v in aucs.items() if v >= max_auc}
    if suspects:
        msg = (
            f"implausibly perfect feature(s) {suspects} (ROC AUC alone >= {max_auc} over "
            f"{y.size} GPU-hours, {n_pos} positive): a label copied or shifted into a feature, "
            "or a feature computed from data at or after the prediction time. Check its "
            "definition in sql/marts/fct_gpu_hour_features.sql (windows must end at the "
            "prediction time)."
        )
        raise LeakageError(msg)
    return aucs


def _roc_auc(x: NDArray[np.float64], y: NDArray[np.bool_]) -> float:
    """Mann-Whitney ROC AUC with ties counted half."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ranks = np.empty(x.size)
    # average ranks of ties
    _, first, counts = np.unique(xs, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def assert_same_features(
    stored: pl.DataFrame,
    recomputed: pl.DataFrame,
    *,
    features: Sequence[str] = FEATURES,
    keys: Sequence[str] = KEYS,
    rtol: float = 1e-9,
) -> int:
    """Require features recomputed from truncated data to equal the stored ones, row by row.

    The data are truncated at the prediction time.

    Parameters
    ----------
    stored
        Rows computed from all the data.
    recomputed
        The same prediction times computed from only the data before them.

    Returns
    -------
    int
        Number of rows compared.

    Raises
    ------
    LeakageError
        When a row is missing from either side or any feature differs: it read data at or after
        its prediction time.
    """
    joined = stored.select(*keys, *features).join(
        recomputed.select(*keys, *features),
        on=list(keys),
        how="full",
        suffix="_asof",
        coalesce=True,
        nulls_equal=True,
    )
    if joined.height != stored.height or joined.height != recomputed.height:
        msg = (
            f"{stored.height} stored rows and {recomputed.height} recomputed from truncated data "
            f"match on only part of {list(keys)}: whether a row exists depends on later data."
        )
        raise LeakageError(msg)
    differing: dict[str, int] = {}
    for name in features:
        a = joined.get_column(name).cast(pl.Float64).to_numpy()
        b = joined.get_column(f"{name}_asof").cast(pl.Float64).to_numpy()
        same = np.isclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)
        if not same.all():
            differing[name] = int((~same).sum())
    if differing:
        msg = (
            f"feature(s) change when the data after the prediction time are removed "
            f"(rows differing per feature: {differing} of {joined.height}): they read the "
            "future. Make their windows end at the prediction time (sql/marts/"
            "fct_gpu_hour_features.sql)."
        )
        raise LeakageError(msg)
    return joined.height
