"""Rank what-if knobs against a baseline scenario (the user's system) at one scale.

For each knob, goodput with only that knob changed from the baseline, for each of its values;
its best value; the gain over the baseline (0 when the baseline value is already best); and the
interaction of the two best knobs. Every point is a direct projection (:func:`models.project`),
so a gain is exactly ``project(baseline with the knob changed) - project(baseline)``; no full
factorial grid is needed or assumed. When rates carry MTBF intervals, each gain also gets a
95 % interval from paired samples: the same MTBF draws for the baseline and the changed scenario.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np
import polars as pl

from models.goodput import project, project_arrays
from models.scenario import Projection, Scenario
from models.sweep import knob_label

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import NDArray
    from polars._typing import SchemaDict

__all__ = ["KnobGain", "KnobInteraction", "KnobRanking", "knob_gains", "paired_goodput_samples"]


_GAIN_SCHEMA: SchemaDict = {
    "knob": pl.String,
    "baseline_value": pl.String,
    "best_value": pl.String,
    "goodput_baseline": pl.Float64,
    "goodput_best": pl.Float64,
    "gain": pl.Float64,
    "gain_useful_gpu_h": pl.Float64,
    "gain_lo": pl.Float64,
    "gain_hi": pl.Float64,
    "within_uncertainty": pl.Boolean,
    "gain_model_bound": pl.Float64,
    "values": pl.List(pl.String),
    "goodputs": pl.List(pl.Float64),
}


class KnobGain(TypedDict):
    """One knob's row of :attr:`KnobRanking.gains` (the columns of the gains table).

    A ``TypedDict``, so a row read back from the table (``gains.row(i, named=True)``) and the
    JSON ``relia whatif --json`` prints are the same plain dict; the fields are described under
    :attr:`KnobRanking.gains`.
    """

    knob: str
    baseline_value: str
    best_value: str
    goodput_baseline: float
    goodput_best: float
    gain: float
    gain_useful_gpu_h: float
    gain_lo: float | None
    gain_hi: float | None
    within_uncertainty: bool | None
    gain_model_bound: float
    values: list[str]
    goodputs: list[float]


@dataclass(frozen=True, slots=True)
class KnobInteraction:
    """The two knobs with the largest gains, changed together.

    ``knobs`` and their best ``values`` (labels in ``relia project`` syntax), ``goodput_both``
    (both changed), ``gain_both`` over the baseline and ``interaction`` (``gain_both`` minus the
    two knobs' own gains).
    """

    knobs: list[str]
    values: list[str]
    goodput_both: float
    gain_both: float
    interaction: float

    def to_dict(self) -> dict[str, object]:
        """Return the fields as a plain dict (for JSON)."""
        return {
            "knobs": self.knobs,
            "values": self.values,
            "goodput_both": self.goodput_both,
            "gain_both": self.gain_both,
            "interaction": self.interaction,
        }


@dataclass(frozen=True)
class KnobRanking:
    """What :func:`knob_gains` found.

    Attributes
    ----------
    baseline
        The baseline scenario at the target scale (every knob at its baseline value).
    gains
        One row per knob with more than one candidate value, largest gain first: ``knob``,
        ``baseline_value`` and ``best_value`` (labels in ``relia project`` syntax),
        ``goodput_baseline``, ``goodput_best``, ``gain`` (goodput points) and
        ``gain_useful_gpu_h`` (useful GPU-hours per job), ``gain_lo`` / ``gain_hi`` (2.5 / 97.5 %
        quantiles of the paired gain; null without MTBF intervals), ``gain_model_bound`` (the
        analytical projection's own error bounds at the baseline and the best value, added:
        see :func:`models.goodput.project`), ``within_uncertainty`` (true when the gain's
        interval contains 0 or the gain is no larger than ``gain_model_bound``; false when
        neither; null without intervals when the bound does not cover it, or when the gain
        is 0),
        ``values`` and ``goodputs`` (every candidate value and its goodput, in grid order).
    interaction
        The two knobs with the largest gains changed together (:class:`KnobInteraction`);
        ``None`` with fewer than two knobs.
    uncertainty
        What the gains' intervals were computed from, in words.
    """

    baseline: Scenario
    gains: pl.DataFrame
    interaction: KnobInteraction | None
    uncertainty: str

    @property
    def best_knob(self) -> KnobGain | None:
        """The row of the knob with the largest positive gain; ``None`` if no knob improves."""
        if self.gains.height == 0 or not self.gains["gain"][0] > 0:
            return None
        return self.gain_row(0)

    def gain_row(self, index: int) -> KnobGain:
        """Return row ``index`` of :attr:`gains` (largest gain first)."""
        # the table's schema is _GAIN_SCHEMA, whose columns are KnobGain's keys in order
        return cast("KnobGain", self.gains.row(index, named=True))

    def gain_rows(self) -> list[KnobGain]:
        """Return every row of :attr:`gains`, largest gain first."""
        return cast("list[KnobGain]", self.gains.to_dicts())


def paired_goodput_samples(
    scenarios: Sequence[Scenario],
    *,
    n_samples: int,
    random_state: int | np.random.Generator | None = None,
) -> tuple[list[NDArray[np.float64]] | None, str]:
    """Goodput of several scenarios under the same MTBF draws, for paired differences.

    The MTBF of every class with a 95 % interval is drawn ``n_samples`` times from the
    log-normal matched to that interval, exactly as :func:`models.project` draws it, and the
    same draws are used for every scenario (the scenarios must share their rates: they differ
    in other knobs). As in :func:`models.project`, each scenario's checkpoint interval is held at
    the one chosen for its point estimate.

    Returns
    -------
    tuple
        One array of ``n_samples`` goodputs per scenario (``None`` when no rate carries an
        interval or ``n_samples`` is 0), and a sentence saying what was sampled.
    """
    rates = scenarios[0].class_rates()
    with_interval = [r for r in rates if r.has_interval]
    note = _sampling_note(scenarios[0], n_samples)
    if n_samples <= 0 or not with_interval:
        return None, note
    for s in scenarios[1:]:
        other = s.class_rates()
        if [(r.mtbf_h, r.mtbf_lo_h, r.mtbf_hi_h, r.mtbf_mixture) for r in other] != [
            (r.mtbf_h, r.mtbf_lo_h, r.mtbf_hi_h, r.mtbf_mixture) for r in rates
        ]:
            msg = "paired samples need scenarios with the same rates; rank rates separately."
            raise ValueError(msg)
    rng = np.random.default_rng(random_state)
    draws = [r.sample_mtbf(rng, n_samples) for r in rates]
    out = []
    for s in scenarios:
        tau_s = float(project_arrays(s)["checkpoint_interval_min"]) * 60.0
        sampled = project_arrays(s, {"checkpoint_interval_s": tau_s}, mtbf_override=draws)
        out.append(np.broadcast_to(np.asarray(sampled["goodput"], float), (n_samples,)))
    return out, note


def _sampling_note(scenario: Scenario, n_samples: int) -> str:
    """Say in words what the gains' intervals come from."""
    if n_samples <= 0:
        return "none requested: gains are point projections"
    names = ", ".join(r.component_class for r in scenario.class_rates() if r.has_interval)
    if not names:
        return "none: no rate carries an MTBF interval, so gains are point projections"
    return (
        f"paired: {n_samples} samples of the MTBF of {names} from log-normals matched to their "
        "95 % intervals, the same draws for the baseline and each changed scenario (checkpoint "
        "interval held at each point estimate's); a gain's interval is the 2.5/97.5 % quantiles "
        "of the sampled differences"
    )


def knob_gains(
    baseline: Scenario,
    grid: Mapping[str, Sequence[Any]],
    *,
    n_samples: int = 0,
    random_state: int | np.random.Generator | None = None,
) -> KnobRanking:
    """Rank knobs by the goodput each buys over the baseline, one knob at a time.

    Parameters
    ----------
    baseline
        The user's system at the target scale: every knob at its baseline value.
    grid
        Scenario field -> candidate values; ``n_gpus`` is ignored (the scale is the baseline's).
        The baseline's own value counts as a candidate even when not listed.
    n_samples
        MTBF samples for the gains' intervals (see :func:`paired_goodput_samples`); 0 skips them.
    random_state
        Seed or generator for the samples.

    Returns
    -------
    KnobRanking
        Gains per knob, the two best knobs' interaction and the uncertainty used.

    Examples
    --------
    >>> base = Scenario(n_gpus=131_072, checkpoint_s=60.0, detect_s=600.0)
    >>> ranking = knob_gains(base, {"checkpoint_s": [60.0, 5.0], "detect_s": [600.0, 30.0]})
    >>> ranking.best_knob["knob"]
    'detect_s'
    """
    base_out = project(baseline)
    rows = []
    best_of: dict[str, Scenario] = {}
    for knob, scenarios in _candidates(baseline, grid).items():
        row, best_of[knob] = _knob_gain(
            knob, scenarios, base_out, n_samples=n_samples, random_state=random_state
        )
        rows.append(row)
    gains = pl.DataFrame(rows, schema=_GAIN_SCHEMA).sort(
        "gain", descending=True, maintain_order=True
    )
    return KnobRanking(
        baseline=baseline,
        gains=gains,
        interaction=_interaction(baseline, gains, best_of, base_out["goodput"]),
        uncertainty=_sampling_note(baseline, n_samples),
    )


def _candidates(baseline: Scenario, grid: Mapping[str, Sequence[Any]]) -> dict[str, list[Scenario]]:
    """Return each knob's scenarios: the baseline first, then every other distinct value."""
    fields = {f.name for f in dataclasses.fields(Scenario)}
    unknown = sorted(set(grid) - fields)
    if unknown:
        msg = f"unknown knobs {unknown}; grid keys must be Scenario fields: {sorted(fields)}."
        raise ValueError(msg)
    candidates: dict[str, list[Scenario]] = {}
    for knob, values in grid.items():
        if knob == "n_gpus":
            continue
        scenarios = [baseline]
        seen = [getattr(baseline, knob)]
        for value in values:
            changed = replace(baseline, **{knob: value})
            if getattr(changed, knob) not in seen:
                seen.append(getattr(changed, knob))
                scenarios.append(changed)
        if len(scenarios) > 1:
            candidates[knob] = scenarios
    return candidates


def _knob_gain(
    knob: str,
    scenarios: list[Scenario],
    base_out: Projection,
    *,
    n_samples: int,
    random_state: int | np.random.Generator | None,
) -> tuple[KnobGain, Scenario]:
    """Return one knob's row of the gains table and its best scenario."""
    baseline = scenarios[0]
    outs = [base_out] + [project(s) for s in scenarios[1:]]
    goodputs = [o["goodput"] for o in outs]
    best = int(np.argmax(goodputs))  # ties keep the baseline
    gain_lo = gain_hi = None
    within = None
    # rates as a knob change the draws themselves: no pairing, so no interval
    samples, _ = paired_goodput_samples(
        [baseline, scenarios[best]],
        n_samples=n_samples if best and knob != "rates" else 0,
        random_state=random_state,
    )
    if samples is not None:
        diff = samples[1] - samples[0]
        gain_lo, gain_hi = (float(q) for q in np.quantile(diff, [0.025, 0.975]))
        within = bool(gain_lo <= 0.0 <= gain_hi)
    gain = goodputs[best] - base_out["goodput"]
    model_bound = base_out["goodput_error_bound"] + outs[best]["goodput_error_bound"]
    if best and gain <= model_bound:  # the model's own error could make up the gain
        within = True
    row: KnobGain = {
        "knob": knob,
        "baseline_value": knob_label(knob, getattr(baseline, knob)),
        "best_value": knob_label(knob, getattr(scenarios[best], knob)),
        "goodput_baseline": base_out["goodput"],
        "goodput_best": goodputs[best],
        "gain": goodputs[best] - base_out["goodput"],
        "gain_useful_gpu_h": outs[best]["useful_gpu_h"] - base_out["useful_gpu_h"],
        "gain_lo": gain_lo,
        "gain_hi": gain_hi,
        "within_uncertainty": within,
        "gain_model_bound": model_bound,
        "values": [knob_label(knob, getattr(s, knob)) for s in scenarios],
        "goodputs": goodputs,
    }
    return row, scenarios[best]


def _interaction(
    baseline: Scenario, gains: pl.DataFrame, best_of: Mapping[str, Scenario], base_goodput: float
) -> KnobInteraction | None:
    """Return the interaction of the two knobs with the largest gains (None with fewer)."""
    if gains.height < 2:
        return None
    first, second = gains.row(0, named=True), gains.row(1, named=True)
    both = replace(
        baseline, **{r["knob"]: getattr(best_of[r["knob"]], r["knob"]) for r in (first, second)}
    )
    goodput_both = project(both)["goodput"]
    gain_both = goodput_both - base_goodput
    return KnobInteraction(
        knobs=[first["knob"], second["knob"]],
        values=[first["best_value"], second["best_value"]],
        goodput_both=goodput_both,
        gain_both=gain_both,
        interaction=gain_both - first["gain"] - second["gain"],
    )
