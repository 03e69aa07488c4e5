r"""Analytical goodput projection for a large training job on a failing fleet.

A :class:`~models.scenario.Scenario` describes the job (GPUs, failure domains, per-class failure
rates, checkpoint and restart costs, spares, recovery strategy, fleet age, proactive drains on a
failure predictor's warnings). :func:`project` turns it into the answer an architect asks for: mean
time to interrupt (MTTI), the checkpoint interval, the effective training time ratio, goodput, and
the GPU-hours and energy lost by cause, with an interval when the rates carry one.
:func:`~models.sweep.sweep` evaluates a full factorial grid of what-ifs in one vectorised pass
(:func:`models.ranking.knob_gains` ranks the knobs against a baseline at a target scale);
:func:`~models.sweep.drain_sweep` projects the drains at each threshold of a predictor's operating
curve.

The projection is split over a few modules: :mod:`models.scenario` (the inputs,
:class:`~models.scenario.Scenario` and :class:`~models.scenario.ClassRate`, and the typed
:class:`~models.scenario.Projection` result), :mod:`models.checkpoint` (Young's, Daly's and Meta's
equations), :mod:`models.renewal` (renewal and spare-wait quadratures), this module
(:func:`project_arrays`, :func:`project`), :mod:`models.rates` (fit results -> rates) and
:mod:`models.sweep` (what-if grids).

References
----------
.. [1] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
   Clusters", HPCA 2025, arXiv:2410.21680.
.. [2] A. Grattafiori et al., "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, section 3.3
   (419 unexpected interruptions in 54 days on 16,384 GPUs).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from models.goodput_core import project_core
from models.goodput_slow import with_fail_slow
from models.renewal import RENEWAL_GRID, expected_failures_at, fleet_age_assumption
from models.scenario import Scenario  # noqa: TC001 (stays importable from here, see below)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import ArrayLike, NDArray

    from models.scenario import Projection

# ``Scenario`` is imported above and stays importable from here (tests/models/eventsim.py).
__all__ = ["expected_by_class", "project"]

_EXACT_SHARE = 0.01  # an analytical goodput is exact when its error bound is within 1 % of it


def project_arrays(
    s: Scenario,
    over: Mapping[str, ArrayLike] | None = None,
    mtbf_override: Sequence[NDArray[np.float64]] | None = None,
) -> dict[str, NDArray[np.float64]]:
    """Vectorised analytical projection; ``over`` maps numeric Scenario fields to arrays.

    The core :func:`project` and :func:`~models.sweep.sweep` share with :mod:`models.simulate` and
    :mod:`models.ranking`: a dict of arrays, one entry per output, no validation or rounding.

    ``goodput_error_bound`` (absolute goodput) adds three parts. Discretisation: where the answer
    is integrated over time pieces (a fault rate that changes over the job, or a spare pool that
    starts full), the distance between the answers on the pieces and on every other piece. The
    window's edges: half a checkpoint segment's share of the job. Contention for spares: the
    renewal argument draws each wait for a spare afresh, but a fault that strikes during a wait
    only moves its end to the next spare back (the waits are correlated); the share of the job
    in such interrupted waits, times goodput, bounds it (measured against the Monte Carlo of
    :mod:`models.simulate`: errors of 0.2-20 % of goodput where a quarter or more of the
    waits are interrupted, a few tenths of a percent where none are).

    With ``slow_laws``, fail-slow is joined in (:func:`models.goodput_slow.with_fail_slow`):
    goodput and the lost GPU-hours count both causes, and the fail-slow outputs are added.
    """
    fine = project_core(s, over, mtbf_override, fine=True)
    out = dict(fine.outputs)
    if fine.pieces and mtbf_override is None:  # samples for an interval need no bound
        coarse = project_core(s, over, mtbf_override, fine=False)
        discretisation = np.abs(out["goodput"] - coarse.outputs["goodput"])
    else:
        discretisation = np.zeros_like(out["goodput"])
    out["goodput_error_bound"] = (
        discretisation + fine.edge_effect + fine.contention * out["goodput"]
    )
    return with_fail_slow(s, over, out)


_project_arrays = project_arrays
"""The name :func:`project` calls, and :func:`models.sweep.sweep` and
:func:`models.sweep.drain_sweep` through :func:`project_arrays_via_seam`: the seam tests patch
(``monkeypatch.setattr(models.goodput, "_project_arrays", ...)``) to widen error bounds."""


def project_arrays_via_seam(
    s: Scenario, over: Mapping[str, ArrayLike]
) -> dict[str, NDArray[np.float64]]:
    """Call :func:`project_arrays` through this module's patchable ``_project_arrays`` seam.

    Parameters
    ----------
    s
        The scenario.
    over
        Numeric Scenario fields -> arrays, as for :func:`project_arrays`.

    Returns
    -------
    dict
        What ``_project_arrays`` returns (:func:`project_arrays` unless a test patched it).
    """
    return _project_arrays(s, over)


def project(
    scenario: Scenario,
    *,
    n_samples: int = 0,
    random_state: int | np.random.Generator | None = None,
) -> Projection:
    r"""Project MTTI, checkpoint interval, ETTR, goodput and losses for a scenario.

    Goodput is the fraction of the job's GPU-hours that advance training. For ``restart`` and
    ``hot_spare`` it is the renewal-reward ratio of the Daly model, exact for Poisson interrupts:

    .. math:: G = \frac{\tau\,E[e^{-R/M}]}{M\left(e^{(\tau+\delta)/M}-1\right)}

    For ``hot_spare`` the wait for a spare is :math:`W=(c-\Gamma_S)^+`, with :math:`c` the repair
    time less detection and :math:`\Gamma_S` the time since the S-th previous fault (spares return
    in failure order), which gives :math:`E[e^{-W/M}] = P(\mathrm{Poisson}(c/M)\le S)`. For
    ``elastic``, :math:`G = (1-\lambda D g/n)(1-\lambda d)\,\tau/(\tau+\delta)` with
    :math:`D` the time a replica group of :math:`g` GPUs is out and :math:`d` the detection stall.

    **Proactive drains** (``drain_recall`` :math:`\rho > 0`, ``drain_precision`` :math:`p`).
    Faults arrive at :math:`\lambda = 1/M`: unwarned ones at :math:`\lambda_u = (1-\rho)\lambda`,
    alarms (true and false) at :math:`\lambda_a = \rho\lambda/p`. An alarm while the job
    computes is a drain: the job writes a checkpoint (:math:`\delta`), which saves the compute of
    the segment in progress (up to :math:`\tau`) and restarts the periodic clock, then migrates
    (:math:`m`, ``drain_migration_s``); an alarm during a restart or a drain is handled within it.
    An unwarned fault during the drain's checkpoint loses the segment, one during the migration
    does not. Only unwarned faults lose work, so Young's and Daly's intervals use
    :math:`M_u = 1/\lambda_u` (with :math:`\rho = 1`, no periodic checkpoint in the job). Every
    fault, drain and false alarm takes a hot spare (so the spares' :math:`\Gamma_S` runs at
    :math:`\Lambda = \lambda_u + \lambda_a`), but only unwarned faults wait for one: a warned
    job keeps training on the domain until its spare is in (the lead time is assumed to cover
    that wait). Over cycles that each start a fresh segment, with
    :math:`q = e^{-\Lambda(\tau+\delta)}`, :math:`D = \delta + m`,
    :math:`b = (1-e^{-\lambda_u D})/\lambda_u` (time in a drain) and
    :math:`S = E[e^{-\lambda_u R}]`:

    .. math::
        G = \frac{S\Lambda\left[q\tau + \frac{\lambda_a}{\Lambda} e^{-\lambda_u\delta}
            \left(\frac{1-e^{-\Lambda\tau}}{\Lambda} - q\tau\right)\right]}
            {(1-q)(1+\lambda_a b)}

    the formula above when :math:`\rho = 0`, with :math:`\lambda_a S/(1+\lambda_a b)` drains
    per unit time, each in progress for :math:`b`. For ``elastic`` nothing is rolled back: a
    drained replica group leaves without stalling the others and is out for :math:`m`, so
    the groups are out :math:`\lambda_u D g/n + \lambda_a m g/n` of the time and the stall is
    :math:`\lambda_u d`.

    Parameters
    ----------
    scenario
        The job and fleet.
    n_samples
        When positive and some rates carry an MTBF interval, sample every such class's MTBF this
        many times from the log-normal matched to its 95 % interval and report 2.5/97.5 %
        quantiles; the checkpoint interval stays the one chosen for the point estimate.
    random_state
        Seed or generator for the sampling.

    Returns
    -------
    Projection
        A plain dict with the keys :class:`~models.scenario.Projection` declares and documents
        (MTTI, checkpoint intervals, ETTR, goodput, lost GPU-hours by cause, the error bound,
        notes; with sampling also the 2.5/97.5 % quantiles).

    Notes
    -----
    **Time-varying rates and a pool that starts full.** With Weibull shapes other than 1 and a
    fleet that is not in steady state, the superposed fault intensity of the units at their ages
    changes over the job (infant mortality early for shape < 1, wear-out late for shape > 1).
    The job is cut into pieces (geometric in time, finer at the start); each piece's rate is
    the increase of the delayed renewal function over it, and the equations above hold within
    each piece; goodput and losses are their time-weighted sum. The checkpoint interval is one
    for the whole job: Daly's at the job's mean unwarned rate (or the one given). The spare pool
    starts full: a fault at time :math:`t` into the job waits only when :math:`S` events took
    spares since the start within its lookback (see :func:`~models.renewal.spare_wait`); for
    ``hot_spare`` and ``elastic`` the same pieces carry this. Random (log-normal) repair times use
    :func:`~models.renewal.spare_wait_random`.

    **Interruption kinds.** A share ``hang_share`` of unwarned interruptions is detected after
    ``detect_hang_s``, the rest after ``detect_s``: every restart term above is the mixture.
    Job-level interruptions (``job_interruptions_per_h``) add to the unwarned rate; they restart
    in place (detection, reload, warm-up) and take no spare. ``node_groups`` add the fault
    rates of their units with lifetimes scaled by the multiplier.

    **Error bound.** ``goodput_error_bound`` (absolute) says how far the analytical answer can
    be from the event-level model (see :func:`project_arrays`); ``analytical_exact`` is true
    when it is within 1 % of goodput, and ``relia whatif`` evaluates the other points by Monte
    Carlo. Meta's ETTR is ``None`` where its first-order formula goes negative, with the reason
    in ``ettr_note``.

    Examples
    --------
    >>> out = project(Scenario(n_gpus=16_384, node_failures_per_1000_node_days=6.5))
    >>> round(out["mtti_h"], 1)
    1.8
    """
    core = _project_arrays(scenario)
    out: dict[str, Any] = {k: float(v) for k, v in core.items()}
    rates = scenario.class_rates()
    out["strategy"] = scenario.strategy
    out["rate_source"] = scenario.rate_source
    out["fleet_age_assumption"] = fleet_age_assumption(scenario.fleet_age, rates)
    out["extrapolated_classes"] = [r.component_class for r in rates if r.extrapolated]
    if out["extrapolated_classes"]:
        out["extrapolation_note"] = (
            "most of the fitted mean life of "
            + ", ".join(out["extrapolated_classes"])
            + " lies beyond the oldest age observed: "
            + (
                "a steady-state projection rests on it; project at the fleet's ages "
                "(fleet_age) to use the hazard the data cover"
                if scenario.fleet_age == "steady_state"
                else "the projection uses the Weibull fit's hazard at the given ages"
            )
        )
    out["expected_interruptions_by_class"] = expected_by_class(scenario)
    out["uncertainty"] = "none requested"
    out["ettr_note"] = _ettr_note(out)
    if math.isnan(out["ettr"]):
        out["ettr"] = None
    bound = out["goodput_error_bound"]
    out["method"] = "analytical"
    out["analytical_exact"] = bool(bound <= _EXACT_SHARE * out["goodput"])
    if n_samples > 0:
        with_interval = [r for r in rates if r.has_interval]
        if not with_interval:
            out["uncertainty"] = "none: no rate carries an MTBF interval"
            return cast("Projection", out)
        rng = np.random.default_rng(random_state)
        samples = [r.sample_mtbf(rng, n_samples) for r in rates]
        tau_s = out["checkpoint_interval_min"] * 60.0
        sampled = _project_arrays(scenario, {"checkpoint_interval_s": tau_s}, mtbf_override=samples)
        for key in ("mtti_h", "ettr", "goodput", "expected_interruptions"):
            lo_q, hi_q = np.quantile(np.broadcast_to(sampled[key], (n_samples,)), [0.025, 0.975])
            out[f"{key}_lo"], out[f"{key}_hi"] = float(lo_q), float(hi_q)
        names = ", ".join(r.component_class for r in with_interval)
        mixed = [r.component_class for r in with_interval if r.mtbf_mixture]
        out["uncertainty"] = (
            f"{n_samples} samples of the MTBF of {names} from log-normals matched to their 95 % "
            "intervals"
            + (
                f" (model-averaged mixtures of the fitted families for {', '.join(mixed)})"
                if mixed
                else ""
            )
            + "; 2.5/97.5 % quantiles"
        )
    return cast("Projection", out)


def expected_by_class(scenario: Scenario) -> dict[str, dict[str, Any]]:
    r"""Return the interruptions the job expects from each class, with the class's bounds.

    A class of level ``gpu`` strikes each of the GPUs the job holds (whole failure domains), a
    node-level one each of its nodes; over the job's ``job_days`` each unit position expects
    :math:`H/\mathrm{MTBF}` failures in steady state or at shape 1, else the (delayed) renewal
    function at the fleet's ages (:func:`~models.renewal.expected_failures_at`), summed over the
    node groups with their multipliers: the same counts :func:`project` adds into
    ``expected_interruptions``, which is their sum plus the job-level interruptions
    (``job_interruptions_per_h`` x hours, under ``job_level`` when there are any).

    The bounds are the same count at the class's MTBF bounds (the expected count falls as the
    MTBF grows): for a rate with its exact Poisson interval, units x hours x the rate's bounds.
    They are each class's own 95 % interval; the total's interval (``expected_interruptions_lo``
    / ``_hi``) samples every class at once and is narrower than the sum of these.

    Parameters
    ----------
    scenario
        The job and fleet.

    Returns
    -------
    dict
        Class -> ``level``, ``units`` (GPUs or nodes of the job at risk of it), ``mtbf_h``,
        ``mtbf_lo_h``, ``mtbf_hi_h``, ``weibull_shape``, ``expected``, ``expected_lo``,
        ``expected_hi`` (None without both MTBF bounds), in the order of the scenario's rates.
    """
    n_domains = math.ceil(scenario.n_gpus / scenario.failure_domain_gpus)
    gpus_held = n_domains * scenario.failure_domain_gpus
    nodes_held = math.ceil(gpus_held / scenario.gpus_per_node)
    horizon_h = scenario.job_days * 24.0
    edges = np.asarray([0, RENEWAL_GRID])

    def count(mtbf_h: float, shape: float, units: float) -> float:
        return float(
            sum(
                units
                * share
                * expected_failures_at(
                    np.asarray(mtbf_h / multiplier),
                    shape,
                    np.asarray(horizon_h),
                    scenario.fleet_age,
                    edges,
                )[..., -1]
                for share, multiplier in scenario.unit_groups()
            )
        )

    out: dict[str, dict[str, Any]] = {}
    for r in scenario.class_rates():
        units = gpus_held if r.level == "gpu" else nodes_held
        lo_h, hi_h = r.mtbf_lo_h, r.mtbf_hi_h
        out[r.component_class] = {
            "level": r.level,
            "units": units,
            "mtbf_h": r.mtbf_h,
            "mtbf_lo_h": r.mtbf_lo_h,
            "mtbf_hi_h": r.mtbf_hi_h,
            "weibull_shape": r.weibull_shape,
            "expected": count(r.mtbf_h, r.weibull_shape, units),
            "expected_lo": None
            if lo_h is None or hi_h is None
            else count(hi_h, r.weibull_shape, units),
            "expected_hi": None
            if lo_h is None or hi_h is None
            else count(lo_h, r.weibull_shape, units),
        }
    if scenario.job_interruptions_per_h > 0:
        job_level = scenario.job_interruptions_per_h * horizon_h
        out["job_level"] = {
            "level": "job",
            "units": 1,
            "mtbf_h": 1.0 / scenario.job_interruptions_per_h,
            "mtbf_lo_h": None,
            "mtbf_hi_h": None,
            "weibull_shape": 1.0,
            "expected": job_level,
            "expected_lo": None,
            "expected_hi": None,
        }
    return out


def _ettr_note(out: Mapping[str, Any]) -> str:
    """Why Meta's ETTR is or is not given (it is a first-order formula that goes negative)."""
    if not math.isnan(out["ettr"]):
        return "Meta's first-order E[ETTR] (Kokolis et al. 2025) with the mean restart time"
    per_interval = out["checkpoint_interval_min"] / 60.0 / out["mtti_unpredicted_h"]
    return (
        "not applicable at this scale: Meta's first-order E[ETTR] goes negative when "
        "interruptions x (restart + half a checkpoint interval) exceed the job's time "
        f"({per_interval:.2g} interruptions per checkpoint interval, mean time to interrupt "
        f"{out['mtti_unpredicted_h'] * 60:.3g} min); use goodput"
    )
