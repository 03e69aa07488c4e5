"""Failure prediction on warehouse data: read GPU-hours, train, check for leakage, store, score.

I/O lives here; the model is in :mod:`models.predict`, the metrics in
:mod:`models.predict_metrics`. Features come from the view ``fct_gpu_hour_features`` (one row
per GPU and hour, as of the end of the hour). Training reads every GPU-hour of the test period
and every positive one, and a deterministic hash sample of the other training and calibration
hours (weighted by the inverse rate), so memory and time stay bounded on a large fleet. Models,
with their data windows and test metrics, go to ``predict_models``; scores to
``predict_scores`` (``sql/schema/006_predict.sql``).

Examples
--------
>>> with warehouse.connect("relia.duckdb") as con:  # doctest: +SKIP
...     result = train_model(con, horizon_h=24)
...     scores = score(con)
"""

from __future__ import annotations

import json
import logging
import pickle
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import polars as pl

from pipelines import warehouse
from pipelines.runtime.errors import WarehouseEmptyError
from pipelines.warehouse import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse import query

if TYPE_CHECKING:
    from collections.abc import Iterator

    import duckdb

    from models.predict import FailurePredictor
    from models.predict_features import Split

log = logging.getLogger(__name__)

FEATURE_VIEW = "fct_gpu_hour_features"
#: Raw tables the feature view reads, with their host column, time column and the columns that
#: must be emptied when they lie at or after the truncation time (an open ticket, a node not yet
#: removed). ``check_as_of`` copies these, truncated.
AS_OF_TABLES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "raw_dcgm_samples": ("host", "ts", ()),
    "raw_xid_events": ("host", "ts", ()),
    "raw_inventory": ("host", "snapshot_ts", ()),
    "raw_repairs": ("node", "opened_ts", ("closed_ts",)),
    "raw_fleet": ("node", "installed_ts", ("removed_ts",)),
}
_HASH_MOD = 1_000_000
#: DCGM samples per host group when computing features of a large warehouse (about 1 GB each).
CHUNK_SAMPLES = 400_000
#: Hours of DCGM telemetry read to score one hour: the longest window (168 h) and a margin.
SCORE_LOOKBACK_H = 192.0


@dataclass(frozen=True)
class TrainResult:
    """A trained and evaluated model.

    ``metrics`` has ``model``, ``never_predict`` and ``sbe_rule`` (each the dict of
    :func:`models.predict_metrics.evaluate` on the test period) and ``sizes``; ``curve`` is the
    test period's operating curve; ``events`` has one row per test failure (``failure_id, level,
    component_class, host, gpu_index, failed_ts, max_prob, caught, lead_time_h``).
    """

    model_id: str
    model: FailurePredictor
    bounds: dict[str, datetime]
    metrics: dict[str, Any]
    curve: pl.DataFrame
    events: pl.DataFrame
    as_of_rows: int = 0
    timings_s: dict[str, float] = field(default_factory=dict)


def data_window(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime]:
    """Return the first prediction time with telemetry and the end of the observation.

    First prediction time with telemetry and the end of the observation (failures after it
    are unseen: the observation window's end, else the last prediction time).

    Raises
    ------
    ValueError
        When the warehouse holds no DCGM telemetry.
    """
    con.complete()
    first, last = con.execute(
        "select min(hour_ts) + interval 1 hour, max(hour_ts) + interval 1 hour from int_gpu_health"
    ).fetchone()  # type: ignore[misc]
    if first is None:
        msg = (
            "no DCGM telemetry in the warehouse (int_gpu_health is empty); ingest dcgm/ scrapes "
            "first (relia synth --dcgm-interval-s 3600 writes some)."
        )
        raise WarehouseEmptyError(msg)
    row = con.execute("select window_end from stg_observation_window").fetchone()
    end = row[0] if row and row[0] is not None else last
    return first, max(min(end, last + timedelta(hours=1)), first)


