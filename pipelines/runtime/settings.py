"""Where things are: one frozen ``Settings`` built once from the environment and passed down.

Nothing else in the project reads the environment. ``from_env`` takes explicit overrides (from CLI
options or flow parameters) that win over the environment, which wins over the defaults. This is
also the one home of the warehouse's lock timeouts (:data:`DEFAULT_LOCK_TIMEOUT_S` and friends)
and of the environment defaults that keep Prefect and Great Expectations local and silent
(:func:`apply_prefect_defaults`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.runtime.archive_limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_RATIO,
    DEFAULT_RATIO_AFTER_BYTES,
    ArchiveLimits,
)
from pipelines.runtime.path_patterns import PathPattern, PathPatternError, parse_patterns

if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

DEFAULT_DB = "relia.duckdb"
DEFAULT_LOCK_TIMEOUT_S = 60.0
"""Seconds a writer (ingest, fit, projection) waits for another process's lock on the warehouse
(``RELIA_LOCK_TIMEOUT_S``)."""
DEFAULT_READ_LOCK_TIMEOUT_S = 30.0
"""Seconds a reader (report, summary, Cox fit) waits for a writer's lock on the warehouse
(``RELIA_READ_LOCK_TIMEOUT_S``)."""


def read_lock_timeout_s(env: Mapping[str, str] | None = None) -> float:
    """Seconds a reader waits for the warehouse's lock: ``RELIA_READ_LOCK_TIMEOUT_S`` if set.

    For the stages a command calls without its settings (a projection, the report's figures):
    they read the variable when they open the warehouse, as :meth:`Settings.from_env` does.
    """
    given = (os.environ if env is None else env).get("RELIA_READ_LOCK_TIMEOUT_S", "").strip()
    if not given:
        return DEFAULT_READ_LOCK_TIMEOUT_S
    try:
        return float(given)
    except ValueError:
        msg = f"RELIA_READ_LOCK_TIMEOUT_S must be a number of seconds, not {given!r}"
        raise SettingsError(msg) from None


DEFAULT_BACKTEST_MIN_GPUS = 1
"""Smallest job (GPUs) the scheduled back-test of the projection covers
(``RELIA_BACKTEST_MIN_GPUS``; ``relia goodput --min-gpus`` for one run)."""
DEFAULT_INGEST_BATCH_ROWS = 200_000
"""Rows of one raw table an ingest parses, validates and loads as one batch
(``RELIA_INGEST_BATCH_ROWS``): the ingest's memory is bounded by the batch, not by the landing
(see :func:`pipelines.ingest.ingest`)."""
DEFAULT_LANDING_MAX_DEPTH = 32
"""Folder levels below a source folder an ingest walks (``RELIA_LANDING_MAX_DEPTH``): a folder
deeper than that is reported as refused, not read (see :mod:`pipelines.ingest.fence`)."""
DEFAULT_MAX_LINE_BYTES = 2**20
"""Longest line an ingest loads, in bytes (``RELIA_MAX_LINE_BYTES``): a longer line (a 10 MB job
name, a runaway kernel message) is quarantined with its length, never loaded."""
DEFAULT_VERIFY_MAX_MB = 256.0
"""Every open of the warehouse checks the checksum of each of its blocks when the file is at most
this many MiB (``RELIA_VERIFY_MAX_MB``; a larger file gets its headers checked): 0.5 to 1.3 GB/s
read from the page cache, so at most about 0.5 s an open."""
CONNECT_LOCK_TIMEOUT_S = 0.0
"""``warehouse.connect``'s own default: no wait (a caller that may wait passes a timeout)."""
PREFECT_DEFAULTS: dict[str, str] = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "GX_ANALYTICS_ENABLED": "False",
}
"""Environment that keeps Prefect and Great Expectations local and silent (no analytics, time for
the ephemeral server to start); ``PREFECT_HOME`` comes from :func:`apply_prefect_defaults`."""


class SettingsError(ValueError):
    """A setting (environment variable or override) that cannot be used."""


