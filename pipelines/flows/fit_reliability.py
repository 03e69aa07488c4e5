"""Flow ``fit-reliability``: fit MTBF per component class and store the run in ``fit_results``."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger

from pipelines import warehouse
from pipelines.analysis import fit
from pipelines.flows.artifacts import publish_fit
from pipelines.runtime.settings import Settings


@flow(name="fit-reliability")
def fit_reliability(
    db_path: Path | None = None,
    by: list[str] | None = None,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
    weibayes_shape: float | dict[str, float] | None = None,
) -> fit.FitOutcome:
    """Fit every component class (split by ``by`` cohorts) and store the run; returns its rows.

    ``lives`` is a lifetime view (MTBF) or a repair view (``stg_repairs``, ``int_fault_repairs``,
    ``int_node_unavailability``: repair times, MTTR); see :mod:`pipelines.analysis.fit`. A warehouse
    that lacks the lives fails the run with one line naming what is missing
    (:class:`~pipelines.runtime.errors.MissingDataError`); no run is stored.
    """
    settings = Settings.from_env(db_path=db_path)
    warehouse.prepare(settings.db_path, lock_timeout_s=settings.lock_timeout_s)
    with warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con:
        outcome = fit.fit_and_store(
            con, by=by, lives=lives, dataset=dataset, alpha=alpha, weibayes_shape=weibayes_shape
        )
    chosen = outcome["results"].filter("chosen")
    get_run_logger().info(
        "fit run %s (%s from %s): %d classes, %d failures or closed repairs",
        outcome["run_id"],
        outcome["quantity"],
        lives,
        chosen.height,
        int(chosen["n_failures"].sum()),
    )
    publish_fit(outcome, by)
    return outcome


if __name__ == "__main__":
    fit_reliability()
