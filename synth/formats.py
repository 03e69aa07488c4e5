"""Text of the landing files: sacct, repair tickets, fleet CSV and nvidia-smi snapshots."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

import hostlist
import numpy as np

from synth import sacct_variants
from synth.fleet import ACTIONS, DAY_S, FAIL, PCI_BUSES, RESEAT, part_index
from synth.truth import iso
from synth.workload import ACCOUNTS, USERS

if TYPE_CHECKING:
    from synth.config import SynthConfig
    from synth.fleet import Fleet, MinorTickets
    from synth.workload import Attempt, Jobs

SACCT_HEADER = sacct_variants.SACCT_HEADER
SITE_FORMAT = (
    "State",
    "JobID",
    "Start",
    "End",
    "NodeList",
    "NNodes",
    "ReqTRES",
    "ElapsedRaw",
    "Submit",
    "ExitCode",
    "JobIDRaw",
    "User",
    "Account",
    "JobName",
    "Partition",
    "Restarts",
)
"""Every third daily dump is written the way many sites script it: ``sacct --parsable
--delimiter=';' --format=<SITE_FORMAT>`` (another order, ``;``, a trailing delimiter, NNodes,
ReqTRES and ElapsedRaw instead of AllocNodes, AllocTRES and Elapsed)."""
_SITE_FROM = {"NNodes": "AllocNodes", "ReqTRES": "AllocTRES", "ElapsedRaw": "Elapsed"}
SMI_HEADER = "timestamp, index, pci.bus_id, serial, uuid, name"
GPU_NAME = "NVIDIA H100 80GB HBM3"
TICKET_HEADER = (
    "ticket_id",
    "node",
    "component_class",
    "slot",
    "serial_out",
    "serial_in",
    "opened",
    "closed",
    "action",
    "description",
)
_DESCRIPTIONS = {
    "gpu": "Xid 62 internal micro-controller halt; GPU replaced",
    "gpu_memory": "uncorrectable ECC (Xid 48/95), GPU replaced under RMA",
    "nvlink": "NVLink fatal error (Xid 74); GPU replaced",
    "pcie": "GPU fell off the bus (Xid 79), reseat failed, GPU replaced",
    "nic": "HCA link down; NIC replaced",
    "power": "PSU failure, node lost power; PSU replaced",
    "host_memory": "DIMM uncorrectable error (EDAC UE); DIMM replaced",
    "gpu_sram": "uncorrectable SRAM ECC error (Xid 95); GPU replaced",
    "gsp": "GSP RPC timeouts (Xid 119) after every reset; GPU replaced",
    "storage": "NVMe I/O errors; SSD replaced",
    "host_cpu": "CPU machine check exceptions (MCE); CPU replaced",
    "chassis": "baseboard fault, BMC unresponsive; board replaced",
}
_MINOR = {
    "planned_replace": "proactive replacement during maintenance window",
    "reseat": "reseated after link training errors, no part change",
    "no_fault_found": "diagnostics passed; no fault found, returned to service",
}


def slurm_time(ts: int) -> str:
    """Epoch seconds as sacct prints them (``2026-06-01T00:00:00``)."""
    return str(np.datetime64(int(ts), "s"))


def elapsed(seconds: int) -> str:
    """``[D-]HH:MM:SS``."""
    days, rest = divmod(max(int(seconds), 0), DAY_S)
    hh, rest = divmod(rest, 3600)
    mm, ss = divmod(rest, 60)
    clock = f"{hh:02d}:{mm:02d}:{ss:02d}"
    return f"{days}-{clock}" if days else clock


def _tres(n: int, g: int, *, billing: bool = True) -> str:
    head = f"billing={64 * n}," if billing else ""
    return f"{head}cpu={64 * n},gres/gpu={g * n},mem={1000 * n}G,node={n}"


_STEP_STATES = {
    "COMPLETED": (("COMPLETED", "0:0"), ("COMPLETED", "0:0"), ("COMPLETED", "0:0")),
    "FAILED": (("FAILED", "1:0"), ("COMPLETED", "0:0"), ("FAILED", "1:0")),
    "NODE_FAIL": (("CANCELLED", "0:15"), ("CANCELLED", "0:15"), ("CANCELLED", "0:15")),
    "OUT_OF_MEMORY": (("OUT_OF_MEMORY", "0:125"), ("COMPLETED", "0:0"), ("OUT_OF_MEMORY", "0:125")),
    "CANCELLED": (("CANCELLED", "0:15"), ("COMPLETED", "0:0"), ("CANCELLED", "0:15")),
    "TIMEOUT": (("CANCELLED", "0:15"), ("COMPLETED", "0:0"), ("CANCELLED", "0:15")),
    "RUNNING": (("RUNNING", "0:0"), ("RUNNING", "0:0"), ("RUNNING", "0:0")),
}


def attempt_lines(config: SynthConfig, fleet: Fleet, jobs: Jobs, attempt: Attempt) -> list[str]:
    """Return the allocation row of one attempt and its ``.batch``, ``.extern`` and ``.0`` steps."""
    w1 = config.window_end_s
    g = fleet.gpus_per_node
    j = attempt.job
    raw, label = str(jobs.raw_id[j]), jobs.label[j]
    names = [fleet.names[n] for n in attempt.nodes]
    node_list = names[0] if len(names) == 1 else hostlist.collect_hostlist(names)
    n = len(names)
    running = attempt.end_s >= w1
    end = "Unknown" if running else slurm_time(attempt.end_s)
    stop = w1 if running else attempt.end_s
    state = "RUNNING" if running else attempt.state
    exit_code = "0:0" if running else attempt.exit_code
    user = USERS[jobs.user[j]]
    account = ACCOUNTS[jobs.user[j] % len(ACCOUNTS)]
    restarts = str(attempt.number - 1)
    start = attempt.start_s
    lines = [
        "|".join(
            (
                label,
                raw,
                jobs.name[j],
                jobs.partition[j],
                account,
                user,
                str(n),
                _tres(n, g),
                node_list,
                slurm_time(attempt.submit_s),
                slurm_time(start),
                end,
                elapsed(stop - start),
                state,
                exit_code,
                restarts,
            )
        )
    ]
    steps = _STEP_STATES[state.split(" ")[0]]
    srun_start = min(start + 3, stop)
    for (step, step_name, step_nodes, tres, t0), (st, ec) in zip(
        (
            ("batch", "batch", names[0], _tres(1, g, billing=False), start),
            ("extern", "extern", node_list, _tres(n, g), start),
            ("0", "python", node_list, _tres(n, g, billing=False), srun_start),
        ),
        steps,
        strict=True,
    ):
        alloc = "1" if step == "batch" else str(n)
        lines.append(
            "|".join(
                (
                    f"{label}.{step}",
                    f"{raw}.{step}",
                    step_name,
                    "",
                    account,
                    "",
                    alloc,
                    tres,
                    step_nodes,
                    slurm_time(t0),
                    slurm_time(t0),
                    end,
                    elapsed(stop - t0),
                    st,
                    ec,
                    restarts,
                )
            )
        )
    return lines


def sacct_files(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    jobs: Jobs,
    attempts: list[Attempt],
    het: sacct_variants.HetPlan | None = None,
) -> tuple[dict[str, str], int]:
    """Text of every ``sacct_<YYYYMMDD>.txt`` and the number of well-formed rows written.

    With :attr:`SynthConfig.sacct_format` set, every dump in that shape instead
    (:mod:`synth.sacct_variants`: ``sacct_<YYYYMMDD>.json`` for ``json``) with the pending
    remainder of arrays; the jobs of ``het`` are written as heterogeneous jobs.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    days = [slurm_time(w0 + d * DAY_S)[:10].replace("-", "") for d in range(config.days)]
    blocks: dict[str, list[list[str]]] = {day: [] for day in days}
    n_rows = 0
    het = het or sacct_variants.HetPlan()
    for attempt in sorted(attempts, key=lambda a: (min(a.end_s, w1), a.start_s, a.job)):
        day = days[min((min(attempt.end_s, w1 - 1) - w0) // DAY_S, len(days) - 1)]
        lines = attempt_lines(config, fleet, jobs, attempt)
        if attempt.job in het.split:
            raw = str(jobs.raw_id[attempt.job])
            lines = sacct_variants.het_lines(lines, raw, *het.split[attempt.job])
        blocks[day].append(lines)
        n_rows += len(lines)
    if config.sacct_format is not None:
        pending = sacct_variants.pending_array_lines(config, jobs, attempts, len(days))
        for d, lines in pending.items():
            blocks[days[d]] += [[line] for line in lines]
            n_rows += len(lines)
    if config.hostile:
        first_bad = max(jobs.raw_id, default=1000) + 1000
        for line in _hostile_sacct(config, rng, fleet, first_bad):
            day = days[int(rng.integers(0, len(days)))]
            pos = int(rng.integers(0, len(blocks[day]) + 1))
            blocks[day].insert(pos, [line])
    files = {}
    for k, day in enumerate(days):
        lines = [line for block in blocks[day] for line in block]
        if config.sacct_format == "json":
            files[f"sacct_{day}.json"] = sacct_variants.json_document(config, blocks[day])
            continue
        if config.sacct_format == "no_jobidraw":
            body = [sacct_variants.without_jobidraw(line) for line in (SACCT_HEADER, *lines)]
        elif k % 3 == 2:
            body = [site_line(SACCT_HEADER)] + [site_line(line) for line in lines]
        else:
            body = [SACCT_HEADER, *lines]
        files[f"sacct_{day}.txt"] = "\n".join(body) + "\n"
    return files, n_rows


def site_line(line: str) -> str:
    """Return a reference-format sacct line (or the header) in :data:`SITE_FORMAT`.

    A reference-format sacct line (or the header) in :data:`SITE_FORMAT`; a line short of
    fields (a hostile one) stays one field short.
    """
    names = SACCT_HEADER.split("|")
    fields = line.split("|")
    if line == SACCT_HEADER:
        return ";".join(SITE_FORMAT) + ";"
    short = len(fields) < len(names)
    value = dict(zip(names, fields + [""] * (len(names) - len(fields)), strict=True))
    value["Elapsed"] = str(_seconds(value["Elapsed"]))
    out = [value[_SITE_FROM.get(name, name)] for name in SITE_FORMAT]
    return ";".join(out[:-1] if short else out) + ";"


def _seconds(text: str) -> int:
    """Seconds of ``[D-]HH:MM:SS``."""
    days, _, clock = text.rpartition("-")
    hh, mm, ss = (int(x) for x in clock.split(":"))
    return int(days or 0) * DAY_S + hh * 3600 + mm * 60 + ss


def _hostile_sacct(
    config: SynthConfig, rng: np.random.Generator, fleet: Fleet, first_id: int
) -> list[str]:
    """Four malformed allocation rows (fresh job ids, none of them part of the truth)."""
    w0 = config.window_start_s
    g = fleet.gpus_per_node
    out = []
    for k, problem in enumerate(("fields", "end_before_start", "state", "year_2099")):
        t = w0 + int(rng.integers(0, config.days * DAY_S - 7200))
        node = fleet.names[int(rng.integers(0, fleet.n_nodes))]
        start, end, state = t + 60, t + 3660, "COMPLETED"
        if problem == "end_before_start":
            end = start - 3600
        elif problem == "state":
            state = "EXPLODED"
        elif problem == "year_2099":
            start += int(np.datetime64("2099-01-01T00:00:00", "s").astype(np.int64)) - w0
            end = start + 3600
        fields = [
            str(first_id + k),
            str(first_id + k),
            "bench_mlperf",
            "batch",
            "infra",
            "bob",
            "1",
            _tres(1, g),
            node,
            slurm_time(t),
            slurm_time(start),
            slurm_time(end),
            elapsed(max(end - start, 0)),
            state,
            "0:0",
            "0",
        ]
        if problem == "fields":
            fields = fields[:-1]
        out.append("|".join(fields))
    return out


def tickets_csv(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    minor: MinorTickets,
    serials: list[list[str]],
) -> tuple[str, int]:
    """``tickets.csv`` text (full history, sorted by opening) and its count of valid rows.

    A ticket for every replacement (a failure fixed by ``replace``) and planned replacement; a
    failure fixed otherwise writes none.
    """
    rows = _replacement_tickets(config, fleet, serials)
    rows += _minor_tickets(config, fleet, minor, serials)
    n_valid = len(rows)
    if config.hostile:
        node = int(rng.integers(0, fleet.n_nodes))
        u = node * fleet.gpus_per_node
        opened = config.window_start_s + int(rng.integers(3600, config.days * DAY_S - 3600))
        serial = serials[u][0]
        rows.append(
            _ticket(
                fleet,
                u,
                "gpu",
                serial,
                serial,
                opened,
                opened - 7200,
                RESEAT,
                "reseated GPU; ticket closed in the wrong time zone",
            )
        )
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(TICKET_HEADER)
    for k, (_, _, _, row) in enumerate(rows):
        writer.writerow([f"RT{100_001 + k:07d}", *row])
    return buffer.getvalue(), n_valid


def _replacement_tickets(
    config: SynthConfig, fleet: Fleet, serials: list[list[str]]
) -> list[tuple[int, str, str, list[str]]]:
    """Return the ticket of every replacement (failure or planned): serial out, serial in."""
    w1 = config.window_end_s
    rows: list[tuple[int, str, str, list[str]]] = []
    unit = fleet.ev_unit
    replacing = fleet.replacing
    # the part each replacement takes out: the unit's replacements before it
    seen = np.cumsum(replacing) - replacing
    first_of_unit = np.searchsorted(unit, unit, side="left")
    for i in np.flatnonzero(replacing).tolist():
        u = int(unit[i])
        k = int(seen[i] - seen[first_of_unit[i]])
        action = int(fleet.ev_action[i])
        cls = fleet.class_names[int(fleet.ev_class[i])]
        closed = int(fleet.ev_close[i])
        done = closed < w1
        text = _DESCRIPTIONS[cls] if action == FAIL else _MINOR[ACTIONS[action]]
        rows.append(
            _ticket(
                fleet,
                u,
                cls,
                serials[u][k],
                serials[u][k + 1] if done else "",
                int(fleet.ev_open[i]),
                closed if done else None,
                action,
                text,
            )
        )
    return rows


def _minor_tickets(
    config: SynthConfig, fleet: Fleet, minor: MinorTickets, serials: list[list[str]]
) -> list[tuple[int, str, str, list[str]]]:
    """Return the tickets that replace nothing (reseat, no fault found): the serial stays."""
    w1 = config.window_end_s
    rows: list[tuple[int, str, str, list[str]]] = []
    # reseat / no fault found: the serial in place stays
    for u, c, action, opened, closed in zip(
        minor.unit.tolist(),
        minor.cls.tolist(),
        minor.action.tolist(),
        minor.opened.tolist(),
        minor.closed.tolist(),
        strict=True,
    ):
        serial = serials[u][part_index(fleet, u, opened)]
        rows.append(
            _ticket(
                fleet,
                u,
                fleet.class_names[c],
                serial,
                serial,
                opened,
                closed if closed < w1 else None,
                action,
                _MINOR[ACTIONS[action]],
            )
        )
    return rows


def _ticket(
    fleet: Fleet,
    unit: int,
    cls: str,
    serial_out: str,
    serial_in: str,
    opened: int,
    closed: int | None,
    action: int,
    text: str,
) -> tuple[int, str, str, list[str]]:
    node = fleet.names[int(fleet.unit_node[unit])]
    slot = fleet.unit_slot[unit]
    return (
        opened,
        node,
        slot,
        [
            node,
            cls,
            slot,
            serial_out,
            serial_in,
            iso(opened),
            "" if closed is None else iso(closed),
            ACTIONS[action],
            text,
        ],
    )


def fleet_csv(fleet: Fleet) -> str:
    """``fleet.csv`` text."""
    lines = ["node,rack,cluster,batch,installed,removed"]
    for n in range(fleet.n_nodes):
        removed = iso(int(fleet.removed[n])) if fleet.removed[n] >= 0 else ""
        lines.append(
            f"{fleet.names[n]},{fleet.rack[n]},{fleet.cluster[n]},{fleet.batch[n]},"
            f"{iso(int(fleet.installed[n]))},{removed}"
        )
    return "\n".join(lines) + "\n"


def snapshot_times(config: SynthConfig, fleet: Fleet) -> list[list[int]]:
    """Return the inventory snapshot times per node.

    Per node: at ``W0`` (or install), at every GPU swap (a replacement or planned one) closed
    in the window, at ``W1`` or the removal.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    end = fleet.node_end(w1)
    swap = (
        fleet.replacing
        & (fleet.ev_unit < fleet.n_gpu_units)
        & (fleet.ev_close >= w0)
        & (fleet.ev_close < w1)
    )
    swap_node = fleet.unit_node[fleet.ev_unit[swap]]
    swap_t = fleet.ev_close[swap]
    out = []
    for n in range(fleet.n_nodes):
        mids = swap_t[(swap_node == n) & (swap_t < end[n])].tolist()
        times = {max(int(fleet.installed[n]), w0), int(end[n]), *mids}
        out.append(sorted(times))
    return out


def smi_snapshot(
    fleet: Fleet,
    node: int,
    ts: int,
    serials: list[list[str]],
    uuids: list[list[str]],
    no_serial: list[list[bool]] | None = None,
) -> str:
    """One ``nvidia-smi --query-gpu=... --format=csv`` output of ``node`` at ``ts``.

    A board ``no_serial`` marks prints ``[N/A]`` for its serial.
    """
    g = fleet.gpus_per_node
    stamp = slurm_time(ts).replace("-", "/").replace("T", " ") + ".000"
    lines = [SMI_HEADER]
    for slot in range(g):
        u = node * g + slot
        life = part_index(fleet, u, ts)
        bus = f"00000000:{PCI_BUSES[slot].upper()}:00.0"
        serial = "[N/A]" if no_serial and no_serial[u][life] else serials[u][life]
        lines.append(f"{stamp}, {slot}, {bus}, {serial}, {uuids[u][life]}, {GPU_NAME}")
    return "\n".join(lines) + "\n"


SMI_DRIVER = "550.54.15"
SMI_VBIOS = "96.00.74.00.0B"


def smi_query_text(
    fleet: Fleet,
    node: int,
    ts: int,
    serials: list[list[str]],
    uuids: list[list[str]],
    no_serial: list[list[bool]] | None = None,
) -> str:
    """One ``nvidia-smi -q`` text dump of ``node`` at ``ts`` (the inventory part of each GPU).

    The same GPUs, buses, serials and UUIDs as :func:`smi_snapshot`; ``N/A`` for a board
    ``no_serial`` marks. A real dump has many more sections per GPU (clocks, ECC, processes);
    they hold nothing the inventory reads and are left out.
    """
    g = fleet.gpus_per_node
    when = np.datetime64(int(ts), "s").astype(object)
    stamp = f"{when:%a %b} {when.day:2d} {when:%H:%M:%S %Y}"
    lines = ["", "==============NVSMI LOG==============", ""]
    lines += [_smi_field("Timestamp", stamp, 0), _smi_field("Driver Version", SMI_DRIVER, 0)]
    lines += [_smi_field("CUDA Version", "12.4", 0), "", _smi_field("Attached GPUs", str(g), 0)]
    for slot in range(g):
        u = node * g + slot
        life = part_index(fleet, u, ts)
        bus = PCI_BUSES[slot].upper()
        serial = "N/A" if no_serial and no_serial[u][life] else serials[u][life]
        lines.append(f"GPU 00000000:{bus}:00.0")
        lines += [
            _smi_field("Product Name", GPU_NAME, 4),
            _smi_field("Product Brand", "NVIDIA", 4),
            _smi_field("Product Architecture", "Hopper", 4),
            _smi_field("Persistence Mode", "Enabled", 4),
            _smi_field("Serial Number", serial, 4),
            _smi_field("GPU UUID", uuids[u][life], 4),
            _smi_field("Minor Number", str(slot), 4),
            _smi_field("VBIOS Version", SMI_VBIOS, 4),
            "    PCI",
            _smi_field("Bus", f"0x{bus}", 8),
            _smi_field("Device", "0x00", 8),
            _smi_field("Domain", "0x0000", 8),
            _smi_field("Bus Id", f"00000000:{bus}:00.0", 8),
        ]
    return "\n".join(lines) + "\n"


def _smi_field(key: str, value: str, indent: int) -> str:
    """Return a ``nvidia-smi -q`` line: the key padded to column 42, then ``: value``."""
    return f"{' ' * indent}{key:<{42 - indent}}: {value}"
