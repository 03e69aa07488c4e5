"""Where things are: one frozen ``Settings`` built once from the environment and passed down.

Nothing else in the project reads the environment. ``from_env`` takes explicit overrides (from CLI
options or flow parameters) that win over the environment, which wins over the defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

DEFAULT_DB = "relia.duckdb"


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
        How long a writer waits for another process's lock on the warehouse before giving up.
    lake_dir
        When set, the ingest writes raw rows as Parquet under this folder (partitioned by source
        and date) instead of into the warehouse's raw tables (``RELIA_LAKE``; see
        ``pipelines.lake``).
    dask_address
        Dask scheduler the flows fan parsing and what-if sweeps out to: ``tcp://host:port``,
        ``local[:N]`` for a loopback cluster of N worker processes, unset for Prefect's local
        threads (``RELIA_DASK_ADDRESS``; see ``pipelines.dask_runner``).
    """

    db_path: Path = Path(DEFAULT_DB)
    landing_dir: Path = Path("landing")
    reports_dir: Path = Path("reports")
    lock_timeout_s: float = 60.0
    lake_dir: Path | None = None
    dask_address: str | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Build settings from ``RELIA_*`` variables; non-None ``overrides`` win."""
        env = os.environ
        base = cls(
            db_path=Path(env.get("RELIA_DB", DEFAULT_DB)),
            landing_dir=Path(env.get("RELIA_LANDING", "landing")),
            reports_dir=Path(env.get("RELIA_REPORTS", "reports")),
            lock_timeout_s=float(env.get("RELIA_LOCK_TIMEOUT_S", "60")),
            lake_dir=Path(env["RELIA_LAKE"]) if env.get("RELIA_LAKE") else None,
            dask_address=env.get("RELIA_DASK_ADDRESS") or None,
        )
        given = {
            k: (Path(v) if k.endswith(("_path", "_dir")) else v)
            for k, v in overrides.items()
            if v is not None
        }
        return replace(base, **given)
