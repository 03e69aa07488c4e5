"""Training logs of the synthetic jobs and their goodput ground truth (``docs/goodput.md`` §6).

Slurm jobs named like training runs (``pretrain_*``, ``sft_chat``, ``vit_train``,
``diffusion_ft``, ``rlhf_ppo``) write ``training/slurm-<JobID>.out``, one file per job with its
attempts appended (``--open-mode=append``): ``pretrain_*`` in Megatron-LM's format, the others in
torchtitan's (:mod:`synth.training_lines`). Each job draws a step time, a log interval, a
checkpoint interval (steps, a multiple of the log interval and at least twice it) and a blocking
save time; each attempt draws its start-up (first attempt) or its checkpoint load and warm-up.

The timeline of one attempt, in integer milliseconds from its scheduler start ``S``:

- first attempt: start-up until ``F = S + startup``; later attempts resuming from step ``r > 0``
  (the last completed save of any earlier attempt): the load ends at ``S + load`` and the
  warm-up at ``F = S + load + warmup``; with nothing to resume from there is no load and
  ``F = S + warmup``;
- steps ``r + 1, r + 2, ...`` of ``step_time`` each from ``F``; after every step that is a
  multiple of the checkpoint interval a save blocks for ``save`` time;
- the attempt ends at the scheduler's end ``E``: steps not finished by then are not written, a
  save not finished by then is started but not finished.

The truth (``job_goodput``) is computed from this timeline, never from the written lines, with
the boundaries of ``docs/goodput.md`` §3 from the generator's exact knowledge:

- ``P``, last progress: the end of the last completed step or completed save (a save cut short
  starts at the end of a step, so it is detection time from its start);
- ``K``, kept until: ``P`` for the final attempt of a ``COMPLETED`` job; otherwise the end of
  the attempt's last completed save (the next attempt resumes from it), else ``F`` (nothing kept);
- ``[S, F)`` start-up (first attempt) or reload (to the load end) plus warm-up; ``[F, K]``
  minus saves productive; ``(K, P]`` minus saves wasted; completed saves checkpoint; ``(P, E]``
  detection when the attempt is an interruption (``FAILED``, ``NODE_FAIL``,
  ``OUT_OF_MEMORY``, ``BOOT_FAIL``), else other; between attempts rescheduling;
- an attempt that completes no step is start-up (first attempt) or warm-up in full (as §3 puts an
  attempt without a step line: there is no first progress to split at).

Jobs without a training log (other names, and arrays) do no checkpointing; the workload keeps
their work across attempts (``synth.workload`` subtracts the run time from the remaining work),
so their truth is: start-up (first attempt) or reload then warm-up (later ones) as drawn from the
same ranges, cut at the attempt's run time, and the rest of every run productive; no checkpoint,
wasted, detection or other time; rescheduling between attempts. Only Slurm jobs whose last
attempt ended in the window are in ``job_goodput`` (Kubernetes and torchrun jobs write no
``slurm-*.out`` and their attempts' times are those systems'), one entry each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from synth import failslow, training_lines
from synth.training_lines import Knobs, Run
from synth.truth import INTERRUPTION_STATES

if TYPE_CHECKING:
    from collections.abc import Callable

    from synth.config import SynthConfig
    from synth.failslow import Episodes, Pace
    from synth.workload import Attempt, Jobs

TRAINING_NAMES: tuple[str, ...] = ("sft_chat", "vit_train", "diffusion_ft", "rlhf_ppo")
"""Job names (besides ``pretrain_*``) that write a training log."""
CATEGORIES: tuple[str, ...] = (
    "productive_s",
    "checkpoint_s",
    "wasted_s",
    "restart_s",
    "startup_s",
    "other_s",
    "detect_s",
    "reschedule_s",
    "reload_s",
    "warmup_s",
)
"""Ledger columns of ``job_goodput`` (``restart_s`` is the sum of the last four)."""
JITTER_STREAM = 0x717E
"""Second seed word of each attempt's step-jitter generator (then the job id and attempt)."""
_NONE = np.zeros(0)
"""The pace of a healthy attempt (no change of ``M``)."""


def is_training(name: str) -> bool:
    """Return True when a job of this name writes a training log."""
    return name.startswith("pretrain_") or name in TRAINING_NAMES


def framework_of(name: str) -> str:
    """``megatron`` for ``pretrain_*`` jobs, else ``torchtitan``."""
    return "megatron" if name.startswith("pretrain_") else "torchtitan"


@dataclass
class TrainingOutput:
    """Training-log files (name -> text), the truth's ``job_goodput`` and the line count."""

    files: dict[str, str] = field(default_factory=dict)
    job_goodput: list[dict[str, Any]] = field(default_factory=list)
    n_lines: int = 0
    slow_rows: list[dict[str, Any]] = field(default_factory=list)
    slow_jobs: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)


