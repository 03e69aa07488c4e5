"""Slurm node events of the synthetic fleet (``sacctmgr show event --parsable2``).

Every time a node leaves service the controller or an administrator records an event:

- a GPU failure: a health check drains the node (``NHC: Xid 79 ...``) from the failure until
  the repaired node is resumed;
- a node-level failure: slurmctld marks it ``DOWN*`` (``Not responding``); 10-30 minutes later
  an administrator drains it with the diagnosis (``PSU failure...``) until it is repaired;
- a planned replacement: drained from the drain lead time before the work until it is done;
- a reseat or a diagnosis without fault found: drained while the ticket is open;
- an application failure or out-of-memory kill whose processes would not die (a share
  ``KILL_TASK_FAILED_SHARE`` of them): drained ``Kill task failed`` for 10-60 minutes from just
  after the attempt's end.

The export is taken at the window end: events still open then have no ``TimeEnd``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from synth.fleet import ACTIONS, DRAIN_LEAD_S, PLANNED, REPLACE
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
}
KILL_TASK_FAILED_SHARE = 0.2
_NODE_REASONS = {
    "nic": "HCA mlx5_0 link down, NIC to be replaced",
    "power": "PSU failure, node lost power",
    "host_memory": "DIMM uncorrectable error (EDAC UE), DIMM to be replaced",
}


PLANNED_REASON = "planned maintenance"
"""How the reason of a planned drain starts (planned work in sql/seeds/dim_planned_reason.csv)."""


@dataclass(frozen=True)
class NodeEvent:
    """One node event.

    One node event: ``end`` is the true end (printed only when before the window end);
    ``cls`` is the class its reason maps to (``stg_node_events.unavailability_class``).
    """

    node: int
    start: int
    end: int
    state: str
    reason: str
    user: str
    cls: str


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
            events.append(
                NodeEvent(
                    node,
                    start,
                    start + int(rng.integers(600, 3601)),
                    "DRAIN",
                    "Kill task failed",
                    "root(0)",
                    "unknown",
                )
            )
    for unit, cls_idx, action, opened, closed in zip(
        fleet.ev_unit.tolist(),
        fleet.ev_class.tolist(),
        fleet.ev_action.tolist(),
        fleet.ev_open.tolist(),
        fleet.ev_close.tolist(),
        strict=True,
    ):
        node = int(fleet.unit_node[unit])
        cls = fleet.class_names[cls_idx]
        back = closed + int(rng.integers(60, 601))
        ticket = f"RT{int(rng.integers(100_000, 999_999))}"
        if action == PLANNED:
            events.append(
                NodeEvent(
                    node,
                    opened - DRAIN_LEAD_S,
                    back,
                    "DRAIN",
                    f"{PLANNED_REASON}: replace {cls} ({ticket})",
                    "root(0)",
                    "maintenance",
                )
            )
            continue
        if action != REPLACE:
            continue
        start = opened + int(rng.integers(0, 41))
        if cls in _GPU_REASONS:
            code, text = _GPU_REASONS[cls]
            slot = fleet.unit_slot[unit]
            reason = f"NHC: Xid {code}: {text.format(slot=slot)} ({ticket})"
            events.append(NodeEvent(node, start, back, "DRAIN", reason, "root(0)", cls))
        else:
            drained = start + int(rng.integers(600, 1801))
            events.append(
                NodeEvent(
                    node, start, drained, "DOWN*", "Not responding", "slurm(64030)", "unknown"
                )
            )
            events.append(
                NodeEvent(
                    node, drained, back, "DRAIN", f"{_NODE_REASONS[cls]} ({ticket})", "root(0)", cls
                )
            )
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
        events.append(NodeEvent(node, opened, closed, "DRAIN", text, "root(0)", "maintenance"))
    w0, w1 = config.window_start_s, config.window_end_s
    kept = [e for e in events if e.start < w1 and e.end > w0]
    return sorted(kept, key=lambda e: (e.start, e.node, e.state, e.reason))


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
    """Outages per class as ``int_node_unavailability`` merges them (source ``slurm``).

    A node's events that overlap or touch form one outage; it takes the class of its first
    event with a known class. Returns, per class, the outages, the closed ones and the sum of
    their repair times in seconds.
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
            cls = next((e.cls for e in outage if e.cls != "unknown"), "unknown")
            row = out.setdefault(cls, {"n_outages": 0, "n_closed": 0, "repair_s": 0})
            row["n_outages"] += 1
            if all(e.end < w1 for e in outage):
                row["n_closed"] += 1
                row["repair_s"] += max(e.end for e in outage) - outage[0].start
    return dict(sorted(out.items()))
