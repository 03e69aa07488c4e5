"""Flow ``ingest-telemetry``: load new landing files into the warehouse and rebuild the views."""

from __future__ import annotations

import logging
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import State, flow, get_run_logger, task, unmapped
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError

from pipelines import ingest, warehouse
from pipelines.flows.artifacts import publish_ingest
from pipelines.ingest.sources import fault_log
from pipelines.runtime import dask_runner
from pipelines.runtime.path_patterns import parse_patterns
from pipelines.runtime.settings import DEFAULT_LANDING_MAX_DEPTH, DEFAULT_MAX_LINE_BYTES, Settings

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from pipelines.runtime.archive_limits import ArchiveLimits


@task
def find_landing_files(
    landing_dir: Path,
    path_patterns: dict[str, str] | None = None,
    allow_outside_root: bool = False,
    max_depth: int = DEFAULT_LANDING_MAX_DEPTH,
) -> list[ingest.LandingFile]:
    """List the files under the landing root, those the landing fence refuses marked so.

    Each file comes with the host and run the sources' ``path_patterns`` capture from its path.
    Refused files (outside the root, named pipes, link loops...) are logged as warnings.
    """
    patterns = parse_patterns(path_patterns or {})
    files = ingest.landing_files(
        landing_dir,
        path_patterns=patterns,
        allow_outside_root=allow_outside_root,
        max_depth=max_depth,
    )
    warn_refused(files)
    return files


def warn_refused(files: list[ingest.LandingFile]) -> None:
    """Log one warning per file the landing fence refused, with its reason.

    To the run's log in a flow or task run, else to this module's logger (a task's ``.fn()``).
    """
    refused = [item for item in files if item.refused]
    if not refused:
        return
    try:
        logger: logging.Logger | logging.LoggerAdapter[logging.Logger] = get_run_logger()
    except MissingContextError:
        logger = logging.getLogger(__name__)
    for item in refused:
        logger.warning("refused %s: %s", item.path, item.refused)


def warehouse_busy(_task: object, _task_run: object, state: State) -> bool:
    """Retry only when the warehouse was locked by another writer, not on bad data or bugs.

    The ``retry_condition_fn`` of every task that writes the warehouse (also in
    :mod:`pipelines.flows.weekly_report`).
    """
    error = state.result(raise_on_failure=False)
    return isinstance(error, warehouse.WarehouseBusyError)


_warehouse_busy = warehouse_busy  # the old name, imported by tests/hardening/test_concurrency.py


