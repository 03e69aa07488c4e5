"""``synthesize``: simulate the fleet, write the landing files and the ground truth."""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from synth import dcgm as dcgm_mod
from synth import elastic as elastic_mod
from synth import (
    failslow,
    formats,
    kernel,
    presets,
    sacct_variants,
    schedulers,
    training,
    training_logonly,
    truth,
    workload,
)
from synth import fleet as fleet_mod
from synth import k8s as k8s_mod
from synth import node_events as node_events_mod
from synth import precursors as precursors_mod

if TYPE_CHECKING:
    from pathlib import Path

    from synth.config import SynthConfig

logger = logging.getLogger(__name__)

SOURCES = ("slurm", "kernel", "nvidia_smi", "fleet", "repairs")
MORE_SOURCES = ("k8s_pods", "k8s_events", "elastic", "node_events", "dcgm", "training")
"""Sources written only when switched on in the config (their folders exist only then)."""
_PATTERNS = {
    "slurm": "sacct_*",  # .txt, or .json (SynthConfig.sacct_format)
    "kernel": "*.log",
    "nvidia_smi": "*__*Z.*",
    "fleet": "fleet.csv",
    "repairs": "tickets.csv",
    "k8s_pods": "pods_*.json",
    "k8s_events": "events_*.json",
    "elastic": "*__*.log",
    "node_events": "sacctmgr_events_*.txt",
    "dcgm": "*.prom",
    "training": "slurm-*.out",
}
TRUTH_FILE = "ground_truth.json"


def synthesize(out: Path, config: SynthConfig) -> dict[str, Any]:
    """Simulate a fleet with known lifetimes and write its telemetry in the real formats.

    Writes ``out/slurm/sacct_<YYYYMMDD>.txt``, ``out/kernel/<host>.log``,
    ``out/nvidia_smi/<host>__<YYYYmmddTHHMMSSZ>.csv``, ``out/fleet/fleet.csv``,
    ``out/repairs/tickets.csv`` (layout of ``docs/data_contract.md`` §1) and
    ``out/ground_truth.json`` (§6), then returns the ground truth as a dict.

    Parameters
    ----------
    out
        Landing root. A folder written by an earlier run (it holds ``ground_truth.json``) has its
        generated files replaced; other non-empty source folders are refused.
    config
        The fleet, workload and seed; the same config gives byte-identical files.

    Returns
    -------
    dict
        The ground truth (data contract §6): ``seed``, ``params``, ``window_start``,
        ``window_end``, ``classes``, ``lives_by_class`` (replacement lives: ``n_lives``,
        ``n_failed``, ``exposure_s``), ``failure_process`` (per class: failures, exposure,
        compensator, rate, replacements), ``failures_by_fix``, ``non_hardware``, ``failures``,
        ``interruptions``, ``interruptions_by_cause``, ``expected_quarantine``, ``n_nodes``,
        ``n_gpus``, ``n_jobs``, ``n_attempts``, plus ``failures_by_class`` (replacements in the
        window), ``expected_rows`` (well-formed rows per raw table) and, for a preset fleet,
        ``preset``.

    Raises
    ------
    FileExistsError
        When a source folder under ``out`` holds files that an earlier run did not write.
    """
    _prepare(out, config)
    data = simulate(config)
    truth_dict: dict[str, Any] = data["truth"]
    for source in ("k8s_pods", "k8s_events", "elastic", "node_events", "training"):
        for name, text in data.get(source, {}).items():
            _write_text(out / source / name, text)
    _write_text(out / "fleet" / "fleet.csv", data["fleet_csv"])
    _write_text(out / "repairs" / "tickets.csv", data["tickets_csv"])
    for name, text in data["sacct"].items():
        _write_text(out / "slurm" / name, text)
    fleet = data["fleet"]
    _write_snapshots(out, config, data, truth_dict)
    w1 = config.window_end_s
    logs = kernel.kernel_logs(config, data["rng_noise"], fleet, data["xids"], data["hostile"])
    n_kernel_lines = 0
    for node, content in logs:
        path = out / "kernel" / f"{fleet.names[node]}.log"
        path.write_bytes(content)
        os.utime(path, (w1, w1))  # traditional syslog takes its year from the mtime
        n_kernel_lines += content.count(b"\n")
    truth_dict["n_lines"]["kernel"] = n_kernel_lines
    if config.dcgm_interval_s is not None:
        scrapes = dcgm_mod.dcgm_files(
            config,
            data["rng_dcgm"],
            fleet,
            data["attempts"],
            data["xids"],
            data["uuids"],
            write=lambda name, text: _write_text(out / "dcgm" / name, text),
            precursors=data["precursors"],
            slow=data["slow"],
        )
        truth_dict["dcgm"] = {
            "n_samples": scrapes.n_samples,
            "n_series": scrapes.n_series,
            "n_resets": scrapes.n_resets,
            "increase": scrapes.increase,
        }
        truth_dict["expected_rows"]["raw_dcgm_samples"] = scrapes.n_samples
        truth_dict["expected_quarantine"]["raw_dcgm_samples"] = scrapes.n_bad
        truth_dict["n_lines"]["dcgm"] = scrapes.n_lines
    _write_text(out / TRUTH_FILE, json.dumps(truth_dict, indent=1) + "\n")
    logger.info("synthetic fleet written to %s", out)
    return truth_dict


