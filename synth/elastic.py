"""torchrun (PyTorch elastic) agent logs of the synthetic fleet.

A job handed to torchrun (:mod:`synth.schedulers`) runs one agent per node; each
attempt of the job is one rendezvous round (round ``attempt - 1``) over the attempt's nodes. Every
agent logs, in one of two real prefixes (torch 2.0-2.2 ``[time] logger: [LEVEL]`` or torchelastic
0.2 ``[LEVEL] time logger:``), the round's rendezvous, ``Starting worker group`` (the first
agent exactly at the attempt's start) and how the round ended:

============  ==============================================================================
attempt       agent lines
============  ==============================================================================
complete      ``worker group successfully finished``
cancel/limit  ``Received Signals.SIGTERM death signal, shutting down workers`` (the first agent
              at the attempt's end)
application   the failing rank ``failed (exitcode: 1)`` at the end; the others' workers abort
              later (``exitcode: -6``, NCCL watchdog)
out of memory the failing rank is killed, ``exitcode: -9``
GPU failure   the rank on the failed GPU's node exits 1 (CUDA error), the others -6
node failure  the lost node's agent falls silent; the others' workers abort (-6)
============  ==============================================================================

After a failure with a next attempt the agents that stay log ``Worker group FAILED. k/100
attempts left; will restart worker group`` and rejoin; those not in the next round are stopped
(``death signal``). Worker output lines are mixed in. Every third run is written as a static
rendezvous under a launcher without roles: no join lines, no ``[default]`` tag, only the
``Rendezvous complete`` result blocks (whose ``restart_count`` numbers the attempts). One file
per run and node: ``elastic/<run_id>__<host>.log`` (the documented legacy naming: these logs name
neither run nor host).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from synth.schedulers import ELASTIC, run_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from synth.config import SynthConfig
    from synth.fleet import Fleet
    from synth.workload import Attempt, Jobs

MAX_RESTARTS = 100
AGENT = "torch.distributed.elastic.agent.server.api"
RDZV = "torch.distributed.elastic.rendezvous.dynamic_rendezvous"
MP = "torch.distributed.elastic.multiprocessing.api"
BINARY = "/usr/bin/python3"


@dataclass
class ElasticOutput:
    """Files written, counts for the truth, and what each interrupted attempt looks like."""

    files: dict[str, str] = field(default_factory=dict)
    n_rows: int = 0
    n_bad: int = 0
    n_lines: int = 0
    #: (job, attempt number) -> (state the views see, application exit)
    facts: dict[tuple[int, int], tuple[str, bool]] = field(default_factory=dict)
    #: jobs written, and those written as a static rendezvous (no join lines, no role tag)
    files_by_run: list[int] = field(default_factory=list)
    static_runs: list[int] = field(default_factory=list)
    #: the torch version written (SynthConfig.elastic_torch; None: the default mix)
    torch: str | None = None


def _stamp(ts: int, ms: int, style: str, logger: str, level: str) -> str:
    clock = str(np.datetime64(int(ts), "s")).replace("T", " ")
    if style == "python_default":  # torch 1.x under logging.basicConfig: no time
        return f"{level}:{logger}:"
    if style == "torch_bracket":
        return f"[{clock},{ms:03d}] {logger}: [{level}] "
    return f"[{level}] {clock},{ms:03d} {logger.rsplit('.', 1)[-1]}: "


def elastic_files(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    jobs: Jobs,
    attempts: list[Attempt],
    scheduler: np.ndarray,
) -> ElasticOutput:
    """Return the agent logs of every torchrun job (file name -> text)."""
    out = ElasticOutput(torch=config.elastic_torch)
    by_job: dict[int, list[Attempt]] = defaultdict(list)
    for a in attempts:
        if scheduler[a.job] == ELASTIC:
            by_job[a.job].append(a)
    hostile_done = not config.hostile
    for j in sorted(by_job):
        runs = sorted(by_job[j], key=lambda a: a.number)
        style = ("torch_bracket", "elastic_v1")[int(rng.integers(0, 2))]
        if config.elastic_torch is not None:  # drawn all the same: the other draws stay
            style = "python_default" if config.elastic_torch == "1.12" else "torch_bracket"
        # every third run logs like a static rendezvous (torchrun --node_rank/--master_addr)
        # with a launcher that sets no role tag: no join lines, only result blocks
        static = len(out.static_runs) < (len(out.files_by_run) + 1) // 3
        logs = _job_logs(config, rng, fleet, jobs, j, runs, style, out, static=static)
        out.files_by_run.append(j)
        if static:
            out.static_runs.append(j)
        rid = run_id(jobs, j)
        for node, lines in sorted(logs.items()):
            lines.sort(key=lambda x: (x[0], x[1]))
            text_lines = [text for _, _, text in lines]
            if not hostile_done:
                bad = _stamp(lines[-1][0], 0, style, MP, "WARNING").replace(
                    str(np.datetime64(int(lines[-1][0]), "s"))[:10], "2026-06-31", 1
                )
                if style == "python_default":  # no date to spoil: a launcher's tag before it
                    bad = "stderr: " + bad
                text_lines.append(bad + "Sending process 4242 closing signal SIGTERM")
                out.n_bad += 1
                hostile_done = True
            out.n_lines += len(text_lines)
            out.files[f"{rid}__{fleet.names[node]}.log"] = "\n".join(text_lines) + "\n"
    return out


@dataclass
class _AgentLog:
    """Lines (time, order, text) of every node's agent log of one run, in the order written.

    ``static``: the agents print no rendezvous join lines and no ``[default]`` role tag (static
    rendezvous under a launcher without roles).
    """

    rng: np.random.Generator
    style: str
    static: bool
    out: ElasticOutput
    lines: defaultdict[int, list[tuple[int, int, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    seq: int = 0

    def log(
        self,
        node: int,
        ts: int,
        logger: str,
        level: str,
        message: str,
        *,
        ms: int = 0,
        scope: bool = True,
    ) -> None:
        """Add an agent message (a row of the table when ``scope``) in the run's prefix style."""
        if self.static and logger == RDZV:
            return  # a static rendezvous prints no join lines
        if self.static:
            message = message.removeprefix("[default] ")
        self.seq += 1
        stamp = _stamp(ts, ms, self.style, logger, level)
        if self.out.torch is not None:
            message = _worded(message, self.out.torch)
        self.lines[node].append((ts, self.seq, stamp + message))
        self.out.n_rows += scope

    def raw(self, node: int, ts: int, text: str) -> None:
        """Add a line as it is, without the logger's prefix."""
        self.seq += 1
        self.lines[node].append((ts, self.seq, text))

    def noise(self, node: int, ts: int, step: int) -> None:
        """Add a worker's progress line."""
        loss = 2.0 + self.rng.random()
        self.raw(node, ts, f"step {step} | loss {loss:.4f} | lr 3.0e-04 | tokens/s 1.2e6")


