"""DCGM telemetry of the synthetic fleet: dcgm-exporter scrapes (and ``dcgmi dmon`` text).

Every in-service node is scraped every ``dcgm_interval_s`` seconds from the window start, except
while one of its units is out for repair. Per GPU the exporter reports temperature and power
(higher while a job runs on the node), and counters that only grow until a reset: energy, ECC
single/double-bit errors, retired pages, NVLink CRC flit errors and PCIe replays. The volatile
counters and energy restart from zero when the node reboots (after every repair and at random
driver reloads); the aggregate ones (retired pages, aggregate ECC) belong to the GPU and start
over only with a new GPU (a new UUID: a new series). Precursors: single-bit ECC errors rise in the
hours before a ``gpu_memory`` failure (and a double-bit error shows), NVLink CRC errors before an
``nvlink`` one. With ``SynthConfig.precursor_share`` set, those built-in precursors give way to the
planted ones of :mod:`synth.precursors` (and its background episodes), and the scrapes
also export correctable row remaps. The Xid gauge holds the last Xid the GPU printed since the
reboot.

The counters are drawn so that a reset is always visible (the first value after a reboot is below
the last one before it, unless that was zero), so the increase the views compute with the reset
rule equals the increments drawn: that sum is the ground truth (:func:`dcgm_files` returns it).

Files: ``dcgm/<host>.<YYYYmmdd>.prom`` (the date of the window start), the node's scrapes over the
window with millisecond timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from synth.failslow import IDLE_CLOCK_MHZ, SM_CLOCK_MHZ, gpu_signature
from synth.fleet import PCI_BUSES

if TYPE_CHECKING:
    from collections.abc import Callable

    from synth.config import SynthConfig
    from synth.failslow import Episodes
    from synth.fleet import Fleet
    from synth.kernel import XidLines
    from synth.precursors import Precursors
    from synth.workload import Attempt

DRIVER = "535.129.03"
MODEL = "NVIDIA H100 80GB HBM3"
#: Exported metrics: column, dcgm-exporter name, type, help text.
EXPORTED: tuple[tuple[str, str, str, str], ...] = (
    ("gpu_temp_c", "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("power_w", "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    (
        "energy_mj",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "Total energy consumption since boot (in mJ).",
    ),
    (
        "ecc_sbe_volatile",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
    ),
    (
        "ecc_dbe_volatile",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
    ),
    (
        "retired_sbe",
        "DCGM_FI_DEV_RETIRED_SBE",
        "counter",
        "Total number of retired pages due to single-bit errors.",
    ),
    (
        "retired_dbe",
        "DCGM_FI_DEV_RETIRED_DBE",
        "counter",
        "Total number of retired pages due to double-bit errors.",
    ),
    (
        "nvlink_crc_flit_errors",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink flow-control CRC errors.",
    ),
    ("pcie_replays", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("xid_last", "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
)
#: Exported as well when precursors are planted (``SynthConfig.precursor_share`` set).
REMAPS: tuple[str, str, str, str] = (
    "remapped_rows_correctable",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "counter",
    "Number of remapped rows for correctable errors.",
)
#: Exported as well when fail-slow is on (``SynthConfig.slow_rate_per_gpu_hour`` > 0): DCGM
#: fields 100 and 112, with dcgm-exporter's names and help texts (``default-counters.csv``).
CLOCKS: tuple[tuple[str, str, str, str], ...] = (
    ("sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    (
        "clock_event_reasons",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "gauge",
        "Current clock throttle reasons.",
    ),
)
COUNTERS = tuple(c for c, _, kind, _ in EXPORTED if kind == "counter")
VOLATILE = (
    "energy_mj",
    "ecc_sbe_volatile",
    "ecc_dbe_volatile",
    "nvlink_crc_flit_errors",
    "pcie_replays",
)
DMON_TAGS = {
    "gpu_temp_c": "TMPTR",
    "power_w": "POWER",
    "energy_mj": "TOTEC",
    "ecc_sbe_volatile": "ESVTL",
    "ecc_dbe_volatile": "EDVTL",
    "retired_sbe": "RPSBE",
    "retired_dbe": "RPDBE",
    "nvlink_crc_flit_errors": "NFELT",
    "pcie_replays": "RPCTR",
    "xid_last": "XIDER",
}
REBOOTS_PER_NODE_DAY = 0.05
PRECURSOR_S = 12 * 3_600


@dataclass
class DcgmOutput:
    """Files written (name -> text) and the ground truth of the counters."""

    files: dict[str, str] = field(default_factory=dict)
    n_samples: int = 0
    n_series: int = 0
    n_resets: int = 0
    n_lines: int = 0
    n_bad: int = 0
    increase: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))


def dcgm_files(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    attempts: list[Attempt],
    xids: XidLines,
    uuids: list[list[str]],
    write: Callable[[str, str], None] | None = None,
    precursors: Precursors | None = None,
    slow: Episodes | None = None,
) -> DcgmOutput:
    """Scrape files of every node, and the counters' true increases.

    ``write(name, text)`` receives each file as soon as it is built (then ``files`` stays
    empty); without it the files are kept in ``files``. ``precursors`` (planted precursors and
    background episodes) replaces the built-in precursors. ``slow`` (fail-slow episodes) adds
    the SM clock and the clock-event reasons (:data:`CLOCKS`, :func:`clock_values`).
    """
    if config.dcgm_interval_s is None:
        msg = "dcgm_interval_s is None: set it to the scrape interval in seconds to write DCGM."
        raise ValueError(msg)
    out = DcgmOutput()
    write = write or out.files.__setitem__
    w0, w1 = config.window_start_s, config.window_end_s
    g = fleet.gpus_per_node
    step = config.dcgm_interval_s
    grid = np.arange(w0, w1, step, dtype=np.int64)
    busy_from = np.array([a.start_s for a in attempts], dtype=np.int64)
    busy_to = np.array([a.end_s for a in attempts], dtype=np.int64)
    busy_node = [a.nodes for a in attempts]
    ev_node = fleet.unit_node[fleet.ev_unit]
    end_of = fleet.node_end(w1)
    for n in range(fleet.n_nodes):
        mine = ev_node == n
        down_from, down_to = fleet.ev_open[mine], fleet.ev_close[mine]
        up = (grid >= fleet.installed[n]) & (grid < end_of[n])
        for a, b in zip(down_from.tolist(), down_to.tolist(), strict=True):
            up &= ~((grid >= a) & (grid < b))
        times = grid[up]
        if times.size == 0:
            continue
        on_node = [k for k, nodes in enumerate(busy_node) if n in nodes]
        busy = np.zeros(times.size, dtype=bool)
        for k in on_node:
            busy |= (times >= busy_from[k]) & (times < busy_to[k])
        reboots = np.sort(
            np.concatenate(
                [
                    down_to,
                    w0 + rng.integers(0, w1 - w0, rng.poisson(REBOOTS_PER_NODE_DAY * config.days)),
                ]
            )
        )
        values, labels = _node_values(
            config, rng, fleet, n, times, busy, reboots, xids, uuids, out, precursors
        )
        exported = EXPORTED if precursors is None else (*EXPORTED, REMAPS)
        if slow is not None:
            values |= clock_values(slow, n, g, times, busy)
            exported = (*exported, *CLOCKS)
        _write_node(config, fleet.names[n], times, values, labels, g, out, write, exported)
    return out


def clock_values(
    slow: Episodes, n: int, g: int, times: np.ndarray, busy: np.ndarray
) -> dict[str, np.ndarray]:
    """SM clock and clock-event reasons of node ``n``'s GPUs at ``times`` (epoch seconds).

    A healthy GPU runs at 1980 MHz with no reason bit while a job runs on the node, else at
    345 MHz with 0x1 (idle); during an episode with a DCGM signature the GPU's clock is divided
    by ``S`` and its bits are added (drawn by :mod:`synth.failslow`; silent episodes show
    nothing). No random draw: the other metrics stay the same.
    """
    divisor, bits = gpu_signature(slow, n, g, times * 1000)
    base = np.where(busy, SM_CLOCK_MHZ, IDLE_CLOCK_MHZ)[:, None]
    idle = np.where(busy, 0, 0x1)[:, None]
    return {
        "sm_clock_mhz": np.round(base / divisor).astype(np.int64),
        "clock_event_reasons": (idle | bits).astype(np.int64),
    }


def _node_values(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    n: int,
    times: np.ndarray,
    busy: np.ndarray,
    reboots: np.ndarray,
    xids: XidLines,
    uuids: list[list[str]],
    out: DcgmOutput,
    precursors: Precursors | None = None,
) -> tuple[dict[str, np.ndarray], list[list[str]]]:
    """Per metric a (samples x GPUs) array, and the label text of every sample and GPU."""
    g = fleet.gpus_per_node
    m = times.size
    step = config.dcgm_interval_s or 1
    # the reboot (if any) between consecutive samples
    reboot_before = np.zeros(m, dtype=bool)
    seen = np.searchsorted(reboots, times, side="right")
    reboot_before[1:] = seen[1:] > seen[:-1]
    temp = 38 + 35 * busy[:, None] + rng.normal(0, 2, (m, g))
    power = 75 + 550 * busy[:, None] + rng.normal(0, 20, (m, g))
    counters = COUNTERS
    planted: dict[str, np.ndarray] | None = None
    if precursors is not None:
        from synth.precursors import node_signals

        planted = node_signals(precursors, fleet, n, times, step)
        temp = temp + planted["temp"]
        power = power + planted["power"]
        counters = (*COUNTERS, REMAPS[0])
    values: dict[str, np.ndarray] = {
        "gpu_temp_c": np.round(temp).astype(np.int64),
        "power_w": np.round(np.maximum(power, 20.0), 3),
    }
    increments = {c: np.zeros((m, g), dtype=np.int64) for c in counters}
    increments["energy_mj"] = np.round(values["power_w"] * step * 1000).astype(np.int64)
    xid_last = np.zeros((m, g), dtype=np.int64)
    life_of = np.zeros((m, g), dtype=np.int64)
    for s in range(g):
        life_of[:, s] = _slot_increments(rng, fleet, n * g + s, times, increments, planted)
        xid_last[:, s] = _xid_gauge(xids, n, s, times, reboots)
    values["xid_last"] = xid_last
    # counters: cumulative per series (slot and GPU life); volatile ones restart at a reboot
    new_series = np.ones((m, g), dtype=bool)
    new_series[1:] = life_of[1:] != life_of[:-1]
    for c in counters:
        values[c] = _counter_values(rng, c, increments[c], new_series, reboot_before)
        out.increase[c] = out.increase.get(c, 0) + int(increments[c].sum())
    lower = np.zeros((m, g), dtype=bool)
    for c in counters:
        v = values[c]
        lower[1:] |= v[1:] < v[:-1]
    out.n_resets += int(np.sum(lower & ~new_series))
    out.n_samples += m * g
    out.n_series += int(new_series.sum())
    labels = _gpu_labels(fleet, n, uuids)
    values["life"] = life_of
    return values, labels


def _slot_increments(
    rng: np.random.Generator,
    fleet: Fleet,
    u: int,
    times: np.ndarray,
    increments: dict[str, np.ndarray],
    planted: dict[str, np.ndarray] | None,
) -> np.ndarray:
    """Fill GPU slot ``u``'s column of the error counters' increments; return its life per sample.

    A GPU's life (its UUID) changes at each replacement. Without planted precursors, the hours
    before a ``gpu_memory`` failure raise the single-bit ECC rate and end in double-bit errors,
    those before an ``nvlink`` failure raise the CRC flit rate.
    """
    s = u % fleet.gpus_per_node
    m = times.size
    a, b = np.searchsorted(fleet.ev_unit, [u, u + 1])
    closes, opens = fleet.ev_close[a:b], fleet.ev_open[a:b]
    classes = [fleet.class_names[c] for c in fleet.ev_class[a:b]]
    swaps = np.sort(closes[fleet.replacing[a:b]])  # a new GPU (UUID) after a replacement
    sbe_rate = np.full(m, 0.02)
    flit_rate = np.full(m, 0.01)
    dbe = np.zeros(m, dtype=np.int64)
    built_in = planted is None  # planted precursors replace the built-in ones
    for opened, cls in zip(opens.tolist(), classes, strict=True) if built_in else ():
        soon = (times < opened) & (times >= opened - PRECURSOR_S)
        if cls == "gpu_memory":
            sbe_rate[soon] *= 50
            hits = np.flatnonzero(soon)
            if hits.size:
                dbe[hits[-1]] += 1 + int(rng.integers(0, 2))
        elif cls == "nvlink":
            flit_rate[soon] *= 200
    increments["ecc_sbe_volatile"][:, s] = rng.poisson(sbe_rate)
    if planted is not None:
        increments["ecc_sbe_volatile"][:, s] += planted["sbe"][:, s]
    increments["ecc_dbe_volatile"][:, s] = dbe
    increments["retired_sbe"][:, s] = rng.binomial(increments["ecc_sbe_volatile"][:, s], 0.05)
    increments["retired_dbe"][:, s] = dbe
    increments["nvlink_crc_flit_errors"][:, s] = rng.poisson(flit_rate)
    increments["pcie_replays"][:, s] = rng.poisson(0.005, m)
    if planted is not None:
        increments["nvlink_crc_flit_errors"][:, s] += planted["crc"][:, s]
        increments["pcie_replays"][:, s] += planted["pcie"][:, s]
        increments[REMAPS[0]][:, s] = planted["remap"][:, s]
    life: np.ndarray = np.searchsorted(swaps, times, side="right")
    return life


def _xid_gauge(
    xids: XidLines, n: int, s: int, times: np.ndarray, reboots: np.ndarray
) -> np.ndarray:
    """Return the Xid gauge of GPU ``s`` of node ``n``: its last code since the node's last boot."""
    sel = (xids.node == n) & (xids.slot == s)
    x_ts, x_code = xids.true_ts[sel], xids.code[sel]
    order = np.argsort(x_ts, kind="stable")
    x_ts, x_code = x_ts[order], x_code[order]
    if not x_ts.size:
        return np.zeros(times.size, dtype=np.int64)
    k = np.searchsorted(x_ts, times, side="right") - 1
    booted = np.searchsorted(reboots, times, side="right")
    # a node that never rebooted (no repair, no driver reload) has nothing to index
    padded = np.concatenate([[np.iinfo(np.int64).min], reboots])
    last_boot = padded[booted]
    has = (k >= 0) & (x_ts[np.maximum(k, 0)] >= last_boot)
    gauge: np.ndarray = np.where(has, x_code[np.maximum(k, 0)], 0)
    return gauge