@dataclass(frozen=True)
class Settings:
    """Paths and run-time switches.

    Attributes
    ----------
    db_path
        The DuckDB warehouse file (``RELIA_DB``, default ``relia.duckdb``).
    landing_dir
        Root of the landing area; sources are its first-level folders (``RELIA_LANDING``).
    reports_dir
        Where weekly HTML reports go (``RELIA_REPORTS``).
    lock_timeout_s
        How long a writer waits for another process's lock on the warehouse before giving up
        (``RELIA_LOCK_TIMEOUT_S``, default :data:`DEFAULT_LOCK_TIMEOUT_S`).
    read_lock_timeout_s
        How long a reader waits for a writer's lock on the warehouse before giving up
        (``RELIA_READ_LOCK_TIMEOUT_S``, default :data:`DEFAULT_READ_LOCK_TIMEOUT_S`).
    lake_dir
        When set, the ingest writes raw rows as Parquet under this folder (partitioned by source
        and date) instead of into the warehouse's raw tables (``RELIA_LAKE``; see
        ``pipelines.warehouse.lake``).
    dask_address
        Dask scheduler the flows fan parsing and what-if sweeps out to: ``tcp://host:port``,
        ``local[:N]`` for a loopback cluster of N worker processes, unset for Prefect's local
        threads (``RELIA_DASK_ADDRESS``; see ``pipelines.runtime.dask_runner``).
    backtest_min_gpus
        Smallest job (GPUs) the report's and the scheduled back-test covers
        (``RELIA_BACKTEST_MIN_GPUS``, default :data:`DEFAULT_BACKTEST_MIN_GPUS`).
    path_patterns
        Per source, a landing layout that names each file's host and run, e.g.
        ``elastic={host}/{run}.log*;kernel={host}/*`` (``RELIA_PATH_PATTERNS``; an override is
        a ``{source: pattern}`` mapping; see :mod:`pipelines.runtime.path_patterns`). Checked when
        the settings are built.
    ingest_batch_rows
        Rows of one raw table the ingest parses, validates and loads as one batch (one Great
        Expectations run, one transaction); a batch also closes when its input reaches
        ``pipelines.ingest.BATCH_BYTES_PER_ROW`` bytes a row. Bigger batches cost fewer runs and
        more memory (``RELIA_INGEST_BATCH_ROWS``, default :data:`DEFAULT_INGEST_BATCH_ROWS`).
    allow_outside_root
        Read landing files that resolve outside their landing root (a link to a file elsewhere);
        off by default, when they are refused, never opened (``RELIA_ALLOW_OUTSIDE_ROOT``: ``1``,
        ``true``, ``yes`` or ``on``; ``relia ingest --allow-outside-root``).
    landing_max_depth
        Folder levels below a source folder an ingest walks; a deeper folder is reported as
        refused (``RELIA_LANDING_MAX_DEPTH``, default :data:`DEFAULT_LANDING_MAX_DEPTH`).
    archive_max_bytes
        Most plain bytes one compressed landing file may inflate to; past it the file is one
        quarantine row (``RELIA_ARCHIVE_MAX_BYTES``, default 4 GiB; see
        :mod:`pipelines.ingest.archives`).
    archive_max_ratio
        Most plain bytes per compressed byte of one archive, once its plain content passes
        ``archive_ratio_after_bytes`` (``RELIA_ARCHIVE_MAX_RATIO``, default 200).
    archive_ratio_after_bytes
        Plain bytes any archive may inflate to whatever its ratio
        (``RELIA_ARCHIVE_RATIO_AFTER_BYTES``, default 64 MiB).
    max_line_bytes
        Longest line an ingest loads; a longer one is quarantined with its length
        (``RELIA_MAX_LINE_BYTES``, default :data:`DEFAULT_MAX_LINE_BYTES`, 1 MiB).
    log_year
        The year kernel syslog and torchrun ``glog`` lines (which print none) end in
        (``RELIA_LOG_YEAR``, ``relia ingest --year``); unset, a year comes from the file.
    boot_time
        When the node of ``dmesg`` lines stamped in seconds since boot (``[12345.678901]``)
        booted, UTC (``RELIA_BOOT_TIME``, ISO 8601, ``relia ingest --boot-time``); unset, such
        lines are rejects.
    """

    db_path: Path = Path(DEFAULT_DB)
    landing_dir: Path = Path("landing")
    reports_dir: Path = Path("reports")
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    read_lock_timeout_s: float = DEFAULT_READ_LOCK_TIMEOUT_S
    lake_dir: Path | None = None
    dask_address: str | None = None
    path_patterns: tuple[PathPattern, ...] = ()
    backtest_min_gpus: int = DEFAULT_BACKTEST_MIN_GPUS
    ingest_batch_rows: int = DEFAULT_INGEST_BATCH_ROWS
    allow_outside_root: bool = False
    landing_max_depth: int = DEFAULT_LANDING_MAX_DEPTH
    archive_max_bytes: int = DEFAULT_MAX_BYTES
    archive_max_ratio: float = DEFAULT_MAX_RATIO
    archive_ratio_after_bytes: int = DEFAULT_RATIO_AFTER_BYTES
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    log_year: int | None = None
    boot_time: datetime | None = None

    @property
    def archive_limits(self) -> ArchiveLimits:
        """How far one compressed landing file may inflate (the ``archive_*`` settings)."""
        return ArchiveLimits(
            max_bytes=self.archive_max_bytes,
            max_ratio=self.archive_max_ratio,
            ratio_after_bytes=self.archive_ratio_after_bytes,
        )

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Build settings from ``RELIA_*`` variables; non-None ``overrides`` win.

        Raises
        ------
        SettingsError
            For a setting that cannot be used (an invalid path pattern), saying how to fix it.
        """
        env = os.environ
        given_patterns = overrides.pop("path_patterns", None)
        try:
            patterns = parse_patterns(given_patterns or env.get("RELIA_PATH_PATTERNS", ""))
        except PathPatternError as error:
            setting = "path_patterns" if given_patterns else "RELIA_PATH_PATTERNS"
            msg = f"{setting}: {error}"
            raise SettingsError(msg) from None
        base = cls(
            db_path=Path(env.get("RELIA_DB", DEFAULT_DB)),
            landing_dir=Path(env.get("RELIA_LANDING", "landing")),
            reports_dir=Path(env.get("RELIA_REPORTS", "reports")),
            lock_timeout_s=float(env.get("RELIA_LOCK_TIMEOUT_S", DEFAULT_LOCK_TIMEOUT_S)),
            read_lock_timeout_s=read_lock_timeout_s(env),
            lake_dir=Path(env["RELIA_LAKE"]) if env.get("RELIA_LAKE") else None,
            dask_address=env.get("RELIA_DASK_ADDRESS") or None,
            path_patterns=patterns,
            backtest_min_gpus=int(env.get("RELIA_BACKTEST_MIN_GPUS", DEFAULT_BACKTEST_MIN_GPUS)),
            ingest_batch_rows=_positive_int(
                env, "RELIA_INGEST_BATCH_ROWS", DEFAULT_INGEST_BATCH_ROWS
            ),
            allow_outside_root=_switch(env, "RELIA_ALLOW_OUTSIDE_ROOT"),
            landing_max_depth=_positive_int(
                env, "RELIA_LANDING_MAX_DEPTH", DEFAULT_LANDING_MAX_DEPTH
            ),
            archive_max_bytes=_positive_int(env, "RELIA_ARCHIVE_MAX_BYTES", DEFAULT_MAX_BYTES),
            archive_max_ratio=_positive_float(env, "RELIA_ARCHIVE_MAX_RATIO", DEFAULT_MAX_RATIO),
            archive_ratio_after_bytes=_positive_int(
                env, "RELIA_ARCHIVE_RATIO_AFTER_BYTES", DEFAULT_RATIO_AFTER_BYTES
            ),
            max_line_bytes=_positive_int(env, "RELIA_MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES),
            log_year=_year(env, "RELIA_LOG_YEAR"),
            boot_time=_utc_time(env, "RELIA_BOOT_TIME"),
        )
        given: dict[str, Any] = {
            k: (Path(v) if k.endswith(("_path", "_dir")) else v)
            for k, v in overrides.items()
            if v is not None
        }
        return replace(base, **given)


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    """Return the environment's whole number ``name`` (``default`` when unset); refuse others."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        msg = f"{name}={text!r}: expected a whole number of at least 1"
        raise SettingsError(msg)
    return value


