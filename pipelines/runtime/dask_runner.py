"""Where the flows fan work out: a Dask cluster named in settings, or Prefect's local threads.

``RELIA_DASK_ADDRESS`` (``Settings.dask_address``) picks the task runner of the fan-out steps
(parsing landing files, evaluating what-if grid slices):

- unset: Prefect's ``ThreadPoolTaskRunner`` (threads of the flow's process);
- ``tcp://host:8786`` (any scheduler address): ``prefect_dask.DaskTaskRunner(address=...)``;
  every worker must see the landing folder at the same path and have this project installed;
- ``local`` or ``local:N``: a ``distributed.LocalCluster`` of N worker processes (default 2, one
  thread each) on 127.0.0.1, started for the flow run and closed after it.

The warehouse itself stays on one node: DuckDB allows one writer process, so parsed files travel
back to the flow's process, which validates and loads them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from pipelines.runtime.errors import ReliaError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from pathlib import Path

    from prefect.task_runners import TaskRunner


class DaskMissingError(ReliaError, ImportError):
    """A Dask address was configured but the optional ``dask`` extra is not installed."""


LOCAL = "local"
"""Address prefix that asks for a LocalCluster on loopback (``local`` or ``local:<workers>``)."""

T = TypeVar("T")

CATEGORICAL_KNOBS = (
    "strategy",
    "fleet_age",
    "rates",
    "weibull_shape",
    "node_groups",
    "slow_laws",
    "straggler_detect_s",
    "straggler_tolerance",
    "straggler_evict",
    "straggler_evict_s",
)
"""Knobs ``models.sweep`` loops over in its outer loop (the rest it evaluates as arrays); kept
equal to ``models.goodput.CATEGORICAL_KNOBS`` by a test, without importing models here."""


class LocalClusterKwargs(TypedDict):
    """Keyword arguments of ``distributed.LocalCluster`` (:func:`local_cluster_kwargs`)."""

    n_workers: int
    threads_per_worker: int
    processes: bool
    host: str
    dashboard_address: str


def local_cluster_kwargs(n_workers: int = 2) -> LocalClusterKwargs:
    """``LocalCluster`` arguments: ``n_workers`` one-thread processes, every socket on loopback."""
    if n_workers < 1:
        msg = f"a local Dask cluster needs at least one worker, got {n_workers}"
        raise ValueError(msg)
    return {
        "n_workers": n_workers,
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": "127.0.0.1:0",
    }


def task_runner(address: str | None) -> TaskRunner[Any]:
    """Return the task runner for a Dask scheduler ``address`` (see the module notes).

    Parameters
    ----------
    address
        None or empty for Prefect's thread pool, ``local[:N]`` for a LocalCluster of N worker
        processes on 127.0.0.1, anything else for the address of a running Dask scheduler.

    Returns
    -------
    prefect.task_runners.TaskRunner
        A new, not yet started runner (give it to ``flow.with_options(task_runner=...)``).

    Raises
    ------
    ValueError
        For ``local:N`` where N is not a positive whole number.
    DaskMissingError
        When an address is given but the ``dask`` extra (prefect-dask, distributed) is not
        installed.
    """
    from prefect.task_runners import ThreadPoolTaskRunner

    if not address:
        return ThreadPoolTaskRunner()
    try:
        from prefect_dask.task_runners import DaskTaskRunner
    except ImportError as error:
        msg = (
            f"RELIA_DASK_ADDRESS={address!r} needs the dask extra: "
            "pip install -e '.[dask]' (make install does), or unset it to use threads"
        )
        raise DaskMissingError(msg) from error

    if address == LOCAL or address.startswith(f"{LOCAL}:"):
        count = address.partition(":")[2] or "2"
        if not count.isdigit():
            msg = f"RELIA_DASK_ADDRESS={address!r}: write local or local:<number of workers>"
            raise ValueError(msg)
        return DaskTaskRunner(
            cluster_class="distributed.LocalCluster",
            cluster_kwargs=dict(local_cluster_kwargs(int(count))),  # a plain dict, as it asks
        )
    return DaskTaskRunner(address=address)


def chunks(items: Sequence[T], n_parts: int) -> list[list[T]]:
    """``items`` cut into at most ``n_parts`` consecutive runs of near-equal length.

    Concatenating the runs gives ``items`` back in order; there is no empty run.
    """
    if n_parts < 1:
        msg = f"n_parts must be at least 1, got {n_parts}"
        raise ValueError(msg)
    size = math.ceil(len(items) / n_parts) if items else 1
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def waves(paths: Sequence[Path], max_bytes: int) -> Iterator[list[int]]:
    """Return the indices of ``paths`` in runs of at most ``max_bytes`` on disk.

    Indices of ``paths`` in consecutive runs of at most ``max_bytes`` on disk (one file bigger
    than that makes a run of its own): fanned out one run at a time, parsed files in flight stay
    bounded by about ``max_bytes``.
    """
    run: list[int] = []
    size = 0
    for i, path in enumerate(paths):
        n = path.stat().st_size
        if run and size + n > max_bytes:
            yield run
            run, size = [], 0
        run.append(i)
        size += n
    if run:
        yield run


def split_grid(grid: Mapping[str, Sequence[Any]], n_parts: int) -> list[dict[str, list[Any]]]:
    """Cut a what-if grid into at most ``n_parts`` sub-grids.

    Cut a what-if grid into at most ``n_parts`` sub-grids whose sweeps, concatenated, give the
    rows of the whole grid's sweep in the same order.

    ``models.sweep`` loops over the categorical knobs (:data:`CATEGORICAL_KNOBS`, in grid order,
    the first slowest) and inside that over the numeric knobs (grid order, the first slowest). The
    split is along the slowest-varying knob with more than one value, into consecutive runs of its
    values; a grid with a single point is not split.
    """
    keys = [k for k in grid if k in CATEGORICAL_KNOBS] + [
        k for k in grid if k not in CATEGORICAL_KNOBS
    ]
    axis = next((k for k in keys if len(grid[k]) > 1), None)
    if axis is None:
        return [{k: list(v) for k, v in grid.items()}]
    return [
        {k: (part if k == axis else list(v)) for k, v in grid.items()}
        for part in chunks(list(grid[axis]), n_parts)
    ]