def _counter_values(
    rng: np.random.Generator,
    counter: str,
    inc: np.ndarray,
    new_series: np.ndarray,
    reboot_before: np.ndarray,
) -> np.ndarray:
    """Return a counter's (samples x GPUs) values from its increments, capping them in place.

    A new series (slot's first sample, new GPU) starts at a random value; a volatile counter
    restarts at a reboot, its first value below the last one (so the reset shows) unless that
    was 0. ``inc`` ends as the increase each sample adds.
    """
    m, g = inc.shape
    start = (
        rng.integers(10**9, 10**11, (m, g))
        if counter == "energy_mj"
        else rng.integers(0, 3, (m, g))
    )
    vals = np.zeros((m, g), dtype=np.int64)
    for i in range(m):
        fresh = new_series[i]
        reset = reboot_before[i] & (counter in VOLATILE) & ~fresh
        prev = vals[i - 1] if i else np.zeros(g, dtype=np.int64)
        # a reset keeps its first value below the last one (it shows), unless that was 0
        capped = np.where(prev > 0, np.minimum(inc[i], prev - 1), inc[i])
        inc[i] = np.where(fresh, 0, np.where(reset, capped, inc[i]))
        vals[i] = np.where(fresh, start[i], np.where(reset, inc[i], prev + inc[i]))
    return vals


