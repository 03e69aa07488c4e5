"""The hardware side of the synthetic fleet: nodes, unit lifetimes with renewals, and tickets.

Every unit (a GPU slot or a node-level component) is simulated in calendar time from its node's
installation: competing latent lifetimes (one per GPU-level class for a GPU slot; Weibull unless
the class names another family) and an exponential planned replacement race; the first to fire
ends the life. A failure is fixed by a replacement, a GPU reset, a node reboot or a reseat (drawn
from its class's fix shares); the repair is lognormal, and the unit starts a new life at its end
(as good as new, whatever the fix; only a replacement or a planned one puts a new serial in).
A bad unit (a repeat offender, drawn at installation) has every hazard multiplied by
``bad_unit_factor`` until it is replaced. Non-hardware interruption classes are node-level units
too, with exponential lifetimes (a Poisson process while at risk), no planned race and no bad units.
All times are whole epoch seconds (``int64``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from synth.config import FIX_KINDS, GPU_CLASSES, MIN_REPAIR_S, NODE_CLASSES, RECOVER
from synth.lifetimes import (
    aux_rng,
    bad_lifetimes,
    hazard_change,
    hazard_changed,
    lifetimes_h,
)

if TYPE_CHECKING:
    from synth.config import SynthConfig

DAY_S = 86_400
HOUR_S = 3_600
#: Longest time limit of any job; nodes are drained a little longer before planned work.
MAX_LIMIT_S = 96 * HOUR_S
DRAIN_LEAD_S = MAX_LIMIT_S + 900
PLANNED_REPAIR_MEDIAN_H = 4.0
#: Event actions: a failure (its fix in ``ev_fix``), a planned replacement; and the minor tickets'
#: actions. ``ACTIONS`` are the ticket actions (a failure's ticket, when replaced: ``replace``).
FAIL, PLANNED, RESEAT, NO_FAULT = 0, 1, 2, 3
ACTIONS = ("replace", "planned_replace", "reseat", "no_fault_found")
#: Fix of a failure (``ev_fix``); planned replacements have ``NO_FIX``.
FIXES = (*FIX_KINDS, RECOVER)
F_REPLACE, F_RESET, F_REBOOT, F_RESEAT, F_RECOVER = range(5)
NO_FIX = -1
STYLES = ("dmesg_t", "journal_iso", "syslog", "rfc3339", "dmesg_iso", "journal_json")
#: PCI bus of each GPU slot: DGX H100 layout first, then more buses for larger nodes.
PCI_BUSES = (
    "18",
    "2a",
    "3a",
    "5d",
    "9a",
    "ab",
    "ba",
    "db",
    "0c",
    "1d",
    "4b",
    "6e",
    "8a",
    "9c",
    "c1",
    "e4",
)


@dataclass
class Fleet:
    """Nodes, units and the failure / planned-replacement events of every unit.

    ``removed`` is ``-1`` for nodes in service at the window end. Units ``0 .. n_gpu_units - 1``
    are GPU slots (``node * gpus_per_node + slot``); the rest are node-level units
    (``n_gpu_units + node * n_node_classes + k``; the hardware classes first, then the
    non-hardware ones). Event arrays are sorted by unit, then time; ``ev_class`` indexes
    ``class_names``; ``ev_action`` is ``FAIL`` or ``PLANNED``; ``ev_fix`` indexes ``FIXES``
    (``NO_FIX`` for planned work); ``ev_close >= W1`` means still open at the window end.
    ``unit_bad0`` marks the units installed bad (a replacement brings a normal one).
    """

    names: list[str]
    rack: list[str]
    cluster: list[str]
    batch: list[str]
    installed: np.ndarray
    removed: np.ndarray
    skew_s: np.ndarray
    style: list[str]
    class_names: list[str]
    gpu_class_idx: np.ndarray
    node_class_idx: np.ndarray
    gpus_per_node: int
    unit_node: np.ndarray
    unit_slot: list[str]
    ev_unit: np.ndarray
    ev_class: np.ndarray
    ev_action: np.ndarray
    ev_open: np.ndarray
    ev_close: np.ndarray
    class_hardware: np.ndarray
    unit_bad0: np.ndarray
    ev_fix: np.ndarray

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return len(self.names)

    @property
    def n_gpu_units(self) -> int:
        """Number of GPU slots."""
        return self.n_nodes * self.gpus_per_node

    def node_end(self, w1: int) -> np.ndarray:
        """End of each node's service: its removal, else ``w1``."""
        return np.where(self.removed >= 0, self.removed, w1)

    @property
    def n_hw_node_classes(self) -> int:
        """Number of node-level hardware classes (they come first in ``node_class_idx``)."""
        return int(self.class_hardware[self.node_class_idx].sum())

    @property
    def failed(self) -> np.ndarray:
        """Mask of the events that are failures (any fix)."""
        mask: np.ndarray = self.ev_action == FAIL
        return mask

    @property
    def replacing(self) -> np.ndarray:
        """Mask of the events that put a new unit in: replace-fixed failures and planned work."""
        mask: np.ndarray = (self.ev_action == PLANNED) | (
            (self.ev_action == FAIL) & (self.ev_fix == F_REPLACE)
        )
        return mask

    def keep_events(self, keep: np.ndarray) -> None:
        """Keep only the events under the mask ``keep`` (order unchanged)."""
        self.ev_unit = self.ev_unit[keep]
        self.ev_class = self.ev_class[keep]
        self.ev_action = self.ev_action[keep]
        self.ev_open = self.ev_open[keep]
        self.ev_close = self.ev_close[keep]
        self.ev_fix = self.ev_fix[keep]