def simulate(config: SynthConfig) -> dict[str, Any]:
    """Run every simulation step in memory, without writing anything.

    Builds the text of every landing file except the kernel logs (``synthesize`` streams those,
    one host at a time, to keep memory flat on large fleets).

    Returns
    -------
    dict
        ``truth`` (the ground truth; ``n_lines["kernel"]`` is None until the logs are written),
        the file texts ``fleet_csv``, ``tickets_csv`` and ``sacct`` (name -> text), and the
        simulated objects ``fleet``, ``jobs``, ``attempts``, ``xids`` (every well-formed Xid
        line, with printed and true times), ``hostile``, ``snapshots``, ``serials``, ``uuids``
        and ``slow`` (fail-slow episodes, :mod:`synth.failslow`; None when off).
    """
    root = np.random.default_rng(config.seed)
    streams = root.spawn(13)
    fleet = fleet_mod.build_fleet(config, streams[0])
    fleet_mod.simulate_lifetimes(config, streams[1], fleet)
    fleet_mod.remove_nodes(config, streams[2], fleet)
    carriers, forced = fleet_mod.plan_carriers(config, streams[3], fleet)
    minor = fleet_mod.minor_tickets(config, streams[4], fleet)
    serials, uuids = fleet_mod.unit_serials(fleet, streams[5])
    jobs = workload.make_jobs(config, streams[6], fleet, carriers)
    attempts = workload.schedule_jobs(config, streams[7], fleet, jobs, carriers)
    xids = kernel.plan_xids(config, streams[8], fleet, attempts)
    # later sources draw from streams spawned after the first 13, so they leave those alone
    extra = root.spawn(5) if config.more_telemetry else []
    precursors = None
    if config.precursor_share is not None:
        precursors = precursors_mod.plan_precursors(config, root.spawn(1)[0], fleet)
        xids = precursors_mod.with_warning_xids(config, fleet, xids, precursors)
    hostile = kernel.plan_hostile(config, streams[9], fleet, xids)
    more = _more_telemetry(config, extra, fleet, jobs, attempts, minor) if extra else {}
    scheduler = more.get("scheduler")
    slurm_attempts = (
        attempts if scheduler is None else [a for a in attempts if scheduler[a.job] == 0]
    )
    het = sacct_variants.plan_het(config, jobs, slurm_attempts)
    sacct, n_sacct_rows = formats.sacct_files(config, streams[12], fleet, jobs, slurm_attempts, het)
    tickets, n_tickets = formats.tickets_csv(config, streams[11], fleet, minor, serials)
    snapshots = formats.snapshot_times(config, fleet)
    failure_truth = _failure_truth(config, fleet, forced, attempts, precursors)
    interruptions = _interruptions(config, fleet, xids, jobs, attempts, more)
    truth_dict: dict[str, Any] = {
        "seed": config.seed,
        "params": config.to_params(),
        "window_start": truth.iso(config.window_start_s),
        "window_end": truth.iso(config.window_end_s),
        **failure_truth,
        "interruptions": interruptions,
        "interruptions_by_cause": truth.by_cause(interruptions),
        **_base_counts(
            config, fleet, xids, hostile, sacct, n_sacct_rows, tickets, n_tickets, snapshots
        ),
        "n_nodes": fleet.n_nodes,
        "n_gpus": fleet.n_gpu_units,
        "n_jobs": len({a.job for a in attempts}),
        "n_attempts": len(attempts),
    }
    preset = presets.preset_truth(config)
    if preset is not None:
        truth_dict["preset"] = preset
    if config.sacct_format is not None or config.sacct_het_share:
        truth_dict["slurm_dumps"] = sacct_variants.truth(config, jobs, slurm_attempts, sacct, het)
    if more:
        _add_more_truth(truth_dict, more, attempts)
    if precursors is not None:
        truth_dict["precursors"] = precursors_mod.summary(config, fleet, precursors)
    # fail-slow episodes draw from a generator of their own: switched on, no other draw moves
    slow = failslow.plan_episodes(config, fleet) if config.slow_rate_per_gpu_hour else None
    if config.training_logs:
        # its own stream, spawned after every other one, so that the other files stay the same
        logs = training.training_logs(
            config,
            root.spawn(1)[0],
            jobs,
            attempts,
            scheduler,
            fleet.names,
            episodes=slow,
            gpus_per_node=fleet.gpus_per_node,
        )
        more["training"] = logs.files
        truth_dict["job_goodput"] = logs.job_goodput
        truth_dict["n_lines"]["training"] = logs.n_lines
        if slow is not None:
            truth_dict |= failslow.truth_block(config, slow, logs.slow_rows, logs.slow_jobs)
        if config.training_log_only_jobs:
            # a stream spawned after the training one: the other logs stay the same
            files, log_only, n_lines = training_logonly.log_only_logs(
                config, root.spawn(1)[0], max(jobs.raw_id, default=0) + 100_000, fleet.names
            )
            more["training"] = logs.files | files
            truth_dict["log_only_jobs"] = log_only
            truth_dict["n_lines"]["training"] += n_lines
    return {
        "truth": truth_dict,
        "fleet": fleet,
        "fleet_csv": formats.fleet_csv(fleet),
        "tickets_csv": tickets,
        "sacct": sacct,
        "snapshots": snapshots,
        "serials": serials,
        "uuids": uuids,
        "xids": xids,
        "hostile": hostile,
        "rng_noise": streams[10],
        "attempts": attempts,
        "jobs": jobs,
        "rng_dcgm": extra[4] if extra else None,
        "precursors": precursors,
        "slow": slow,
        **{k: more[k] for k in MORE_SOURCES if k in more},
    }