def read_features(
    con: duckdb.DuckDBPyConnection,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    at: datetime | None = None,
    keep_rate: float = 1.0,
    keep_all_from: datetime | None = None,
    horizon_h: float | None = None,
    lookback_h: float | None = None,
    chunk_samples: int = CHUNK_SAMPLES,
) -> pl.DataFrame:
    """GPU-hours of ``fct_gpu_hour_features`` that are in service, with a ``sample_weight``.

    On a warehouse with more than ``chunk_samples`` DCGM samples the view is computed host group
    by host group, each in an in-memory warehouse holding only that group's raw telemetry (every
    feature and label is computed per host, so the result is the same): memory stays bounded
    by the group, not the fleet.

    Parameters
    ----------
    start, end
        Prediction times to read (``end`` inclusive); ``at`` reads one prediction time.
    keep_rate
        Share of rows kept by a deterministic hash of (host, GPU, time); kept rows weigh
        ``1 / keep_rate``. Rows from ``keep_all_from`` on, and rows followed by a failure within
        ``horizon_h``, are all kept with weight 1.
    lookback_h
        Compute from only the DCGM samples of the last ``lookback_h`` hours before ``at`` (or
        ``end``): enough for every default feature when above 170 h (the longest window is
        168 h); ``series_age_h`` then counts from the cut.
    chunk_samples
        DCGM samples per host group.
    """
    keep = min(max(keep_rate, 0.0), 1.0)
    sql = f"""
        select
            features.*,
            case when keep_all then 1.0 else $weight end as sample_weight
        from (
            select
                *,
                coalesce(prediction_ts >= $keep_all_from, false)
                or coalesce(hours_to_failure < $horizon_h, false) as keep_all
            from {FEATURE_VIEW}
            where in_service
                and ($at is null or prediction_ts = $at)
                and ($start is null or prediction_ts >= $start)
                and ($end is null or prediction_ts <= $end)
        ) as features
        where keep_all or hash(host, gpu_index, prediction_ts) % {_HASH_MOD} < $keep_k
    """
    params: dict[str, object] = {
        "at": at,
        "start": start,
        "end": end,
        "keep_all_from": keep_all_from,
        "horizon_h": horizon_h,
        "weight": 1.0 / keep if keep > 0 else 0.0,
        "keep_k": round(keep * _HASH_MOD),
    }
    last = at if at is not None else end
    since = None
    if lookback_h is not None and last is not None:
        since = last - timedelta(hours=lookback_h)
    con.complete()
    sizes = con.execute(
        "select host, count(*) from raw_dcgm_samples "
        "where $since is null or ts >= $since group by host order by host",
        {"since": since},
    ).fetchall()
    if sum(n for _, n in sizes) <= chunk_samples and since is None:
        frames = [query(con, sql, params)]
    else:
        frames = []
        for hosts in _host_groups(sizes, chunk_samples):
            with _scratch(con, hosts, dcgm_since=since) as part:
                frames.append(query(part, sql, params))
            log.info("features of %d hosts: %d GPU-hours", len(hosts), frames[-1].height)
    frame = pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()
    if frame.height == 0:
        return query(con, sql + " limit 0", params).drop("keep_all")
    return frame.drop("keep_all").sort("host", "gpu_index", "uuid", "prediction_ts")


def _host_groups(sizes: list[tuple[str, int]], chunk_samples: int) -> list[list[str]]:
    """Hosts in order, grouped so that each group holds about ``chunk_samples`` samples."""
    groups: list[list[str]] = [[]]
    count = 0
    for host, n in sizes:
        if groups[-1] and count + n > chunk_samples:
            groups.append([])
            count = 0
        groups[-1].append(host)
        count += n
    return [g for g in groups if g]


