r"""How well a failure score predicts: its operating curve, its metrics and two baselines.

:func:`operating_curve` and :func:`evaluate` measure a score (:class:`models.FailurePredictor`'s
probability, or any other) on a period of GPU-hours, :func:`choose_threshold` picks the
operating threshold, and :func:`never_predict` and :func:`sbe_rule` ("drain after N single-bit
ECC errors in an hour") are the baselines; :func:`pr_auc_null` is the PR-AUC of a score that
knows nothing.

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
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from sklearn.metrics import average_precision_score

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "RuleMetrics",
    "ScoreMetrics",
    "choose_threshold",
    "evaluate",
    "never_predict",
    "operating_curve",
    "pr_auc_null",
    "sbe_rule",
]


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


@dataclass(frozen=True, slots=True)
class ScoreMetrics:
    """A score's metrics at one threshold (definitions in the module docstring).

    The figures at the threshold are None where undefined (no alarm, no failure).
    """

    threshold: float | None
    precision: float | None
    recall: float | None
    lead_time_h: float | None
    alarms_per_day: float | None
    row_recall: float | None
    alarm_precision: float | None
    n_caught: float | None
    n_alarms: float | None
    pr_auc: float
    n_failures: int
    n_rows: int
    n_positive_rows: int
    base_rate: float

    def to_dict(self) -> dict[str, object]:
        """Return the metrics as a plain dict, in field order (for JSON)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class RuleMetrics:
    """The SBE rule's metrics, with its N (None: no N reached the target precision)."""

    metrics: ScoreMetrics
    n_sbe_per_h: float | None

    def to_dict(self) -> dict[str, object]:
        """Return the metrics and ``n_sbe_per_h`` as a plain dict (for JSON)."""
        return self.metrics.to_dict() | {"n_sbe_per_h": self.n_sbe_per_h}


def evaluate(
    frame: pl.DataFrame, scores: ArrayLike, *, horizon_h: float, threshold: float
) -> ScoreMetrics:
    """Return the metrics of ``scores`` at one threshold (definitions in the module docstring).

    Returns
    -------
    ScoreMetrics
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
    first = {k: _num(float(v[0])) for k, v in at.items()}
    return ScoreMetrics(
        threshold=float(threshold),
        precision=first["precision"],
        recall=first["recall"],
        lead_time_h=first["lead_time_h"],
        alarms_per_day=first["alarms_per_day"],
        row_recall=first["row_recall"],
        alarm_precision=first["alarm_precision"],
        n_caught=first["n_caught"],
        n_alarms=first["n_alarms"],
        pr_auc=pr_auc,
        n_failures=p.n_events,
        n_rows=int(p.y.size),
        n_positive_rows=int(p.y.sum()),
        base_rate=base_rate,
    )


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


def never_predict(frame: pl.DataFrame, *, horizon_h: float) -> ScoreMetrics:
    """Measure the "never predict" baseline: no alarm, recall 0, PR-AUC = the base rate."""
    out = evaluate(frame, np.zeros(frame.height), horizon_h=horizon_h, threshold=math.inf)
    # a constant score ranks nothing: AP = positive share
    return replace(out, pr_auc=out.base_rate, threshold=None)


def sbe_rule(
    train: pl.DataFrame,
    test: pl.DataFrame,
    *,
    horizon_h: float,
    target_precision: float = 0.9,
    column: str = "sbe_1h",
) -> RuleMetrics:
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
    return RuleMetrics(out, n_sbe_per_h=None if math.isinf(n) else n)