def _failure_truth(
    config: SynthConfig,
    fleet: fleet_mod.Fleet,
    forced: list[tuple[int, int, int]],
    attempts: list[workload.Attempt],
    precursors: precursors_mod.Precursors | None,
) -> dict[str, Any]:
    """Return the truth of the failure process: laws, lives, failures per class and fix, events."""
    lives = truth.lives_by_class(config, fleet)
    process = truth.failure_process(config, fleet, forced, attempts)
    return {
        "classes": {
            name: truth.class_law(spec) | {"fixes": config.fixes_of(name)}
            for name, spec in config.classes.items()
        },
        "lives_by_class": lives,
        "failures_by_class": {name: v["n_failed"] for name, v in lives.items()},
        "failure_process": process,
        "failures_by_fix": truth.fix_counts(config, process),
        "non_hardware": truth.non_hardware(config, process),
        "failures": truth.failures(
            config, fleet, None if precursors is None else precursors.lookup(), forced
        ),
    }


def _interruptions(
    config: SynthConfig,
    fleet: fleet_mod.Fleet,
    xids: kernel.XidLines,
    jobs: workload.Jobs,
    attempts: list[workload.Attempt],
    more: dict[str, Any],
) -> list[dict[str, Any]]:
    """Return the truth's interruptions, attributed with the evidence the other sources leave."""
    return truth.interruptions(
        config,
        fleet,
        xids,
        jobs,
        attempts,
        node_evidence=more.get("node_evidence"),
        planned_evidence=more.get("planned_evidence"),
        failure_evidence=more.get("failure_evidence"),
        scheduler=more.get("scheduler"),
        facts=more.get("facts"),
    )


