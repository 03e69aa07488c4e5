"""Kernel logs of the synthetic fleet: Xid bursts, warnings, application Xids and noise.

GPU-level failures print a burst of 1-20 identical-code Xid lines within five minutes; warning-only
(63, 92) and application (13, 31, 43) Xids never fall within 40 minutes of a failure burst on the
same GPU, so every failure burst is one incident of its own. Each host writes one of six log
styles (the sixth: `journalctl -o json` records) and may run with a constant clock skew. Lines
are kept only when their printed time lies in the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from synth.config import APPLICATION_XIDS, DRIVER_XIDS, FAILURE_XIDS, WARNING_XIDS
from synth.fleet import DAY_S, F_REBOOT, F_REPLACE, F_RESEAT, PCI_BUSES, PLANNED

if TYPE_CHECKING:
    from collections.abc import Iterator

    from synth.config import SynthConfig
    from synth.fleet import Fleet
    from synth.workload import Attempt

#: Non-failure Xids keep this far (seconds, true time) from a failure burst on the same GPU.
QUIET_S = 2_400
BURST_SPAN_S = 300
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
FAILURE_XIDS_ALL = tuple(code for codes in FAILURE_XIDS.values() for code in codes)
_PROCS = ("python", "pt_main_thread", "nvidia-smi", "dcgmi", "torchrun", "nv-hostengine")


@dataclass
class XidLines:
    """Every well-formed Xid line written (what ``raw_xid_events`` must hold).

    ``ts`` is the printed (skewed) time, ``true_ts`` the simulated one; ``r`` seeds the message.
    """

    node: np.ndarray
    slot: np.ndarray
    ts: np.ndarray
    true_ts: np.ndarray
    code: np.ndarray
    r: np.ndarray


@dataclass(frozen=True)
class HostileLine:
    """A malformed Xid line: ``kind`` is ``truncated``, ``not_utf8`` or ``year_2099``."""

    node: int
    ts: int
    kind: str


def plan_xids(
    config: SynthConfig, rng: np.random.Generator, fleet: Fleet, attempts: list[Attempt]
) -> XidLines:
    """Draw every Xid line: failure bursts, warnings, application Xids."""
    w0, w1 = config.window_start_s, config.window_end_s
    g = fleet.gpus_per_node
    parts: list[tuple[np.ndarray, ...]] = []
    # failure bursts: every GPU-level failure, whatever fixed it
    gpu_fail = fleet.failed & (fleet.ev_unit < fleet.n_gpu_units)
    burst, sram = _failure_bursts(config, rng, fleet, gpu_fail)
    parts.append(burst)
    # warnings and application noise at random times on random GPUs
    service_from = np.maximum(fleet.installed, w0)
    service_to = np.minimum(fleet.node_end(w1), w1)
    days = np.clip(service_to - service_from, 0, None) / DAY_S
    for rate, pool, max_lines in (
        (config.warning_xids_per_gpu_day, WARNING_XIDS, 3),
        (config.app_xids_per_gpu_day, APPLICATION_XIDS, 8),
    ):
        counts = rng.poisson(rate * g * days)
        node = np.repeat(np.arange(fleet.n_nodes), counts)
        t0 = service_from[node] + (rng.random(node.size) * (service_to - service_from)[node])
        parts.append(
            bursts(
                rng,
                node,
                rng.integers(0, g, size=node.size),
                t0.astype(np.int64),
                np.array(pool)[rng.integers(0, len(pool), size=node.size)],
                max_lines,
            )
        )
    # application Xids on half of the application failures
    app = [a for a in attempts if a.reason == "app" and a.end_s < w1]
    app = [a for a, keep in zip(app, rng.random(len(app)) < 0.5, strict=True) if keep]
    if app:
        node = np.array([a.nodes[0] for a in app], dtype=np.int64)
        t0 = np.array([a.end_s for a in app], dtype=np.int64) - rng.integers(5, 61, size=node.size)
        code = np.array(APPLICATION_XIDS)[rng.integers(0, 3, size=node.size)]
        parts.append(bursts(rng, node, rng.integers(0, g, size=node.size), t0, code, 6))
    # a driver-class Xid (stops the job, no failure code) on half of the driver faults
    driver = fleet.failed & (fleet.ev_class == _class_index(fleet, "driver"))
    d_t = fleet.ev_open[driver]
    if d_t.size:
        d_node = fleet.unit_node[fleet.ev_unit[driver]]
        half = rng.random(d_t.size) < 0.5
        node, t0 = d_node[half], d_t[half] + rng.integers(0, 31, size=int(half.sum()))
        code = np.array(DRIVER_XIDS)[rng.integers(0, len(DRIVER_XIDS), size=node.size)]
        parts.append(bursts(rng, node, rng.integers(0, g, size=node.size), t0, code, 3))
    node, slot, true_ts, code = (np.concatenate([p[i] for p in parts]) for i in range(4))
    sram = np.concatenate([sram, np.zeros(node.size - sram.size, dtype=bool)])
    # keep non-failure lines away from failure bursts on the same GPU
    is_failure = np.isin(code, list(FAILURE_XIDS_ALL))
    gpu_key = (node * g + slot) * (1 << 40)
    fail_keys = np.sort(fleet.ev_unit[gpu_fail] * (1 << 40) + fleet.ev_open[gpu_fail])
    lo = np.searchsorted(fail_keys, gpu_key + true_ts - QUIET_S, side="left")
    hi = np.searchsorted(fail_keys, gpu_key + true_ts + QUIET_S, side="right")
    keep = is_failure | (lo == hi)
    ts = true_ts + fleet.skew_s[node]
    keep &= (ts >= w0) & (ts < w1)
    order = np.lexsort((ts[keep], slot[keep], node[keep]))
    sel = np.flatnonzero(keep)[order]
    r = rng.integers(0, 2**31, size=sel.size)
    r[sram[sel]] -= r[sram[sel]] % 3  # the LTC (L2 cache) units of _xid_message(95, r)
    return XidLines(
        node=node[sel],
        slot=slot[sel],
        ts=ts[sel],
        true_ts=true_ts[sel],
        code=code[sel],
        r=r,
    )


def _failure_bursts(
    config: SynthConfig, rng: np.random.Generator, fleet: Fleet, gpu_fail: np.ndarray
) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Draw the Xid burst of every GPU failure near the window (the events under ``gpu_fail``).

    Returns the lines' ``(node, slot, true time, code)`` and whether each names an SRAM unit.
    A burst is 1 to 20 lines within ``BURST_SPAN_S`` of the failure, the first at it.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    g = fleet.gpus_per_node
    f_unit = fleet.ev_unit[gpu_fail]
    f_t = fleet.ev_open[gpu_fail]
    f_cls = fleet.ev_class[gpu_fail]
    near = (f_t >= w0 - DAY_S) & (f_t < w1 + DAY_S)
    f_unit, f_t, f_cls = f_unit[near], f_t[near], f_cls[near]
    codes = np.array(
        [
            _failure_code(fleet.class_names[c], u)
            for c, u in zip(f_cls, rng.random(f_t.size), strict=True)
        ],
        dtype=np.int64,
    )
    n_lines = rng.integers(1, 21, size=f_t.size)
    rep = np.repeat(np.arange(f_t.size), n_lines)
    offsets = rng.integers(0, BURST_SPAN_S + 1, size=rep.size)
    offsets[np.cumsum(n_lines) - n_lines] = 0  # a burst starts at the failure
    burst = (f_unit[rep] // g, f_unit[rep] % g, f_t[rep] + offsets, codes[rep])
    # an SRAM failure's Xid 95 names an L2-cache (SRAM) unit in its message
    sram = np.array([fleet.class_names[c] == "gpu_sram" for c in f_cls], dtype=bool)[rep]
    return burst, sram


def _class_index(fleet: Fleet, name: str) -> int:
    """Index of class ``name`` in ``fleet.class_names``, or -1 when the fleet has none."""
    return fleet.class_names.index(name) if name in fleet.class_names else -1


def _failure_code(cls: str, u: float) -> int:
    codes = FAILURE_XIDS[cls]
    return codes[min(int(u * len(codes)), len(codes) - 1)]


def bursts(
    rng: np.random.Generator,
    node: np.ndarray,
    slot: np.ndarray,
    t0: np.ndarray,
    code: np.ndarray,
    max_lines: int,
) -> tuple[np.ndarray, ...]:
    """1 to ``max_lines`` Xid lines per event within a minute of its ``t0``: (node, slot, ts, code).

    Shared with :mod:`synth.precursors` (its warning bursts).
    """
    n_lines = rng.integers(1, max_lines + 1, size=node.size)
    rep = np.repeat(np.arange(node.size), n_lines)
    offsets = rng.integers(0, 60, size=rep.size)
    return node[rep], slot[rep], t0[rep] + offsets, code[rep]


def plan_hostile(
    config: SynthConfig, rng: np.random.Generator, fleet: Fleet, xids: XidLines
) -> list[HostileLine]:
    """Three malformed Xid lines on GPU 0 of random hosts, far from any Xid of that GPU."""
    if not config.hostile:
        return []
    w0, w1 = config.window_start_s, config.window_end_s
    lines: list[HostileLine] = []
    iso_hosts = [n for n in range(fleet.n_nodes) if fleet.style[n] != "syslog"]
    for kind in ("truncated", "not_utf8", "year_2099"):
        pool = iso_hosts if kind == "year_2099" else list(range(fleet.n_nodes))
        for _ in range(1000):
            node = int(pool[int(rng.integers(0, len(pool)))])
            lo = max(w0, int(fleet.installed[node])) + 3_600
            hi = min(w1, int(fleet.node_end(w1)[node])) - 3_600
            if hi <= lo:
                continue
            t = int(rng.integers(lo, hi))
            same = (xids.node == node) & (xids.slot == 0)
            if not np.any(np.abs(xids.true_ts[same] - t) < QUIET_S):
                lines.append(HostileLine(node=node, ts=t, kind=kind))
                break
    return lines


def _xid_message(code: int, r: int) -> str:
    if code == 79:
        return "GPU has fallen off the bus."
    if code == 48:
        return (
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
            f"at partition {r % 12}, subpartition {r // 12 % 2}."
        )
    if code == 95:
        unit = ("LTC TAG (0x2,0x0)", "FBHUB", "LTC DATA (0x5,0x1)")[r % 3]
        return f"Uncontained: {unit}. RST: Yes, D-RST: No"
    if code == 74:
        return (
            f"NVLink: fatal error detected on link {r % 18}(0x0, 0x0, 0x{1 << (r % 20):x}, 0x0, "
            "0x0, 0x0, 0x0)"
        )
    if code == 62:
        words = " ".join(f"{(r * (k + 7919)) & 0xFFFFFFFF:08x}" for k in range(4))
        return f"{words}"
    if code == 63:
        return (
            f"Row Remapping: New row (0x{(r * 2654435761) & 0xFFFFFFFFFF:016x}) Marked for "
            "Remapping, reset gpu to activate."
        )
    if code == 92:
        return "High single-bit ECC error rate detected"
    if code == 119:
        return (
            f"Timeout after 6s of waiting for RPC response from GPU{r % 8} GSP! Expected function "
            f"{(76, 103, 10)[r % 3]} ({('GSP_RM_CONTROL', 'GSP_RM_ALLOC', 'FREE')[r % 3]}) "
            f"(0x{0x2080 + r % 64:x} 0x{r % 16:x})."
        )
    if code == 120:
        return (
            f"GSP Error: Task {r % 4} raised error code 0x{r % 256:x} for reason 0x0 at "
            f"0x{(r * 2654435761) & 0xFFFFFF:x} (0 more errors skipped)"
        )
    if code == 60:
        return f"Ch 0000{r % 64:04x}, engine SEC2: exception, intr 0x{(r >> 8) & 0xFFFF:08x}"
    if code == 13:
        return (
            f"Graphics SM Warp Exception on (GPC {r % 12}, TPC {r // 12 % 9}, SM {r // 108 % 2}): "
            "Out Of Range Address"
        )
    if code == 31:
        return (
            f"Ch 0000{r % 64:04x}, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_{r % 16} "
            f"faulted @ 0x7f{r % 256:02x}_{r & 0xFFFFF000:08x}. Fault is of type FAULT_PDE "
            "ACCESS_TYPE_VIRT_READ"
        )
    return f"Ch 0000{r % 64:04x}"


def _xid_text(bus: str, code: int, r: int) -> str:
    proc = _PROCS[r % len(_PROCS)] if r % 5 else "<unknown>"
    pid = f"{100_000 + r % 3_900_000}" if proc != "<unknown>" else "'<unknown>'"
    return f"NVRM: Xid (PCI:0000:{bus}:00): {code}, pid={pid}, name={proc}, {_xid_message(code, r)}"


# (facility:level, process tag or None for kernel, template); {r} fields filled per line
_NOISE: tuple[tuple[str, str | None, str], ...] = (
    ("info", None, "EXT4-fs (md0): mounted filesystem with ordered data mode. Quota mode: none."),
    ("info", None, "IPv6: ADDRCONF(NETDEV_CHANGE): ibp{bus}s0: link becomes ready"),
    (
        "warn",
        None,
        "perf: interrupt took too long ({a} > 2500), lowering "
        "kernel.perf_event_max_sample_rate to 79750",
    ),
    (
        "info",
        None,
        "mlx5_core 0000:{bus}:00.0: mlx5_pcie_event:301:(pid {pid}): PCIe slot "
        "advertised sufficient power (75W).",
    ),
    (
        "notice",
        None,
        'audit: type=1400 audit({a}.{b:03d}:{c}): apparmor="STATUS" '
        'operation="profile_replace" name="nvidia_modprobe" pid={pid}',
    ),
    ("err", None, "nfs: server storage0{d} not responding, still trying"),
    ("info", None, "nfs: server storage0{d} OK"),
    (
        "info",
        None,
        "NVRM: GPU at PCI:0000:{gbus}:00: GPU-{h1:08x}-{h4:04x}-{h5:04x}-{h6:04x}-{h7:04x}{h2:08x}",
    ),
    ("info", None, "NVRM: GPU Board Serial Number: 1650{h3:09d}"),
    ("info", None, "nvidia-nvlink: Nvlink Core is being initialized, major device number 508"),
    (
        "info",
        None,
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
    ),
    (
        "warn",
        None,
        "python[{pid}]: segfault at 0 ip 00007f{h1:08x} sp 00007ffd{h2:08x} error 4 "
        "in libc.so.6[7f{h3:08x}+195000]",
    ),
    ("info", None, "nvidia-fabricmanager: Successfully configured all the available NVSwitches"),
    ("info", "systemd[1]", "Started Session {a} of User root."),
    (
        "info",
        "systemd-journald[{pid}]",
        "Data hash table of /var/log/journal/system.journal has "
        "a fill level at 75.0 (8533 of 11377 items), suggesting "
        "rotation.",
    ),
    ("info", "slurmd[{pid}]", "launch task StepId={a}.0 request from UID:{b} GID:{b}"),
    ("info", "nv-hostengine[{pid}]", "DCGM health check passed for all GPUs"),
    ("info", "sshd[{pid}]", "Accepted publickey for root from 10.0.{d}.{c} port {a} ssh2"),
)


class _Stamp:
    """Time prefixes of the six styles (journald records whole), with a per-day cache."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[str, str, str]] = {}

    def day(self, day: int) -> tuple[str, str, str]:
        parts = self.cache.get(day)
        if parts is None:
            d = datetime.fromtimestamp(day * DAY_S, UTC)
            iso = f"{d.year:04d}-{d.month:02d}-{d.day:02d}"
            ctime = f"{_DAYS[d.weekday()]} {_MONTHS[d.month - 1]} {d.day:2d}"
            syslog = f"{_MONTHS[d.month - 1]} {d.day:2d}"
            parts = (iso, f"{ctime}|{d.year}", syslog)
            self.cache[day] = parts
        return parts

    def line(
        self,
        style: str,
        ts: int,
        us: int,
        host: str,
        text: str,
        *,
        level: str,
        tag: str | None,
        uptime: float,
    ) -> str:
        day, sod = divmod(ts, DAY_S)
        hh, rest = divmod(sod, 3600)
        mm, ss = divmod(rest, 60)
        clock = f"{hh:02d}:{mm:02d}:{ss:02d}"
        iso, ctime, syslog = self.day(day)
        who = tag if tag is not None else "kernel"
        if style == "dmesg_t":
            wday, year = ctime.split("|")
            return f"[{wday} {clock} {year}] {text}"
        if style == "journal_iso":
            return f"{iso}T{clock}+0000 {host} {who}: {text}"
        if style == "syslog":
            up = f"[{uptime:12.6f}] " if tag is None else ""
            return f"{syslog} {clock} {host} {who}: {up}{text}"
        if style == "rfc3339":
            return f"{iso}T{clock}.{us:06d}+00:00 {host} {who}: {text}"
        if style == "journal_json":
            return _journal_record(ts, us, host, text, level=level, tag=tag)
        return f"kern  :{level:<6}: {iso}T{clock},{us:06d}+00:00 {text}"