def _worded(message: str, torch: str) -> str:
    """Return an agent message as torch ``torch`` words it (the default is 2.0-2.2's)."""
    # torch 1.x formats the signal with an f-string, torch >= 2.5 runs on Python >= 3.11: a number
    message = message.replace("Received Signals.SIGTERM death", "Received 15 death")
    if torch == "2.5" and message.startswith("Sending process "):
        pid = message.split()[2]
        return f"Closing process {pid} via signal SIGTERM"
    return message


def _job_logs(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    jobs: Jobs,
    j: int,
    runs: list[Attempt],
    style: str,
    out: ElasticOutput,
    *,
    static: bool = False,
) -> dict[int, list[tuple[int, int, str]]]:
    """Lines (time, order, text) of every node's agent log of one run.

    ``static``: the agents print no rendezvous join lines and no ``[default]`` role tag (static
    rendezvous under a launcher without roles); attempts then come from the result blocks'
    ``restart_count``.
    """
    rid = run_id(jobs, j)
    agents = _AgentLog(rng, style, static, out)
    pids: dict[int, int] = {}
    previous: tuple[int, ...] = ()
    for k, a in enumerate(runs):
        for rank, node in enumerate(a.nodes):
            fresh = node not in previous
            if fresh:
                pids[node] = int(rng.integers(1000, 4_000_000))
            desc = f"{fleet.names[node]}_{pids[node]}_0"
            _join_round(agents, fleet, a, rank, node, desc, rid, fresh=fresh)
        if a.end_s < config.window_end_s:  # a round still running at the window's end has no end
            nxt = runs[k + 1] if k + 1 < len(runs) else None
            state, app_exit = _end_round(rng, a, nxt, fleet, agents.log, agents.raw, pids, rid)
            if state:
                out.facts[(j, a.number)] = (state, app_exit)
        previous = a.nodes
    return agents.lines