def _base_counts(
    config: SynthConfig,
    fleet: fleet_mod.Fleet,
    xids: kernel.XidLines,
    hostile: list[kernel.HostileLine],
    sacct: dict[str, str],
    n_sacct_rows: int,
    tickets: str,
    n_tickets: int,
    snapshots: list[list[int]],
) -> dict[str, dict[str, Any]]:
    """Return the base sources' ``expected_quarantine``, ``expected_rows`` and ``n_lines``."""
    bad = 1 if config.hostile else 0
    return {
        "expected_quarantine": {
            "raw_slurm_jobs": 4 * bad,
            "raw_xid_events": len(hostile),
            "raw_inventory": 0,
            "raw_fleet": 0,
            "raw_repairs": bad,
        },
        "expected_rows": {
            "raw_slurm_jobs": n_sacct_rows,
            "raw_xid_events": int(xids.ts.size),
            "raw_inventory": sum(len(t) for t in snapshots) * fleet.gpus_per_node,
            "raw_fleet": fleet.n_nodes,
            "raw_repairs": n_tickets,
        },
        "n_lines": {
            "slurm": sum(text.count("\n") for text in sacct.values()),
            "kernel": None,  # counted when the logs are written
            "nvidia_smi": sum(len(t) for t in snapshots) * (fleet.gpus_per_node + 1),
            "fleet": fleet.n_nodes + 1,
            "repairs": tickets.count("\n"),
        },
    }


def _more_telemetry(
    config: SynthConfig,
    extra: list[np.random.Generator],
    fleet: fleet_mod.Fleet,
    jobs: workload.Jobs,
    attempts: list[workload.Attempt],
    minor: fleet_mod.MinorTickets,
) -> dict[str, Any]:
    """Kubernetes and torchrun jobs, node events: file texts and the truth's inputs."""
    scheduler = schedulers.assign(config, extra[0], jobs, attempts)
    more: dict[str, Any] = {"scheduler": scheduler, "facts": {}, "counts": {}}
    evidence: list[int] = []
    key = 1 << 40
    if config.k8s_share:
        k8s = k8s_mod.k8s_files(config, extra[1], fleet, jobs, attempts, scheduler)
        more["k8s_pods"], more["k8s_events"] = k8s.pods, k8s.events
        more["facts"].update(k8s.facts)
        evidence += [node * key + t for node, t in k8s.not_ready]
        more["counts"]["raw_k8s_pods"] = (k8s.n_pod_rows, k8s.n_bad_pods)
        more["counts"]["raw_k8s_events"] = (k8s.n_event_rows, k8s.n_bad_events)
        more["n_lines"] = {
            "k8s_pods": sum(t.count("\n") for t in k8s.pods.values()),
            "k8s_events": sum(t.count("\n") for t in k8s.events.values()),
        }
    if config.elastic_share:
        agents = elastic_mod.elastic_files(config, extra[2], fleet, jobs, attempts, scheduler)
        more["elastic"] = agents.files
        more["facts"].update(agents.facts)
        more["counts"]["raw_elastic_events"] = (agents.n_rows, agents.n_bad)
        more.setdefault("n_lines", {})["elastic"] = agents.n_lines
        if agents.torch is not None:
            more["elastic_torch"] = agents.torch
    if config.node_events:
        events = node_events_mod.plan_node_events(config, extra[3], fleet, minor, attempts)
        text, n_rows, n_bad = node_events_mod.sacctmgr_text(config, extra[3], fleet, events)
        day = formats.slurm_time(config.window_end_s)[:10].replace("-", "")
        more["node_events"] = {f"sacctmgr_events_{day}.txt": text}
        # planned work (seed_planned_reason) is evidence of class maintenance, not a failure
        is_planned = [e.reason.startswith(node_events_mod.PLANNED_REASON) for e in events]
        keys = [e.node * key + e.start for e in events]
        planned = [k for k, p in zip(keys, is_planned, strict=True) if p]
        more["planned_evidence"] = np.sort(np.array(planned, dtype=np.int64))
        evidence += [k for k, p in zip(keys, is_planned, strict=True) if not p]
        # failure events with the class their telemetry names: candidates of the attribution
        failing = sorted(
            (k, e.failure_class)
            for k, e in zip(keys, events, strict=True)
            if e.failure_class is not None
        )
        more["failure_evidence"] = (
            np.array([k for k, _ in failing], dtype=np.int64),
            np.array([c for _, c in failing], dtype=object),
        )
        more["counts"]["raw_node_events"] = (n_rows, n_bad)
        more.setdefault("n_lines", {})["node_events"] = text.count("\n")
        more["node_unavailability"] = node_events_mod.unavailability_truth(config, events)
    more["node_evidence"] = np.sort(np.array(evidence, dtype=np.int64))
    return more