def _uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    return float(lo if lo == hi else rng.uniform(lo, hi))


def _ms(seconds: float, whole_s: bool, grain_ms: int = 1) -> int:
    """Seconds as milliseconds: whole seconds (at least one) or a multiple of ``grain_ms``."""
    if whole_s:
        return 1000 * max(1, round(seconds))
    return grain_ms * max(1, round(seconds * 1000 / grain_ms))


def draw_knobs(config: SynthConfig, rng: np.random.Generator, framework: str) -> Knobs:
    """Draw one job's step time, log and checkpoint intervals and blocking save time."""
    whole = framework == "megatron"
    step_ms = _ms(_uniform(rng, config.training_step_s), whole)
    lo, hi = config.training_log_interval_steps
    log_every = int(rng.integers(int(lo), int(hi) + 1))
    lo, hi = config.training_checkpoint_interval_steps
    ckpt = int(rng.integers(int(lo), int(hi) + 1))
    ckpt = max(2 * log_every, -(-ckpt // log_every) * log_every)
    save_ms = _ms(_uniform(rng, config.training_save_s), whole, grain_ms=10)
    return Knobs(framework, step_ms, log_every, ckpt, save_ms)


def run_attempt(
    knobs: Knobs,
    start: int,
    end: int,
    resume: int,
    pre_ms: tuple[int, int] | int,
    pace_of: Callable[[int], Pace | None] | None = None,
    noise: Callable[[int], np.ndarray] | None = None,
) -> Run:
    """Lay out one attempt: its start-up or load and warm-up, then steps and saves until ``end``.

    ``pre_ms`` is the start-up (an int) or ``(load, warmup)``; the load is skipped when
    ``resume`` is 0 (nothing to load). ``pace_of(first)`` gives the fail-slow pace of the steps
    from ``first`` on (:mod:`synth.failslow`; None: healthy, every step ``step_ms``). ``noise(n)``
    draws ``n`` multiplicative jitters of the step times (``training_step_jitter``; None: none).
    """
    if isinstance(pre_ms, int):
        load, first = None, start + pre_ms
    elif resume > 0:
        load_ms, warm_ms = pre_ms
        lead = 10 * (load_ms // 50)  # process start before the load begins
        load, first = (start + lead, start + load_ms), start + load_ms + warm_ms
    else:
        load, first = None, start + pre_ms[1]
    st, k, c = knobs.step_ms, knobs.ckpt_every, knobs.save_ms
    pace = pace_of(first) if pace_of is not None else None
    durations = factor = None
    if pace is not None or noise is not None:
        times, values = (pace.times, pace.values) if pace is not None else (_NONE, _NONE)
        laid = failslow.lay_steps(times, values, first, end, resume, (st, k, c), noise)
        steps, step_end, durations, factor = laid.steps, laid.ends, laid.durations, laid.factor
    else:
        n_max = max(0, (end - first) // st + 1)
        steps = resume + np.arange(1, n_max + 1, dtype=np.int64)
        saves_before = (steps - 1) // k - resume // k
        step_end = first + (steps - resume) * st + saves_before * c
        done = step_end <= end
        steps, step_end = steps[done], step_end[done]
    is_save = steps % k == 0
    save_start = step_end[is_save]
    return Run(
        start=start,
        end=end,
        resume=resume,
        first=first,
        load=load,
        steps=steps,
        step_end=step_end,
        save_step=steps[is_save],
        save_start=save_start,
        save_done=save_start + c <= end,
        durations=durations,
        pace=pace,
        factor=factor,
    )


def attempt_truth(
    run: Run, knobs: Knobs, number: int, state: str, *, final_completed: bool
) -> dict[str, int]:
    """Split one attempt ``[S, E]`` into the ledger's categories (milliseconds)."""
    out = dict.fromkeys(CATEGORIES, 0)
    span = run.end - run.start
    if run.steps.size == 0:
        out["startup_s" if number == 1 else "warmup_s"] = span
        return out
    c = knobs.save_ms
    done_end = run.save_start[run.save_done] + c
    first = run.first
    last = max(int(run.step_end[-1]), int(done_end[-1]) if done_end.size else first)
    if number == 1:
        out["startup_s"] = first - run.start
    elif run.load is not None:
        out["reload_s"] = run.load[1] - run.start
        out["warmup_s"] = first - run.load[1]
    else:
        out["warmup_s"] = first - run.start
    kept = last  # the final attempt of a completed job keeps all of its progress
    if not final_completed:
        kept = int(done_end[-1]) if done_end.size else first
    saves_kept = int(np.sum(done_end <= kept)) * c
    saves_all = int(done_end.size) * c
    out["checkpoint_s"] = saves_all
    out["productive_s"] = (kept - first) - saves_kept
    out["wasted_s"] = (last - kept) - (saves_all - saves_kept)
    tail = "detect_s" if state.split(" ")[0] in INTERRUPTION_STATES else "other_s"
    out[tail] = run.end - last
    return out


def _plain_truth(span: int, number: int, pre_ms: tuple[int, int] | int) -> dict[str, int]:
    """Ledger of one attempt of a job without a log: overheads as drawn, the rest productive."""
    out = dict.fromkeys(CATEGORIES, 0)
    if isinstance(pre_ms, int):
        out["startup_s"] = min(pre_ms, span)
    else:
        out["reload_s"] = min(pre_ms[0], span)
        out["warmup_s"] = min(pre_ms[1], span - out["reload_s"])
    out["productive_s"] = span - out["startup_s"] - out["reload_s"] - out["warmup_s"]
    return out


def _pre_ms(
    config: SynthConfig, rng: np.random.Generator, number: int, whole: bool
) -> tuple[int, int] | int:
    if number == 1:
        return _ms(_uniform(rng, config.training_startup_s), whole)
    load = _ms(_uniform(rng, config.training_load_s), whole, grain_ms=10)
    return load, _ms(_uniform(rng, config.training_warmup_s), whole)


def training_logs(
    config: SynthConfig,
    rng: np.random.Generator,
    jobs: Jobs,
    attempts: list[Attempt],
    scheduler: np.ndarray | None = None,
    host_names: list[str] | None = None,
    episodes: Episodes | None = None,
    gpus_per_node: int = 8,
) -> TrainingOutput:
    """Write the training logs of the Slurm training jobs and the truth ``job_goodput``.

    Parameters
    ----------
    rng
        The stream of this step alone (every draw of every job comes from it, in job order).
    scheduler
        The scheduler of every job (:mod:`synth.schedulers`); None: all Slurm. Only Slurm jobs
        get a log or a ledger entry.
    host_names
        Node names, for the launcher lines; defaults to ``gpu0001``...
    episodes, gpus_per_node
        Fail-slow episodes (:mod:`synth.failslow`) and the fleet's GPUs per node: the steps of
        an attempt on a slow unit slow down, and ``slow_rows`` / ``slow_jobs`` hold the truth.

    Returns
    -------
    TrainingOutput
        ``files`` (``slurm-<JobID>.out`` -> text), ``job_goodput`` (one entry per Slurm job
        whose last attempt ended in the window, in job order) and ``n_lines``.
    """
    w1_ms = config.window_end_s * 1000
    by_job: dict[int, list[Attempt]] = {}
    for a in attempts:
        by_job.setdefault(a.job, []).append(a)
    out = TrainingOutput()
    for j in sorted(by_job):
        if scheduler is not None and int(scheduler[j]) != 0:
            continue
        runs = sorted(by_job[j], key=lambda a: a.number)
        ended = runs[-1].end_s < config.window_end_s
        name = jobs.name[j]
        has_log = is_training(name)
        knobs = draw_knobs(config, rng, framework_of(name)) if has_log else None
        whole = knobs is not None and knobs.framework == "megatron"
        totals = dict.fromkeys(CATEGORIES, 0)
        writer = (
            training_lines.LogWriter(
                knobs, jobs, j, rng, host_names, _straggler(config, knobs, jobs.raw_id[j], episodes)
            )
            if knobs is not None
            else None
        )
        resume = 0
        slow = (0, 0, 0, 0)
        for i, a in enumerate(runs):
            start, end = a.start_s * 1000, min(a.end_s * 1000, w1_ms)
            pre = _pre_ms(config, rng, a.number, whole)
            final_completed = i == len(runs) - 1 and a.state == "COMPLETED"
            if knobs is None or writer is None:
                part = _plain_truth(end - start, a.number, pre)
            else:
                pace_of = _pace_of(episodes, a, end, host_names, gpus_per_node)
                noise = _noise(config, int(jobs.raw_id[j]), a.number)
                run = run_attempt(knobs, start, end, resume, pre, pace_of, noise)
                writer.attempt(run, a)
                part = attempt_truth(run, knobs, a.number, a.state, final_completed=final_completed)
                if run.pace is not None:
                    out.slow_rows += failslow.episode_rows(run.pace, jobs.label[j], a.number)
                    more = _slow_parts(run, knobs, final_completed=final_completed)
                    slow = (
                        slow[0] + more[0],
                        slow[1] + more[1],
                        slow[2] + more[2],
                        slow[3] + more[3],
                    )
                done = run.save_step[run.save_done]
                resume = int(done[-1]) if done.size else resume
            for key, value in part.items():
                totals[key] += value
            if i + 1 < len(runs):
                totals["reschedule_s"] += runs[i + 1].start_s * 1000 - end
        if writer is not None:
            text = writer.text()
            out.files[f"slurm-{jobs.label[j]}.out"] = text
            out.n_lines += text.count("\n")
        if not ended:
            continue
        out.job_goodput.append(_entry(jobs, j, runs, totals, knobs))
        if episodes is not None and knobs is not None:
            out.slow_jobs[jobs.label[j]] = slow
    return out


def _straggler(
    config: SynthConfig, knobs: Knobs, raw_id: int, episodes: Episodes | None
) -> training_lines.Straggler | None:
    """Return the straggler reports of a Megatron job's log, with their own draws (or None)."""
    if episodes is None or config.straggler_lines is None or knobs.framework != "megatron":
        return None
    return training_lines.Straggler(
        kind=config.straggler_lines,
        report_s=config.straggler_report_s,
        gpus_per_node=config.gpus_per_node,
        rng=np.random.default_rng([config.seed, failslow.STRAGGLER_STREAM, int(raw_id)]),
    )


def _pace_of(
    episodes: Episodes | None, a: Attempt, end: int, host_names: list[str] | None, g: int
) -> Callable[[int], Pace | None] | None:
    """Return the attempt's pace from its first step on (None without fail-slow)."""
    if episodes is None:
        return None
    top = max(a.nodes, default=0) + 1
    names = host_names or [f"gpu{n + 1:04d}" for n in range(top)]
    return lambda first: failslow.attempt_pace(episodes, a.nodes, names, g, first, end)


def _noise(config: SynthConfig, raw_id: int, number: int) -> Callable[[int], np.ndarray] | None:
    """Draws of an attempt's step jitter from a generator of its own (None: jitter off)."""
    sigma = config.training_step_jitter
    if not sigma:
        return None
    rng = np.random.default_rng([config.seed, JITTER_STREAM, raw_id, number])
    return lambda n: rng.lognormal(0.0, sigma, n)


def _slow_parts(run: Run, knobs: Knobs, *, final_completed: bool) -> tuple[int, int, int, int]:
    """Milliseconds above the healthy pace of one attempt: (kept, redone, unlogged, faint).

    Kept steps are those the ledger keeps (``attempt_truth``): every step of the final attempt
    of a completed job, else the steps up to the attempt's last completed save. A step's time
    above the healthy pace is ``round(step_ms x M) - step_ms``, the step without its jitter.
    Unlogged: kept steps after the last progress line; faint: the other kept steps whose ``M``
    is under ``1 + failslow.VISIBLE_FLOOR``.
    """
    if run.factor is None or run.steps.size == 0:
        return 0, 0, 0, 0
    clean = np.maximum(1, np.round(knobs.step_ms * run.factor)).astype(np.int64)
    extra = clean - knobs.step_ms
    steps = run.steps
    done = run.save_step[run.save_done]
    kept_to = int(done[-1]) if done.size else run.resume
    if final_completed:
        kept_to = int(steps[-1])
    kept = steps <= kept_to
    shown = steps[steps % knobs.log_every == 0]
    last_shown = int(shown[-1]) if shown.size else run.resume
    unlogged = kept & (steps > last_shown)
    faint = kept & ~unlogged & (run.factor < 1 + failslow.VISIBLE_FLOOR)
    return (
        int(extra[kept].sum()),
        int(extra[~kept].sum()),
        int(extra[unlogged].sum()),
        int(extra[faint].sum()),
    )


def _entry(
    jobs: Jobs, j: int, runs: list[Attempt], totals: dict[str, int], knobs: Knobs | None
) -> dict[str, Any]:
    restart = sum(totals[k] for k in ("detect_s", "reschedule_s", "reload_s", "warmup_s"))
    totals["restart_s"] = restart
    wall = (runs[-1].end_s - runs[0].start_s) * 1000
    entry: dict[str, Any] = {
        "job_id_raw": str(jobs.raw_id[j]),
        "job_id": jobs.label[j],
        "job_name": jobs.name[j],
        "has_training_log": knobs is not None,
        "framework": None if knobs is None else knobs.framework,
        "n_attempts": len(runs),
        "wall_s": wall / 1000,
    }
    entry |= {key: totals[key] / 1000 for key in CATEGORIES}
    entry |= {
        "step_time_s": None if knobs is None else knobs.step_ms / 1000,
        "log_interval_steps": None if knobs is None else knobs.log_every,
        "checkpoint_interval_steps": None if knobs is None else knobs.ckpt_every,
        "save_s": None if knobs is None else knobs.save_ms / 1000,
    }
    return entry