def _gpu_labels(fleet: Fleet, n: int, uuids: list[list[str]]) -> list[list[str]]:
    """Return the label text of every GPU slot of node ``n``, one per GPU life (UUID)."""
    g = fleet.gpus_per_node
    labels: list[list[str]] = []
    for s in range(g):
        u = n * g + s
        bus = PCI_BUSES[s].upper()
        labels.append(
            [
                f'gpu="{s}",UUID="{uuids[u][life]}",pci_bus_id="00000000:{bus}:00.0",'
                f'device="nvidia{s}",modelName="{MODEL}",Hostname="{fleet.names[n]}",'
                f'DCGM_FI_DRIVER_VERSION="{DRIVER}"'
                for life in range(len(uuids[u]))
            ]
        )
    return labels


def _write_node(
    config: SynthConfig,
    host: str,
    times: np.ndarray,
    values: dict[str, np.ndarray],
    labels: list[list[str]],
    g: int,
    out: DcgmOutput,
    write: Callable[[str, str], None],
    exported: tuple[tuple[str, str, str, str], ...] = EXPORTED,
) -> None:
    """One file per node: the window's scrapes, named after the window's first day."""
    life = values["life"]
    label_text = np.array(
        [[labels[s][life[i, s]] for s in range(g)] for i in range(times.size)], dtype=object
    )
    text = exposition(times, {c: values[c] for c, *_ in exported}, label_text, exported)
    if config.hostile and out.n_bad == 0:
        # a scrape cut off mid-line (the exporter restarted while being read)
        text += f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="{labels[0][life[-1, 0]][14:40]}\n'
        out.n_bad = 1
    out.n_lines += text.count("\n")
    stamp = str(np.datetime64(int(config.window_start_s), "s"))[:10].replace("-", "")
    write(f"{host}.{stamp}.prom", text)