def _join_round(
    agents: _AgentLog,
    fleet: Fleet,
    a: Attempt,
    rank: int,
    node: int,
    desc: str,
    rid: str,
    *,
    fresh: bool,
) -> None:
    """Log one node's rendezvous into the attempt's round and the start of its workers.

    A ``fresh`` agent (not in the previous round) first logs its start and its join request.
    """
    rng, log, raw = agents.rng, agents.log, agents.raw
    rnd = a.number - 1
    n = len(a.nodes)
    g = fleet.gpus_per_node
    t_rdzv = a.start_s - int(rng.integers(8, 41))
    if fresh:
        log(node, t_rdzv, AGENT, "INFO", "[default] starting workers for entrypoint: python")
        log(node, t_rdzv, AGENT, "INFO", "[default] Rendezvous'ing worker group", ms=1)
        log(
            node,
            t_rdzv,
            RDZV,
            "INFO",
            f"The node '{desc}' attempts to join the next round of the rendezvous '{rid}'.",
            ms=2,
        )
    log(
        node,
        a.start_s - 2,
        RDZV,
        "INFO",
        f"The node '{desc}' has joined round {rnd} of the rendezvous '{rid}' as rank "
        f"{rank} in a world of size {n}.",
    )
    log(node, a.start_s - 1, AGENT, "INFO", "[default] Rendezvous complete for workers. Result:")
    if agents.static:  # fields of the result block that are no rows
        raw(node, a.start_s - 1, f"  group_rank={rank}")
        raw(node, a.start_s - 1, f"  group_world_size={n}")
    sizes = f"  global_world_sizes=[{', '.join([str(n * g)] * g)}]"
    if agents.style == "torch_bracket":
        log(node, a.start_s - 1, AGENT, "INFO", f"  restart_count={rnd}", scope=False)
        log(node, a.start_s - 1, AGENT, "INFO", sizes)
    else:
        raw(node, a.start_s - 1, f"  restart_count={rnd}")
        raw(node, a.start_s - 1, sizes)
        agents.out.n_rows += 1
    off = 0 if rank == 0 else int(rng.integers(0, 4))
    log(node, a.start_s + off, AGENT, "INFO", "[default] Starting worker group")
    agents.noise(node, a.start_s + off + 60, 1)


def _end_round(
    rng: np.random.Generator,
    a: Attempt,
    nxt: Attempt | None,
    fleet: Fleet,
    log: Callable[..., None],
    raw: Callable[[int, int, str], None],
    pids: dict[int, int],
    rid: str,
) -> tuple[str | None, bool]:
    """Log the lines that end a round on every node.

    Returns the state the views see (None when the round is no interruption) and whether its
    first failure is an application exit.
    """
    if a.state.split(" ")[0] == "COMPLETED":
        _finish_round(rng, a, log)
        return None, False
    if a.reason in ("cancel", "timeout"):
        _stop_round(rng, a, log)
        return None, False
    return _fail_round(rng, a, nxt, fleet, log, raw, pids, rid)


def _finish_round(rng: np.random.Generator, a: Attempt, log: Callable[..., None]) -> None:
    """Log a completed round: every agent's worker group finishes (the first at the end)."""
    for rank, node in enumerate(a.nodes):
        t = a.end_s + (0 if rank == 0 else int(rng.integers(0, 3)))
        log(
            node,
            t,
            AGENT,
            "INFO",
            "[default] worker group successfully finished. Waiting 300 seconds for other "
            "agents to finish.",
        )
        log(
            node,
            t,
            AGENT,
            "INFO",
            "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for "
            "other agents to finish",
            ms=1,
        )