@dataclass(frozen=True)
class Carrier:
    """A multi-node attempt started on reserved nodes and hit by two failures of two classes."""

    start_s: int
    hit_s: int
    nodes: tuple[int, ...]


def build_fleet(config: SynthConfig, rng: np.random.Generator) -> Fleet:
    """Lay out nodes in install batches, with per-host log style and clock skew.

    Batch ``b1`` (about 60 % of nodes) is installed about 400 days before the window, ``b2``
    about 120 days before, and the small batch ``b3`` (about 4 %) during the window.
    """
    n = config.nodes
    w0 = config.window_start_s
    late = config.installed_in_window_share
    n3 = max(1, round(late * n)) if n >= 4 and late > 0 else 0
    n1 = min(max(1, round(0.6 * n)), n - n3) if n >= 2 else n
    n2 = n - n1 - n3
    sizes = (n1, n2, n3)
    batch_starts = (w0 - 400 * DAY_S, w0 - 120 * DAY_S, w0 + int(0.4 * config.days) * DAY_S)
    installed = np.empty(n, dtype=np.int64)
    batch: list[str] = []
    pos = 0
    for k, (size, first) in enumerate(zip(sizes, batch_starts, strict=True)):
        spread = 3 * DAY_S if k < 2 else 12 * HOUR_S
        installed[pos : pos + size] = first + np.sort(rng.integers(0, spread, size=size))
        batch += [f"b{k + 1}"] * size
        pos += size
    names = [f"gpu{i + 1:04d}" for i in range(n)]
    rack = [f"r{i // 4 + 1:03d}" for i in range(n)]
    cluster = ["alpha"] * n
    styles = list(STYLES) if config.days <= 360 else [s for s in STYLES if s != "syslog"]
    style_idx = rng.integers(0, len(styles), size=n)
    style = [styles[i] for i in style_idx]
    if all(s == "syslog" for s in style):
        style[0] = "dmesg_iso"
    skewed = rng.random(n) < config.skewed_host_fraction
    skew = np.where(skewed, rng.integers(-config.max_skew_s, config.max_skew_s + 1, size=n), 0)
    classes = config.fleet_classes
    class_names = list(classes)
    gpu_idx = np.array([i for i, c in enumerate(class_names) if c in GPU_CLASSES], dtype=np.int64)
    node_idx = np.array(
        [i for i, c in enumerate(class_names) if classes[c].level == "node"], dtype=np.int64
    )
    hardware = np.array([c in GPU_CLASSES or c in NODE_CLASSES for c in class_names], dtype=bool)
    g = config.gpus_per_node
    unit_node = np.concatenate(
        [np.repeat(np.arange(n), g), np.repeat(np.arange(n), node_idx.size)]
    ).astype(np.int64)
    unit_slot = [f"gpu{s}" for s in range(g)] * n + [class_names[c] for c in node_idx] * n
    empty = np.empty(0, dtype=np.int64)
    return Fleet(
        names=names,
        rack=rack,
        cluster=cluster,
        batch=batch,
        installed=installed,
        removed=np.full(n, -1, dtype=np.int64),
        skew_s=skew.astype(np.int64),
        style=style,
        class_names=class_names,
        gpu_class_idx=gpu_idx,
        node_class_idx=node_idx,
        gpus_per_node=g,
        unit_node=unit_node,
        unit_slot=unit_slot,
        ev_unit=empty,
        ev_class=empty,
        ev_action=empty,
        ev_open=empty,
        ev_close=empty,
        class_hardware=hardware,
        unit_bad0=np.zeros(unit_node.size, dtype=bool),
        ev_fix=empty,
    )