_PRIORITY = {"emerg": 0, "alert": 1, "crit": 2, "err": 3, "warn": 4, "notice": 5, "info": 6}


def _journal_record(ts: int, us: int, host: str, text: str, *, level: str, tag: str | None) -> str:
    """Return one ``journalctl -o json`` record as journalctl prints it.

    One ``journalctl -o json`` record as journalctl prints it (``{ "KEY" : "value", ... }``):
    kernel messages with ``_TRANSPORT=kernel``, tagged daemons with ``_TRANSPORT=syslog``.
    """
    import json

    realtime = ts * 1_000_000 + us
    ident, _, pid = (tag or "kernel").partition("[")
    fields = {
        "__CURSOR": f"s=5c1c2a7e;i={realtime:x};b=0;m=0;t={realtime:x};x=0",
        "__REALTIME_TIMESTAMP": str(realtime),
        "_TRANSPORT": "kernel" if tag is None else "syslog",
        "PRIORITY": str(_PRIORITY.get(level, 6)),
        "SYSLOG_FACILITY": "0" if tag is None else "3",
        "SYSLOG_IDENTIFIER": ident,
        **({"_PID": pid.rstrip("]")} if pid else {}),
        "_HOSTNAME": host,
        "MESSAGE": text,
    }
    return "{ " + ", ".join(f"{json.dumps(k)} : {json.dumps(v)}" for k, v in fields.items()) + " }"


