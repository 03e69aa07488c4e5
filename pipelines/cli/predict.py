"""``relia predict train|score``: failure prediction (:mod:`~pipelines.analysis.predict`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from pipelines.cli.options import (
    DbOption,
    FormatOption,
    JsonOption,
    exit_for,
    load_settings,
    require_warehouse,
)
from pipelines.cli.render import (
    OutputFormat,
    console,
    output_format,
    print_csv,
    print_json,
    rows_table,
)
from pipelines.cli.root import app

__all__ = ["predict_app", "predict_score", "predict_train"]

predict_app = typer.Typer(
    name="predict",
    help="Failure prediction: train on earlier telemetry, test on later, score GPUs at risk.",
    no_args_is_help=True,
)
app.add_typer(predict_app, name="predict")


def _predict_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the classifier and its two baselines on the test period, one row each."""
    rows = []
    for key, label in (
        ("model", "classifier"),
        ("sbe_rule", "SBE rule"),
        ("never_predict", "never predict"),
    ):
        m = metrics[key]
        threshold = m.get("n_sbe_per_h") if key == "sbe_rule" else m.get("threshold")
        rows.append(
            {
                "predictor": label,
                "threshold": "never" if threshold in (None, float("inf")) else threshold,
                "precision": m["precision"],
                "recall": m["recall"],
                "pr_auc": m["pr_auc"],
                "lead_time_h": m["lead_time_h"],
                "alarms_per_day": m["alarms_per_day"],
                "caught": f"{int(m['n_caught'] or 0)}/{m['n_failures']}",
            }
        )
    return rows


@predict_app.command("train")
def predict_train(
    horizon_h: Annotated[
        float, typer.Option(min=1.0, help="Predict failures within this many hours.")
    ] = 24.0,
    test_fraction: Annotated[
        float, typer.Option(min=0.05, max=0.6, help="Latest share of the span held out to test.")
    ] = 0.3,
    calibration_fraction: Annotated[
        float, typer.Option(min=0.05, max=0.4, help="Share before the test slice to calibrate.")
    ] = 0.15,
    target_precision: Annotated[
        float, typer.Option(min=0.05, max=1.0, help="Precision the operating threshold aims at.")
    ] = 0.9,
    max_train_rows: Annotated[
        int, typer.Option(min=1_000, help="Sample healthy training GPU-hours down to this.")
    ] = 300_000,
    as_of_checks: Annotated[
        int, typer.Option(min=0, help="Prediction times re-computed from truncated data.")
    ] = 3,
    db: DbOption = None,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Train, test and store a failure predictor.

    Train a failure predictor, test it on the latest period, store it; print its precision,
    recall, PR-AUC and lead time next to the baselines (never predict; drain after N SBEs/h).

    ``--format csv`` writes the table of the classifier and its baselines.
    """
    from models import LeakageError
    from pipelines import warehouse
    from pipelines.analysis import predict as predict_mod
    from pipelines.runtime.errors import ReliaError

    shown = output_format(fmt, as_json)

    settings = load_settings(db_path=db)
    require_warehouse(settings.db_path, "int_gpu_health", lock_timeout_s=settings.lock_timeout_s)
    with warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con:
        warehouse.init(con)
        try:
            result = predict_mod.train_model(
                con,
                horizon_h=horizon_h,
                calibration_fraction=calibration_fraction,
                test_fraction=test_fraction,
                target_precision=target_precision,
                max_train_rows=max_train_rows,
                as_of_checks=as_of_checks,
            )
        except LeakageError as error:  # a feature that sees the future: the data's, exit 1
            exit_for(ReliaError(str(error)), label=type(error).__name__)
    windows = {k: v.isoformat() for k, v in result.bounds.items()}
    if shown is OutputFormat.json:
        print_json(
            {
                "model_id": result.model_id,
                "windows": windows,
                "metrics": result.metrics,
                "curve": result.curve.to_dicts(),
                "as_of_rows_checked": result.as_of_rows,
                "timings_s": result.timings_s,
            }
        )
        return
    predictors = _predict_rows(result.metrics)
    if shown is OutputFormat.csv:
        print_csv(predictors)
        return
    sizes = result.metrics["sizes"]
    console.print(
        rows_table(
            f"model {result.model_id}: failure of the GPU or its node within {horizon_h:g} h "
            f"(test {windows['test_start'][:16]} to {windows['test_end'][:16]})",
            predictors,
        )
    )
    console.print(rows_table("data", [sizes]))
    checked = (
        f"{result.as_of_rows} GPU-hours recomputed from truncated telemetry agree"
        if as_of_checks
        else "skipped"
    )
    console.print(
        f"as-of check: {checked}; recall at precision >= {target_precision:g} on the test "
        f"curve: {result.metrics['model']['recall_at_target_precision']:.3g}",
        highlight=False,
    )


@predict_app.command("score")
def predict_score(
    model_id: Annotated[
        str | None, typer.Option(help="Model to use (default: the latest trained).")
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(help="Prediction time, ISO (UTC; default: the latest hour of telemetry)."),
    ] = None,
    top: Annotated[int, typer.Option(min=1, help="GPUs to print, highest risk first.")] = 20,
    db: DbOption = None,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Score every GPU at one hour with a stored model, store the scores, print the riskiest."""
    from pipelines import warehouse
    from pipelines.analysis import predict as predict_mod

    shown = output_format(fmt, as_json)

    settings = load_settings(db_path=db)
    when = None if at is None else datetime.fromisoformat(at).replace(tzinfo=UTC)
    require_warehouse(settings.db_path, "int_gpu_health", lock_timeout_s=settings.lock_timeout_s)
    with warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con:
        warehouse.init(con)
        # no model yet: exit 1; an unknown --model-id: exit 2 (see exit_code_of)
        scores = predict_mod.score(con, model_id=model_id, at=when)
    rows = scores.head(top).drop("model_id", "scored_at").to_dicts()
    if shown is OutputFormat.json:
        print_json(
            {
                "model_id": scores.get_column("model_id").first() if scores.height else model_id,
                "n_scored": scores.height,
                "n_at_risk": int(scores.get_column("at_risk").sum()) if scores.height else 0,
                "scores": rows,
            }
        )
        return
    n_risk = int(scores.get_column("at_risk").sum()) if scores.height else 0
    for row in rows:
        row["at_risk"] = "yes" if row["at_risk"] else ""
        row["prediction_ts"] = row["prediction_ts"].isoformat(timespec="minutes")
    if shown is OutputFormat.csv:
        print_csv(rows)
        return
    console.print(rows_table(f"{n_risk} of {scores.height} GPUs at risk (top {top})", rows))