def _stop_round(rng: np.random.Generator, a: Attempt, log: Callable[..., None]) -> None:
    """Log a cancelled or timed-out round: every agent gets SIGTERM and stops its workers."""
    for rank, node in enumerate(a.nodes):
        t = a.end_s + (0 if rank == 0 else int(rng.integers(0, 3)))
        log(
            node,
            t,
            AGENT,
            "WARNING",
            "Received Signals.SIGTERM death signal, shutting down workers",
        )
        log(
            node,
            t,
            MP,
            "WARNING",
            f"Sending process {int(rng.integers(1000, 4_000_000))} closing signal SIGTERM",
            ms=5,
        )


def _fail_round(
    rng: np.random.Generator,
    a: Attempt,
    nxt: Attempt | None,
    fleet: Fleet,
    log: Callable[..., None],
    raw: Callable[[int, int, str], None],
    pids: dict[int, int],
    rid: str,
) -> tuple[str, bool]:
    """Log a failed round: the failing rank's exit, the others' aborts, then restart or stop.

    Returns ``"FAILED"`` and whether the first failure is an application exit.
    """
    end = a.end_s
    lost = a.state.split(" ")[0] == "NODE_FAIL"
    if a.reason == "hw" and a.fail_node in a.nodes:
        failing = a.fail_node
    else:
        failing = a.nodes[int(rng.integers(0, len(a.nodes)))]
    code = {"app": 1, "oom": -9}.get(a.reason, 1)
    survivors = [n for n in a.nodes if not (lost and n == failing)]
    first = survivors[0] if lost else failing
    for node in survivors:
        # the other agents see their workers abort a little later (NCCL watchdog), always
        # before the next round's rendezvous (a requeue takes at least 30 s)
        t = end if node == first else end + int(rng.integers(1, 21))
        exit_code = code if (node == failing and not lost) else -6
        local = int(rng.integers(0, fleet.gpus_per_node))
        pid = int(rng.integers(1000, 4_000_000))
        closing = int(rng.integers(1000, 4_000_000))
        log(node, t, MP, "WARNING", f"Sending process {closing} closing signal SIGTERM")
        log(
            node,
            t,
            MP,
            "ERROR",
            f"failed (exitcode: {exit_code}) local_rank: {local} (pid: {pid}) of binary: {BINARY}",
        )
        if nxt is None:
            for text in _child_failed(fleet.names[node], t, local, exit_code, pid):
                raw(node, t, text)
        else:
            _restart(a, nxt, fleet, log, node, t, pids[node], rid)
    return "FAILED", not lost and code > 0


def _restart(
    a: Attempt,
    nxt: Attempt,
    fleet: Fleet,
    log: Callable[..., None],
    node: int,
    t: int,
    pid: int,
    rid: str,
) -> None:
    """Log an agent's restart after a failure: it rejoins the next round or, not in it, stops."""
    left = MAX_RESTARTS - (a.number - 1)
    log(
        node,
        t + 1,
        AGENT,
        "INFO",
        f"[default] Worker group FAILED. {left}/{MAX_RESTARTS} attempts left; will restart "
        "worker group",
    )
    log(node, t + 1, AGENT, "INFO", "[default] Stopping worker group", ms=3)
    if node in nxt.nodes:
        desc = f"{fleet.names[node]}_{pid}_0"
        log(node, t + 2, AGENT, "INFO", "[default] Rendezvous'ing worker group")
        log(
            node,
            t + 2,
            RDZV,
            "INFO",
            f"The node '{desc}' attempts to join the next round of the rendezvous '{rid}'.",
            ms=4,
        )
    else:
        log(
            node,
            t + 3,
            AGENT,
            "WARNING",
            "Received Signals.SIGTERM death signal, shutting down workers",
        )


def _child_failed(host: str, ts: int, local: int, code: int, pid: int) -> list[str]:
    """Return the error summary torchrun prints when no restart is left (not agent messages)."""
    when = str(np.datetime64(int(ts), "s")).replace("T", "_")
    return [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {when}",
        f"  host      : {host}",
        f"  rank      : {local} (local_rank: {local})",
        f"  exitcode  : {code} (pid: {pid})",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
