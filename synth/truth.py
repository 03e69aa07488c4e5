"""Ground truth: the data contract's §5 rules applied to the events the generator wrote.

Every figure is computed from what lands in the files (printed, possibly skewed, Xid times; ticket
times; the attempts written to sacct), so a correct implementation of §5 over the landing files
reproduces it exactly.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from synth.config import XID_CLASS
from synth.fleet import REPLACE

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


def lives_by_class(config: SynthConfig, fleet: Fleet) -> dict[str, dict[str, int]]:
    """Units at risk, failures and exposure per class over ``[W0, W1)`` (contract §5, lives).

    A slot's lives are cut by its replace / planned-replace tickets; a GPU slot's life counts once
    for every GPU-level class, failed only for the class of a ``replace`` ticket ending it.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    unit = fleet.ev_unit
    install = fleet.installed[fleet.unit_node]
    end_of = fleet.node_end(w1)[fleet.unit_node]
    first_of_unit = np.ones(unit.size, dtype=bool)
    first_of_unit[1:] = unit[1:] != unit[:-1]
    prev_close = np.empty(unit.size, dtype=np.int64)
    prev_close[1:] = fleet.ev_close[:-1]
    ev_start = np.where(first_of_unit, install[unit], prev_close)
    ev_failed_cls = np.where(
        (fleet.ev_action == REPLACE) & (fleet.ev_open < w1), fleet.ev_class, -1
    )
    n_units = fleet.unit_node.size
    last_of_unit = np.ones(unit.size, dtype=bool)
    last_of_unit[:-1] = unit[:-1] != unit[1:]
    last_close = np.full(n_units, -1, dtype=np.int64)
    last_close[unit[last_of_unit]] = fleet.ev_close[last_of_unit]
    term_start = np.where(last_close >= 0, last_close, install)
    starts = np.concatenate([ev_start, term_start])
    ends = np.concatenate([fleet.ev_open, end_of])
    owner = np.concatenate([unit, np.arange(n_units)])
    failed_cls = np.concatenate([ev_failed_cls, np.full(n_units, -1)])
    inside = (ends > w0) & (starts < w1)
    exposure = np.minimum(ends, w1) - np.maximum(starts, w0)
    is_gpu = owner < fleet.n_gpu_units
    k = max(fleet.node_class_idx.size, 1)
    node_cls = (
        fleet.node_class_idx[(owner - fleet.n_gpu_units) % k]
        if fleet.node_class_idx.size
        else owner * 0
    )
    out: dict[str, dict[str, int]] = {}
    for c, name in enumerate(fleet.class_names):
        rows = inside & (is_gpu if c in fleet.gpu_class_idx else (~is_gpu & (node_cls == c)))
        out[name] = {
            "n_lives": int(rows.sum()),
            "n_failed": int(np.sum(rows & (failed_cls == c))),
            "exposure_s": int(exposure[rows].sum()),
        }
    return out


def failures(
    config: SynthConfig,
    fleet: Fleet,
    precursors: dict[int, tuple[bool, float | None]] | None = None,
) -> list[dict[str, Any]]:
    """Every ``replace`` ticket (a failure), before and in the window.

    With ``precursors`` (fleet event index -> planted, lead time in hours; from
    :meth:`synth.precursors.Precursors.lookup`) each row also says whether a precursor
    was planted before it (``precursor``) and its lead time (``precursor_lead_h``, else None).
    """
    w0, w1 = config.window_start_s, config.window_end_s
    sel = np.flatnonzero(fleet.ev_action == REPLACE)
    order = sel[np.lexsort((fleet.ev_unit[sel], fleet.ev_open[sel]))]
    rows = []
    for i in order.tolist():
        unit = int(fleet.ev_unit[i])
        opened, closed = int(fleet.ev_open[i]), int(fleet.ev_close[i])
        row: dict[str, Any] = {
            "node": fleet.names[int(fleet.unit_node[unit])],
            "slot": fleet.unit_slot[unit],
            "component_class": fleet.class_names[int(fleet.ev_class[i])],
            "failed_ts": iso(opened),
            "repaired_ts": iso(closed) if closed < w1 else None,
            "in_window": w0 < opened < w1,
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
    inc_node, inc_ts, inc_cls = failure_incidents(xids)
    inc_key = inc_node * _KEY + inc_ts
    inc_order = np.argsort(inc_key, kind="stable")
    inc_key, inc_cls = inc_key[inc_order], inc_cls[inc_order]
    rep = np.flatnonzero(fleet.ev_action == REPLACE)
    tk_key = fleet.unit_node[fleet.ev_unit[rep]] * _KEY + fleet.ev_open[rep]
    tk_order = np.argsort(tk_key, kind="stable")
    tk_key = tk_key[tk_order]
    tk_cls = np.array([fleet.class_names[c] for c in fleet.ev_class[rep]], dtype=object)[tk_order]
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
        }
        if kind != SLURM:
            row["scheduler"] = NAMES[kind]
        out.append(row)
    return out


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
