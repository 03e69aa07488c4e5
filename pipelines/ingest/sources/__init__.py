"""Landing-file parsers, one module per source, and the registry the ingest looks them up in.

Each module exposes ``SCHEMA`` (the raw table's columns as polars dtypes) and
``parse(data, *, source_file, **options) -> Parsed`` (``docs/data_contract.md`` §2). The
registry maps a landing folder (the source) to the raw table it feeds and its parser module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.ingest.sources import (
    dcgm,
    elastic,
    fault_log,
    fleet,
    inventory,
    k8s_events,
    k8s_pods,
    node_events,
    repairs,
    sacct,
    training,
    xid,
)

if TYPE_CHECKING:
    from types import ModuleType

PARSERS: dict[str, tuple[str, ModuleType]] = {
    "slurm": ("raw_slurm_jobs", sacct),
    "kernel": ("raw_xid_events", xid),
    "nvidia_smi": ("raw_inventory", inventory),
    "fleet": ("raw_fleet", fleet),
    "repairs": ("raw_repairs", repairs),
    "fault_log": ("raw_fault_events", fault_log),  # needs mapping=load_mapping(path)
    "k8s_events": ("raw_k8s_events", k8s_events),
    "k8s_pods": ("raw_k8s_pods", k8s_pods),
    "elastic": ("raw_elastic_events", elastic),  # takes file_mtime= for glog years
    "dcgm": ("raw_dcgm_samples", dcgm),
    "node_events": ("raw_node_events", node_events),
    "training": ("raw_training_events", training),  # takes job= / host=
}
"""Source folder name → (raw table name, parser module)."""

IDENTITY_OPTIONS: dict[str, tuple[str, ...]] = {
    "elastic": ("host", "run"),
    "kernel": ("host",),
    "dcgm": ("host",),
    "training": ("host", "job"),
    "nvidia_smi": ("host",),
}
"""Sources whose parser takes ``host=`` / ``run=`` / ``job=`` (``relia ingest
--host/--run/--job``) for files that do not name them; what the content names wins, a file-name
convention (``slurm-<id>.out`` for training logs) is the last fallback. Pass these options only to
these sources. A source's path pattern (:mod:`pipelines.runtime.path_patterns`) may capture the same
options."""

MTIME_OPTIONS: dict[str, str] = {"dcgm": "scrape_ts"}
"""Sources whose parser takes a sample time for files whose content and name give none: the
keyword that gets the file's modification time (``relia ingest --time-from-mtime``)."""

YEAR_SOURCES: tuple[str, ...] = ("elastic", "kernel")
"""Sources whose parser takes ``year=`` (``relia ingest --year``, ``RELIA_LOG_YEAR``): syslog and
``glog`` lines print none."""

BOOT_TIME_SOURCES: tuple[str, ...] = ("kernel",)
"""Sources whose parser takes ``boot_time=`` (``relia ingest --boot-time``, ``RELIA_BOOT_TIME``):
``dmesg`` lines stamped in seconds since boot."""

__all__ = ["BOOT_TIME_SOURCES", "IDENTITY_OPTIONS", "MTIME_OPTIONS", "PARSERS", "YEAR_SOURCES"]
