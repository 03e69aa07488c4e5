"""The weekly report's inputs: its fit run and its goodput projection (fit and project stages).

The report reads; this module fits and projects. :func:`refresh_inputs` runs both stages on a
writable connection: it stores a lifetime fit run when none matches the current unit lives
(``fit_runs``/``fit_results``), then projects goodput at the report's target scales with the
what-if knob ranking and the measured restart and repair times, and stores that in
``report_projections`` (sql/schema/008_report_projections.sql), where
:func:`pipelines.report.data.read_goodput` finds it. The functions that compute are also what
the report falls back to on a read-only warehouse that nobody refreshed.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.report.containers import FitInfo
from pipelines.report.period import (
    CURVE_GPUS,
    DEFAULT_TARGET_GPUS,
    HOT_SPARE_SHARE,
    N_SAMPLES,
    RANDOM_SEED,
    Notes,
    chosen_fits,
    plain,
    query,
    read_window,
    report_period,
)
from pipelines.report.projection_store import frame_text, projection_inputs
from pipelines.runtime.errors import no_failures, no_lives
from pipelines.runtime.settings import DEFAULT_BACKTEST_MIN_GPUS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import duckdb

    from models.scenario import ClassRate, Projection, Scenario
    from pipelines.analysis.project_inputs import MeasuredRestart
    from pipelines.report.containers import (
        ClassExpected,
        CurvePoint,
        GoodputSection,
        KnobBaseline,
        ProjectionAssumptions,
        ProjectionTarget,
        SweepYaml,
    )

# --------------------------------------------------------------------------------------------
# Goodput projection
# --------------------------------------------------------------------------------------------
_KNOB_LABELS = {
    "checkpoint_s": ("blocking checkpoint write", " s"),
    "detect_s": ("fault detection time", " s"),
    "reschedule_s": ("time to get replacement nodes", " s"),
    "reload_s": ("checkpoint reload time", " s"),
    "strategy": ("recovery strategy", ""),
}


def _measured_restart(
    con: duckdb.DuckDBPyConnection, params: dict[str, object]
) -> dict[str, float | None]:
    row = query(
        con,
        """
        select
            (select median(repair_h) from rpt_replace_repairs where opened_ts < $asof)
                as repair_h,
            (select median(n) from (select count(slot) as n from rpt_fleet_gpus group by node))
                as gpus_per_node
        """,
        params,
    ).row(0, named=True)
    return {k: (float(v) if v is not None else None) for k, v in row.items()}


def _scaled_rate(rate: ClassRate, factor: float) -> ClassRate:
    return replace(
        rate,
        mtbf_h=rate.mtbf_h * factor,
        mtbf_lo_h=None if rate.mtbf_lo_h is None else rate.mtbf_lo_h * factor,
        mtbf_hi_h=None if rate.mtbf_hi_h is None else rate.mtbf_hi_h * factor,
    )


def goodput_projection(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    fits: pl.DataFrame,
    targets: tuple[int, ...],
    notes: Notes,
    *,
    fit_run_id: str | None = None,
) -> GoodputSection:
    """Return goodput against scale, the knob ranking and the scenario.

    Goodput against scale, at each target scale (steady state and new fleet), the knob
    ranking and the scenario, from the chosen fits and the measured restart and repair times.
    Never from default rates: fits with no failure (or no fits: no unit lives) give no
    projection, and ``scenario`` is then ``{"missing", "supply"}``
    (:class:`~pipelines.runtime.errors.MissingDataError`'s two parts) for the section to say.

    Returns
    -------
    GoodputSection
        ``headline`` (steady-state rows per target), ``curve``, ``targets``, ``knobs`` (frames)
        and ``scenario`` (the assumptions, in words and numbers); the models' warnings go to
        ``notes``.
    """
    from models import project

    chosen = chosen_fits(fits)
    with_failures = chosen.filter(pl.col("n_failures") > 0)
    left_out = sorted(chosen.filter(pl.col("n_failures") == 0).get_column("component_class"))
    if with_failures.height == 0:
        # the section says what is missing and what would supply it, in place of a projection
        lack = no_lives() if fits.height == 0 else no_failures(fit_run_id)
        return {
            "headline": [],
            "curve": pl.DataFrame(),
            "targets": pl.DataFrame(),
            "knobs": pl.DataFrame(),
            "scenario": {"missing": lack.missing, "supply": lack.supply},
        }
    rates, rates_at_ages = _goodput_rates(con, fits, notes, fit_run_id=fit_run_id)
    if left_out:
        notes.add(
            "Goodput: classes with no failure in the fit window are left out of the projection "
            "(rate taken as 0; their one-sided MTBF bounds are in section 2): "
            f"{', '.join(left_out)}."
        )
    setup = _report_scenario(con, params, targets[0], rates, notes)
    base = setup.base

    def at(n_gpus: int, **changes: Any) -> Projection:
        scenario = replace(base, n_gpus=n_gpus, **changes)
        return notes.run(
            "Goodput",
            lambda: project(scenario, n_samples=N_SAMPLES, random_state=RANDOM_SEED),
        )

    curve_rows = [
        _curve_row(n_gpus, at(n_gpus), targets) for n_gpus in sorted({*CURVE_GPUS, *targets})
    ]
    target_rows: list[ProjectionTarget] = []
    headline: list[ProjectionTarget] = []
    knob_frames: list[pl.DataFrame] = []
    by_class: list[ClassExpected] = []
    knob_baselines: list[KnobBaseline] = []
    for n_gpus in targets:
        for age in ("steady_state", "new"):
            if age == "steady_state":
                out = at(n_gpus, fleet_age=age)
            else:
                out = at(n_gpus, fleet_age=age, rates=rates_at_ages)
            row = _target_row(n_gpus, age, out)
            target_rows.append(row)
            if age == "steady_state":
                headline.append(row)
                by_class += _class_rows(n_gpus, out)
        knobs_at, held_at = _knob_ranking(base, n_gpus, rates, notes)
        knob_frames.append(knobs_at)
        knob_baselines.append(held_at)
    scenario = _scenario_summary(
        setup,
        rates,
        rates_at_ages,
        targets,
        fleet_age_assumption=target_rows[0]["fleet_age_assumption"],
        left_out=left_out,
        by_class=by_class,
        knob_baselines=knob_baselines,
    )
    return {
        "headline": headline,
        "curve": pl.DataFrame(curve_rows),
        "targets": pl.DataFrame(target_rows),
        "knobs": pl.concat(knob_frames, how="vertical_relaxed"),
        "scenario": scenario,
    }


def _goodput_rates(
    con: duckdb.DuckDBPyConnection, fits: pl.DataFrame, notes: Notes, *, fit_run_id: str | None
) -> tuple[tuple[ClassRate, ...], tuple[ClassRate, ...]]:
    """Return the interruption rates at steady state and at given ages (a new system)."""
    from models import rates_from_fits
    from pipelines.analysis.project_inputs import fit_rates, projection_fits

    if fit_run_id is not None:
        # the stored run's interruption rates (fit_rates), as `relia project --from-fits` reads
        # them; at given ages (a new system) each class's Weibull hazard, not the mean
        run_id = fit_run_id
        rates = notes.run("Goodput rates", lambda: fit_rates(con, run_id).rates)
        rates_at_ages = notes.run(
            "Goodput rates", lambda: fit_rates(con, run_id, at_ages=True).rates
        )
    else:  # fits made for this report: the same headline, from its rows
        rates = notes.run("Goodput rates", lambda: rates_from_fits(projection_fits(fits)))
        rates_at_ages = notes.run(
            "Goodput rates", lambda: rates_from_fits(projection_fits(fits), at_ages=True)
        )
    return rates, rates_at_ages


@dataclass(frozen=True)
class _ReportScenario:
    """The report's base scenario and the measurements it was built from."""

    base: Scenario
    gpus_per_node: int
    repair_h: float | None  # median measured repair time; None when nothing was repaired
    restart: MeasuredRestart  # project_inputs.measured_restart_s


def _report_scenario(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    n_gpus: int,
    rates: tuple[ClassRate, ...],
    notes: Notes,
) -> _ReportScenario:
    """Return the scenario of ``relia project --from-fits`` with the measured times."""
    from models import Scenario
    from pipelines.analysis.project import build_scenario
    from pipelines.analysis.project_inputs import measured_restart_s

    measured = _measured_restart(con, params)
    gpus_per_node = int(measured["gpus_per_node"] or 8)
    repair_h = measured["repair_h"]
    defaults = Scenario()
    # the same scenario as `relia project --from-fits`: the scheduler's median requeue gap after
    # hardware interruptions, less detection, is the reschedule time
    restart = measured_restart_s(con)
    base = build_scenario(
        {
            "n_gpus": n_gpus,
            "gpus_per_node": gpus_per_node,
            "failure_domain_gpus": gpus_per_node,
            "repair_h": max(repair_h, 1.0) if repair_h is not None else defaults.repair_h,
            "fleet_age": "steady_state",
        },
        rates=rates,
        measured=restart,
    )
    if restart["median_s"] is None:
        notes.add(
            "Goodput: no requeued hardware interruption to measure the restart gap from; the "
            f"default reschedule time of {defaults.reschedule_s:g} s is used."
        )
    return _ReportScenario(base, gpus_per_node, repair_h, restart)


def _curve_row(n_gpus: int, out: Projection, targets: tuple[int, ...]) -> CurvePoint:
    return {
        "n_gpus": n_gpus,
        "goodput": out["goodput"],
        "goodput_lo": out.get("goodput_lo", out["goodput"]),
        "goodput_hi": out.get("goodput_hi", out["goodput"]),
        "mtti_h": out["mtti_h"],
        "is_target": n_gpus in targets,
    }


def _target_row(n_gpus: int, age: str, out: Projection) -> ProjectionTarget:
    return {
        "n_gpus": n_gpus,
        "fleet_age": age,
        "mtti_h": out["mtti_h"],
        "mtti_lo_h": out.get("mtti_h_lo"),
        "mtti_hi_h": out.get("mtti_h_hi"),
        "expected_interruptions": out["expected_interruptions"],
        "checkpoint_interval_min": out["checkpoint_interval_min"],
        "goodput": out["goodput"],
        "goodput_lo": out.get("goodput_lo"),
        "goodput_hi": out.get("goodput_hi"),
        "ettr": out["ettr"],
        "lost_gpu_h_total": out["lost_gpu_h_total"],
        "energy_lost_mwh": out["energy_lost_mwh"],
        "fleet_age_assumption": out["fleet_age_assumption"],
        "uncertainty": out["uncertainty"],
    }


def _class_rows(n_gpus: int, out: Projection) -> list[ClassExpected]:
    return [
        {
            "n_gpus": n_gpus,
            "component_class": name,
            "level": v["level"],
            "units": v["units"],
            "expected": v["expected"],
            "expected_lo": v["expected_lo"],
            "expected_hi": v["expected_hi"],
        }
        for name, v in out["expected_interruptions_by_class"].items()
    ]


def _scenario_summary(
    setup: _ReportScenario,
    rates: tuple[ClassRate, ...],
    rates_at_ages: tuple[ClassRate, ...],
    targets: tuple[int, ...],
    *,
    fleet_age_assumption: str,
    left_out: list[str],
    by_class: list[ClassExpected],
    knob_baselines: list[KnobBaseline],
) -> ProjectionAssumptions:
    """Return the assumptions of the projection, in words and numbers (the stored JSON)."""
    base = setup.base
    restart_s = setup.restart["median_s"]
    return {
        "gpus_per_node": setup.gpus_per_node,
        "failure_domain_gpus": setup.gpus_per_node,
        "job_days": base.job_days,
        "checkpoint_s": base.checkpoint_s,
        "detect_s": base.detect_s,
        "reschedule_s": base.reschedule_s,
        "reschedule_measured": restart_s is not None,
        "restart_gap_s": restart_s,
        "n_restart_gaps": setup.restart["n"],
        "reload_s": base.reload_s,
        "warmup_s": base.warmup_s,
        "repair_h": base.repair_h,
        "repair_measured": setup.repair_h is not None,
        "strategy": base.strategy,
        "fleet_age": base.fleet_age,
        "fleet_age_assumption": fleet_age_assumption,
        "rates": [
            {
                "component_class": r.component_class,
                "level": r.level,
                "mtbf_h": r.mtbf_h,
                "weibull_shape": r.weibull_shape,
                "extrapolated": r.extrapolated,
            }
            for r in rates
        ],
        "extrapolated": [r.component_class for r in rates if r.extrapolated],
        "left_out": left_out,
        # expected interruptions of one job per class at each target (steady state), with each
        # class's own 95 % interval (models.expected_by_class)
        "expected_by_class": by_class,
        "n_samples": N_SAMPLES,
        "targets": list(targets),
        "hot_spare_share": HOT_SPARE_SHARE,
        "knob_baselines": knob_baselines,
        # the steady-state rates are the observed ones (shape 1); ages matter through the
        # Weibull fits a new fleet is projected with
        "fleet_age_matters": any(r.weibull_shape != 1.0 for r in rates_at_ages),
    }


def _knob_ranking(
    base: Scenario,
    n_gpus: int,
    rates: tuple[ClassRate, ...],
    notes: Notes,
) -> tuple[pl.DataFrame, KnobBaseline]:
    """Return the gains over the report's baseline at ``n_gpus``.

    Gains over the report's baseline at ``n_gpus`` (as ``relia whatif`` defines them), plus
    doubling the worst class's MTBF; and the sweep that reproduces the ranking.

    The baseline is the report's scenario at ``n_gpus``, with a pool of hot spares of
    ``HOT_SPARE_SHARE`` of the job's domains (used when a knob switches the strategy to
    ``hot_spare`` or ``elastic``); every other knob is held at it. The returned sweep
    (``base``, ``baseline``, ``grid``, ``target_gpus``) run by ``relia whatif`` gives the same
    gains.
    """
    from models import knob_gains, knob_label, project

    n_domains = math.ceil(n_gpus / base.failure_domain_gpus)
    at_scale = replace(base, n_gpus=n_gpus, hot_spares=max(1, round(HOT_SPARE_SHARE * n_domains)))
    grid: dict[str, list[float | str]] = {
        "checkpoint_s": [at_scale.checkpoint_s, 10.0],
        "detect_s": [at_scale.detect_s, 30.0],
        "reschedule_s": [at_scale.reschedule_s, min(at_scale.reschedule_s, 60.0)],
        "reload_s": [at_scale.reload_s, 60.0],
        "strategy": ["restart", "hot_spare", "elastic"],
    }
    grid = {k: list(dict.fromkeys(v)) for k, v in grid.items()}
    ranking = notes.run(
        "What-if ranking",
        lambda: knob_gains(at_scale, grid, n_samples=N_SAMPLES, random_state=RANDOM_SEED),
    )
    rows = []
    for row in ranking.gains.iter_rows(named=True):
        label, unit = _KNOB_LABELS.get(row["knob"], (row["knob"], ""))
        best = row["best_value"]
        if row["knob"] == "strategy" and best == "hot_spare":
            best = f"hot_spare ({at_scale.hot_spares} spare nodes)"
        change = f"{plain(row['baseline_value'])}{unit} → {plain(best)}{unit}".strip()
        if row["gain"] == 0:
            change = f"{plain(row['baseline_value'])}{unit} (already the best)".strip()
        rows.append(
            {
                "n_gpus": n_gpus,
                "knob_name": row["knob"],
                "knob": label,
                "change": change,
                "goodput_baseline": row["goodput_baseline"],
                "goodput_best": row["goodput_best"],
                "gain": row["gain"],
                "gain_lo": row["gain_lo"],
                "gain_hi": row["gain_hi"],
                "within_uncertainty": row["within_uncertainty"],
                "gain_useful_gpu_h": row["gain_useful_gpu_h"],
            }
        )
    # which class costs the most interruptions at this scale: units x failures per unit-hour
    nodes = math.ceil(n_gpus / at_scale.gpus_per_node)
    worst = max(rates, key=lambda r: (n_gpus if r.level == "gpu" else nodes) / r.mtbf_h)
    better = tuple(_scaled_rate(r, 2.0) if r is worst else r for r in rates)
    reference = notes.run("Goodput", lambda: project(at_scale))
    improved = notes.run("Goodput", lambda: project(replace(at_scale, rates=better)))
    rows.append(
        {
            "n_gpus": n_gpus,
            "knob_name": None,
            "knob": f"{worst.component_class} reliability",
            "change": f"MTBF {worst.mtbf_h:,.0f} h → {2 * worst.mtbf_h:,.0f} h",
            "goodput_baseline": reference["goodput"],
            "goodput_best": improved["goodput"],
            "gain": improved["goodput"] - reference["goodput"],
            "gain_lo": None,
            "gain_hi": None,
            "within_uncertainty": None,
            "gain_useful_gpu_h": improved["useful_gpu_h"] - reference["useful_gpu_h"],
        }
    )
    held = {k: knob_label(k, getattr(at_scale, k)) for k in grid}
    fixed = {
        f.name: getattr(at_scale, f.name)
        for f in fields(at_scale)
        if f.name not in grid and f.name not in ("n_gpus", "rates")
    }
    fixed["rates"] = [asdict(r) for r in at_scale.rates]
    fixed["node_groups"] = [list(g) for g in at_scale.node_groups]
    sweep_spec: SweepYaml = {
        "target_gpus": n_gpus,
        "base": fixed,
        "baseline": {k: getattr(at_scale, k) for k in grid},
        "grid": grid,
    }
    baseline: KnobBaseline = {
        "n_gpus": n_gpus,
        "held": ", ".join(
            f"{_KNOB_LABELS.get(k, (k, ''))[0]} {plain(v)}{_KNOB_LABELS.get(k, (k, ''))[1]}"
            for k, v in held.items()
        )
        + f"; {at_scale.hot_spares} hot spare nodes, repairs {at_scale.repair_h:.3g} h",
        "uncertainty": ranking.uncertainty,
        "sweep": sweep_spec,
    }
    frame = pl.DataFrame(
        rows,
        schema_overrides={
            "knob_name": pl.String,
            "gain_lo": pl.Float64,
            "gain_hi": pl.Float64,
            "within_uncertainty": pl.Boolean,
        },
    )
    return frame.sort("gain", descending=True, maintain_order=True), baseline


def read_fits(
    con: duckdb.DuckDBPyConnection, lives: pl.DataFrame, notes: Notes
) -> tuple[pl.DataFrame, FitInfo]:
    """Return the chosen per-class fit rows of the newest stored run matching the lives, else fresh.

    The run's rates and headline come as :attr:`FitInfo.rates` (its ``rpt_class_rates`` rows);
    a matching run stored without rates (an older relia) gets them computed from the same lives,
    and the note says so. Only lifetime runs count (a repair-time run is never the fleet's
    MTBF). No lives give no rows and a note that says what is missing (``source`` ``"none"``).
    """
    from pipelines.analysis.fit import fit_table, rate_table, run_ids, stored_rates

    if lives.height == 0:  # fit_results' columns with no row; nothing is fitted
        lack = no_lives()
        text = f"Fits: none, {lack.missing}; to fit the fleet, {lack.supply}."
        empty = query(con, "select * from fit_results where false")
        return empty, FitInfo("none", None, None, None, None, text)
    counts = (
        lives.group_by("component_class")
        .agg(pl.len().alias("n_units"), pl.col("failed").sum().alias("n_failures"))
        .sort("component_class")
    )
    lifetime_runs = run_ids(con, quantity="lifetime")
    runs = (
        con.execute(
            """
            select run_id, created_at, window_start, window_end
            from fit_runs
            where
                run_id in (select run_id from fit_results where cohort = 'all')
                and list_contains($ids, run_id)
            order by created_at desc
            limit 5
            """,
            {"ids": lifetime_runs},
        ).fetchall()
        if lifetime_runs
        else []
    )
    stale: list[str] = []
    for run_id, created_at, start, end in runs:
        rows = query(
            con,
            "select * from fit_results where run_id = $id and cohort = 'all' "
            "order by component_class, family",
            {"id": run_id},
        )
        stored = (
            rows.group_by("component_class")
            .agg(pl.col("n_units").first(), pl.col("n_failures").first())
            .sort("component_class")
            .with_columns(pl.col("n_units", "n_failures").cast(pl.Int64))
        )
        if stored.equals(counts.with_columns(pl.col("n_units", "n_failures").cast(pl.Int64))):
            text = (
                f"Fits: stored fit run {run_id} (created {created_at:%Y-%m-%d %H:%M} UTC, data "
                f"window {start:%Y-%m-%d} to {end:%Y-%m-%d}), AIC-chosen family per class."
            )
            if stale:
                text += f" Newer runs {', '.join(stale)} do not match the current lives."
            rates = stored_rates(con, run_id)
            if rates is None or rates.height == 0:
                rates = notes.run("Rates", lambda: rate_table(lives))
                text += (
                    f" Run {run_id} stored no interruption rates (an older relia stored it): "
                    "the rates are computed for this report from the same unit lives."
                )
            return rows, FitInfo("stored", run_id, created_at, start, end, text, rates)
        stale.append(run_id)
    computed = notes.run("Fit", lambda: fit_table(lives))
    text = (
        "Fits: computed for this report from fct_component_lives (no stored fit run matches the "
        "current unit lives"
        + (f"; runs {', '.join(stale)} were fitted on other data" if stale else "")
        + "); run `relia fit` to store one."
    )
    rates = notes.run("Rates", lambda: rate_table(lives))
    return computed, FitInfo("computed", None, None, None, None, text, rates)


# --------------------------------------------------------------------------------------------
# The stages: fit, project, and the projection the report reads
# --------------------------------------------------------------------------------------------
def fit_for_report(con: duckdb.DuckDBPyConnection) -> str | None:
    """Fit stage: the lifetime fit run matching the current unit lives, stored if there is none.

    Parameters
    ----------
    con
        Writable warehouse connection with the schema applied.

    Returns
    -------
    str or None
        The run id in ``fit_runs`` the report will read; None when there are no unit lives
        (nothing is stored).
    """
    from pipelines.analysis import fit as fitting

    lives = query(con, "select * from fct_component_lives")
    if lives.height == 0:
        return None  # nothing to fit: the report's sections say so (no empty run is stored)
    fits, info = read_fits(con, lives, Notes())
    if info.run_id is not None:
        return info.run_id
    # the rates the report computed are the ones stored: computed once
    return fitting.store_fit(con, fits, by=[], window=fitting.read_window(con), rates=info.rates)


def project_for_report(
    con: duckdb.DuckDBPyConnection,
    *,
    week: str | None = None,
    target_gpus: Sequence[int] = DEFAULT_TARGET_GPUS,
) -> str | None:
    """Project stage: the report's goodput projection from the stored fit run, stored.

    Parameters
    ----------
    con
        Writable warehouse connection with the schema applied.
    week
        ISO week ``YYYY-Www``; ``None`` takes the last full week of the observation window.
    target_gpus
        Job scales (GPUs) the projection is made at, in report order.

    Returns
    -------
    str or None
        The ``report_projections`` run id; None when no stored fit run matches the lives (run
        :func:`fit_for_report` first).
    """
    period = report_period(*read_window(con), week)
    lives = query(con, "select * from fct_component_lives")
    fits, info = read_fits(con, lives, Notes())
    if info.run_id is None:
        return None
    targets = tuple(int(n) for n in target_gpus)
    notes = Notes()
    goodput = goodput_projection(con, period.params(), fits, targets, notes, fit_run_id=info.run_id)
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    result = {  # the stored JSON (report_projections.result_json)
        "headline": goodput["headline"],
        "curve": frame_text(goodput["curve"]),
        "targets": frame_text(goodput["targets"]),
        "knobs": frame_text(goodput["knobs"]),
        "notes": notes.items,
    }
    con.execute(
        "insert into report_projections (run_id, created_at, fit_run_id, target_gpus, "
        "inputs_json, scenario_json, result_json) "
        "values ($id, $now, $fit, $targets, $inputs, $scenario, $result)",
        {
            "id": run_id,
            "now": datetime.now(UTC),
            "fit": info.run_id,
            "targets": ",".join(map(str, targets)),
            "inputs": json.dumps(projection_inputs(con, period)),
            "scenario": json.dumps(goodput["scenario"], default=_json_scalar),
            "result": json.dumps(result, default=_json_scalar),
        },
    )
    return run_id


def refresh_inputs(
    con: duckdb.DuckDBPyConnection,
    *,
    week: str | None = None,
    target_gpus: Sequence[int] = DEFAULT_TARGET_GPUS,
    backtest_min_gpus: int = DEFAULT_BACKTEST_MIN_GPUS,
) -> dict[str, str | None]:
    """Run the fit, project and back-test stages the weekly report reads.

    What ``relia report`` runs before :func:`pipelines.report.build_report`; the
    ``weekly-report`` flow runs them as tasks. The expensive views are first snapshotted as
    tables (:func:`pipelines.warehouse.materialize`), once per change of the data under them.

    Parameters
    ----------
    con
        Writable warehouse connection with the schema applied (``warehouse.apply_schema``).
    week, target_gpus
        As for :func:`pipelines.report.build_report`.
    backtest_min_gpus
        Smallest job (GPUs) the back-test covers (:func:`pipelines.analysis.backtest.run_backtest`).

    The three stages write in one transaction: a stage that fails leaves none of the runs
    behind (no fit run without its projection, nothing half-written).

    Returns
    -------
    dict
        ``fit_run_id``, ``projection_run_id`` and ``backtest_run_id``; each None when its stage
        had nothing to work on (no unit lives; no jobs for the back-test), which the report's
        sections say.
    """
    from pipelines import warehouse
    from pipelines.analysis.backtest import backtest_unless_missing

    warehouse.materialize(con)  # the stages and the report read the same views: compute once
    with warehouse.transaction(con):
        fit_run_id = fit_for_report(con)
        projection = project_for_report(con, week=week, target_gpus=target_gpus)
        backtest = backtest_unless_missing(con, min_gpus=backtest_min_gpus)
    return {
        "fit_run_id": fit_run_id,
        "projection_run_id": projection,
        "backtest_run_id": None if backtest is None else backtest.run_id,
    }


def refresh_warehouse(
    db_path: Path,
    *,
    week: str | None = None,
    target_gpus: Sequence[int] = DEFAULT_TARGET_GPUS,
    lock_timeout_s: float,
    backtest_min_gpus: int = DEFAULT_BACKTEST_MIN_GPUS,
) -> dict[str, str | None]:
    """:func:`refresh_inputs` on the warehouse at ``db_path`` (opened for writing, schema applied).

    What ``relia report`` and ``relia demo`` run before building the report; the
    ``weekly-report`` flow runs the three stages as separate tasks instead.
    """
    from pipelines import warehouse

    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        return refresh_inputs(
            con, week=week, target_gpus=target_gpus, backtest_min_gpus=backtest_min_gpus
        )


def _json_scalar(value: object) -> object:
    """Numpy scalars as Python numbers, anything else as text (``json.dumps`` default)."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)