def _planned_class(fleet: Fleet, unit: np.ndarray) -> np.ndarray:
    """Class written on a planned replacement: ``gpu`` for a GPU slot, else the unit's class."""
    names = fleet.class_names
    gpu_cls = names.index("gpu") if "gpu" in names else int(fleet.gpu_class_idx[0])
    k = fleet.node_class_idx.size
    node_cls = fleet.node_class_idx[(unit - fleet.n_gpu_units) % max(k, 1)] if k else unit * 0
    return np.where(unit < fleet.n_gpu_units, gpu_cls, node_cls)


@dataclass(frozen=True)
class _Risks:
    """The competing classes of a set of units: laws, fix shares, repair medians and minima."""

    families: list[str]
    shapes: np.ndarray
    scales: np.ndarray
    fix_cum: np.ndarray  # (classes, fixes) cumulative shares
    medians: np.ndarray  # (classes, fixes) median repair, hours
    min_s: np.ndarray  # (fixes,) shortest repair, seconds


def _risks(config: SynthConfig, fleet: Fleet, risks: np.ndarray) -> _Risks:
    classes = config.fleet_classes
    names = [fleet.class_names[int(c)] for c in risks]
    specs = [classes[name] for name in names]
    fix_share = np.zeros((len(names), len(FIXES)))
    medians = np.zeros((len(names), len(FIXES)))
    for i, (name, spec) in enumerate(zip(names, specs, strict=True)):
        for fix, share in config.fixes_of(name).items():
            fix_share[i, FIXES.index(fix)] = share
        medians[i] = [
            config.fix_repair_median_h.get(fix, spec.repair_median_h)
            if fix not in ("replace", RECOVER)
            else spec.repair_median_h
            for fix in FIXES
        ]
    return _Risks(
        families=[s.family for s in specs],
        shapes=np.array([s.shape for s in specs]),
        scales=np.array([s.scale_h for s in specs]),
        fix_cum=np.cumsum(fix_share, axis=1) / fix_share.sum(axis=1, keepdims=True),
        medians=medians,
        min_s=np.array([MIN_REPAIR_S[fix] for fix in FIXES], dtype=np.int64),
    )


