"""Which jobs of the synthetic workload run under Slurm, Kubernetes or torchrun.

The scheduler simulation places every job on nodes the same way; afterwards a share of the jobs
is handed to Kubernetes (JobSet or Kubeflow PyTorchJob) or to PyTorch elastic (``torchrun``), and
their attempts land in those systems' telemetry instead of sacct. Arrays and the deliberately
ambiguous jobs always stay with Slurm; Kubernetes jobs are never cancelled (a deleted pod leaves no
trace in a snapshot), torchrun jobs span at least two nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from synth.config import SynthConfig
    from synth.workload import Attempt, Jobs

SLURM, KUBERNETES, ELASTIC = 0, 1, 2
NAMES = ("slurm", "kubernetes", "elastic")


def assign(
    config: SynthConfig, rng: np.random.Generator, jobs: Jobs, attempts: list[Attempt]
) -> np.ndarray:
    """Return the scheduler of every job, by job index.

    ``SLURM``, ``KUBERNETES`` or ``ELASTIC``.
    """
    n_jobs = len(jobs.raw_id)
    out = np.full(n_jobs, SLURM, dtype=np.int64)
    if not (config.k8s_share or config.elastic_share):
        return out
    cancelled = np.zeros(n_jobs, dtype=bool)
    carrier = np.zeros(n_jobs, dtype=bool)
    for a in attempts:
        cancelled[a.job] |= a.state.startswith("CANCELLED")
        carrier[a.job] |= a.carrier
    single = np.array(["_" not in label for label in jobs.label], dtype=bool) & ~carrier
    multi_node = np.array(jobs.n_nodes) >= 2
    u = rng.random(n_jobs)
    k8s = single & ~cancelled & (u < config.k8s_share)
    elastic = (
        single
        & multi_node
        & ~k8s
        & (u >= config.k8s_share)
        & (u < config.k8s_share + config.elastic_share)
    )
    out[k8s] = KUBERNETES
    out[elastic] = ELASTIC
    return out


def k8s_names(jobs: Jobs, j: int) -> tuple[str, str, str]:
    """``(namespace, job name, kind)`` of a Kubernetes job."""
    from synth.workload import ACCOUNTS

    namespace = ACCOUNTS[jobs.user[j] % len(ACCOUNTS)]
    name = f"{jobs.name[j].replace('_', '-')}-{jobs.raw_id[j]}"
    kind = "JobSet" if jobs.raw_id[j] % 2 == 0 else "PyTorchJob"
    return namespace, name, kind


def run_id(jobs: Jobs, j: int) -> str:
    """Rendezvous id of a torchrun job."""
    return f"{jobs.name[j].replace('_', '-')}-{jobs.raw_id[j]}"


def job_id_raw(jobs: Jobs, j: int, scheduler: int) -> str:
    """Return the namespaced job id the views give the job.

    ``1042``, ``k8s:ns/name`` or ``elastic:id``.
    """
    if scheduler == KUBERNETES:
        namespace, name, _ = k8s_names(jobs, j)
        return f"k8s:{namespace}/{name}"
    if scheduler == ELASTIC:
        return f"elastic:{run_id(jobs, j)}"
    return str(jobs.raw_id[j])
