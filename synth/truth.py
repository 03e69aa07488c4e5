"""Ground truth: the data contract's §5 rules applied to the events the generator wrote.

Every figure is computed from what lands in the files (printed, possibly skewed, Xid times; ticket
times; the attempts written to sacct), so a correct implementation of §5 over the landing files
reproduces it exactly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from synth.config import FAILURE_XIDS, FIX_KINDS, NON_HARDWARE_CLASSES, RECOVER, XID_CLASS
from synth.fleet import F_REPLACE, FIXES, HOUR_S
from synth.lifetimes import cum_hazard, hazard_change

if TYPE_CHECKING:
    from synth.config import ClassSpec, SynthConfig
    from synth.fleet import Fleet
    from synth.kernel import XidLines
    from synth.workload import Attempt, Jobs

INCIDENT_GAP_S = 600
ATTRIBUTION_BEFORE_S = 600
ATTRIBUTION_AFTER_S = 300
INTERRUPTION_STATES = frozenset({"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"})
_KEY = 1 << 40


def iso(ts: int) -> str:
    """Epoch seconds as ``YYYY-mm-ddTHH:MM:SSZ``."""
    return np.datetime_as_string(np.datetime64(int(ts), "s")) + "Z"


def class_law(spec: ClassSpec) -> dict[str, Any]:
    """Return a class's entry under the truth's ``classes``.

    ``level``, ``weibull_shape``, ``weibull_scale_h`` (both null when the class is not a
    Weibull: there is no Weibull law to report), ``mtbf_h`` (the family's true mean, hours),
    ``repair_median_h``, ``family``, ``params`` (the family's parameters under lifelines' names,
    :meth:`ClassSpec.params`) and ``median_h``.
    """
    weibull = spec.family == "weibull"
    return {
        "level": spec.level,
        "weibull_shape": spec.shape if weibull else None,
        "weibull_scale_h": spec.scale_h if weibull else None,
        "mtbf_h": spec.mtbf_h,
        "repair_median_h": spec.repair_median_h,
        "family": spec.family,
        "params": spec.params(),
        "median_h": spec.median_h,
    }


@dataclass(frozen=True)
class Lives:
    """Every life of every unit (cut by the chosen events), one row per life.

    ``start`` / ``end`` in epoch seconds, ``owner`` the unit, ``ended_by`` the fleet event
    that ended it (-1: still in service at the node's end), ``bad`` whether a bad unit lived it.
    """

    start: np.ndarray
    end: np.ndarray
    owner: np.ndarray
    ended_by: np.ndarray
    bad: np.ndarray


def unit_lives(config: SynthConfig, fleet: Fleet, cut: np.ndarray) -> Lives:
    """Return the lives of every unit, cut by the events under the mask ``cut``.

    A life runs from the unit's installation or the end of the repair of the cutting event
    before, to the next cutting event's start, or to the node's removal or ``W1``. With every
    failure cutting, these are the failure process's lives (renewal at every repair's end;
    downtime outside them); with the replacing events only, the lives tickets cut.
    """
    w1 = config.window_end_s
    sel = np.flatnonzero(cut)
    unit = fleet.ev_unit[sel]
    install = fleet.installed[fleet.unit_node]
    end_of = fleet.node_end(w1)[fleet.unit_node]
    n_units = fleet.unit_node.size
    first_of_unit = np.ones(unit.size, dtype=bool)
    first_of_unit[1:] = unit[1:] != unit[:-1]
    prev_close = np.empty(unit.size, dtype=np.int64)
    prev_close[1:] = fleet.ev_close[sel][:-1]
    ev_start = np.where(first_of_unit, install[unit], prev_close)
    last_of_unit = np.ones(unit.size, dtype=bool)
    last_of_unit[:-1] = unit[:-1] != unit[1:]
    last_close = np.full(n_units, -1, dtype=np.int64)
    last_close[unit[last_of_unit]] = fleet.ev_close[sel][last_of_unit]
    term_start = np.where(last_close >= 0, last_close, install)
    # a bad unit stays bad until a replacement (or a planned one) puts a normal one in
    replacing = fleet.replacing[sel].astype(np.int64)
    before = np.cumsum(replacing) - replacing
    first_idx = np.searchsorted(unit, unit, side="left")
    ev_bad = fleet.unit_bad0[unit] & (before - before[first_idx] == 0)
    n_replacing = np.bincount(unit, weights=replacing, minlength=n_units)
    term_bad = fleet.unit_bad0 & (n_replacing == 0)
    return Lives(
        start=np.concatenate([ev_start, term_start]),
        end=np.concatenate([fleet.ev_open[sel], end_of]),
        owner=np.concatenate([unit, np.arange(n_units)]),
        ended_by=np.concatenate([sel, np.full(n_units, -1)]),
        bad=np.concatenate([ev_bad, term_bad]),
    )


def _class_rows(fleet: Fleet, owner: np.ndarray, c: int) -> np.ndarray:
    """Mask of the lives (by owner unit) that are at risk of class ``c``."""
    is_gpu = owner < fleet.n_gpu_units
    if c in fleet.gpu_class_idx:
        return is_gpu
    k = max(fleet.node_class_idx.size, 1)
    node_cls = fleet.node_class_idx[(owner - fleet.n_gpu_units) % k]
    mask: np.ndarray = ~is_gpu & (node_cls == c)
    return mask


def lives_by_class(config: SynthConfig, fleet: Fleet) -> dict[str, dict[str, int]]:
    """Units at risk, failures and exposure per hardware class over ``[W0, W1)`` (contract §5).

    The lives repair tickets cut (replacement lives): a slot's lives are cut by its replace /
    planned-replace tickets; a GPU slot's life counts once for every GPU-level class, failed
    only for the class of a ``replace`` ticket ending it. Failures fixed without a replacement
    cut nothing here (see :func:`failure_process` for the lives every failure cuts).
    """
    w0, w1 = config.window_start_s, config.window_end_s
    lives = unit_lives(config, fleet, fleet.replacing)
    ended = np.maximum(lives.ended_by, 0)
    fails = (lives.ended_by >= 0) & fleet.failed[ended] & (fleet.ev_open[ended] < w1)
    failed_cls = np.where(fails, fleet.ev_class[ended], -1)
    inside = (lives.end > w0) & (lives.start < w1)
    exposure = np.minimum(lives.end, w1) - np.maximum(lives.start, w0)
    out: dict[str, dict[str, int]] = {}
    for c, name in enumerate(fleet.class_names):
        if not fleet.class_hardware[c]:
            continue
        rows = inside & _class_rows(fleet, lives.owner, c)
        out[name] = {
            "n_lives": int(rows.sum()),
            "n_failed": int(np.sum(rows & (failed_cls == c))),
            "exposure_s": int(exposure[rows].sum()),
        }
    return out


def failure_process(
    config: SynthConfig,
    fleet: Fleet,
    forced: list[tuple[int, int, int]],
    attempts: list[Attempt],
) -> dict[str, dict[str, Any]]:
    """Return the failure process's truth per class (data contract §6, ``failure_process``).

    Lives are cut by every failure (renewal at each repair's end; the repair's downtime is not
    at risk). Per class: the law (``family``, ``params``, ``mean_h``), the bad units (``share``,
    ``factor``), the failures in ``[W0, W1)`` (``n_failures``, ``n_by_fix``, ``n_bad_unit``,
    ``n_forced``: the deliberately ambiguous attempts' forced failures, which no hazard drew),
    ``n_lives`` and ``exposure_h`` (in-service unit-hours in the window; of bad units:
    ``bad_unit_exposure_h``), ``compensator`` (the
    sum over every in-window at-risk interval of every unit of the class's cumulative hazard
    increment at the unit's true ages, times the bad-unit factor and any hazard change; of bad
    units: ``bad_unit_compensator``),
    ``expected_failures`` (compensator + forced) and ``rate_per_unit_h`` (expected / exposure:
    the rate over the ages observed), and ``replacement`` (``replace_share``,
    ``n_replacements``, ``expected_replacements``, ``mean_time_between_replacements_h`` =
    exposure / expected replacements).
    """
    w0, w1 = config.window_start_s, config.window_end_s
    lives = unit_lives(config, fleet, fleet.failed)
    a = np.maximum(lives.start, w0)
    b = np.minimum(lives.end, w1)
    inside = b > a
    x0 = (a - lives.start) / HOUR_S
    x1 = (b - lives.start) / HOUR_S
    change_at, factor = hazard_change(config)
    xc = None if change_at is None else (change_at - lives.start) / HOUR_S
    classes = config.fleet_classes
    in_window = fleet.failed & (fleet.ev_open > w0) & (fleet.ev_open < w1)  # as `failures`
    ev_bad, is_forced = _bad_and_forced(fleet, lives, forced)
    interrupted = Counter(att.fail_class for att in attempts if att.fail_class >= 0)
    out: dict[str, dict[str, Any]] = {}
    for c, name in enumerate(fleet.class_names):
        spec = classes[name]
        hardware = bool(fleet.class_hardware[c])
        rows = inside & _class_rows(fleet, lives.owner, c)
        ages = (x0[rows], x1[rows], None if xc is None else xc[rows])
        increment = _hazard_increment(spec, *ages, factor)
        bad_factor = np.where(lives.bad[rows], config.bad_unit_factor, 1.0)
        compensator = float(np.sum(bad_factor * increment))
        bad_compensator = float(np.sum((bad_factor * increment)[lives.bad[rows]]))
        exposure_h = float(np.sum(x1[rows] - x0[rows]))
        bad_exposure_h = float(np.sum((x1[rows] - x0[rows])[lives.bad[rows]]))
        mine = in_window & (fleet.ev_class == c)
        n_forced = int(np.sum(mine & is_forced))
        fixes = config.fixes_of(name)
        n_by_fix = {f: int(np.sum(mine & (fleet.ev_fix == FIXES.index(f)))) for f in fixes}
        expected = compensator + n_forced
        share = fixes.get("replace", 0.0)
        expected_rep = share * compensator + n_forced
        row: dict[str, Any] = {
            "level": spec.level,
            "hardware": hardware,
            "family": spec.family,
            "params": spec.params(),
            "mean_h": spec.mtbf_h,
            "bad_unit_share": config.bad_unit_share if hardware else 0.0,
            "bad_unit_factor": config.bad_unit_factor if hardware else 1.0,
            "fixes": fixes,
            "n_failures": int(mine.sum()),
            "n_by_fix": n_by_fix,
            "n_bad_unit": int(np.sum(mine & ev_bad)),
            "n_forced": n_forced,
            "n_attempts_interrupted": int(interrupted.get(c, 0)),
            "n_lives": int(rows.sum()),
            "exposure_h": exposure_h,
            "bad_unit_exposure_h": bad_exposure_h,
            "compensator": compensator,
            "bad_unit_compensator": bad_compensator,
            "expected_failures": expected,
            "rate_per_unit_h": expected / exposure_h if exposure_h > 0 else None,
        }
        if hardware:
            row["replacement"] = {
                "replace_share": share,
                "n_replacements": n_by_fix.get("replace", 0),
                "expected_replacements": expected_rep,
                "mean_time_between_replacements_h": (
                    exposure_h / expected_rep if expected_rep > 0 else None
                ),
            }
        out[name] = row
    return out


def _bad_and_forced(
    fleet: Fleet, lives: Lives, forced: list[tuple[int, int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Return, per failure event, whether it ended a bad unit's life and whether it was forced.

    Forced failures are those of the deliberately ambiguous attempts (``(unit, _, time)``).
    """
    ev_bad = np.zeros(fleet.ev_unit.size, dtype=bool)
    ended = lives.ended_by >= 0
    ev_bad[lives.ended_by[ended]] = lives.bad[ended]
    forced_keys = {(u, t) for u, _, t in forced}
    is_forced = np.array(
        [
            (u, t) in forced_keys
            for u, t in zip(fleet.ev_unit.tolist(), fleet.ev_open.tolist(), strict=True)
        ],
        dtype=bool,
    )
    return ev_bad, is_forced


def _hazard_increment(
    spec: ClassSpec, x0: np.ndarray, x1: np.ndarray, xc: np.ndarray | None, factor: float
) -> np.ndarray:
    """``H(x1) - H(x0)`` of the class's law, with the hazard x ``factor`` from age ``xc`` on."""

    def cum(x: np.ndarray) -> np.ndarray:
        return cum_hazard(spec.family, x, spec.shape, spec.scale_h)

    if xc is None:
        out: np.ndarray = cum(x1) - cum(x0)
        return out
    mid = np.clip(xc, x0, x1)
    out = (cum(mid) - cum(x0)) + factor * (cum(x1) - cum(mid))
    return out


def non_hardware(
    config: SynthConfig, process: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per non-hardware class: the rate per node-hour, interruptions and node-hours at risk.

    ``rate_per_node_h`` and ``recovery_median_h`` (the configured process), ``n_interruptions``
    in ``[W0, W1)``, ``exposure_node_h`` (node-hours at risk: in service and not recovering
    from this class), ``expected_interruptions`` (rate x exposure) and
    ``n_attempts_interrupted`` (attempts it ended).
    """
    out: dict[str, dict[str, Any]] = {}
    for name in NON_HARDWARE_CLASSES:
        spec = config.non_hardware.get(name)
        if spec is None or spec.rate_per_node_h == 0 or name not in process:
            continue
        row = process[name]
        out[name] = {
            "rate_per_node_h": spec.rate_per_node_h,
            "recovery_median_h": spec.recovery_median_h,
            "n_interruptions": row["n_failures"],
            "exposure_node_h": row["exposure_h"],
            "expected_interruptions": row["expected_failures"],
            "n_attempts_interrupted": row["n_attempts_interrupted"],
        }
    return out


def fix_counts(config: SynthConfig, process: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Failures in the window per fix kind, over every class (``recover``: non-hardware)."""
    del config
    totals = dict.fromkeys((*FIX_KINDS, RECOVER), 0)
    for row in process.values():
        for fix, n in row["n_by_fix"].items():
            totals[fix] += n
    return totals


def failures(
    config: SynthConfig,
    fleet: Fleet,
    precursors: dict[int, tuple[bool, float | None]] | None = None,
    forced: list[tuple[int, int, int]] | None = None,
) -> list[dict[str, Any]]:
    """Every failure (whatever fixed it) and non-hardware interruption, before and in the window.

    Each row: ``node``, ``slot`` (``gpu<i>``, or the class name at node level),
    ``component_class``, ``failed_ts``, ``repaired_ts`` (the repair's end, None if after
    ``W1``), ``in_window``, ``fix`` (``replace``, ``reset``, ``reboot``, ``reseat``;
    ``recover`` for a non-hardware interruption), ``bad_unit`` (a bad unit failed),
    ``ticket`` (a ``replace`` ticket was written: only for ``replace``) and ``forced`` (one of
    the deliberately ambiguous attempts' two failures).

    With ``precursors`` (fleet event index -> planted, lead time in hours; from
    :meth:`synth.precursors.Precursors.lookup`) each row also says whether a precursor
    was planted before it (``precursor``) and its lead time (``precursor_lead_h``, else None).
    """
    w0, w1 = config.window_start_s, config.window_end_s
    sel = np.flatnonzero(fleet.failed)
    order = sel[np.lexsort((fleet.ev_unit[sel], fleet.ev_open[sel]))]
    lives = unit_lives(config, fleet, fleet.failed)
    ended = lives.ended_by >= 0
    ev_bad = np.zeros(fleet.ev_unit.size, dtype=bool)
    ev_bad[lives.ended_by[ended]] = lives.bad[ended]
    forced_keys = {(u, t) for u, _, t in forced or []}
    rows = []
    for i in order.tolist():
        unit = int(fleet.ev_unit[i])
        opened, closed = int(fleet.ev_open[i]), int(fleet.ev_close[i])
        fix = FIXES[int(fleet.ev_fix[i])]
        row: dict[str, Any] = {
            "node": fleet.names[int(fleet.unit_node[unit])],
            "slot": fleet.unit_slot[unit],
            "component_class": fleet.class_names[int(fleet.ev_class[i])],
            "failed_ts": iso(opened),
            "repaired_ts": iso(closed) if closed < w1 else None,
            "in_window": w0 < opened < w1,
            "fix": fix,
            "bad_unit": bool(ev_bad[i]),
            "ticket": fix == "replace",
            "forced": (unit, opened) in forced_keys,
        }
        if precursors is not None:
            planted, lead_h = precursors.get(i, (False, None))
            row["precursor"] = planted
            row["precursor_lead_h"] = lead_h
        rows.append(row)
    return rows


def failure_incidents(xids: XidLines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Failure incidents from Xid lines: ``(node, first_ts, class name)`` (contract §5).

    Lines of one ``(host, bus)`` in time order split where the gap exceeds ``incident_gap_s``; an
    incident is a failure incident when one of its codes ends a life, and takes that code's class.
    """
    n = xids.ts.size
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0, dtype=object)
    order = np.lexsort((xids.ts, xids.slot, xids.node))
    node, slot, ts, code = xids.node[order], xids.slot[order], xids.ts[order], xids.code[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (
        (node[1:] != node[:-1]) | (slot[1:] != slot[:-1]) | (ts[1:] - ts[:-1] > INCIDENT_GAP_S)
    )
    incident = np.cumsum(new) - 1
    first_idx = np.flatnonzero(new)
    is_failure = np.isin(code, list(XID_CLASS))
    cls = np.full(first_idx.size, None, dtype=object)
    for i in np.flatnonzero(is_failure)[::-1].tolist():  # reversed: the first one wins
        cls[incident[i]] = XID_CLASS[int(code[i])]
    keep = np.array([c is not None for c in cls], dtype=bool)
    return node[first_idx][keep], ts[first_idx][keep], cls[keep]


def interruptions(
    config: SynthConfig,
    fleet: Fleet,
    xids: XidLines,
    jobs: Jobs,
    attempts: list[Attempt],
    *,
    node_evidence: np.ndarray | None = None,
    planned_evidence: np.ndarray | None = None,
    failure_evidence: tuple[np.ndarray, np.ndarray] | None = None,
    scheduler: np.ndarray | None = None,
    facts: dict[tuple[int, int], tuple[str, bool]] | None = None,
) -> list[dict[str, Any]]:
    """Attribute every interrupted attempt in the window (contract §5, attempts).

    Parameters
    ----------
    node_evidence
        Sorted keys ``node * 2**40 + time`` of node events (Slurm node events starting, a
        Kubernetes NodeNotReady): scheduler evidence without a class.
    planned_evidence
        Sorted keys of node events that are planned work: evidence of class ``maintenance``.
    failure_evidence
        Sorted keys of the node events of failures (any fix, hardware or not) and the class
        each failure's telemetry names (:attr:`synth.node_events.NodeEvent.failure_class`):
        candidates of that class, as the failure events they belong to are.
    scheduler
        The scheduler of every job (:mod:`synth.schedulers`); None: all Slurm.
    facts
        For Kubernetes and torchrun attempts, ``(job, attempt) -> (state, application exit)``
        as those systems' telemetry shows them (attempts without an entry are no interruption).
    """
    from synth.schedulers import NAMES, SLURM, job_id_raw

    w0, w1 = config.window_start_s, config.window_end_s
    ev_keys = np.empty(0, dtype=np.int64) if node_evidence is None else node_evidence
    pl_keys = np.empty(0, dtype=np.int64) if planned_evidence is None else planned_evidence
    pl_cls = np.full(len(pl_keys), "maintenance", dtype=object)
    inc_key, inc_cls = _xid_evidence(xids)
    tk_key, tk_cls = _ticket_evidence(fleet)
    fail_keys, fail_cls = (
        (np.empty(0, dtype=np.int64), np.empty(0, dtype=object))
        if failure_evidence is None
        else failure_evidence
    )
    next_start: dict[tuple[int, int], int] = {(a.job, a.number): a.start_s for a in attempts}
    out = []
    for a in attempts:
        kind = SLURM if scheduler is None else int(scheduler[a.job])
        if kind == SLURM:
            base_state, app_exit = a.state.split(" ")[0], False
        else:
            base_state, app_exit = (facts or {}).get((a.job, a.number), ("", False))
        if base_state not in INTERRUPTION_STATES or not (w0 <= a.end_s < w1):
            continue
        nodes = np.array(a.nodes, dtype=np.int64) * _KEY
        lo_t, hi_t = a.end_s - ATTRIBUTION_BEFORE_S, a.end_s + ATTRIBUTION_AFTER_S
        classes: set[str] = set()
        has_xid = False
        for keys, cls, is_xid in (
            (inc_key, inc_cls, True),
            (tk_key, tk_cls, False),
            (pl_keys, pl_cls, False),
            (fail_keys, fail_cls, False),
        ):
            lo = np.searchsorted(keys, nodes + lo_t, side="left")
            hi = np.searchsorted(keys, nodes + hi_t, side="right")
            for i, j in zip(lo[lo < hi].tolist(), hi[lo < hi].tolist(), strict=True):
                classes.update(cls[i:j].tolist())
                has_xid = has_xid or is_xid
        lo = np.searchsorted(ev_keys, nodes + lo_t, side="left")
        hi = np.searchsorted(ev_keys, nodes + hi_t, side="right")
        has_node_event = bool(np.any(lo < hi))
        cause, attribution = _attribute(classes, has_xid, base_state, has_node_event, app_exit)
        nxt = next_start.get((a.job, a.number + 1))
        if a.carrier and cause != "ambiguous":
            msg = f"deliberately ambiguous attempt of job {jobs.raw_id[a.job]} is {cause}"
            raise RuntimeError(msg)
        row: dict[str, Any] = {
            "job_id_raw": job_id_raw(jobs, a.job, kind),
            "attempt": a.number,
            "end_ts": iso(a.end_s),
            "state": base_state,
            "cause_class": cause,
            "attribution": attribution,
            "restart_overhead_s": None if nxt is None else nxt - a.end_s,
            "deliberately_ambiguous": a.carrier,
            "true_class": fleet.class_names[a.fail_class] if a.fail_class >= 0 else None,
        }
        if kind != SLURM:
            row["scheduler"] = NAMES[kind]
        out.append(row)
    return out


def _xid_evidence(xids: XidLines) -> tuple[np.ndarray, np.ndarray]:
    """Return the sorted keys ``node * 2**40 + time`` of the Xid incidents and their classes."""
    inc_node, inc_ts, inc_cls = failure_incidents(xids)
    inc_key = inc_node * _KEY + inc_ts
    inc_order = np.argsort(inc_key, kind="stable")
    return inc_key[inc_order], inc_cls[inc_order]


def _ticket_evidence(fleet: Fleet) -> tuple[np.ndarray, np.ndarray]:
    """Return the sorted keys of the replacement tickets' failures and the class each names."""
    rep = np.flatnonzero(fleet.failed & (fleet.ev_fix == F_REPLACE))  # replace tickets
    tk_key = fleet.unit_node[fleet.ev_unit[rep]] * _KEY + fleet.ev_open[rep]
    tk_order = np.argsort(tk_key, kind="stable")
    # a ticket joins its failure's event, whose class is the one its Xid names when it has one
    tk_cls = np.array(
        [seen_class(fleet.class_names[c]) for c in fleet.ev_class[rep]], dtype=object
    )[tk_order]
    return tk_key[tk_order], tk_cls


def seen_class(name: str) -> str:
    """Return the class the warehouse names a failure of class ``name`` by.

    A GPU-level class whose failures print an Xid code is the class the catalog files that code
    under (``gpu_sram`` prints Xid 95, which the catalog files under ``gpu_memory``); any other
    class is itself.
    """
    codes = FAILURE_XIDS.get(name)
    return XID_CLASS[codes[0]] if codes else name


def _attribute(
    classes: set[str],
    has_xid: bool,
    state: str,
    has_node_event: bool = False,
    application_exit: bool = False,
) -> tuple[str, str]:
    if len(classes) > 1:
        return "ambiguous", "ambiguous"
    if len(classes) == 1:
        return next(iter(classes)), "hardware-confirmed" if has_xid else "scheduler-only"
    if state == "NODE_FAIL" or has_node_event:
        return "unknown", "scheduler-only"
    if state == "OUT_OF_MEMORY" or application_exit:
        return "application", "application"
    return "unknown", "unattributed"


def by_cause(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Interruption counts per ``(cause_class, attribution)``."""
    counts = Counter((r["cause_class"], r["attribution"]) for r in rows)
    return [{"cause_class": c, "attribution": a, "n": n} for (c, a), n in sorted(counts.items())]