def _renewals(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    units: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    risks: np.ndarray,
    *,
    fix_rng: np.random.Generator,
    bad: np.ndarray | None = None,
    planned: bool = True,
) -> tuple[np.ndarray, ...]:
    """Simulate renewal chains of ``units`` (all with the same competing ``risks``).

    ``bad`` marks the units whose current life is a bad unit's (until replaced); ``planned``
    switches the planned replacement race on (hardware units). Lifetimes, the planned race and
    the repair's normal draw come from ``rng`` in the order they always did; the fix kinds from
    ``fix_rng``.

    Returns ``(unit, class, action, open, close, fix)`` arrays of the events before each unit's
    end.
    """
    law = _risks(config, fleet, risks)
    rate_h = config.planned_replace_per_unit_year / (365.0 * 24.0) if planned else 0.0
    planned_cls = _planned_class(fleet, units)
    change_at, factor = hazard_change(config)
    bad_now = np.zeros(units.size, dtype=bool) if bad is None else bad.copy()
    t = starts.astype(np.int64).copy()
    active = np.flatnonzero(t < ends)
    out: list[tuple[np.ndarray, ...]] = []
    while active.size:
        m = active.size
        draws = lifetimes_h(rng, law.families, law.shapes, law.scales, m)
        is_bad = bad_now[active]
        if is_bad.any():
            draws[is_bad] = bad_lifetimes(
                draws[is_bad], law.families, law.shapes, law.scales, config.bad_unit_factor
            )
        if change_at is not None:
            since_h = (change_at - t[active]) / HOUR_S
            draws = hazard_changed(draws, law.families, law.shapes, law.scales, since_h, factor)
        first = np.argmin(draws, axis=1)
        life_h = draws[np.arange(m), first]
        planned_h = rng.exponential(1.0 / rate_h, size=m) if rate_h > 0 else np.full(m, np.inf)
        is_planned = planned_h < life_h
        life_h = np.minimum(np.where(is_planned, planned_h, life_h), 1e9)
        life_s = np.maximum(1, np.floor(life_h * HOUR_S)).astype(np.int64)
        cum = law.fix_cum[first]
        fix = (cum <= fix_rng.random(m)[:, None]).sum(axis=1)
        fix = np.where(is_planned, NO_FIX, fix)
        median_h = np.where(is_planned, PLANNED_REPAIR_MEDIAN_H, law.medians[first, fix])
        repair_h = median_h * np.exp(config.repair_sigma * rng.standard_normal(m))
        min_s = np.where(is_planned, MIN_REPAIR_S["replace"], law.min_s[fix])
        repair_s = np.maximum(min_s, np.floor(repair_h * HOUR_S)).astype(np.int64)
        opened = t[active] + life_s
        hit = opened < ends[active]
        idx = active[hit]
        closed = opened[hit] + repair_s[hit]
        cls = np.where(is_planned, planned_cls[active], risks[first])[hit]
        action = np.where(is_planned[hit], PLANNED, FAIL)
        out.append((units[idx], cls, action, opened[hit], closed, fix[hit]))
        # a replacement (or planned one) brings a normal unit; other fixes keep the bad one
        bad_now[idx] = is_bad[hit] & (fix[hit] != F_REPLACE) & (fix[hit] != NO_FIX)
        t[idx] = closed
        active = idx[closed < ends[idx]]
    if not out:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty, empty, empty, empty
    return tuple(np.concatenate([o[i] for o in out]).astype(np.int64) for i in range(6))


def simulate_lifetimes(config: SynthConfig, rng: np.random.Generator, fleet: Fleet) -> None:
    """Fill the fleet's event arrays: every unit from installation to the window end.

    Also draws which hardware units are installed bad (``fleet.unit_bad0``).
    """
    w1 = config.window_end_s
    n_units = fleet.unit_node.size
    units = np.arange(n_units, dtype=np.int64)
    hardware_unit = units < fleet.n_gpu_units
    k = fleet.node_class_idx.size
    for j, cls in enumerate(fleet.node_class_idx):
        if fleet.class_hardware[cls]:
            hardware_unit[fleet.n_gpu_units + j :: k] = True
    fleet.unit_bad0 = (aux_rng(config, 1).random(n_units) < config.bad_unit_share) & hardware_unit
    fix_rng = aux_rng(config, 0)
    starts = fleet.installed[fleet.unit_node]
    ends = np.full(n_units, w1, dtype=np.int64)
    parts = []
    gpu_units = units[: fleet.n_gpu_units]
    parts.append(
        _renewals(
            config,
            rng,
            fleet,
            gpu_units,
            starts[gpu_units],
            ends[gpu_units],
            fleet.gpu_class_idx,
            fix_rng=fix_rng,
            bad=fleet.unit_bad0[gpu_units],
        )
    )
    for j, cls in enumerate(fleet.node_class_idx):
        sel = units[fleet.n_gpu_units + j :: k] if k else units[:0]
        parts.append(
            _renewals(
                config,
                rng,
                fleet,
                sel,
                starts[sel],
                ends[sel],
                np.array([cls]),
                fix_rng=fix_rng,
                bad=fleet.unit_bad0[sel],
                planned=bool(fleet.class_hardware[cls]),
            )
        )
    _set_events(fleet, *(np.concatenate([p[i] for p in parts]) for i in range(6)))


