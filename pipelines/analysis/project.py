"""Goodput projections and what-if sweeps from warehouse fits (I/O side of ``models.goodput``).

Rates come from a stored fit run (the AIC-chosen row of every class over the whole fleet) or are
given by hand; restart time defaults to what the scheduler measured (median gap between a
hardware interruption and the job's next attempt). The repair-time law is given by hand, measured
from the closed replacement tickets, or taken from a stored repair-time fit run (its pooled
log-normal). Those inputs are read by :mod:`pipelines.analysis.project_inputs`. Results are stored
in ``projections``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from pipelines.analysis.project_inputs import (
    RATE_PROCESSES,
    FittedRates,
    FittedRepair,
    InventoryAges,
    fit_rates,
    fitted_repair,
    inventory_ages,
    measured_repair,
    measured_restart_s,
    no_rates_warning,
)

# re-exported: callers read it as ``pipelines.analysis.project.projection_fits``
from pipelines.analysis.project_inputs import projection_fits as projection_fits
from pipelines.analysis.sweep_outputs import drain_thresholds, plot_sweep
from pipelines.analysis.sweep_spec import SweepSpec
from pipelines.runtime.errors import WarehouseMissingError
from pipelines.runtime.settings import DEFAULT_LOCK_TIMEOUT_S, read_lock_timeout_s

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import duckdb
    import polars as pl

    from models import ClassRate, KnobGain, SimulationSummary
    from models.scenario import Projection, Scenario
    from pipelines.analysis.knobs import RestartShorthand
    from pipelines.analysis.project_inputs import MeasuredRepair, MeasuredRestart
    from pipelines.analysis.sweep_outputs import DrainThresholds

# polars, PyYAML and the warehouse (DuckDB) are imported by the functions that use them: a
# projection without a warehouse (``relia project`` with hand-given or default rates) needs none

logger = logging.getLogger(__name__)


def build_scenario(
    knobs: Mapping[str, Any],
    *,
    rates: tuple[ClassRate, ...] = (),
    measured: MeasuredRestart | None = None,
) -> Scenario:
    """Return a ``Scenario`` from knobs.

    Measured restart overhead fills ``reschedule_s`` when not given.

    Knob names and values are normalised as in the CLI and sweep YAML
    (:mod:`pipelines.analysis.knobs`):
    ``weibull_shape`` as a number or ``{class: shape}``, ``node_groups`` as ``share:multiplier``
    pairs, and ``restart_s`` split into ``reschedule_s`` with the other phases held
    (:func:`pipelines.analysis.knobs.restart_shorthand`). The scheduler sees the gap from an
    interruption to the next attempt's start: detection plus rescheduling wait. When measured and
    the user gave no ``reschedule_s`` (or ``restart_s``), it becomes ``median gap - detect_s`` (at
    least 0).
    """
    from models import Scenario
    from pipelines.analysis import knobs as knob_text

    given, _ = knob_text.restart_shorthand(knob_text.knobs(knobs, where="scenario"))
    if rates:
        given["rates"] = rates
        given.pop("node_failures_per_1000_node_days", None)
    median_s = measured.get("median_s") if measured else None
    if median_s is not None and "reschedule_s" not in given:
        detect = given.get("detect_s", Scenario().detect_s)
        given["reschedule_s"] = max(0.0, float(median_s) - float(detect))
    try:
        return Scenario(**given)
    except TypeError as error:  # a value of the wrong kind that normalisation let through
        msg = f"scenario: {error}"
        raise ValueError(msg) from None


@dataclasses.dataclass(frozen=True)
class ProjectionRun:
    """One projected scenario and where its inputs came from (:func:`run_projection`).

    ``projection`` holds the figures of :func:`models.project`; the other fields are None when
    the run did not read them: ``fitted_rates`` (and ``measured_restart``) with a fit run,
    ``measured_repair`` / ``fitted_repair`` / ``inventory_ages`` when asked for,
    ``restart_shorthand`` when ``restart_s`` was given, ``simulation`` with Monte Carlo trials.
    """

    projection: Projection
    scenario: Scenario
    fit_run_id: str | None = None
    measured_restart: MeasuredRestart | None = None
    fitted_rates: FittedRates | None = None
    rates_warning: str | None = None
    measured_repair: MeasuredRepair | None = None
    fitted_repair: FittedRepair | None = None
    inventory_ages: InventoryAges | None = None
    restart_shorthand: RestartShorthand | None = None
    simulation: SimulationSummary | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """Return the result as `relia project --json` prints it and ``projections`` stores it."""
        # the JSON edge: the projection's keys, then its provenance, in this order
        result: dict[str, Any] = dict(self.projection)
        result["fit_run_id"] = self.fit_run_id
        result["measured_restart"] = self.measured_restart
        result["rate_process"] = None
        if self.fitted_rates is not None:
            _say_fitted_rates(result, self.fitted_rates)
        if self.rates_warning is not None:
            result["rates_warning"] = self.rates_warning
        if self.measured_repair is not None:
            result["measured_repair"] = self.measured_repair
        if self.fitted_repair is not None:
            result["fitted_repair"] = self.fitted_repair.to_json_dict()
        if self.inventory_ages is not None:
            result["inventory_ages"] = self.inventory_ages.to_json_dict()
        if self.restart_shorthand is not None:
            result["restart_shorthand"] = self.restart_shorthand
        result["scenario"] = _scenario_dict(self.scenario)
        if self.simulation is not None:  # its figures; the per-trial table stays out of JSON
            result["simulation"] = {
                k: v for k, v in self.simulation.to_dict().items() if k != "trials"
            }
        return result


@dataclasses.dataclass(frozen=True)
class _ReadKnobs:
    """Knob values read from the warehouse; each replaces the user's value of its knob.

    ``fleet_age`` is the inventory's age mix (``fleet_age: inventory``), ``repair_h`` and
    ``repair_sigma`` the measured or fitted repair-time law; None where nothing was read.
    """

    fleet_age: tuple[tuple[float, float], ...] | None = None
    repair_h: float | None = None
    repair_sigma: float | None = None

    def values(self) -> dict[str, float | tuple[tuple[float, float], ...]]:
        """Return the knobs that were read, by name (laid over the given knobs)."""
        read = {"fleet_age": self.fleet_age}
        read_repair = {"repair_h": self.repair_h, "repair_sigma": self.repair_sigma}
        return {k: v for k, v in (read | read_repair).items() if v is not None}


@dataclasses.dataclass(frozen=True)
class _WarehouseInputs:
    """What a projection or a sweep reads from the warehouse; None where it does not ask."""

    fitted_rates: FittedRates | None = None
    measured_restart: MeasuredRestart | None = None
    measured_repair: MeasuredRepair | None = None
    fitted_repair: FittedRepair | None = None
    drain: tuple[str, pl.DataFrame] | None = None  # the predictor's model id and curve
    inventory: InventoryAges | None = None


def run_projection(
    db_path: Path | None,
    knobs: Mapping[str, Any],
    *,
    fit_run: str | None = None,
    n_samples: int = 2000,
    simulate_trials: int = 0,
    seed: int = 0,
    repair_from_warehouse: bool = False,
    repair_from_fits: str | None = None,
    default_rates_if_none: bool = False,
    rate_process: str | None = None,
) -> ProjectionRun:
    """Project one scenario; with ``fit_run`` the rates come from that fit (``latest`` works).

    ``latest`` is the newest run of the failure process (``fct_component_lives``); with
    ``rate_process="replacement"`` the newest run of replacement lives (see
    :func:`pipelines.analysis.project_inputs.fit_rates`). The result says which process it projected
    (``rate_process``: ``failure``, ``replacement``, or None for hand-given or default rates),
    where the rates came from (``rate_source``), the classes left out for having no failure
    (``classes_without_failures``) and, per class, the interruptions the job expects with the
    bounds of the class's exact interval (``expected_interruptions_by_class``).

    A fit run with no failure in any class is a :class:`~pipelines.runtime.errors.MissingDataError`,
    unless rates are given by hand (``node_failures_per_1000_node_days``) or
    ``default_rates_if_none``: then those rates (or the scenario's defaults) are used and
    ``rates_warning`` says so, naming them.

    With ``repair_from_warehouse``, ``repair_h`` and ``repair_sigma`` are the median and the
    log-normal sigma of the measured repair times (:func:`measured_repair`). With
    ``repair_from_fits`` (a repair run id or ``latest``) they are the median ``exp(mu_)`` and the
    ``sigma_`` of that run's pooled log-normal fit (:func:`fitted_repair`), reported under
    ``fitted_repair`` with the run and its MTTR and interval. With
    ``fleet_age: "inventory"`` the fleet age is the age mix of the units in service at the end
    of the warehouse's data (:func:`inventory_ages`), reported under ``inventory_ages``.

    Returns
    -------
    ProjectionRun
        The projection and its provenance; :meth:`ProjectionRun.to_json_dict` gives the keys
        named above.
    """
    from models import project
    from pipelines.analysis import knobs as knob_text

    if repair_from_warehouse and repair_from_fits is not None:
        msg = "give --repair-from-warehouse or --repair-from-fits, not both"
        raise ValueError(msg)
    if repair_from_fits is not None and "repair_sigma" in knobs:
        msg = "give --repair-sigma or --repair-from-fits, not both"
        raise ValueError(msg)
    read = _read_projection_inputs(
        db_path,
        knobs,
        fit_run=fit_run,
        repair_from_warehouse=repair_from_warehouse,
        repair_from_fits=repair_from_fits,
        if_none=default_rates_if_none,
        rate_process=rate_process,
    )
    fitted_rates = read.fitted_rates
    rates = fitted_rates.rates if fitted_rates is not None else ()
    run_id = fitted_rates.run_id if fitted_rates is not None else None
    given = {**knobs, **_read_knobs(knobs, read).values()}
    _, shorthand = knob_text.restart_shorthand(knob_text.knobs(given, where="scenario"))
    scenario = build_scenario(given, rates=rates, measured=read.measured_restart)
    projection = project(scenario, n_samples=n_samples, random_state=seed)
    simulation = None
    if simulate_trials > 0:
        from models import simulate_job  # the Monte Carlo's modules only when it runs

        simulation = simulate_job(scenario, n_trials=simulate_trials, random_state=seed)
    result = ProjectionRun(
        projection=projection,
        scenario=scenario,
        fit_run_id=run_id,
        measured_restart=read.measured_restart,
        fitted_rates=fitted_rates,
        rates_warning=no_rates_warning(run_id, scenario.rate_source)
        if run_id is not None and not rates
        else None,
        measured_repair=read.measured_repair,
        fitted_repair=read.fitted_repair,
        inventory_ages=read.inventory,
        restart_shorthand=shorthand,
        simulation=simulation,
    )
    if db_path is not None and fit_run is not None:
        _store(db_path, run_id, result.to_json_dict())
    return result


def _read_projection_inputs(
    db_path: Path | None,
    knobs: Mapping[str, Any],
    *,
    fit_run: str | None,
    repair_from_warehouse: bool,
    repair_from_fits: str | None,
    if_none: bool,
    rate_process: str | None,
) -> _WarehouseInputs:
    """Return the fitted rates, repair times and inventory ages the projection asks for."""
    from pipelines.analysis import knobs as knob_text

    from_inventory = knobs.get("fleet_age") == knob_text.INVENTORY
    needs_db = repair_from_warehouse or repair_from_fits is not None or from_inventory
    if fit_run is None and not needs_db:
        return _WarehouseInputs()
    if db_path is None:
        msg = (
            "--from-fits, --repair-from-warehouse, --repair-from-fits and --fleet-age "
            "inventory need a warehouse (--db)"
        )
        raise ValueError(msg)
    _check_warehouse(db_path)
    from pipelines import warehouse

    fitted_rates, measured, repair, fitted, inventory = None, None, None, None, None
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=read_lock_timeout_s()) as con:
        if fit_run is not None:
            at_ages = knobs.get("fleet_age", "steady_state") != "steady_state"
            by_hand = knobs.get("node_failures_per_1000_node_days") is not None
            fitted_rates = fit_rates(
                con,
                fit_run,
                at_ages=at_ages,
                if_none=if_none or by_hand,
                process=rate_process,
            )
            measured = measured_restart_s(con)
        if repair_from_warehouse:
            repair = measured_repair(con)
        if repair_from_fits is not None:
            fitted = fitted_repair(con, repair_from_fits)
        if from_inventory:
            inventory = inventory_ages(con)
    return _WarehouseInputs(fitted_rates, measured, repair, fitted, inventory=inventory)


def _read_knobs(knobs: Mapping[str, Any], read: _WarehouseInputs) -> _ReadKnobs:
    """Return the inventory's age mix and the repair times read, which replace the given knobs."""
    fleet_age = read.inventory.fleet_age if read.inventory is not None else None
    if read.measured_repair is not None:
        if "repair_sigma" in knobs:
            msg = "give --repair-sigma or --repair-from-warehouse, not both"
            raise ValueError(msg)
        repair = read.measured_repair
        return _ReadKnobs(fleet_age, repair["median_h"], repair["sigma"])
    if read.fitted_repair is not None:
        fitted = read.fitted_repair
        return _ReadKnobs(fleet_age, fitted.median_h, fitted.sigma)
    return _ReadKnobs(fleet_age)


def _say_fitted_rates(result: dict[str, Any], fitted: FittedRates) -> None:
    """Write where a projection's fitted rates came from into its JSON (the edge)."""
    result["rate_process"] = fitted.process
    result["rate_lives"] = fitted.lives
    result["classes_without_failures"] = list(fitted.left_out)
    if fitted.rates:
        result["rate_source"] = fitted.rate_source


def _check_warehouse(db_path: Path) -> None:
    """Return a one-line error when the warehouse file is missing.

    Read-only DuckDB cannot create it.
    """
    if not Path(db_path).exists():
        raise WarehouseMissingError(db_path)


# the scenario as JSON (relia project/whatif --json, the stored projection): a dict is the edge
def _scenario_dict(scenario: Scenario) -> dict[str, Any]:
    from models import FAIL_SLOW_KNOBS, KNOBS

    out = dataclasses.asdict(scenario)
    out["rates"] = [dataclasses.asdict(r) for r in scenario.rates]
    defaults = {k.name: k.default for k in KNOBS}
    if not scenario.slow_laws:  # fail-stop only: the fail-slow knobs are said only when set
        for name in FAIL_SLOW_KNOBS:
            if out[name] == defaults[name]:
                del out[name]
    return out


# stores the JSON `relia project --json` prints: a dict is the edge
def _store(db_path: Path, fit_run_id: str | None, result: dict[str, Any]) -> str:
    from pipelines import warehouse

    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    with warehouse.connect(db_path, lock_timeout_s=DEFAULT_LOCK_TIMEOUT_S) as con:
        warehouse.apply_schema(con)
        con.execute(
            "insert into projections values ($id, $now, $fit, $scenario, $result)",
            {
                "id": run_id,
                "now": datetime.now(UTC),
                "fit": fit_run_id,
                "scenario": json.dumps(result["scenario"], default=str),
                "result": json.dumps(
                    {k: v for k, v in result.items() if k != "scenario"}, default=str
                ),
            },
        )
    return run_id


def load_sweep(path: Path) -> SweepSpec:
    """Read a sweep YAML.

    Keys: ``grid`` (knob -> list of values), ``base`` (knobs held fixed), ``baseline`` (a value
    for grid knobs; the rest default to the first value listed), ``target_gpus`` (default: the
    largest ``n_gpus``), optional ``from_fits`` (with ``rate_process``: ``failure``, the default,
    or ``replacement``), ``drain_model``, ``samples``, ``simulate`` (Monte Carlo trials per grid
    point) and ``seed``. Knob names and
    values are those of ``relia project`` (:mod:`pipelines.analysis.knobs`): Scenario field names,
    ``weibull_shape: 0.7`` or ``{gpu: 0.7}``, ``node_groups: [[0.1, 3]]`` or ``"0.1:3"``,
    ``fleet_age: [{age_h: 0, share: 0.5}, {age_h: 8760, share: 0.5}]`` (an age mix) or
    ``fleet_age: inventory`` (the warehouse's ages, :func:`inventory_ages`; needs ``--db``),
    ``rates:`` a list of ``{component_class, level, mtbf_h, mtbf_lo_h, mtbf_hi_h}``;
    ``restart_s`` in ``base`` only. Under ``grid`` each list item is one value (for
    ``node_groups``, one set of groups: ``["none", "0.1:3"]``; for ``fleet_age``, one mix:
    ``[new, "0:0.5,8760:0.5"]``).
    """
    import yaml

    from pipelines.analysis import knobs as knob_text

    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        line = getattr(getattr(error, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        msg = f"{path}: not valid YAML{where}; check the indentation and colons"
        raise ValueError(msg) from None
    if not isinstance(raw, dict) or "grid" not in raw:
        msg = f"{path}: a sweep file needs a `grid:` mapping of knob -> list of values"
        raise ValueError(msg)
    known = {
        "base",
        "grid",
        "baseline",
        "target_gpus",
        "from_fits",
        "drain_model",
        "samples",
        "simulate",
        "seed",
        "rate_process",
    }
    unknown = sorted(set(raw) - known)
    if unknown:
        msg = f"{path}: unknown key(s) {unknown}; a sweep file has {sorted(known)}"
        raise ValueError(msg)
    grid_raw = raw["grid"]
    if not isinstance(grid_raw, dict) or not all(
        isinstance(v, list) and v for v in grid_raw.values()
    ):
        msg = f"{path}: every knob under `grid:` needs a non-empty list of values"
        raise ValueError(msg)
    grid: dict[str, list[Any]] = {}
    for name, values in grid_raw.items():
        key = knob_text.knob_name(name, where=f"{path} grid")
        if key == knob_text.RESTART_S:
            msg = f"{path}: restart_s is a shorthand for base only; sweep reschedule_s instead"
            raise ValueError(msg)
        grid[key] = [knob_text.knob_value(key, v, where=f"{path} grid") for v in values]
    base = knob_text.knobs(raw.get("base"), where=f"{path} base")
    given = knob_text.knobs(raw.get("baseline"), where=f"{path} baseline")
    stray = sorted(set(given) - (set(grid) - {"n_gpus"}))
    if stray:
        msg = (
            f"{path}: baseline gives {stray}, which are not swept knobs "
            "(the baseline's scale is target_gpus; fixed knobs go under base:)"
        )
        raise ValueError(msg)
    baseline = {k: given.get(k, v[0]) for k, v in grid.items() if k != "n_gpus"}
    try:
        target = int(raw.get("target_gpus") or max(grid.get("n_gpus", [16_384])))
        n_samples = int(raw.get("samples", 2000))
    except (TypeError, ValueError):
        msg = f"{path}: target_gpus and samples must be whole numbers"
        raise ValueError(msg) from None
    counts = {key: raw.get(key) or 0 for key in ("simulate", "seed")}
    for key, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            msg = f"{path}: `{key}:` must be a whole number, 0 or more, got {value!r}"
            raise ValueError(msg)
    process = raw.get("rate_process")
    if process is not None and process not in RATE_PROCESSES:
        msg = f"{path}: rate_process must be one of {list(RATE_PROCESSES)}, got {process!r}"
        raise ValueError(msg)
    return SweepSpec(
        base=base,
        grid=grid,
        target_gpus=target,
        rate_process=process,
        from_fits=raw.get("from_fits"),
        drain_model=raw.get("drain_model"),
        baseline=baseline,
        n_samples=n_samples,
        **counts,
    )


def drain_curve(con: duckdb.DuckDBPyConnection, model: str = "latest") -> tuple[str, pl.DataFrame]:
    """Return a stored failure predictor's operating curve on its test period: (model id, curve).

    ``curve`` has ``threshold``, ``precision``, ``recall`` (and ``lead_time_h``...), one row per
    threshold, as ``relia predict train`` measured it.
    """
    import polars as pl

    con.complete()
    row = con.execute(
        "select model_id, curve from predict_models "
        "where $id is null or model_id = $id order by trained_at desc limit 1",
        {"id": None if model == "latest" else model},
    ).fetchone()
    if row is None or not row[1]:
        msg = (
            f"no failure predictor {model!r} with an operating curve in predict_models; "
            "run `relia predict train` first"
        )
        raise ValueError(msg)
    curve = pl.DataFrame(json.loads(row[1]), infer_schema_length=None)
    return row[0], curve.sort("threshold")


class SweepResult(TypedDict):
    """What :func:`run_sweep` returns: the JSON ``relia whatif --json`` prints, in key order.

    ``fit_run_id`` (None with rates by hand), ``n_points`` of the grid, ``target_gpus``, the
    ``table`` and ``plots`` written (``plot_table``: the plotted points, None without a scale
    axis), the ``baseline`` scenario (as JSON) and its knobs' labels ``baseline_values``, the
    ``gains`` per knob (:class:`models.KnobGain`), ``best_knob`` (None when no knob improves),
    the two best knobs' ``interaction`` (:meth:`models.KnobInteraction.to_dict`),
    ``gain_uncertainty``, ``simulate_trials``, ``n_monte_carlo``, ``n_not_simulated``,
    ``extrapolated_classes`` and ``rate_process``; with a fit run ``rate_lives`` and
    ``classes_without_failures``; ``rate_source`` always (after those); ``rates_warning``,
    ``restart_shorthand``, ``inventory_ages`` and ``drain`` (:class:`DrainThresholds`) when
    they apply. Being a ``TypedDict``, it is the plain dict the flow returns and JSON prints.
    """

    fit_run_id: str | None
    n_points: int
    target_gpus: int
    table: str
    plots: list[str]
    plot_table: str | None
    baseline: dict[str, Any]  # the scenario as JSON (_scenario_dict)
    baseline_values: dict[str, str]
    gains: list[KnobGain]
    best_knob: KnobGain | None
    interaction: dict[str, Any] | None  # KnobInteraction.to_dict(), as JSON
    gain_uncertainty: str
    simulate_trials: int
    n_monte_carlo: int
    n_not_simulated: int
    extrapolated_classes: list[str]
    rate_process: str | None
    rate_lives: NotRequired[str]
    classes_without_failures: NotRequired[list[str]]
    rate_source: NotRequired[str]
    rates_warning: NotRequired[str]
    restart_shorthand: NotRequired[RestartShorthand]
    inventory_ages: NotRequired[dict[str, Any]]  # InventoryAges.to_json_dict
    drain: NotRequired[DrainThresholds]


def run_sweep(
    spec: SweepSpec,
    *,
    db_path: Path | None,
    out_dir: Path,
    sweep_fn: Callable[[Scenario, dict[str, list[Any]]], pl.DataFrame] | None = None,
    default_rates_if_none: bool = False,
) -> SweepResult:
    """Run a sweep, write ``whatif.parquet``, ``whatif.csv`` and PNG plots; rank the knobs.

    With ``from_fits``, a fit run with no failure in any class is a
    :class:`~pipelines.runtime.errors.MissingDataError` unless the base gives a node rate by hand or
    ``default_rates_if_none``; then the result's ``rates_warning`` names the rates used.

    ``sweep_fn(base, grid)`` evaluates the full grid (default ``models.auto_sweep`` with the
    spec's ``simulate`` and ``seed``: analytical, or Monte Carlo for every point with
    ``simulate`` > 0 or where the projection's error bound exceeds 1 % of goodput; the what-if
    flow passes one that fans slices of the grid out to its task runner). The result counts
    the points by method (``n_monte_carlo``, ``simulate_trials``). The ranking does not use
    that table: each knob's gain is projected directly, one knob at a time from the baseline at
    ``target_gpus`` (:func:`models.knob_gains`), and the plots hold the other knobs at the
    baseline too.
    """
    from models import auto_sweep, knob_gains, knob_label, switch_flagged
    from pipelines.analysis import knobs as knob_text

    read = _read_sweep_inputs(spec, db_path, default_rates_if_none=default_rates_if_none)
    fitted_rates, inventory = read.fitted_rates, read.inventory
    rates = fitted_rates.rates if fitted_rates is not None else ()
    run_id = fitted_rates.run_id if fitted_rates is not None else None
    if inventory is not None:
        spec = _with_inventory_ages(spec, inventory.fleet_age)
    _, shorthand = knob_text.restart_shorthand(spec.base)
    base = build_scenario(spec.base, rates=rates, measured=read.measured_restart)
    held_values = {k: spec.baseline.get(k, v[0]) for k, v in spec.grid.items() if k != "n_gpus"}
    try:
        baseline = dataclasses.replace(base, n_gpus=spec.target_gpus, **held_values)
    except (TypeError, ValueError) as error:
        msg = f"baseline: {error}"
        raise ValueError(msg) from None
    if sweep_fn is None:
        sweep_fn = functools.partial(
            auto_sweep, simulate=spec.simulate, random_state=spec.seed, max_points=0
        )
    table = sweep_fn(base, spec.grid)
    if spec.simulate == 0:  # the points the analysis cannot answer within 1 %: chosen once
        table = switch_flagged(table, base, spec.grid, random_state=spec.seed)
    _write_sweep_table(table, out_dir)
    ranking = knob_gains(baseline, spec.grid, n_samples=spec.n_samples, random_state=0)
    held = {k: knob_label(k, getattr(baseline, k)) for k in held_values}
    plots, lines = plot_sweep(baseline, spec, out_dir)
    result: SweepResult = {
        "fit_run_id": run_id,
        "n_points": table.height,
        "target_gpus": spec.target_gpus,
        "table": str(out_dir / "whatif.parquet"),
        "plots": [str(p) for p in plots],
        "plot_table": str(lines) if lines else None,
        "baseline": _scenario_dict(baseline),
        "baseline_values": held,
        "gains": ranking.gain_rows(),
        "best_knob": ranking.best_knob,
        "interaction": None if ranking.interaction is None else ranking.interaction.to_dict(),
        "gain_uncertainty": ranking.uncertainty,
        "simulate_trials": spec.simulate,
        "n_monte_carlo": _n_monte_carlo(table),
        "n_not_simulated": int(table["method"].str.starts_with("analytical:").sum())
        if "method" in table.columns
        else 0,
        "extrapolated_classes": [r.component_class for r in rates if r.extrapolated],
        "rate_process": None,
    }
    if fitted_rates is not None:
        result["rate_process"] = fitted_rates.process
        result["rate_lives"] = fitted_rates.lives
        result["classes_without_failures"] = list(fitted_rates.left_out)
        if fitted_rates.rates:
            result["rate_source"] = fitted_rates.rate_source
    result.setdefault("rate_source", base.rate_source)
    if run_id is not None and not rates:
        result["rates_warning"] = no_rates_warning(run_id, base.rate_source)
    if shorthand is not None:
        result["restart_shorthand"] = shorthand
    if inventory is not None:
        result["inventory_ages"] = inventory.to_json_dict()
    if read.drain is not None:
        model_id, curve = read.drain
        result["drain"] = drain_thresholds(baseline, spec, curve, model_id, out_dir)
        result["plots"].append(result["drain"]["plot"])
    return result


def _read_sweep_inputs(
    spec: SweepSpec, db_path: Path | None, *, default_rates_if_none: bool
) -> _WarehouseInputs:
    """Return the fitted rates, drain curve and inventory ages the spec asks for."""
    from pipelines.analysis import knobs as knob_text

    from_inventory = spec.base.get("fleet_age") == knob_text.INVENTORY or any(
        v == knob_text.INVENTORY for v in spec.grid.get("fleet_age", [])
    )
    if spec.from_fits is None and spec.drain_model is None and not from_inventory:
        return _WarehouseInputs()
    if db_path is None:
        msg = "from_fits, drain_model and fleet_age: inventory need a warehouse (--db)"
        raise ValueError(msg)
    _check_warehouse(db_path)
    from pipelines import warehouse

    fitted_rates, measured, drain, inventory = None, None, None, None
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=read_lock_timeout_s()) as con:
        if spec.from_fits is not None:
            # one set of rates for the grid: at ages unless the base is the steady state
            at_ages = spec.base.get("fleet_age", "steady_state") != "steady_state"
            by_hand = spec.base.get("node_failures_per_1000_node_days") is not None
            fitted_rates = fit_rates(
                con,
                spec.from_fits,
                at_ages=at_ages,
                if_none=default_rates_if_none or by_hand,
                process=spec.rate_process,
            )
            measured = measured_restart_s(con)
        if spec.drain_model is not None:
            drain = drain_curve(con, spec.drain_model)
        if from_inventory:
            inventory = inventory_ages(con)
    return _WarehouseInputs(fitted_rates, measured, drain=drain, inventory=inventory)


def _write_sweep_table(table: pl.DataFrame, out_dir: Path) -> None:
    """Write the sweep's flat columns to ``whatif.parquet`` and ``whatif.csv`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    flat = table.select([c for c in table.columns if not table.schema[c].is_nested()])
    flat.write_parquet(out_dir / "whatif.parquet")
    flat.write_csv(out_dir / "whatif.csv")


def sweep_spec(
    sweep_file: Path, *, drain_model: str | None = None, simulate: int | None = None
) -> SweepSpec:
    """Load ``sweep_file``; ``drain_model`` and ``simulate`` override its own keys when given."""
    spec = load_sweep(sweep_file)
    if drain_model is not None:
        spec = dataclasses.replace(spec, drain_model=drain_model)
    if simulate is not None:
        spec = dataclasses.replace(spec, simulate=simulate)
    return spec


def log_sweep(result: SweepResult, log: logging.Logger | logging.LoggerAdapter[Any]) -> None:
    """Log a sweep's size, its Monte Carlo points and the knob with the largest gain."""
    best = result["best_knob"]
    if result["n_monte_carlo"]:
        log.info("%d scenarios by Monte Carlo", result["n_monte_carlo"])
    log.info(
        "%d scenarios; largest gain at %d GPUs: %s",
        result["n_points"],
        result["target_gpus"],
        f"{best['knob']}={best['best_value']} (+{best['gain']:.4f})" if best else "none",
    )


def run_sweep_file(
    sweep_file: Path,
    *,
    out_dir: Path,
    db_path: Path | None,
    drain_model: str | None = None,
    simulate: int | None = None,
    default_rates_if_none: bool = False,
) -> SweepResult:
    """Run the sweep in ``sweep_file`` as the ``what-if`` flow does outside a flow run.

    ``drain_model`` and ``simulate`` override the file's ``drain_model:`` and ``simulate:``; the
    grid is evaluated in this process (:func:`run_sweep`). ``relia whatif`` calls this when it
    runs untracked, so an interactive what-if imports neither Prefect nor the task runner.
    """
    spec = sweep_spec(sweep_file, drain_model=drain_model, simulate=simulate)
    result = run_sweep(
        spec, db_path=db_path, out_dir=out_dir, default_rates_if_none=default_rates_if_none
    )
    log_sweep(result, logger)
    return result


def _with_inventory_ages(spec: SweepSpec, mix: tuple[tuple[float, float], ...]) -> SweepSpec:
    """Return the spec with every ``fleet_age: inventory`` (base, grid, baseline) set to ``mix``."""

    def resolved(value: Any) -> Any:
        return mix if value == "inventory" else value

    base = {k: resolved(v) if k == "fleet_age" else v for k, v in spec.base.items()}
    grid = {k: [resolved(v) for v in vs] if k == "fleet_age" else vs for k, vs in spec.grid.items()}
    baseline = {k: resolved(v) if k == "fleet_age" else v for k, v in spec.baseline.items()}
    return dataclasses.replace(spec, base=base, grid=grid, baseline=baseline)


def _n_monte_carlo(table: pl.DataFrame) -> int:
    """Points of a what-if table evaluated by Monte Carlo (0 for a table without ``method``)."""
    if "method" not in table.columns:
        return 0
    return int((table["method"] == "monte_carlo").sum())
