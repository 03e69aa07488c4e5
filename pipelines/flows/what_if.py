"""Flow ``what-if``: run a goodput parameter sweep and rank the knobs (on demand)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.context import FlowRunContext

from pipelines import project
from pipelines.settings import Settings


@flow(name="what-if")
def what_if(
    sweep_file: Path = Path("data_samples/sweeps/scale_checkpoint_domain.yaml"),
    out_dir: Path = Path("whatif"),
    db_path: Path | None = None,
) -> dict[str, Any]:
    """Run the sweep in ``sweep_file``; writes the table and plots under ``out_dir``."""
    settings = Settings.from_env(db_path=db_path)
    result = project.run_sweep(project.load_sweep(sweep_file), db_path=settings.db_path,
                               out_dir=out_dir)  # fmt: skip
    best = result["best_knob"]
    logger = get_run_logger() if FlowRunContext.get() else logging.getLogger(__name__)
    logger.info(
        "%d scenarios; largest gain at %d GPUs: %s", result["n_points"], result["target_gpus"],
        f"{best['knob']}={best['best_value']} (+{best['gain']:.4f})" if best else "none",
    )  # fmt: skip
    return result


if __name__ == "__main__":
    what_if()