def _add_more_truth(
    truth_dict: dict[str, Any], more: dict[str, Any], attempts: list[workload.Attempt]
) -> None:
    scheduler = more["scheduler"]
    jobs_of = {a.job for a in attempts}
    truth_dict["jobs_by_scheduler"] = {
        name: sum(1 for j in jobs_of if scheduler[j] == k)
        for k, name in enumerate(schedulers.NAMES)
    }
    for table, (n_rows, n_bad) in more["counts"].items():
        truth_dict["expected_rows"][table] = n_rows
        truth_dict["expected_quarantine"][table] = n_bad
    truth_dict["n_lines"].update(more.get("n_lines", {}))
    if "elastic_torch" in more:  # the torch version the agent logs were written as
        truth_dict["elastic_torch"] = more["elastic_torch"]
    if "node_unavailability" in more:
        truth_dict["node_unavailability"] = more["node_unavailability"]


def _prepare(out: Path, config: SynthConfig) -> None:
    """Create the source folders; clear files of an earlier run, refuse foreign ones.

    The later sources' folders are made only when switched on (and cleared if an earlier run
    left some).
    """
    ours = (out / TRUTH_FILE).exists()
    switched_on = {
        "k8s_pods": bool(config.k8s_share),
        "k8s_events": bool(config.k8s_share),
        "elastic": bool(config.elastic_share),
        "node_events": config.node_events,
        "dcgm": config.dcgm_interval_s is not None,
        "training": config.training_logs,
    }
    for source in SOURCES + MORE_SOURCES:
        folder = out / source
        if source in MORE_SOURCES and not switched_on[source] and not folder.exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        present = sorted(p for p in folder.iterdir() if p.is_file())
        if present and not ours:
            msg = (
                f"{folder} already holds {len(present)} file(s) that synthesize did not write; "
                "pass an empty or new folder as out, or remove those files first."
            )
            raise FileExistsError(msg)
        for path in folder.glob(_PATTERNS[source]):
            path.unlink()


_SMI_STREAM = 0x5317
"""Second seed word of the generator that picks ``nvidia-smi -q`` nodes and serial-less boards:
a generator of its own, so that turning those knobs on changes no other draw."""


def _write_snapshots(
    out: Path, config: SynthConfig, data: dict[str, Any], truth_dict: dict[str, Any]
) -> None:
    """Write every node's inventory snapshots: the query CSV, or ``nvidia-smi -q`` text.

    With ``smi_text_share`` or ``smi_no_serial_share`` set, the truth gains ``inventory``: the
    hosts written as text dumps and the UUIDs of the boards printed without a serial.
    """
    fleet, serials, uuids = data["fleet"], data["serials"], data["uuids"]
    text_nodes: set[int] = set()
    no_serial: list[list[bool]] | None = None
    if config.smi_text_share or config.smi_no_serial_share:
        rng = np.random.default_rng([config.seed, _SMI_STREAM])
        picks = rng.random(fleet.n_nodes) < config.smi_text_share
        text_nodes = {int(n) for n in np.flatnonzero(picks)}
        share = config.smi_no_serial_share
        no_serial = [
            (rng.random(len(parts)) < share).tolist() if u < fleet.n_gpu_units else []
            for u, parts in enumerate(serials)
        ]
    n_lines = 0
    for node, times in enumerate(data["snapshots"]):
        text_dump = node in text_nodes
        for ts in times:
            stamp = formats.slurm_time(ts).replace("-", "").replace(":", "")
            name = f"{fleet.names[node]}__{stamp}Z.{'txt' if text_dump else 'csv'}"
            write = formats.smi_query_text if text_dump else formats.smi_snapshot
            text = write(fleet, node, ts, serials, uuids, no_serial)
            n_lines += text.count("\n")
            _write_text(out / "nvidia_smi" / name, text)
    if no_serial is not None:
        truth_dict["n_lines"]["nvidia_smi"] = n_lines
        truth_dict["inventory"] = {
            "smi_text_hosts": sorted(fleet.names[n] for n in text_nodes),
            "no_serial_uuids": sorted(
                uuids[u][part]
                for u, parts in enumerate(no_serial)
                for part, absent in enumerate(parts)
                if absent
            ),
        }


def _write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode())
