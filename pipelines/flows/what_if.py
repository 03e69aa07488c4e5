"""Flow ``what-if``: run a goodput parameter sweep and rank the knobs (on demand)."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, get_run_logger, task, unmapped
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext

from pipelines.analysis import project
from pipelines.flows.artifacts import publish_what_if
from pipelines.runtime import dask_runner
from pipelines.runtime.settings import Settings


@task(cache_policy=NO_CACHE, persist_result=False)
def sweep_slice(
    base: Any, grid: dict[str, list[Any]], simulate: int = 0, seed: int = 0
) -> pl.DataFrame:
    """Evaluate one slice of the grid (on the task runner: threads or Dask workers)."""
    from models import auto_sweep

    # the points to simulate on their own are chosen once, on the whole table (run_sweep)
    table: pl.DataFrame = auto_sweep(base, grid, simulate=simulate, random_state=seed, max_points=0)
    return table


@flow(name="what-if-grid")
def sweep_grid(
    base: Any, grid: dict[str, list[Any]], parts: int = 4, simulate: int = 0, seed: int = 0
) -> pl.DataFrame:
    """Sweep the grid as ``parts`` slices evaluated on this flow's task runner, in order.

    Simulated points draw from streams seeded by the point, so the slices give the whole grid's
    table whatever the runner and the order.
    """
    slices = sweep_slice.map(
        unmapped(base), dask_runner.split_grid(grid, parts), unmapped(simulate), unmapped(seed)
    )
    return pl.concat([s.result() for s in slices], how="vertical_relaxed")


@flow(name="what-if")
def what_if(
    sweep_file: Path = Path("data_samples/sweeps/scale_checkpoint_domain.yaml"),
    out_dir: Path = Path("whatif"),
    db_path: Path | None = None,
    dask_address: str | None = None,
    parts: int = 4,
    drain_model: str | None = None,
    simulate: int | None = None,
    default_rates_if_none: bool = False,
) -> project.SweepResult:
    """Run the sweep in ``sweep_file``; writes the table and plots under ``out_dir``.

    In a flow run the grid is cut into ``parts`` slices evaluated on the Dask scheduler at
    ``dask_address`` (default ``RELIA_DASK_ADDRESS``; unset: local threads). With
    ``drain_model`` (or the file's ``drain_model:``; ``latest`` or a model id) the stored failure
    predictor's alarm thresholds are swept too: goodput with proactive drains at each one.
    ``simulate`` (or the file's ``simulate:``) evaluates every point by Monte Carlo with that
    many trials; without it, only points whose analytical error bound exceeds 1 % of goodput.
    A fit run with no failure in any class stops the sweep with one line, unless
    ``default_rates_if_none`` (the defaults are used and the run logs a warning naming them).
    """
    settings = Settings.from_env(db_path=db_path, dask_address=dask_address)
    runner = dask_runner.task_runner(settings.dask_address)
    grid_flow = sweep_grid.with_options(task_runner=runner)
    tracked = FlowRunContext.get() is not None
    spec = project.sweep_spec(sweep_file, drain_model=drain_model, simulate=simulate)
    fan_out = functools.partial(grid_flow, parts=parts, simulate=spec.simulate, seed=spec.seed)
    result = project.run_sweep(
        spec,
        db_path=settings.db_path,
        out_dir=out_dir,
        sweep_fn=fan_out if tracked else None,
        default_rates_if_none=default_rates_if_none,
    )
    project.log_sweep(result, get_run_logger() if tracked else logging.getLogger(__name__))
    if tracked:  # artifacts and the run's log belong to a flow run (the CLI also calls this)
        if result.get("rates_warning"):
            get_run_logger().warning("%s", result["rates_warning"])
        publish_what_if(result)
    return result


if __name__ == "__main__":
    what_if()