def kernel_logs(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    xids: XidLines,
    hostile: list[HostileLine],
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(node, file bytes)`` of every host's kernel log, in node order.

    Noise lines, node-level failure hints (NIC link down, memory UE) and the Xid lines are merged
    in printed-time order; malformed lines are inserted at their own place.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    stamp = _Stamp()
    hints = _hint_events(fleet, w0, w1)
    xid_start = np.searchsorted(xids.node, np.arange(fleet.n_nodes + 1))
    boots = _boot_times(rng, fleet, w0)
    for node in range(fleet.n_nodes):
        host, style = fleet.names[node], fleet.style[node]
        skew = int(fleet.skew_s[node])
        syslog = style == "syslog"
        lo = max(w0, int(fleet.installed[node]))
        hi = min(w1, int(fleet.node_end(w1)[node]))
        n_noise = int(rng.poisson(config.noise_lines_per_host_day * max(hi - lo, 0) / DAY_S))
        noise_t = np.sort(rng.integers(lo, max(hi, lo + 1), size=n_noise)) + skew
        noise_k = rng.integers(0, len(_NOISE), size=n_noise)
        noise_r = rng.integers(0, 2**31, size=(n_noise, 5))
        noise_us = rng.integers(0, 1_000_000, size=n_noise)
        entries: list[tuple[int, int, bytes]] = []
        for t, k, r, us in zip(
            noise_t.tolist(), noise_k.tolist(), noise_r.tolist(), noise_us.tolist(), strict=True
        ):
            if not w0 <= t < w1:
                continue
            level, tag, template = _NOISE[k]
            if tag is not None and style in ("dmesg_t", "dmesg_iso"):
                continue
            text = _fill(template, r, fleet.gpus_per_node)
            tag = tag.format(pid=1000 + r[0] % 60_000) if tag else None
            up = _uptime(boots[node], t - skew, us) if syslog else 0.0
            line = stamp.line(style, t, us, host, text, level=level, tag=tag, uptime=up)
            entries.append((t, 1, line.encode()))
        for t, text in hints.get(node, []):
            t += skew
            if w0 <= t < w1:
                up = _uptime(boots[node], t - skew, 0) if syslog else 0.0
                line = stamp.line(style, t, 0, host, text, level="err", tag=None, uptime=up)
                entries.append((t, 1, line.encode()))
        a, b = int(xid_start[node]), int(xid_start[node + 1])
        for t, slot, code, r in zip(
            xids.ts[a:b].tolist(),
            xids.slot[a:b].tolist(),
            xids.code[a:b].tolist(),
            xids.r[a:b].tolist(),
            strict=True,
        ):
            text = _xid_text(PCI_BUSES[slot], code, r)
            up = _uptime(boots[node], t - skew, r % 1_000_000) if syslog else 0.0
            line = stamp.line(style, t, 0, host, text, level="warn", tag=None, uptime=up)
            entries.append((t, 0, line.encode()))
        for bad in hostile:
            if bad.node == node:
                entries.append((bad.ts, 2, _hostile_line(stamp, style, host, bad)))
        entries.sort(key=lambda e: (e[0], e[1]))
        yield node, b"".join(e[2] + b"\n" for e in entries)


def _hostile_line(stamp: _Stamp, style: str, host: str, bad: HostileLine) -> bytes:
    text = _xid_text(PCI_BUSES[0], 92, 12345)
    if bad.kind == "truncated":
        return stamp.line(
            style,
            bad.ts,
            0,
            host,
            "NVRM: Xid (PCI:0000:18:0",
            level="warn",
            tag=None,
            uptime=1234.5,
        ).encode()
    if bad.kind == "not_utf8":
        line = stamp.line(style, bad.ts, 0, host, text, level="warn", tag=None, uptime=1234.5)
        return line.encode() + b" \xff\xfe\xc3("
    when = datetime.fromtimestamp(bad.ts, UTC)
    shifted = int(when.replace(year=2099, day=min(when.day, 28)).timestamp())
    return stamp.line(style, shifted, 0, host, text, level="warn", tag=None, uptime=1234.5).encode()


def _fill(template: str, r: list[int], g: int) -> str:
    if "{" not in template:
        return template
    return template.format(
        h1=(r[0] * 2 + 1) & 0xFFFFFFFF,
        h2=(r[1] * 3) & 0xFFFFFFFF,
        h3=r[2] % 10**9,
        h4=(r[0] >> 15) & 0xFFFF,
        h5=(r[1] >> 15) & 0xFFFF,
        h6=(r[2] >> 15) & 0xFFFF,
        h7=(r[3] >> 15) & 0xFFFF,
        a=r[0] % 100_000,
        b=r[1] % 1000,
        c=r[2] % 250,
        d=r[3] % 4 + 1,
        pid=1000 + r[4] % 60_000,
        bus=("0c", "1f", "4c", "6f", "8b", "9e", "c2", "e5")[r[1] % 8],
        gbus=PCI_BUSES[r[2] % g],
    )


def _hint_events(fleet: Fleet, w0: int, w1: int) -> dict[int, list[tuple[int, str]]]:
    """Non-Xid kernel lines at node-level failures (nic, host_memory, storage, host_cpu).

    Power and chassis failures, and the non-hardware interruptions, leave none.
    """
    out: dict[int, list[tuple[int, str]]] = {}
    sel = (
        fleet.failed
        & (fleet.ev_unit >= fleet.n_gpu_units)
        & (fleet.ev_open >= w0)
        & (fleet.ev_open < w1)
    )
    for unit, cls, t in zip(
        fleet.ev_unit[sel].tolist(),
        fleet.ev_class[sel].tolist(),
        fleet.ev_open[sel].tolist(),
        strict=True,
    ):
        name = fleet.class_names[cls]
        node = int(fleet.unit_node[unit])
        if name == "nic":
            text = "mlx5_core 0000:0c:00.0 ibp12s0: Link down"
        elif name == "host_memory":
            text = (
                "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#2_DIMM#0 (channel:2 "
                f"slot:0 page:0x{t % 0xFFFFF:x} offset:0x0 grain:32 - err_code:0x0000:0x0090)"
            )
        elif name == "storage":
            text = f"nvme nvme1: I/O {t % 1024} QID {t % 64 + 1} timeout, aborting"
        elif name == "host_cpu":
            text = (
                f"mce: [Hardware Error]: CPU {t % 64}: Machine Check Exception: 5 Bank 6: "
                "fe00000000800400"
            )
        else:
            continue
        out.setdefault(node, []).append((t, text))
    return out


def _boot_times(rng: np.random.Generator, fleet: Fleet, w0: int) -> list[np.ndarray]:
    """Boot instants per host: one before the window (or the install), and every repair close.

    Repairs that boot the node: replacements (planned or not), reboots, reseats (the node is
    powered off), and every node-level hardware failure; a GPU reset and the non-hardware
    recoveries do not.
    """
    first = np.where(
        fleet.installed >= w0 - 30 * DAY_S,
        fleet.installed,
        w0 - rng.integers(DAY_S, 30 * DAY_S, size=fleet.n_nodes),
    )
    node_of_ev = fleet.unit_node[fleet.ev_unit]
    node_level_hw = (fleet.ev_unit >= fleet.n_gpu_units) & fleet.class_hardware[fleet.ev_class]
    repaired = (
        (fleet.ev_action == PLANNED)
        | np.isin(fleet.ev_fix, (F_REPLACE, F_REBOOT, F_RESEAT))
        | (fleet.failed & node_level_hw)
    )
    boots = []
    for n in range(fleet.n_nodes):
        closes = fleet.ev_close[repaired & (node_of_ev == n)]
        boots.append(np.sort(np.concatenate([[first[n]], closes[closes > first[n]]])))
    return boots


def _uptime(boots: np.ndarray, t: int, us: int) -> float:
    k = int(np.searchsorted(boots, t, side="right")) - 1
    return max(t - int(boots[max(k, 0)]), 0) + us / 1e6
