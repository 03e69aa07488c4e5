"""The goodput projection at the report's target scales and the what-if knob ranking."""

from __future__ import annotations

import math
from dataclasses import asdict, fields, replace
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.report.period import (
    CURVE_GPUS,
    HOT_SPARE_SHARE,
    N_SAMPLES,
    RANDOM_SEED,
    Notes,
    chosen_fits,
    plain,
    query,
)

if TYPE_CHECKING:
    import duckdb

    from models.goodput import ClassRate, Scenario

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
) -> dict[str, Any]:
    from models import Scenario, project, rates_from_fits
    from pipelines.project import build_scenario, measured_restart_s, projection_fits

    empty: dict[str, Any] = {
        "headline": [],
        "curve": pl.DataFrame(),
        "targets": pl.DataFrame(),
        "knobs": pl.DataFrame(),
        "scenario": {},
    }
    chosen = chosen_fits(fits)
    with_failures = chosen.filter(pl.col("n_failures") > 0)
    left_out = sorted(chosen.filter(pl.col("n_failures") == 0).get_column("component_class"))
    if with_failures.height == 0:
        notes.add("Goodput: no failures in the fits, so no projection.")
        return empty
    rates = notes.run("Goodput rates", lambda: rates_from_fits(projection_fits(fits)))
    # a projection at given ages (a new system) uses each class's Weibull hazard, not the mean
    rates_at_ages = notes.run(
        "Goodput rates", lambda: rates_from_fits(projection_fits(fits), at_ages=True)
    )
    if left_out:
        notes.add(
            "Goodput: classes with no failure in the fit window are left out of the projection "
            "(rate taken as 0; their one-sided MTBF bounds are in section 2): "
            f"{', '.join(left_out)}."
        )
    measured = _measured_restart(con, params)
    gpus_per_node = int(measured["gpus_per_node"] or 8)
    repair_h = measured["repair_h"]
    defaults = Scenario()
    # the same scenario as `relia project --from-fits`: the scheduler's median requeue gap after
    # hardware interruptions, less detection, is the reschedule time
    restart = measured_restart_s(con)
    restart_s = restart["median_s"]
    base = build_scenario(
        {
            "n_gpus": targets[0],
            "gpus_per_node": gpus_per_node,
            "failure_domain_gpus": gpus_per_node,
            "repair_h": max(repair_h, 1.0) if repair_h is not None else defaults.repair_h,
            "fleet_age": "steady_state",
        },
        rates=rates,
        measured=restart,
    )
    if restart_s is None:
        notes.add(
            "Goodput: no requeued hardware interruption to measure the restart gap from; the "
            f"default reschedule time of {defaults.reschedule_s:g} s is used."
        )

    def at(n_gpus: int, **changes: Any) -> dict[str, Any]:
        scenario = replace(base, n_gpus=n_gpus, **changes)
        return notes.run(
            "Goodput",
            lambda: project(scenario, n_samples=N_SAMPLES, random_state=RANDOM_SEED),
        )

    curve_rows = []
    for n_gpus in sorted({*CURVE_GPUS, *targets}):
        out = at(n_gpus)
        curve_rows.append(
            {
                "n_gpus": n_gpus,
                "goodput": out["goodput"],
                "goodput_lo": out.get("goodput_lo", out["goodput"]),
                "goodput_hi": out.get("goodput_hi", out["goodput"]),
                "mtti_h": out["mtti_h"],
                "is_target": n_gpus in targets,
            }
        )
    target_rows, headline, knob_frames = [], [], []
    knob_baselines: list[dict[str, Any]] = []
    for n_gpus in targets:
        for age in ("steady_state", "new"):
            if age == "steady_state":
                out = at(n_gpus, fleet_age=age)
            else:
                out = at(n_gpus, fleet_age=age, rates=rates_at_ages)
            row = {
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
            target_rows.append(row)
            if age == "steady_state":
                headline.append(row)
        knobs_at, held_at = _knob_ranking(base, n_gpus, rates, notes)
        knob_frames.append(knobs_at)
        knob_baselines.append(held_at)
    scenario = {
        "gpus_per_node": gpus_per_node,
        "failure_domain_gpus": gpus_per_node,
        "job_days": base.job_days,
        "checkpoint_s": base.checkpoint_s,
        "detect_s": base.detect_s,
        "reschedule_s": base.reschedule_s,
        "reschedule_measured": restart_s is not None,
        "restart_gap_s": restart_s,
        "n_restart_gaps": restart["n"],
        "reload_s": base.reload_s,
        "warmup_s": base.warmup_s,
        "repair_h": base.repair_h,
        "repair_measured": repair_h is not None,
        "strategy": base.strategy,
        "fleet_age": base.fleet_age,
        "fleet_age_assumption": target_rows[0]["fleet_age_assumption"],
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
        "n_samples": N_SAMPLES,
        "targets": list(targets),
        "hot_spare_share": HOT_SPARE_SHARE,
        "knob_baselines": knob_baselines,
        "fleet_age_matters": any(r.weibull_shape != 1.0 for r in rates),
    }
    return {
        "headline": headline,
        "curve": pl.DataFrame(curve_rows),
        "targets": pl.DataFrame(target_rows),
        "knobs": pl.concat(knob_frames, how="vertical_relaxed"),
        "scenario": scenario,
    }


def _knob_ranking(
    base: Scenario,
    n_gpus: int,
    rates: tuple[ClassRate, ...],
    notes: Notes,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Gains over the report's baseline at ``n_gpus`` (as ``relia whatif`` defines them), plus
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
    grid = {
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
    sweep_spec = {
        "target_gpus": n_gpus,
        "base": fixed,
        "baseline": {k: getattr(at_scale, k) for k in grid},
        "grid": grid,
    }
    baseline = {
        "n_gpus": n_gpus,
        "held": ", ".join(
            f"{_KNOB_LABELS.get(k, (k, ''))[0]} {plain(v)}{_KNOB_LABELS.get(k, (k, ''))[1]}"
            for k, v in held.items()
        )
        + f"; {at_scale.hot_spares} hot spare nodes, repairs {at_scale.repair_h:.3g} h",
        "uncertainty": ranking.uncertainty,
        "sweep": sweep_spec,
    }
    frame = pl.DataFrame(rows, schema_overrides={"knob_name": pl.String, "gain_lo": pl.Float64,
                                                 "gain_hi": pl.Float64,
                                                 "within_uncertainty": pl.Boolean})  # fmt: skip
    return frame.sort("gain", descending=True, maintain_order=True), baseline
