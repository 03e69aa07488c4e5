"""Flow ``ingest-telemetry``: load new landing files into the warehouse and rebuild the views."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from prefect import State, flow, get_run_logger, task

from pipelines import ingest, warehouse
from pipelines.settings import Settings
from pipelines.sources import fault_log


@task
def find_landing_files(landing_dir: Path) -> list[ingest.LandingFile]:
    """List the files under the landing root (refusing paths that escape it)."""
    return ingest.landing_files(landing_dir)


def _warehouse_busy(_task: object, _task_run: object, state: State) -> bool:
    """Retry only when the warehouse was locked by another writer, not on bad data or bugs."""
    error = state.result(raise_on_failure=False)
    return isinstance(error, warehouse.WarehouseBusyError)


@task(retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=_warehouse_busy)
def load_files(
    db_path: Path,
    files: list[ingest.LandingFile],
    lock_timeout_s: float,
    mapping: Path | None = None,
) -> list[dict[str, object]]:
    """Parse, validate and load; retried when another process holds the warehouse lock."""
    options = {}
    if mapping is not None:
        options["fault_log"] = {"mapping": fault_log.load_mapping(mapping)}
    counts = ingest.ingest(db_path, files, lock_timeout_s=lock_timeout_s, parser_options=options)
    return [asdict(c) for c in counts]


@flow(name="ingest-telemetry")
def ingest_telemetry(
    landing_dir: Path | None = None, db_path: Path | None = None
) -> list[dict[str, object]]:
    """Ingest every new file under ``landing_dir`` into ``db_path``; returns per-file counts."""
    settings = Settings.from_env(landing_dir=landing_dir, db_path=db_path)
    files = find_landing_files(settings.landing_dir)
    counts = load_files(settings.db_path, files, settings.lock_timeout_s)
    new = [c for c in counts if not c["skipped"]]
    get_run_logger().info(
        "%d files (%d new): %d rows loaded, %d quarantined",
        len(counts),
        len(new),
        sum(int(c["n_loaded"]) for c in new),  # type: ignore[call-overload]
        sum(int(c["n_quarantined"]) for c in new),  # type: ignore[call-overload]
    )
    return counts


@flow(name="ingest-files")
def ingest_paths_flow(
    paths: list[Path],
    source: str | None = None,
    mapping: Path | None = None,
    db_path: Path | None = None,
) -> list[dict[str, object]]:
    """Ingest the given files or folders (``relia ingest --tracked``)."""
    settings = Settings.from_env(db_path=db_path)
    files = ingest.discover(paths, source=source)
    return load_files(settings.db_path, files, settings.lock_timeout_s, mapping)


if __name__ == "__main__":
    ingest_telemetry()
