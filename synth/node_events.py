"""Slurm node events of the synthetic fleet (``sacctmgr show event --parsable2``).

Every time a node leaves service the controller, a health check or an administrator records an
event (times relative to the failure instant ``t``, the first Xid line's true time for a GPU
failure; ``back`` = the repair's end plus 1-10 minutes, when the node is resumed):

- a GPU failure: a health check drains the node (``NHC: Xid 79: GPU gpu3 has fallen off the
  bus ...``, the fix at the end of the reason) from ``t`` + 0-40 s until ``back``; a node
  reboot adds ``DOWN*`` ``Not responding`` for 3-10 minutes before the repair's end, a reseat
  ``DOWN*`` from 5-30 minutes after the drain until the repair's end (the node is off);
- a node-level hardware failure: slurmctld marks it ``DOWN*`` (``Not responding``) from ``t`` +
  0-40 s; 10-30 minutes later (at most half-way to ``back``) an administrator drains it with
  the diagnosis (``PSU failure...``, the fix at the end) until ``back``;
- a non-hardware interruption: a drain from ``t`` + 0-40 s until ``back`` with the reason a
  health check or an operator writes (``NCCL watchdog timeout``, ``software fault: ...``,
  ``NVIDIA driver hang ...``, ``fabric cable fault ...``); unplanned maintenance is a ``DOWN``
  set by an administrator (``unplanned maintenance: ...``);
- a planned replacement: drained from the drain lead time before the work until it is done;
- a reseat or a diagnosis without fault found: drained while the ticket is open;
- an application failure or out-of-memory kill whose processes would not die (a share
  ``KILL_TASK_FAILED_SHARE`` of them): drained ``Kill task failed`` for 10-60 minutes from just
  after the attempt's end.

The export is taken at the window end: events still open then have no ``TimeEnd``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from synth.config import XID_CLASS
from synth.fleet import ACTIONS, DRAIN_LEAD_S, FAIL, FIXES, PLANNED
from synth.formats import slurm_time

if TYPE_CHECKING:
    from synth.config import SynthConfig
    from synth.fleet import Fleet, MinorTickets
    from synth.workload import Attempt

HEADER = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User"
_GPU_REASONS = {
    "gpu": (62, "GPU {slot} internal micro-controller halt"),
    "gpu_memory": (48, "GPU {slot} uncorrectable ECC error"),
    "nvlink": (74, "GPU {slot} NVLink fatal error"),
    "pcie": (79, "GPU {slot} has fallen off the bus"),
    "gpu_sram": (95, "GPU {slot} uncorrectable SRAM ECC error (L2 cache)"),
    "gsp": (119, "GPU {slot} GSP RPC timeout"),
}
#: How a GPU failure's drain reason ends, per fix (a replacement names its ticket).
_GPU_FIX_SUFFIX = {
    "replace": " ({ticket})",
    "reset": ", GPU reset",
    "reboot": ", rebooting node",
    "reseat": ", GPU re-seat",
}
KILL_TASK_FAILED_SHARE = 0.2
#: The diagnosis of a node-level hardware failure, per fix (a replacement adds its ticket).
NODE_REASONS: dict[str, dict[str, str]] = {
    "nic": {
        "replace": "HCA mlx5_0 link down, NIC to be replaced",
        "reboot": "HCA mlx5_0 link down, cleared by a reboot",
        "reseat": "HCA mlx5_0 link down, NIC re-seated",
    },
    "power": {
        "replace": "PSU failure, node lost power",
        "reboot": "PSU fault, node lost power, back after a reboot",
        "reseat": "PSU failure, node lost power, PSU re-seated",
    },
    "host_memory": {
        "replace": "DIMM uncorrectable error (EDAC UE), DIMM to be replaced",
        "reboot": "DIMM uncorrectable error (EDAC UE), node rebooted",
        "reseat": "DIMM uncorrectable error (EDAC UE), DIMM re-seated",
    },
    "storage": {
        "replace": "NVMe nvme1n1 I/O errors, SSD to be replaced",
        "reboot": "NVMe nvme1n1 I/O errors, node rebooted",
        "reseat": "NVMe nvme1n1 I/O errors, SSD re-seated",
    },
    "host_cpu": {
        "replace": "CPU machine check exceptions (MCE), CPU to be replaced",
        "reboot": "CPU machine check exception (MCE), node rebooted",
        "reseat": "CPU machine check exception (MCE), CPU re-seated",
    },
    "chassis": {
        "replace": "baseboard fault, BMC unresponsive, board to be replaced",
        "reboot": "baseboard fault, BMC unresponsive, node cold-booted",
        "reseat": "IO expansion board fault, board re-seated",
    },
}
#: Reasons of the non-hardware interruptions (one drawn per event; ``{port}``, ``{switch}``
#: filled in).
NON_HARDWARE_REASONS: dict[str, tuple[str, ...]] = {
    "software": (
        "software fault: segfault in dataloader",
        "software fault: kernel soft lockup",
        "software fault: Lustre client hung, mounts stale",
    ),
    "driver": (
        "NVIDIA driver hang, nvidia-smi unresponsive",
        "NVIDIA driver fault, kernel module reloaded",
    ),
    "nccl": (
        "NCCL watchdog timeout",
        "NCCL watchdog timeout: collective operation timed out",
    ),
    "network": (
        "fabric cable fault on leaf switch port {port}",
        "optic failure on leaf switch port {port}, transceiver swapped",
        "spine switch {switch} unreachable, fabric degraded",
    ),
    "maintenance": (
        "unplanned maintenance: BMC hang, cold reset",
        "unplanned maintenance: coolant leak check",
        "unplanned maintenance: rack PDU swap",
    ),
}


PLANNED_REASON = "planned maintenance"
"""How the reason of a planned drain starts (planned work in sql/seeds/dim_planned_reason.csv)."""

# the keyword rule of data contract §7.3 (stg_node_events.unavailability_class), in order
_XID = re.compile(r"(?i)xid[ :=#]*([0-9]+)")
_CORRECTIVE = re.compile(r"(?i)unplanned|unscheduled|emergency|reseat|diagnos|field ?diag|no fault")
_KEYWORDS = (
    (re.compile(r"(?i)nvlink"), "nvlink"),
    (re.compile(r"(?i)ecc|dbe|row.?remap|retired.?page|hbm"), "gpu_memory"),
    (re.compile(r"(?i)fallen off|fell off|pcie|pci-e"), "pcie"),
    (_CORRECTIVE, "maintenance"),
    (re.compile(r"(?i)\bpsu\b|power"), "power"),
    (re.compile(r"(?i)\bhca\b|\bnic\b|infiniband|\bib\b|mlx|link down"), "nic"),
    (re.compile(r"(?i)dimm|edac|memory"), "host_memory"),
    (re.compile(r"(?i)gpu"), "gpu"),
)


def view_class(reason: str) -> str:
    """Class data contract §7.3 gives a node event's reason (``unavailability_class``).

    An ``Xid <n>`` of a failure code takes the catalog's class; planned work (the reasons this
    module writes for it start with :data:`PLANNED_REASON`) is ``maintenance``; then the
    keywords, in the contract's order; else ``unknown``.
    """
    found = _XID.search(reason)
    if found and int(found.group(1)) in XID_CLASS:
        return XID_CLASS[int(found.group(1))]
    if reason.startswith(PLANNED_REASON):
        return "maintenance"
    for pattern, cls in _KEYWORDS:
        if pattern.search(reason):
            return cls
    return "unknown"


@dataclass(frozen=True)
class NodeEvent:
    """One node event.

    ``end`` is the true end (printed only when before the window end); ``cls`` is the class
    a keyword reading of its reason gives (:func:`view_class`; the warehouse reads reasons
    through its editable vocabulary instead, so the truth never uses it); ``cause`` the class
    of the failure or work that made it (``unknown`` for a ``Kill task failed`` drain): the
    truth's class of the outage (:func:`unavailability_truth`).
    """

    node: int
    start: int
    end: int
    state: str
    reason: str
    user: str
    cls: str
    cause: str = "unknown"
    failure_class: str | None = None
    """For an event of a failure (hardware, whatever its fix, or non-hardware): the class the
    failure's telemetry names, as the failure events read it (a GPU failure's Xid code's class
    in the catalog, so ``gpu_sram`` reads as ``gpu_memory``); None for any other event."""


def _event(
    node: int,
    start: int,
    end: int,
    state: str,
    reason: str,
    cause: str,
    failure_class: str | None = None,
) -> NodeEvent:
    user = "slurm(64030)" if reason == "Not responding" else "root(0)"
    return NodeEvent(
        node, start, end, state, reason, user, view_class(reason), cause, failure_class
    )


def plan_node_events(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    minor: MinorTickets,
    attempts: list[Attempt],
) -> list[NodeEvent]:
    """Every node event overlapping the window, in the order the export prints them."""
    events: list[NodeEvent] = []
    for a in attempts:
        if a.reason not in ("app", "oom") or a.end_s >= config.window_end_s:
            continue
        if rng.random() < KILL_TASK_FAILED_SHARE:
            node = a.nodes[int(rng.integers(0, len(a.nodes)))]
            start = a.end_s + int(rng.integers(5, 61))
            end = start + int(rng.integers(600, 3601))
            events.append(_event(node, start, end, "DRAIN", "Kill task failed", "unknown"))
    for unit, cls_idx, action, fix, opened, closed in zip(
        fleet.ev_unit.tolist(),
        fleet.ev_class.tolist(),
        fleet.ev_action.tolist(),
        fleet.ev_fix.tolist(),
        fleet.ev_open.tolist(),
        fleet.ev_close.tolist(),
        strict=True,
    ):
        node = int(fleet.unit_node[unit])
        cls = fleet.class_names[cls_idx]
        back = closed + int(rng.integers(60, 601))
        if action == PLANNED:
            ticket = f"RT{int(rng.integers(100_000, 999_999))}"
            reason = f"{PLANNED_REASON}: replace {cls} ({ticket})"
            events.append(_event(node, opened - DRAIN_LEAD_S, back, "DRAIN", reason, "maintenance"))
            continue
        if action != FAIL:
            continue
        start = opened + int(rng.integers(0, 41))
        if cls in _GPU_REASONS:
            events += _gpu_failure(rng, fleet, unit, cls, FIXES[fix], start, closed, back)
        elif fleet.class_hardware[cls_idx]:
            events += _node_failure(rng, node, cls, FIXES[fix], start, back)
        else:
            events.append(_interruption(rng, node, cls, start, back))
    for unit, action, opened, closed in zip(
        minor.unit.tolist(),
        minor.action.tolist(),
        minor.opened.tolist(),
        minor.closed.tolist(),
        strict=True,
    ):
        node = int(fleet.unit_node[unit])
        ticket = f"RT{int(rng.integers(100_000, 999_999))}"
        text = (
            f"reseat requested after link errors ({ticket})"
            if ACTIONS[action] == "reseat"
            else f"diagnostics: no fault found ({ticket})"
        )
        events.append(_event(node, opened, closed, "DRAIN", text, "maintenance"))
    w0, w1 = config.window_start_s, config.window_end_s
    kept = [e for e in events if e.start < w1 and e.end > w0]
    return sorted(kept, key=lambda e: (e.start, e.node, e.state, e.reason))


def _gpu_failure(
    rng: np.random.Generator,
    fleet: Fleet,
    unit: int,
    cls: str,
    fix: str,
    start: int,
    closed: int,
    back: int,
) -> list[NodeEvent]:
    """Return the NHC drain of a GPU failure, and the node down while a reboot or reseat."""
    node = int(fleet.unit_node[unit])
    code, text = _GPU_REASONS[cls]
    suffix = _GPU_FIX_SUFFIX[fix]
    if fix == "replace":
        suffix = suffix.format(ticket=f"RT{int(rng.integers(100_000, 999_999))}")
    reason = f"NHC: Xid {code}: {text.format(slot=fleet.unit_slot[unit])}{suffix}"
    seen = XID_CLASS[code]
    out = [_event(node, start, back, "DRAIN", reason, cls, seen)]
    if fix == "reboot":
        down = max(start + 60, closed - int(rng.integers(300, 901)))
        up = min(down + int(rng.integers(180, 601)), closed)
    elif fix == "reseat":
        down = start + int(rng.integers(300, 1801))
        up = closed
    else:
        return out
    if down < up:
        out.append(_event(node, down, up, "DOWN*", "Not responding", cls, seen))
    return out


def _node_failure(
    rng: np.random.Generator, node: int, cls: str, fix: str, start: int, back: int
) -> list[NodeEvent]:
    """``DOWN*`` from the failure, then the administrator's drain with the diagnosis."""
    drained = start + min(int(rng.integers(600, 1801)), (back - start) // 2)
    reason = NODE_REASONS[cls][fix]
    if fix == "replace":
        reason += f" (RT{int(rng.integers(100_000, 999_999))})"
    return [
        _event(node, start, drained, "DOWN*", "Not responding", cls, cls),
        _event(node, drained, back, "DRAIN", reason, cls, cls),
    ]


def _interruption(
    rng: np.random.Generator, node: int, cls: str, start: int, back: int
) -> NodeEvent:
    """Return the drain (unplanned maintenance: an administrator's down) of an interruption."""
    choices = NON_HARDWARE_REASONS[cls]
    reason = choices[int(rng.integers(0, len(choices)))].format(
        port=int(rng.integers(1, 65)), switch=f"sw-spine-{int(rng.integers(1, 9)):02d}"
    )
    state = "DOWN" if cls == "maintenance" else "DRAIN"
    return _event(node, start, back, state, reason, cls, cls)


def sacctmgr_text(
    config: SynthConfig, rng: np.random.Generator, fleet: Fleet, events: list[NodeEvent]
) -> tuple[str, int, int]:
    """Return the export's text and its numbers of node-event rows and malformed lines.

    Rows counted are the well-formed ones.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    lines = [HEADER, f"alpha||{slurm_time(w0)}|||Cluster Registered TRES|"]
    for e in events:
        end = "" if e.end >= w1 else slurm_time(e.end)
        lines.append(
            f"alpha|{fleet.names[e.node]}|{slurm_time(e.start)}|{end}|{e.state}|{e.reason}|{e.user}"
        )
    n_bad = 0
    if config.hostile:
        node = fleet.names[int(rng.integers(0, fleet.n_nodes))]
        day = slurm_time(w0 + 86_400)[:8]
        lines.insert(
            2 + int(rng.integers(0, len(events) + 1)),
            f"alpha|{node}|{day}31T10:61:00||DRAIN|clock drift on the BMC|root(0)",
        )
        n_bad = 1
    return "\n".join(lines) + "\n", len(events), n_bad


def unavailability_truth(config: SynthConfig, events: list[NodeEvent]) -> dict[str, Any]:
    """Outages per true class, merged as ``int_node_unavailability`` merges them (source ``slurm``).

    A node's events that overlap or touch form one outage; its class is the true class of the
    failure or work that made it: the ``cause`` of its first event that has one (a failure's
    class, whatever its reason says; ``maintenance`` for planned replacements, reseats and
    diagnoses; a ``Kill task failed`` drain has none: ``unknown``). The warehouse must read the
    same class from the reasons. Returns, per class, the outages, the closed ones and the sum
    of their repair times in seconds.
    """
    w1 = config.window_end_s
    by_node: dict[int, list[NodeEvent]] = {}
    for e in events:  # already in print order
        by_node.setdefault(e.node, []).append(e)
    out: dict[str, dict[str, int]] = {}
    for node_events in by_node.values():
        ordered = sorted(node_events, key=lambda e: e.start)  # stable: print order on ties
        outages: list[list[NodeEvent]] = []
        reach = None
        for e in ordered:
            end = np.inf if e.end >= w1 else e.end
            if reach is None or e.start > reach:
                outages.append([e])
                reach = end
            else:
                outages[-1].append(e)
                reach = max(reach, end)
        for outage in outages:
            cls = next((e.cause for e in outage if e.cause != "unknown"), "unknown")
            row = out.setdefault(cls, {"n_outages": 0, "n_closed": 0, "repair_s": 0})
            row["n_outages"] += 1
            if all(e.end < w1 for e in outage):
                row["n_closed"] += 1
                row["repair_s"] += max(e.end for e in outage) - outage[0].start
    return dict(sorted(out.items()))