def exposition(
    times: np.ndarray,
    values: dict[str, np.ndarray],
    labels: np.ndarray,
    exported: tuple[tuple[str, str, str, str], ...] = EXPORTED,
) -> str:
    """Scrapes in dcgm-exporter's text format, one after another, each sample with its time.

    Parameters
    ----------
    times
        Epoch seconds of the scrapes (``m``).
    values
        Column of ``exported`` -> ``(m, gpus)`` array (integers, or floats printed with
        three decimals).
    labels
        ``(m, gpus)`` label text (``gpu="0",UUID="GPU-...",...``) per scrape and GPU.
    exported
        The metrics, in order: column, exporter name, type, help text (:data:`EXPORTED`).
    """
    m, g = labels.shape
    stamp = pl.Series("stamp", np.repeat(times * 1000, g)).cast(pl.String)
    label = pl.Series("label", labels.ravel().astype(str))
    parts = []
    for order, (column, name, kind, text) in enumerate(exported):
        samples = pl.DataFrame(
            {
                "i": np.repeat(np.arange(m), g),
                "k": np.full(m * g, order),
                "j": np.tile(np.arange(g), m) + 2,
                "value": _shown(values[column]),
                "label": label,
                "stamp": stamp,
            }
        ).select(
            "i",
            "k",
            "j",
            pl.concat_str(
                [pl.lit(name + "{"), "label", pl.lit("} "), "value", pl.lit(" "), "stamp"]
            ).alias("line"),
        )
        parts.append(samples)
        for j, comment in enumerate((f"# HELP {name} {text}", f"# TYPE {name} {kind}")):
            parts.append(
                pl.DataFrame(
                    {
                        "i": np.arange(m),
                        "k": np.full(m, order),
                        "j": np.full(m, j),
                        "line": [comment] * m,
                    }
                )
            )
    frame = pl.concat(parts, how="vertical_relaxed").sort("i", "k", "j")
    return "\n".join(frame["line"].to_list()) + "\n"