def train_model(
    con: duckdb.DuckDBPyConnection,
    *,
    horizon_h: float = 24.0,
    calibration_fraction: float = 0.15,
    test_fraction: float = 0.3,
    target_precision: float = 0.9,
    max_train_rows: int = 300_000,
    features: tuple[str, ...] | None = None,
    as_of_checks: int = 3,
    random_state: int = 0,
    store: bool = True,
) -> TrainResult:
    """Train a failure predictor on the earlier telemetry, evaluate it on the later, store it.

    Parameters
    ----------
    horizon_h
        Label: a failure of the GPU or its node within this many hours of the prediction time.
    calibration_fraction, test_fraction
        Shares of the prediction-time span for calibration and test (time order, never
        shuffled); :func:`models.predict.split_bounds`.
    target_precision
        The operating threshold (chosen on the calibration slice) and the SBE rule's N (chosen
        on the training period) aim at this precision.
    max_train_rows
        Training and calibration GPU-hours without a failure within ``horizon_h`` are sampled
        down to about this many (positives and the test period are always read in full).
    features
        Feature columns; default :data:`models.predict.FEATURES`.
    as_of_checks
        Prediction times at which :func:`check_as_of` recomputes the features from truncated
        telemetry (0 skips the check).
    store
        Write the model to ``predict_models``.

    Raises
    ------
    models.predict.LeakageError
        When a feature reads the future (as-of check) or predicts the label implausibly well.
    ValueError
        When the warehouse holds too little telemetry or a period has no failure.
    """
    import time

    import models as mp

    timings: dict[str, float] = {}
    clock = time.perf_counter()
    start, end = data_window(con)
    bounds = mp.split_bounds(
        start,
        end,
        horizon_h=horizon_h,
        calibration_fraction=calibration_fraction,
        test_fraction=test_fraction,
    )
    con.complete()
    n_before = con.execute(
        "select count(*) from int_gpu_health where hour_ts + interval 1 hour < $t",
        {"t": bounds["test_start"]},
    ).fetchone()[0]  # type: ignore[index]
    keep_rate = min(1.0, max_train_rows / max(int(n_before), 1))
    frame = read_features(
        con,
        start=start,
        end=bounds["test_end"],
        keep_rate=keep_rate,
        keep_all_from=bounds["test_start"],
        horizon_h=horizon_h,
    )
    timings["read_s"] = time.perf_counter() - clock
    split = mp.time_split(
        frame,
        horizon_h=horizon_h,
        calibration_fraction=calibration_fraction,
        test_fraction=test_fraction,
        data_start=start,
        data_end=end,
    )
    clock = time.perf_counter()
    model = mp.FailurePredictor(
        horizon_h=horizon_h,
        features=features,
        target_precision=target_precision,
        random_state=random_state,
    ).fit(split.train, split.calibration)
    timings["fit_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    as_of_rows = (
        check_as_of(con, n_times=as_of_checks, horizon_h=horizon_h, random_state=random_state)
        if as_of_checks
        else 0
    )
    timings["as_of_check_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    prob = model.predict_proba(split.test)
    curve = mp.operating_curve(split.test, prob, horizon_h=horizon_h)
    metrics: dict[str, Any] = {
        "model": mp.evaluate(
            split.test, prob, horizon_h=horizon_h, threshold=model.threshold_
        ).to_dict(),
        "never_predict": mp.never_predict(split.test, horizon_h=horizon_h).to_dict(),
        "sbe_rule": mp.sbe_rule(
            split.train, split.test, horizon_h=horizon_h, target_precision=target_precision
        ).to_dict(),
    }
    best = curve.filter(pl.col("precision") >= target_precision)
    metrics["model"]["recall_at_target_precision"] = (
        float(best.get_column("recall").max()) if best.height else 0.0  # type: ignore[arg-type]
    )
    events = failure_outcomes(split.test, prob, horizon_h=horizon_h, threshold=model.threshold_)
    metrics["sizes"] = _sizes(con, frame, split, bounds, events, keep_rate, horizon_h)
    metrics["target_precision"] = target_precision
    metrics["features"] = list(model.features_)
    timings["evaluate_s"] = time.perf_counter() - clock
    model_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    result = TrainResult(
        model_id=model_id,
        model=model,
        bounds=bounds,
        metrics=metrics,
        curve=curve,
        events=events,
        as_of_rows=as_of_rows,
        timings_s=timings,
    )
    if store:
        store_model(con, result)
    return result


def failure_outcomes(
    test: pl.DataFrame, prob: np.ndarray, *, horizon_h: float, threshold: float
) -> pl.DataFrame:
    """Return one row per failure with a GPU-hour in the ``horizon_h`` before it.

    One row per failure with a GPU-hour in the ``horizon_h`` before it: the highest
    probability given, whether it alarmed (``caught``) and the lead time of the first alarm.
    """
    pos = test.with_columns(prob=pl.Series(prob, dtype=pl.Float64)).filter(
        pl.col("hours_to_failure") < horizon_h
    )
    return (
        pos.group_by("next_failure_id")
        .agg(
            pl.col("next_failure_level").first().alias("level"),
            pl.col("next_failure_class").first().alias("component_class"),
            pl.col("host").first(),
            pl.when(pl.col("next_failure_level").first() == "gpu")
            .then(pl.col("gpu_index").first())
            .alias("gpu_index"),
            pl.col("next_failure_ts").first().alias("failed_ts"),
            pl.col("prob").max().alias("max_prob"),
            pl.col("hours_to_failure")
            .filter(pl.col("prob") >= threshold)
            .max()
            .alias("lead_time_h"),
        )
        .rename({"next_failure_id": "failure_id"})
        .with_columns(caught=pl.col("lead_time_h").is_not_null())
        .sort("failed_ts", "failure_id")
    )


class TrainSizes(TypedDict):
    """How much a training run saw (``sizes`` of ``predict_models.metrics``, stored as JSON).

    GPUs, days of data and of the test period, rows per split, the negatives' keep rate, and
    the test period's failures (``n_failures_test_unobserved``: those in no scored GPU-hour).
    """

    n_gpus: int
    days: float
    test_days: float
    n_rows_train: int
    n_rows_calibration: int
    n_rows_test: int
    negative_keep_rate: float
    n_failures_test: int
    n_failures_test_unobserved: int


def _sizes(
    con: duckdb.DuckDBPyConnection,
    frame: pl.DataFrame,
    split: Split,
    bounds: dict[str, datetime],
    events: pl.DataFrame,
    keep_rate: float,
    horizon_h: float,
) -> TrainSizes:
    con.complete()
    counted = con.execute(
        "select count(*) from int_failure_events where failed_ts >= $a and failed_ts < $b",
        {"a": bounds["test_start"], "b": bounds["test_end"] + timedelta(hours=horizon_h)},
    ).fetchone()
    n_failures_test = counted[0] if counted is not None else 0  # a count: always one row
    span = bounds["test_end"] - bounds["train_start"]
    return {
        "n_gpus": frame.select("host", "gpu_index").unique().height,
        "days": round(span.total_seconds() / 86_400 + horizon_h / 24, 2),
        "test_days": round((bounds["test_end"] - bounds["test_start"]).total_seconds() / 86_400, 2),
        "n_rows_train": split.train.height,
        "n_rows_calibration": split.calibration.height,
        "n_rows_test": split.test.height,
        "negative_keep_rate": round(keep_rate, 6),
        "n_failures_test": events.height,
        "n_failures_test_unobserved": max(int(n_failures_test) - events.height, 0),
    }


def check_as_of(
    con: duckdb.DuckDBPyConnection,
    *,
    n_times: int = 3,
    horizon_h: float = 24.0,
    feature_sql: str | None = None,
    random_state: int = 0,
) -> int:
    """Prove that features use only data before the prediction time.

    Picks ``n_times`` prediction times (half in the ``horizon_h`` before a failure, where the
    precursors are, half at random) and a host for each, copies those hosts' raw telemetry into
    two in-memory warehouses, one whole and one truncated at the prediction time (rows at or
    after it dropped, tickets and removals later than it reopened), computes the features in
    both and requires them to be equal (:func:`models.predict.assert_same_features`).

    Parameters
    ----------
    feature_sql
        The feature query (a bare ``select``); default ``sql/marts/fct_gpu_hour_features.sql``.

    Returns
    -------
    int
        GPU-hours compared.

    Raises
    ------
    models.predict.LeakageError
        When a feature differs, naming it.
    """
    from models import predict_features as mp

    sql = feature_sql if feature_sql is not None else _feature_sql()
    picks = _as_of_picks(con, n_times=n_times, horizon_h=horizon_h, random_state=random_state)
    if not picks:
        return 0
    hosts = sorted({host for host, _ in picks})
    columns = [*mp.FEATURES, *mp.EXTRA_FEATURES, "in_service"]
    compared = 0
    with _scratch(con, hosts) as whole:
        for host, at in picks:
            full = _features_at(whole, sql, host, at)
            with _scratch(con, [host], at) as truncated:
                recomputed = _features_at(truncated, sql, host, at)
            compared += mp.assert_same_features(full, recomputed, features=columns)
    log.info("as-of check: %d GPU-hours at %d prediction times agree", compared, len(picks))
    return compared


def _feature_sql() -> str:
    path = next(p for p in warehouse.view_files() if p.stem == FEATURE_VIEW)
    return path.read_text().strip().rstrip(";")


def _as_of_picks(
    con: duckdb.DuckDBPyConnection, *, n_times: int, horizon_h: float, random_state: int
) -> list[tuple[str, datetime]]:
    """(host, prediction time) pairs: before failures, and at random GPU-hours."""
    rng = np.random.default_rng(random_state)
    con.complete()
    before = con.execute(
        "select f.host, h.hour_ts + interval 1 hour from int_failure_events as f "
        "inner join int_gpu_health as h on f.host = h.host "
        "and h.hour_ts + interval 1 hour <= f.failed_ts "
        "and h.hour_ts + interval 1 hour > f.failed_ts - to_hours(cast($h as bigint)) "
        "group by all order by all",
        {"h": int(np.ceil(horizon_h))},
    ).fetchall()
    anywhere = con.execute(
        "select distinct host, hour_ts + interval 1 hour from int_gpu_health "
        "where hash(host, hour_ts) % 97 = 0 order by all"
    ).fetchall()
    picks: list[tuple[str, datetime]] = []
    for pool, k in ((before, (n_times + 1) // 2), (anywhere, n_times)):
        if pool and len(picks) < n_times:
            for i in rng.choice(
                len(pool), size=min(k, len(pool), n_times - len(picks)), replace=False
            ):
                picks.append((str(pool[int(i)][0]), pool[int(i)][1]))
    return picks


@contextmanager
def _scratch(
    con: duckdb.DuckDBPyConnection,
    hosts: list[str],
    at: datetime | None = None,
    *,
    dcgm_since: datetime | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Return an in-memory warehouse holding ``hosts``' raw telemetry.

    An in-memory warehouse holding ``hosts``' raw telemetry (:data:`AS_OF_TABLES`): only
    what came before ``at`` if given (later tickets and removals reopened), only DCGM samples
    from ``dcgm_since`` on if given.
    """
    import duckdb

    scratch = duckdb.connect(":memory:")
    try:
        scratch.execute("set TimeZone = 'UTC'")
        warehouse.init(scratch)
        con.complete()
        for name, value in con.execute("select name, value from cfg_params").fetchall():
            warehouse.set_param(scratch, name, value)
        for table, (host_col, ts_col, reopen) in AS_OF_TABLES.items():
            # identifiers come from AS_OF_TABLES only
            star = "*"
            if reopen and at is not None:
                star = (
                    "* replace ("
                    + ", ".join(
                        f"case when {_identifier(c)} < $at then "
                        f"{_identifier(c)} end as {_identifier(c)}"
                        for c in reopen
                    )
                    + ")"
                )
            cut = f"and {ts_col} < $at" if at is not None else ""
            if dcgm_since is not None and table == "raw_dcgm_samples":
                cut += f" and {ts_col} >= $since"
            params: dict[str, object] = {"hosts": hosts}
            if at is not None:
                params["at"] = at
            if "$since" in cut:
                params["since"] = dcgm_since
            rows = query(
                con,
                f"select {star} from {table} where {host_col} in (select unnest($hosts)) {cut}",
                params,
            ).to_arrow()
            scratch.register("incoming_rows", rows)
            scratch.execute(f"insert into {table} by name select * from incoming_rows")
            scratch.unregister("incoming_rows")
        warehouse.create_views(scratch)
        yield scratch
    finally:
        scratch.close()


def _features_at(con: duckdb.DuckDBPyConnection, sql: str, host: str, at: datetime) -> pl.DataFrame:
    return query(
        con,
        f"select * from ({sql}) as features where host = $host and prediction_ts = $at",
        {"host": host, "at": at},
    )


def store_model(con: duckdb.DuckDBPyConnection, result: TrainResult) -> None:
    """Write a trained model, its windows, metrics and curve to ``predict_models``."""
    versions = {pkg: version(pkg) for pkg in ("relia", "scikit-learn", "numpy", "polars")}
    b = result.bounds
    con.complete()
    con.execute(
        "insert into predict_models values ($id, $now, $h, $train_start, $train_end, "
        "$cal_start, $cal_end, $test_start, $test_end, $threshold, $metrics, $curve, "
        "$versions, $model)",
        {
            "id": result.model_id,
            "now": datetime.now(UTC),
            "h": float(result.model.horizon_h),
            "train_start": b["train_start"],
            "train_end": b["train_end"],
            "cal_start": b["calibration_start"],
            "cal_end": b["calibration_end"],
            "test_start": b["test_start"],
            "test_end": b["test_end"],
            "threshold": _finite(result.model.threshold_),
            "metrics": json.dumps(result.metrics, default=str),
            "curve": json.dumps(result.curve.to_dicts(), default=str),
            "versions": json.dumps(versions),
            "model": pickle.dumps(result.model),
        },
    )


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def load_model(
    con: duckdb.DuckDBPyConnection, model_id: str | None = None
) -> tuple[str, FailurePredictor, dict[str, Any]]:
    """Return a stored model (the latest when ``model_id`` is None): id, estimator, stored row.

    The model is unpickled: load only warehouses you trust.
    """
    con.complete()
    row = con.execute(
        "select model_id, model, metrics, horizon_h, test_start, test_end, threshold "
        "from predict_models where $id is null or model_id = $id "
        "order by trained_at desc limit 1",
        {"id": model_id},
    ).fetchone()
    if row is None:
        msg = (
            f"no model {model_id!r} in predict_models"
            if model_id
            else "no model in predict_models yet; run `relia predict train` first"
        )
        raise ValueError(msg) if model_id else WarehouseEmptyError(msg)
    model = pickle.loads(row[1])  # our own table, written by store_model
    info = {
        "model_id": row[0],
        "metrics": json.loads(row[2]),
        "horizon_h": row[3],
        "test_start": row[4],
        "test_end": row[5],
        "threshold": row[6],
    }
    return row[0], model, info


def score(
    con: duckdb.DuckDBPyConnection,
    *,
    model_id: str | None = None,
    at: datetime | None = None,
    store: bool = True,
) -> pl.DataFrame:
    """Score every in-service GPU at one prediction time (default: the latest with telemetry).

    Returns
    -------
    polars.DataFrame
        ``model_id, scored_at, prediction_ts, host, gpu_index, uuid, prob, at_risk, evidence``,
        highest probability first; also written to ``predict_scores`` when ``store``.
    """
    model_id, model, _ = load_model(con, model_id)
    if at is None:
        _, last = _last_prediction_ts(con)
        at = last
    frame = read_features(con, at=at, lookback_h=SCORE_LOOKBACK_H)
    prob = model.predict_proba(frame)
    threshold = model.threshold_
    scores = (
        frame.select(
            pl.lit(model_id).alias("model_id"),
            pl.lit(datetime.now(UTC)).alias("scored_at"),
            "prediction_ts",
            "host",
            "gpu_index",
            "uuid",
        )
        .with_columns(
            prob=pl.Series(prob, dtype=pl.Float64),
            at_risk=pl.Series(prob >= threshold, dtype=pl.Boolean),
            evidence=pl.Series(model.evidence(frame), dtype=pl.String),
        )
        .sort("prob", "host", "gpu_index", descending=[True, False, False])
    )
    if store and scores.height:
        con.complete()
        con.register("incoming_scores", scores.to_arrow())
        con.execute("insert or replace into predict_scores by name select * from incoming_scores")
        con.unregister("incoming_scores")
    return scores


def _last_prediction_ts(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime]:
    con.complete()
    row = con.execute(
        "select min(hour_ts) + interval 1 hour, max(hour_ts) + interval 1 hour from int_gpu_health"
    ).fetchone()
    if row is None or row[1] is None:
        msg = "no DCGM telemetry in the warehouse; ingest dcgm/ scrapes first."
        raise WarehouseEmptyError(msg)
    return row[0], row[1]


def gpus_at_risk(
    con: duckdb.DuckDBPyConnection,
    *,
    model_id: str | None = None,
    min_prob: float | None = None,
    limit: int = 50,
) -> pl.DataFrame:
    """Return the latest stored scores of a model at or above ``min_prob``.

    The latest stored scores of a model (default the latest model) at or above ``min_prob``
    (default the model's threshold), highest first.
    """
    model_id, model, _ = load_model(con, model_id)
    floor = model.threshold_ if min_prob is None else min_prob
    return query(
        con,
        "select host, gpu_index, uuid, prediction_ts, prob, evidence from predict_scores "
        "where model_id = $id and prob >= $floor and prediction_ts = ("
        "select max(prediction_ts) from predict_scores where model_id = $id) "
        "order by prob desc, host, gpu_index limit $limit",
        {"id": model_id, "floor": _finite(floor), "limit": limit},
    )