@task(cache_policy=NO_CACHE, persist_result=False)
def parse_files(
    files: list[ingest.LandingFile],
    parser_options: dict[str, dict[str, Any]],
    limits: ArchiveLimits | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> list[ingest.ParsedFile]:
    """Parse a share of the new files, on the flow's task runner (threads or Dask workers)."""
    return ingest.parse_files(files, parser_options, limits=limits, max_line_bytes=max_line_bytes)


WAVE_BYTES = 256 * 2**20
"""Landing bytes parsed per wave of tasks: bounds the parsed files in flight."""


def _fan_out(
    n_tasks: int,
    options: dict[str, dict[str, Any]],
    limits: ArchiveLimits | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Callable[[list[ingest.LandingFile]], Iterator[ingest.ParsedFile]]:
    def parse_many(items: list[ingest.LandingFile]) -> Iterator[ingest.ParsedFile]:
        files = [replace(f, path=f.path.resolve()) for f in items]
        for wave in dask_runner.waves([f.path for f in files], WAVE_BYTES):
            shares = dask_runner.chunks([files[i] for i in wave], n_tasks)
            futures = list(
                parse_files.map(
                    shares, unmapped(options), unmapped(limits), unmapped(max_line_bytes)
                )
            )
            while futures:  # hand each share over and let it go
                yield from futures.pop(0).result()

    return parse_many


@task(retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=warehouse_busy)
def load_files(
    db_path: Path,
    files: list[ingest.LandingFile],
    lock_timeout_s: float,
    mapping: Path | None = None,
    lake_dir: Path | None = None,
    parse_tasks: int = 0,
    force: bool = False,
    host: str | None = None,
    run: str | None = None,
    time_from_mtime: bool = False,
) -> list[dict[str, object]]:
    """Parse, validate and load; retried when another process holds the warehouse lock.

    With ``parse_tasks`` > 0 parsing fans out in that many tasks on the flow's task runner.
    ``force``, ``host``, ``run`` and ``time_from_mtime`` are those of ``relia ingest``; the
    year and boot time of logs that print none come from ``RELIA_LOG_YEAR`` / ``RELIA_BOOT_TIME``.
    """
    settings = Settings.from_env()  # RELIA_INGEST_BATCH_ROWS, RELIA_ARCHIVE_*, RELIA_LOG_YEAR, ...
    options = ingest.identity_options(
        files,
        host=host,
        run=run,
        time_from_mtime=time_from_mtime,
        year=settings.log_year,
        boot_time=settings.boot_time,
    )
    if mapping is not None:
        options.setdefault("fault_log", {})["mapping"] = fault_log.load_mapping(mapping)
    limits = settings.archive_limits
    ingest.check_parser_options(files, options)  # before the warehouse is made
    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        counts = ingest.ingest_into(
            con,
            files,
            parser_options=options,
            lake_dir=lake_dir,
            parse_many=(
                _fan_out(parse_tasks, options, limits, settings.max_line_bytes)
                if parse_tasks > 0
                else None
            ),
            force=force,
            batch_rows=settings.ingest_batch_rows,
            archive_limits=limits,
            max_line_bytes=settings.max_line_bytes,
        )
    return [asdict(c) | {"status": c.outcome} for c in counts]


@flow(name="load-landing")
def load_landing(
    db_path: Path,
    files: list[ingest.LandingFile],
    lock_timeout_s: float,
    lake_dir: Path | None = None,
    parse_tasks: int = 4,
    time_from_mtime: bool = False,
) -> list[dict[str, object]]:
    """Fan parsing out on this flow's task runner, then validate and load in this process."""
    return load_files(
        db_path,
        files,
        lock_timeout_s,
        lake_dir=lake_dir,
        parse_tasks=parse_tasks,
        time_from_mtime=time_from_mtime,
    )


@flow(name="ingest-telemetry")
def ingest_telemetry(
    landing_dir: Path | None = None,
    db_path: Path | None = None,
    lake_dir: Path | None = None,
    dask_address: str | None = None,
    parse_tasks: int = 4,
    path_patterns: dict[str, str] | None = None,
    time_from_mtime: bool = False,
    allow_outside_root: bool | None = None,
) -> list[dict[str, object]]:
    """Ingest every new file under ``landing_dir`` into ``db_path``; returns per-file counts.

    Parsing fans out in ``parse_tasks`` tasks to the Dask scheduler at ``dask_address``
    (default ``RELIA_DASK_ADDRESS``; unset: local threads); with ``lake_dir`` (default
    ``RELIA_LAKE``) raw rows land as Parquet. ``path_patterns`` (default
    ``RELIA_PATH_PATTERNS``), ``time_from_mtime`` and ``allow_outside_root`` (default
    ``RELIA_ALLOW_OUTSIDE_ROOT``, off) are those of ``relia ingest``.
    """
    settings = Settings.from_env(
        landing_dir=landing_dir,
        db_path=db_path,
        lake_dir=lake_dir,
        dask_address=dask_address,
        path_patterns=path_patterns,
        allow_outside_root=allow_outside_root,
    )
    patterns = {p.source: p.pattern for p in settings.path_patterns}
    files = find_landing_files(
        settings.landing_dir, patterns, settings.allow_outside_root, settings.landing_max_depth
    )
    runner = dask_runner.task_runner(settings.dask_address)
    since = datetime.now(UTC)
    counts = load_landing.with_options(task_runner=runner)(
        settings.db_path,
        files,
        settings.lock_timeout_s,
        settings.lake_dir,
        parse_tasks,
        time_from_mtime,
    )
    new = [c for c in counts if not c["skipped"]]
    get_run_logger().info(
        "%d files (%d new): %d rows loaded, %d quarantined",
        len(counts),
        len(new),
        sum(int(c["n_loaded"]) for c in new),  # type: ignore[call-overload]
        sum(int(c["n_quarantined"]) for c in new),  # type: ignore[call-overload]
    )
    publish_ingest(counts, settings.db_path, since, settings.lock_timeout_s)
    return counts


@flow(name="ingest-files")
def ingest_paths_flow(
    paths: list[Path],
    source: str | None = None,
    mapping: Path | None = None,
    db_path: Path | None = None,
    lake_dir: Path | None = None,
    force: bool = False,
    host: str | None = None,
    run: str | None = None,
    time_from_mtime: bool = False,
    path_patterns: dict[str, str] | None = None,
    allow_outside_root: bool | None = None,
) -> list[dict[str, object]]:
    """Ingest the given files or folders (``relia ingest --tracked``).

    A file that resolves outside its landing root (unless ``allow_outside_root``, default
    ``RELIA_ALLOW_OUTSIDE_ROOT``), a named pipe, a link loop... is refused, with a warning.
    """
    settings = Settings.from_env(
        db_path=db_path,
        lake_dir=lake_dir,
        path_patterns=path_patterns,
        allow_outside_root=allow_outside_root,
    )
    files = ingest.discover(
        paths,
        source=source,
        path_patterns=settings.path_patterns,
        allow_outside_root=settings.allow_outside_root,
        max_depth=settings.landing_max_depth,
    )
    warn_refused(files)
    since = datetime.now(UTC)
    counts = load_files(
        settings.db_path,
        files,
        settings.lock_timeout_s,
        mapping,
        settings.lake_dir,
        force=force,
        host=host,
        run=run,
        time_from_mtime=time_from_mtime,
    )
    publish_ingest(counts, settings.db_path, since, settings.lock_timeout_s, flow="ingest_files")
    return counts


if __name__ == "__main__":
    ingest_telemetry()