def _set_events(
    fleet: Fleet,
    unit: np.ndarray,
    cls: np.ndarray,
    action: np.ndarray,
    opened: np.ndarray,
    closed: np.ndarray,
    fix: np.ndarray,
) -> None:
    order = np.lexsort((opened, unit))
    fleet.ev_unit = unit[order]
    fleet.ev_class = cls[order]
    fleet.ev_action = action[order]
    fleet.ev_open = opened[order]
    fleet.ev_close = closed[order]
    fleet.ev_fix = fix[order]


def remove_nodes(config: SynthConfig, rng: np.random.Generator, fleet: Fleet) -> None:
    """Decommission a few early nodes during the window, never while one of their units is out.

    Events at or after the removal are dropped; the removal moves past any repair still open at
    it (and is abandoned if that reaches the window end).
    """
    n = fleet.n_nodes
    w0, w1 = config.window_start_s, config.window_end_s
    n_remove = max(1, round(config.removed_fraction * n)) if n >= 8 else 0
    early = np.flatnonzero(fleet.installed < w0)
    if n_remove == 0 or early.size < 2:
        return
    chosen = np.sort(rng.choice(early, size=min(n_remove, early.size // 2), replace=False))
    when = w0 + rng.integers(
        int(0.2 * config.days * DAY_S), int(0.9 * config.days * DAY_S) + 1, size=chosen.size
    )
    keep = np.ones(fleet.ev_unit.size, dtype=bool)
    ev_node = fleet.unit_node[fleet.ev_unit]
    for node, removal in zip(chosen.tolist(), when.tolist(), strict=True):
        mine = np.flatnonzero(ev_node == node)
        r = removal
        while r < w1:
            before = mine[fleet.ev_open[mine] < r]
            latest = int(fleet.ev_close[before].max()) if before.size else 0
            if latest <= r:
                break
            r = latest + HOUR_S
        if r >= w1:
            continue
        keep[mine[fleet.ev_open[mine] >= r]] = False
        fleet.removed[node] = r
    fleet.keep_events(keep)


def plan_carriers(
    config: SynthConfig, rng: np.random.Generator, fleet: Fleet
) -> tuple[list[Carrier], list[tuple[int, int, int]]]:
    """Choose the deliberately ambiguous attempts and force their two failures.

    Each carrier is 2-8 nodes free of any event from the drain before its start until half an
    hour after the hit; at ``hit_s`` one unit of hardware class A fails on one node and,
    0-240 s later, a unit of another hardware class B on another node. Forced failures are
    replaced (their class is on a ticket, where a fleet has tickets) and their units restart
    their renewal chain as normal units.

    Returns the carriers and the forced failures ``(unit, class, time)``.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    hardware = np.flatnonzero(fleet.class_hardware)
    if config.n_ambiguous == 0 or fleet.n_nodes < 2 or hardware.size < 2:
        return [], []
    fix_rng = aux_rng(config, 2)
    span = (w1 - 3 * HOUR_S) - (w0 + 3 * HOUR_S)
    reserved: list[tuple[int, int, int]] = []  # node, from, to
    carriers: list[Carrier] = []
    forced: list[tuple[int, int, int]] = []
    for i in range(config.n_ambiguous):
        ev_node = fleet.unit_node[fleet.ev_unit]
        busy_from = np.where(
            fleet.ev_action == PLANNED, fleet.ev_open - DRAIN_LEAD_S, fleet.ev_open
        )
        lo = w0 + 3 * HOUR_S + span * i // config.n_ambiguous
        hi = w0 + 3 * HOUR_S + span * (i + 1) // config.n_ambiguous
        hit = int(rng.integers(lo, max(lo + 1, hi)))
        start = max(w0 + 600, hit - int(rng.integers(HOUR_S, 6 * HOUR_S)))
        guard_from, guard_to = start - DRAIN_LEAD_S, hit + 2 * HOUR_S
        ok = (fleet.installed <= min(guard_from, w0)) & (fleet.removed < 0)
        clash = (busy_from < guard_to) & (fleet.ev_close > guard_from)
        ok[np.unique(ev_node[clash])] = False
        for node, r_from, r_to in reserved:
            if r_from < guard_to and r_to > guard_from:
                ok[node] = False
        free = np.flatnonzero(ok)
        want = int(rng.integers(2, 9))
        if free.size < 2:
            continue
        nodes = np.sort(rng.choice(free, size=min(want, free.size), replace=False))
        pair = rng.choice(nodes, size=2, replace=False)
        cls_a, cls_b = hardware[rng.choice(hardware.size, size=2, replace=False)]
        delta = int(rng.integers(0, 241))
        for node, cls, when in ((pair[0], cls_a, hit), (pair[1], cls_b, hit + delta)):
            unit = _unit_of(fleet, int(node), int(cls), rng)
            forced.append((unit, int(cls), int(when)))
            _force_failure(config, rng, fleet, unit, int(cls), int(when), fix_rng=fix_rng)
        reserved += [(int(node), guard_from, guard_to) for node in nodes]
        carriers.append(Carrier(start_s=start, hit_s=hit, nodes=tuple(int(x) for x in nodes)))
    return carriers, forced


def _unit_of(fleet: Fleet, node: int, cls: int, rng: np.random.Generator) -> int:
    """Return the unit of class ``cls`` on ``node`` (a random GPU slot for a GPU-level class)."""
    if cls in fleet.gpu_class_idx:
        return node * fleet.gpus_per_node + int(rng.integers(0, fleet.gpus_per_node))
    k = int(np.flatnonzero(fleet.node_class_idx == cls)[0])
    return fleet.n_gpu_units + node * fleet.node_class_idx.size + k


def _force_failure(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    unit: int,
    cls: int,
    when: int,
    *,
    fix_rng: np.random.Generator,
) -> None:
    """Fail ``unit`` with class ``cls`` at ``when`` (replaced) and simulate its new chain."""
    keep = ~((fleet.ev_unit == unit) & (fleet.ev_open >= when))
    spec = config.fleet_classes[fleet.class_names[cls]]
    repair_h = spec.repair_median_h * np.exp(config.repair_sigma * rng.standard_normal())
    close = when + max(MIN_REPAIR_S["replace"], int(repair_h * HOUR_S))
    risks = fleet.gpu_class_idx if unit < fleet.n_gpu_units else np.array([cls])
    u = np.array([unit], dtype=np.int64)
    new = _renewals(
        config,
        rng,
        fleet,
        u,
        np.array([close]),
        np.array([config.window_end_s]),
        risks,
        fix_rng=fix_rng,
    )
    parts = [
        (fleet.ev_unit[keep], u, new[0]),
        (fleet.ev_class[keep], np.array([cls]), new[1]),
        (fleet.ev_action[keep], np.array([FAIL]), new[2]),
        (fleet.ev_open[keep], np.array([when]), new[3]),
        (fleet.ev_close[keep], np.array([close]), new[4]),
        (fleet.ev_fix[keep], np.array([F_REPLACE]), new[5]),
    ]
    _set_events(fleet, *(np.concatenate(p).astype(np.int64) for p in parts))


@dataclass
class MinorTickets:
    """``reseat`` / ``no_fault_found`` tickets: they end no life."""

    unit: np.ndarray
    cls: np.ndarray
    action: np.ndarray
    opened: np.ndarray
    closed: np.ndarray


def minor_tickets(config: SynthConfig, rng: np.random.Generator, fleet: Fleet) -> MinorTickets:
    """Place reseat and no-fault-found tickets on random hardware units of nodes in service."""
    w1 = config.window_end_s
    ends = fleet.node_end(w1)
    years = (ends - fleet.installed) / (365.0 * DAY_S)
    counts = rng.poisson(config.minor_tickets_per_node_year * years)
    node = np.repeat(np.arange(fleet.n_nodes), counts)
    opened = fleet.installed[node] + (
        rng.random(node.size) * (ends[node] - fleet.installed[node])
    ).astype(np.int64)
    per_node = fleet.gpus_per_node + fleet.n_hw_node_classes
    pick = rng.integers(0, per_node, size=node.size)
    is_gpu = pick < fleet.gpus_per_node
    unit = np.where(
        is_gpu,
        node * fleet.gpus_per_node + pick,
        fleet.n_gpu_units + node * fleet.node_class_idx.size + (pick - fleet.gpus_per_node),
    )
    gpu_cls = fleet.gpu_class_idx[rng.integers(0, fleet.gpu_class_idx.size, size=node.size)]
    k = max(fleet.n_hw_node_classes, 1)
    node_cls = (
        fleet.node_class_idx[np.clip(pick - fleet.gpus_per_node, 0, k - 1)]
        if fleet.n_hw_node_classes
        else gpu_cls
    )
    cls = np.where(is_gpu, gpu_cls, node_cls)
    action = np.where(rng.random(node.size) < 0.5, RESEAT, NO_FAULT)
    closed = opened + rng.integers(1800, 4 * HOUR_S, size=node.size)
    # drop those that fall while the unit itself is out for a replacement
    ok = np.ones(node.size, dtype=bool)
    for i in np.flatnonzero(np.isin(unit, fleet.ev_unit)):
        sel = fleet.ev_unit == unit[i]
        if np.any((fleet.ev_open[sel] <= closed[i]) & (fleet.ev_close[sel] >= opened[i])):
            ok[i] = False
    return MinorTickets(unit[ok], cls[ok], action[ok], opened[ok], closed[ok])


def unit_serials(fleet: Fleet, rng: np.random.Generator) -> tuple[list[list[str]], list[list[str]]]:
    """Return the serial (and GPU UUID) of every part that served in every unit.

    Returns, per unit, the serials of its successive parts (a new one after each replacement or
    planned replacement: :meth:`Fleet.replacing`; :func:`part_index` finds the one in place at a
    time) and their UUIDs (empty strings for node-level units). Serials are distinct across the
    fleet.
    """
    n_units = fleet.unit_node.size
    n_lives = 1 + np.bincount(fleet.ev_unit[fleet.replacing], minlength=n_units)
    total = int(n_lives.sum())
    first = np.concatenate([[0], np.cumsum(n_lives)[:-1]])
    scrambled = _unique_draws(rng, total, 10**9)
    words = rng.integers(0, 2**32, size=(total, 4), dtype=np.uint64)
    prefixes = {"nic": "MT", "power": "PS", "host_memory": "HM"}
    serials: list[list[str]] = []
    uuids: list[list[str]] = []
    for u in range(n_units):
        lives = range(int(first[u]), int(first[u] + n_lives[u]))
        if u < fleet.n_gpu_units:
            serials.append([str(1_650_000_000_000 + int(scrambled[i])) for i in lives])
            uuids.append([_uuid(words[i]) for i in lives])
        else:
            prefix = prefixes.get(fleet.unit_slot[u], "SN")
            serials.append([f"{prefix}{int(scrambled[i]):010d}" for i in lives])
            uuids.append([""] * len(lives))
    return serials, uuids


def part_index(fleet: Fleet, unit: int, ts: int, *, closed: bool = True) -> int:
    """Index (into :func:`unit_serials`' lists) of the part in ``unit`` at ``ts``.

    The number of the unit's replacements closed by ``ts`` (``closed``), or opened before it.
    """
    a, b = np.searchsorted(fleet.ev_unit, [unit, unit + 1])
    action, fix = fleet.ev_action[a:b], fleet.ev_fix[a:b]
    mine = (action == PLANNED) | ((action == FAIL) & (fix == F_REPLACE))
    if closed:
        return int(np.sum(fleet.ev_close[a:b][mine] <= ts))
    return int(np.sum(fleet.ev_open[a:b][mine] < ts))


def _unique_draws(rng: np.random.Generator, n: int, high: int) -> np.ndarray:
    """``n`` distinct integers in ``[0, high)``, in draw order."""
    out = np.empty(0, dtype=np.int64)
    while out.size < n:
        more = rng.integers(0, high, size=n - out.size + 16)
        both = np.concatenate([out, more])
        _, first = np.unique(both, return_index=True)
        out = both[np.sort(first)][:n]
    return out


def _uuid(w: np.ndarray) -> str:
    a, b, c, d = (int(x) for x in w)
    return f"GPU-{a:08x}-{b >> 16:04x}-{b & 0xFFFF:04x}-{c >> 16:04x}-{c & 0xFFFF:04x}{d:08x}"
