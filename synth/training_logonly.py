"""Training logs of jobs that have no scheduler record (``docs/goodput.md`` §6, log-only jobs).

With ``SynthConfig.training_log_only_jobs = n`` the generator writes ``n`` more log files whose
jobs are in no ``sacct`` dump (their ids are above every synthetic job's), so the warehouse can
only derive their attempts from the logs themselves:

- even ``k``: ``training/slurm-<id>.out``, one job requeued once: attempt 1 crashes (srun's task
  exit line), attempt 2 resumes from its last completed save and completes;
- odd ``k``: ``training/train-<k>.out``, a ``--open-mode=append`` output holding two jobs one
  after another, each printing ``SLURM_JOB_ID=<id>`` first: the first crashes, the second (a new
  submission) resumes from its last completed save and completes.

Every run starts with the job script's ``SLURM_JOB_ID=<id>`` line, then the framework's lines as
:mod:`synth.training_lines` writes them (Megatron-LM for even ``k``, torchtitan for odd), and a
completed run ends with the framework's training-end line (Megatron's ``[after training is
done] datetime: <date>``, torchtitan's ``Training completed``). The truth (``log_only_jobs``)
lists each file, whether it is appended, and each job's id and attempts with their end cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from synth import training_lines
from synth.training import draw_knobs, run_attempt
from synth.workload import Attempt, Jobs

if TYPE_CHECKING:
    from synth.config import SynthConfig

_HOUR_MS = 3_600_000


def log_only_logs(
    config: SynthConfig,
    rng: np.random.Generator,
    first_id: int,
    host_names: list[str] | None = None,
) -> tuple[dict[str, str], list[dict[str, Any]], int]:
    """Write the log-only training logs; return ``(files, truth, n_lines)``.

    ``first_id`` is the first job id to use (above every job ``sacct`` holds).
    """
    files: dict[str, str] = {}
    truth: list[dict[str, Any]] = []
    n_lines = 0
    span_ms = (config.window_end_s - config.window_start_s) * 1000
    for k in range(config.training_log_only_jobs):
        framework = "megatron" if k % 2 == 0 else "torchtitan"
        knobs = draw_knobs(config, rng, framework)
        first = int(first_id + 10 * k)
        ids = [first, first] if k % 2 == 0 else [first, first + 1]
        name = f"slurm-{first}.out" if k % 2 == 0 else f"train-{k}.out"
        jobs = Jobs()
        for job_id in dict.fromkeys(ids):
            jobs.add(raw_id=job_id, name="pretrain_llm", n_nodes=1, work_s=10**6)
        start = config.window_start_s * 1000 + int(rng.integers(0, max(1, span_ms - 24 * _HOUR_MS)))
        start -= start % 1000
        writer = training_lines.LogWriter(knobs, jobs, 0, rng, host_names)
        resume, attempts = 0, []
        for number, (job_id, state) in enumerate(zip(ids, ("FAILED", "COMPLETED"), strict=True)):
            run_ms = int(rng.integers(1, 4)) * _HOUR_MS
            end = start + run_ms
            pre: tuple[int, int] | int = (
                1000 * int(rng.integers(60, 300))
                if number == 0
                else (1000 * int(rng.integers(20, 120)), 1000 * int(rng.integers(10, 60)))
            )
            run = run_attempt(knobs, start, end, resume, pre)
            a = Attempt(
                job=ids.index(job_id),
                number=number + 1,
                submit_s=start // 1000,
                start_s=start // 1000,
                end_s=end // 1000,
                state=state,
                exit_code="1:0" if state == "FAILED" else "0:0",
                nodes=(0,),
                reason="",
            )
            writer.chunks.append(f"SLURM_JOB_ID={job_id}\n")
            writer.attempt(run, a)
            if state == "COMPLETED":
                writer.chunks.append(_train_end(framework, int(run.end)) + "\n")
            done = run.save_step[run.save_done]
            resume = int(done[-1]) if done.size else resume
            attempts.append(
                {
                    "job_id": str(job_id),
                    "end_cause": "crash" if state == "FAILED" else "completed",
                    "start_ms": start,
                    "end_ms": end,
                }
            )
            start = end + 1000 * int(rng.integers(60, 1800))
        text = writer.text()
        files[name] = text
        n_lines += text.count("\n")
        truth.append(
            {
                "file": name,
                "framework": framework,
                "appended": k % 2 == 1,
                "job_ids": list(dict.fromkeys(str(i) for i in ids)),
                "attempts": attempts,
            }
        )
    return files, truth, n_lines


def _train_end(framework: str, end_ms: int) -> str:
    """Return the framework's training-end line at ``end_ms``."""
    stamp = training_lines.stamps(np.array([end_ms]))[0]
    if framework == "megatron":
        return f"[after training is done] datetime: {training_lines.megatron_time(stamp)} "
    return training_lines.TITAN.format(
        training_lines.titan_time(stamp), "INFO", "Training completed"
    )
