"""Scenario knobs as users write them: ``relia project`` options and sweep YAML values.

One parser per knob kind, shared by the CLI and ``load_sweep``, so ``--weibull-shape gpu=0.7``
and ``weibull_shape: {gpu: 0.7}`` mean the same thing. Every bad value is a ``ValueError`` whose
one-line message names the knob, the value and what to write instead.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from models import KNOBS

if TYPE_CHECKING:
    from typing import TypeAlias

    from models import ClassRate

#: Knob names users may write besides the Scenario field names: the ``relia project`` options
#: named otherwise (``--gpus``, ``--node-group``), from the knob table.
ALIASES = {k.parameter: k.name for k in KNOBS if k.parameter not in (None, k.name)}
#: Not a Scenario field: the whole restart time, split by :func:`restart_shorthand`.
RESTART_S = "restart_s"
#: A ``fleet_age`` read from the warehouse's inventory (the ages of the units in service).
INVENTORY = "inventory"
_KINDS = {k.name: k.kind for k in KNOBS}

#: A fleet age: ``steady_state``, ``new`` or ``inventory``, an age in hours, or an age mix.
FleetAge: TypeAlias = "str | float | tuple[tuple[float, float], ...]"
#: One knob's value once normalised (:func:`knob_value`), as a Scenario field takes it: a
#: number, text, None, per-class shapes, node groups or an age mix (``(a, b)`` pairs), rates.
KnobValue: TypeAlias = (
    "float | int | str | dict[str, float] | tuple[tuple[float, float], ...]"
    " | tuple[ClassRate, ...] | None"
)


class RestartShorthand(TypedDict):
    """What ``restart_s`` set (:func:`restart_shorthand`): the whole restart and its phases.

    A JSON-shaped record, printed as ``restart_shorthand`` by ``relia project --json`` and
    ``relia whatif --json``.
    """

    restart_s: float
    reschedule_s: float
    detect_s: float
    reload_s: float
    warmup_s: float


def scenario_fields() -> set[str]:
    """Names of every :class:`models.Scenario` field (the knob table's names)."""
    return set(_KINDS)


# knobs by name, as Scenario(**knobs) and the sweep YAML take them: what the user gave (CLI
# options, YAML) is the input edge, a dict of mixed values until Scenario checks them
def cli_knobs(params: Mapping[str, Any]) -> dict[str, Any]:
    """Return the knobs ``relia project`` was given, from its parameters (``ctx.params``).

    Every knob of the table with an option, plus ``restart_s``; an option left at None (not
    given) is left out, so the Scenario default or a measured value holds. Repeated options
    (``--node-group``, ``--weibull-shape``) are joined with commas; ``failure_domain_gpus``
    defaults to ``gpus_per_node`` (a node); the ``--slow-*`` options give ``slow_laws``
    (:func:`slow_option_laws`).
    """
    out: dict[str, Any] = {}
    for knob in KNOBS:
        if knob.parameter is None:
            continue
        value = params[knob.parameter]
        if isinstance(value, (list, tuple)):
            value = ",".join(value) if value else None
        if value is not None:
            out[knob.name] = value
    if params[RESTART_S] is not None:
        out[RESTART_S] = params[RESTART_S]
    laws = slow_option_laws(params)
    if laws is not None:
        out["slow_laws"] = laws
    if not out.get("failure_domain_gpus"):
        out["failure_domain_gpus"] = out["gpus_per_node"]
    return out


def knob_name(name: str, *, where: str = "knob") -> str:
    """Return the Scenario field for a user's knob name.

    For example ``detect-s``, ``gpus``, ``node_group``...
    """
    key = str(name).strip().replace("-", "_")
    key = ALIASES.get(key, key)
    if key != RESTART_S and key not in scenario_fields():
        msg = (
            f"{where}: unknown knob {name!r}; knobs are the fields of models.Scenario "
            f"({', '.join(sorted(scenario_fields()))}) or restart_s"
        )
        raise ValueError(msg)
    return key


def knob_value(key: str, value: Any, *, where: str = "knob") -> KnobValue:
    """Normalise one value of knob ``key`` (a Scenario field name) from CLI text or YAML.

    The knob's kind in the table (:data:`models.KNOBS`) chooses the parser.
    """
    label = f"{where}: {key} = {value!r}"
    kind = _KINDS.get(key)  # restart_s, not a Scenario field, is a number
    if kind in _PARSERS:
        return _PARSERS[kind](value, where=label)
    if kind == "text":
        return str(value)
    if kind == "optional_float" and value is None:
        return None
    number = _number(value, where=label)
    if kind == "int":
        if number != int(number):
            msg = f"{label} must be a whole number"
            raise ValueError(msg)
        return int(number)
    return number


# knobs by name, as Scenario(**knobs) and the sweep YAML take them: what the user gave (CLI
# options, YAML) is the input edge, a dict of mixed values until Scenario checks them
def knobs(raw: object, *, where: str) -> dict[str, Any]:
    """Normalise a mapping of knobs (a sweep's ``base:`` or ``baseline:``)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        msg = f"{where} must be a mapping of knob: value, got {type(raw).__name__}"
        raise ValueError(msg)
    out: dict[str, Any] = {}
    for name, value in raw.items():
        key = knob_name(name, where=where)
        out[key] = knob_value(key, value, where=where)
    return out


def weibull_shape(value: Any, *, where: str = "weibull_shape") -> float | dict[str, float] | None:
    """``0.7`` (fleet-wide), ``gpu=0.7,nic=1.2`` or ``{gpu: 0.7}`` (per class), ``fits`` / None.

    Returns a float, a ``{class: shape}`` dict or None (each class keeps its fitted shape).
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "fits")):
        return None
    if isinstance(value, Mapping):
        return {str(k): _positive(v, where=f"{where} ({k})") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [str(v) if not isinstance(v, (list, tuple)) else f"{v[0]}={v[1]}" for v in value]
        if len(items) == 1 and "=" not in items[0]:
            return _positive(items[0], where=where)
        value = ",".join(items)
    if isinstance(value, str) and "=" in value:
        shapes: dict[str, float] = {}
        for part in value.split(","):
            name, sep, shape = part.partition("=")
            if not sep or not name.strip():
                msg = f"{where}: write one shape (0.7) or class=shape pairs (gpu=0.7,nic=1.2)"
                raise ValueError(msg)
            shapes[name.strip()] = _positive(shape, where=f"{where} ({name.strip()})")
        return shapes
    return _positive(value, where=where)


def node_groups(value: Any, *, where: str = "node_groups") -> tuple[tuple[float, float], ...]:
    """Return the groups of nodes with their own failure rate.

    Groups of nodes with their own rate: ``0.1:3`` (a tenth of the nodes fails 3x as often),
    ``0.1:3,0.05:10``, ``{share: 0.1, rate_multiplier: 3}``, ``[0.1, 3]`` or a list of these;
    ``none`` or an empty list for no group.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return ()
    if isinstance(value, str):
        return tuple(_group(part, where=where) for part in value.split(","))
    if isinstance(value, Mapping) or (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        return (_group(value, where=where),)
    if isinstance(value, (list, tuple)):
        return tuple(g for item in value for g in node_groups(item, where=where))
    msg = f"{where}: write share:rate_multiplier pairs, e.g. 0.1:3"
    raise ValueError(msg)


def _group(value: Any, *, where: str) -> tuple[float, float]:
    if isinstance(value, Mapping):
        share, multiplier = value.get("share"), value.get("rate_multiplier")
    elif isinstance(value, str):
        share, sep, multiplier = value.partition(":")
        if not sep:
            msg = f"{where}: a node group is share:rate_multiplier, e.g. 0.1:3, got {value!r}"
            raise ValueError(msg)
    else:
        share, multiplier = value
    pair = (
        _number(share, where=f"{where} (share)"),
        _number(multiplier, where=f"{where} (rate_multiplier)"),
    )
    if not (0 < pair[0] <= 1 and pair[1] > 0):
        msg = f"{where}: need 0 < share <= 1 and a positive rate_multiplier, got {pair}"
        raise ValueError(msg)
    return pair


def fleet_age(value: Any, *, where: str = "fleet_age") -> FleetAge:
    """Return a fleet age: a keyword, an age in hours or an age mix.

    ``steady_state``, ``new``, ``inventory`` (the warehouse's ages, resolved where a warehouse
    is read), an age in hours, or an age mix: ``0:0.5,8760:0.5`` (``age_h:share`` pairs, an ``h``
    after the age allowed), ``[{age_h: 0, share: 0.5}, ...]`` or ``[[0, 0.5], ...]``.

    A mix is returned as sorted ``(age_h, share)`` pairs, its shares normalised to 1.
    """
    if isinstance(value, str) and value.strip() in ("steady_state", "new", INVENTORY):
        return value.strip()
    if isinstance(value, str) and ":" in value:
        pairs = []
        for part in value.split(","):
            age, _, share = part.partition(":")
            pairs.append((age.strip().removesuffix("h"), share))
        value = pairs
    if isinstance(value, (list, tuple)):
        from models import age_mix

        mix = []
        for item in value:
            if isinstance(item, Mapping):
                unknown = sorted(set(item) - {"age_h", "share"})
                if unknown or len(item) != 2:
                    msg = f"{where}: each age of a mix is {{age_h: hours, share: 0-1}}"
                    raise ValueError(msg)
                item = (item["age_h"], item["share"])
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                msg = f"{where}: an age mix is age_h:share pairs, e.g. 0:0.5,8760:0.5"
                raise ValueError(msg)
            mix.append(
                (
                    _number(item[0], where=f"{where} (age_h)"),
                    _number(item[1], where=f"{where} (share)"),
                )
            )
        try:
            return age_mix(mix)
        except ValueError as error:
            msg = f"{where}: {error}"
            raise ValueError(msg) from None
    age_h = _number(
        value, where=f"{where} (steady_state, new, inventory, an age in hours or age_h:share pairs)"
    )
    if age_h < 0:
        msg = f"{where}: an age in hours cannot be negative"
        raise ValueError(msg)
    return age_h


def class_rates(value: Any, *, where: str = "rates") -> tuple[ClassRate, ...]:
    """Return per-class rates given by hand.

    Per-class rates by hand: a list of ``{component_class, level, mtbf_h}`` mappings, with
    optional ``mtbf_lo_h`` / ``mtbf_hi_h`` (a 95 % interval) and ``weibull_shape``.
    """
    from models import ClassRate

    if not isinstance(value, (list, tuple)) or not value:
        msg = f"{where}: rates are a list of {{component_class, level, mtbf_h}} mappings"
        raise ValueError(msg)
    out = []
    names = {f.name for f in dataclasses.fields(ClassRate)}
    for item in value:
        if isinstance(item, ClassRate):
            out.append(item)
            continue
        if not isinstance(item, Mapping) or set(item) - names:
            msg = f"{where}: each rate is a mapping with keys among {sorted(names)}"
            raise ValueError(msg)
        try:
            out.append(ClassRate(**item))
        except (TypeError, ValueError) as error:
            msg = f"{where}: {error}"
            raise ValueError(msg) from None
    return tuple(out)


_SLOW_KEYS = {"unit", "rate_per_unit_h", "duration", "excess"}
_SLOW_EXAMPLE = (
    "{unit: gpu, rate_per_unit_h: 1e-4, duration: {median_s: 1800, sigma: 1}, "
    "excess: {median: 0.3, sigma: 0.8}}"
)


def slow_laws(value: Any, *, where: str = "slow_laws") -> tuple[Any, ...]:
    """Return fail-slow episode laws: one log-normal :class:`models.SlowLaws` per kind of unit.

    A mapping ``{unit, rate_per_unit_h, duration: {median_s, sigma}, excess: {median,
    sigma}}`` (``unit`` ``gpu`` or ``node``, default ``gpu``; ``sigma`` default 0, a fixed
    value; ``excess`` is the slowdown less 1), a list of them, or ``none`` / an empty list.
    """
    from models import SlowLaws

    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return ()
    if isinstance(value, (SlowLaws, Mapping)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        msg = f"{where}: slow laws are a mapping or a list of them, e.g. {_SLOW_EXAMPLE}"
        raise ValueError(msg)
    return tuple(_slow_law(item, where=where) for item in value)


def _slow_law(item: Any, *, where: str) -> Any:
    from models import LogNormalLaw, SlowLaws

    if isinstance(item, SlowLaws):
        return item
    if not isinstance(item, Mapping) or set(item) - _SLOW_KEYS:
        msg = f"{where}: each slow law is a mapping with keys among {sorted(_SLOW_KEYS)}"
        raise ValueError(msg)
    laws = []
    for key, median in (("duration", "median_s"), ("excess", "median")):
        law = item.get(key)
        if not isinstance(law, Mapping) or median not in law or set(law) - {median, "sigma"}:
            msg = f"{where}: {key} is {{{median}: ..., sigma: ...}}, e.g. {_SLOW_EXAMPLE}"
            raise ValueError(msg)
        laws.append(
            (
                _number(law[median], where=f"{where} ({key} {median})"),
                _number(law.get("sigma", 0.0), where=f"{where} ({key} sigma)"),
            )
        )
    try:
        return SlowLaws(
            rate_per_unit_h=_number(item.get("rate_per_unit_h"), where=f"{where} (rate)"),
            duration_s=LogNormalLaw(*laws[0]),
            excess=LogNormalLaw(*laws[1]),
            unit=str(item.get("unit", "gpu")),
        )
    except ValueError as error:
        msg = f"{where}: {error}"
        raise ValueError(msg) from None


#: ``relia project``'s options for one log-normal GPU law (:func:`slow_option_laws`).
SLOW_OPTIONS = (
    "slow_rate_per_gpu_h",
    "slow_duration_median_s",
    "slow_duration_sigma",
    "slow_excess_median",
    "slow_excess_sigma",
)


def slow_option_laws(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the YAML form of the GPU slow law ``relia project``'s ``--slow-*`` options give.

    None when ``--slow-rate-per-gpu-h`` is not given (and no other ``--slow-*`` option is);
    the two medians are needed with it, the sigmas default to 0 (a fixed value).
    """
    given = {k: params.get(k) for k in SLOW_OPTIONS}
    if all(v is None for v in given.values()):
        return None
    missing = [
        "--" + k.replace("_", "-")
        for k in ("slow_rate_per_gpu_h", "slow_duration_median_s", "slow_excess_median")
        if given[k] is None
    ]
    if missing:
        msg = f"a fail-slow law needs {', '.join(missing)} too (the sigmas default to 0)"
        raise ValueError(msg)
    return {
        "unit": "gpu",
        "rate_per_unit_h": given["slow_rate_per_gpu_h"],
        "duration": {
            "median_s": given["slow_duration_median_s"],
            "sigma": given["slow_duration_sigma"] or 0.0,
        },
        "excess": {
            "median": given["slow_excess_median"],
            "sigma": given["slow_excess_sigma"] or 0.0,
        },
    }


#: The parser of each structured kind of knob (the others are numbers or text).
_PARSERS: dict[str, Callable[..., KnobValue]] = {
    "weibull_shape": weibull_shape,
    "node_groups": node_groups,
    "fleet_age": fleet_age,
    "rates": class_rates,
    "slow_laws": slow_laws,
}


def restart_shorthand(
    given: Mapping[str, Any],
) -> tuple[dict[str, Any], RestartShorthand | None]:
    """Split ``restart_s`` (the whole restart) into ``reschedule_s``; the other phases hold.

    ``reschedule_s = restart_s - (detect_s + reload_s + warmup_s)`` with each phase at its given
    value or the Scenario default. Returns the knobs without ``restart_s`` and a record of what
    was set (None when ``restart_s`` was not given).
    """
    from models import Scenario

    out = dict(given)
    if RESTART_S not in out:
        return out, None
    restart = _number(out.pop(RESTART_S), where="restart_s")
    if "reschedule_s" in out:
        msg = "give restart_s or reschedule_s, not both (restart_s sets reschedule_s)"
        raise ValueError(msg)
    defaults = Scenario()
    phases = {
        k: float(out.get(k, getattr(defaults, k))) for k in ("detect_s", "reload_s", "warmup_s")
    }
    reschedule = restart - sum(phases.values())
    if reschedule < 0:
        msg = (
            f"restart_s = {restart:g} s is shorter than detection + reload + warm-up "
            f"({' + '.join(f'{v:g}' for v in phases.values())} = {sum(phases.values()):g} s); "
            "lower --detect-s / --reload-s / --warmup-s or give a longer restart"
        )
        raise ValueError(msg)
    out["reschedule_s"] = reschedule
    record: RestartShorthand = {
        "restart_s": restart,
        "reschedule_s": reschedule,
        "detect_s": phases["detect_s"],
        "reload_s": phases["reload_s"],
        "warmup_s": phases["warmup_s"],
    }
    return out, record


def _number(value: Any, *, where: str) -> float:
    if isinstance(value, bool):
        msg = f"{where} must be a number, got {value!r}"
        raise ValueError(msg)
    try:
        number = float(value)
    except (TypeError, ValueError):
        msg = f"{where} must be a number, got {value!r}"
        raise ValueError(msg) from None
    if not math.isfinite(number):
        msg = f"{where} must be a finite number, got {value!r}"
        raise ValueError(msg)
    return number


def _positive(value: Any, *, where: str) -> float:
    number = _number(value, where=where)
    if number <= 0:
        msg = f"{where} must be positive (1 is exponential), got {value!r}"
        raise ValueError(msg)
    return number