def _shown(v: np.ndarray) -> pl.Series:
    """Values as the exporter prints them: integers as such, floats with three decimals."""
    series = pl.Series(v.ravel())
    return series.cast(pl.String) if v.dtype.kind in "iu" else series.round(3).cast(pl.String)


def dmon_text(times: np.ndarray, values: dict[str, np.ndarray]) -> str:
    """``dcgmi dmon -e ...`` output with a timestamp before every line (``| ts``).

    ``values`` maps columns of :data:`DMON_TAGS` to ``(m, gpus)`` arrays.
    """
    columns = [c for c in DMON_TAGS if c in values]
    m, g = values[columns[0]].shape
    first = str(np.datetime64(int(times[0]), "s")) + "Z"
    header = f"{first} #Entity   " + "  ".join(f"{DMON_TAGS[c]:<8}" for c in columns).rstrip()
    cells = {
        "stamp": pl.from_epoch(pl.Series(np.repeat(times, g)), time_unit="s").dt.strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        ),
        "gpu": pl.Series(np.tile(np.arange(g), m)).cast(pl.String).str.pad_end(5),
        **{c: _shown(values[c]).str.pad_end(7) for c in columns},
    }
    body = pl.DataFrame(cells).select(
        pl.concat_str(
            [pl.col("stamp"), pl.lit("GPU"), pl.col("gpu"), *map(pl.col, columns)], separator=" "
        )
        .str.strip_chars_end()
        .alias("line")
    )
    return f"{header}\n{first} ID\n" + "\n".join(body["line"].to_list()) + "\n"