def _year(env: Mapping[str, str], name: str) -> int | None:
    """Return the environment's year ``name`` (None when unset); refuse others."""
    text = env.get(name, "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and len(text) == len("2024")):
        msg = f"{name}={text!r}: expected a year such as 2024"
        raise SettingsError(msg)
    return int(text)


def _utc_time(env: Mapping[str, str], name: str) -> datetime | None:
    """Return the environment's ISO 8601 time ``name`` in UTC (None when unset); refuse others."""
    text = env.get(name, "").strip()
    return parse_utc_time(text, f"{name}={text!r}") if text else None


def parse_utc_time(text: str, what: str) -> datetime:
    """Return an ISO 8601 time in UTC (one without an offset is taken as UTC).

    Raises
    ------
    SettingsError
        When ``text`` is not one; the message starts with ``what``.
    """
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        msg = f"{what}: expected an ISO 8601 time such as 2024-01-10T08:00:00Z"
        raise SettingsError(msg) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _switch(env: Mapping[str, str], name: str) -> bool:
    """Return the environment's on/off switch ``name`` (off when unset); refuse other values."""
    text = env.get(name, "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    msg = f"{name}={text!r}: expected 1, true, yes or on (or 0, false, no, off)"
    raise SettingsError(msg)


def _positive_float(env: Mapping[str, str], name: str, default: float) -> float:
    """Return the environment's number ``name`` (``default`` when unset); refuse others."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        msg = f"{name}={text!r}: expected a number above 0"
        raise SettingsError(msg)
    return value


def apply_prefect_defaults(
    env: MutableMapping[str, str] | None = None,
    *,
    home: Path | None = None,
    override: bool = False,
) -> None:
    """Set :data:`PREFECT_DEFAULTS` and ``PREFECT_HOME`` in ``env`` (default: ``os.environ``).

    Parameters
    ----------
    env
        The environment to fill in.
    home
        ``PREFECT_HOME`` (default: ``.prefect`` in the current directory), where the ephemeral
        Prefect server keeps its database.
    override
        Replace values already set (a test session's throw-away home), instead of keeping them
        (the CLI, where the user's environment wins).
    """
    target: MutableMapping[str, str] = os.environ if env is None else env
    values = {"PREFECT_HOME": str(home if home is not None else Path.cwd() / ".prefect")}
    values |= PREFECT_DEFAULTS
    for name, value in values.items():
        if override:
            target[name] = value
        else:
            target.setdefault(name, value)
