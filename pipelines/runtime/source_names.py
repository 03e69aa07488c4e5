"""The landing's sources by name: the raw table each one feeds and the options its parser takes.

The names every stage shares (the ingest's parsers in :mod:`pipelines.ingest.sources`, the lake's
partitions in :mod:`pipelines.warehouse.lake`, the path patterns in
:mod:`pipelines.runtime.path_patterns`), kept apart from the parsers themselves so that the stages
below the ingest can name a source without importing a parser. The parser registry
(``pipelines.ingest.sources.PARSERS``) is built from :data:`RAW_TABLES`, so the two cannot drift.
"""

from __future__ import annotations

RAW_TABLES: dict[str, str] = {
    "slurm": "raw_slurm_jobs",
    "kernel": "raw_xid_events",
    "nvidia_smi": "raw_inventory",
    "fleet": "raw_fleet",
    "repairs": "raw_repairs",
    "fault_log": "raw_fault_events",
    "k8s_events": "raw_k8s_events",
    "k8s_pods": "raw_k8s_pods",
    "elastic": "raw_elastic_events",
    "dcgm": "raw_dcgm_samples",
    "node_events": "raw_node_events",
    "training": "raw_training_events",
}
"""Source folder name → the raw table it feeds."""

LINE_COUNTED: frozenset[str] = frozenset({"raw_training_events"})
"""Raw tables one line of which may give several rows (a straggler report line of a training
log: a row per figure and rank). A read of them counts lines, not rows (``n_loaded`` is the lines
loaded), and a line one of whose rows fails validation is quarantined whole, once."""

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

__all__ = [
    "BOOT_TIME_SOURCES",
    "IDENTITY_OPTIONS",
    "LINE_COUNTED",
    "MTIME_OPTIONS",
    "RAW_TABLES",
    "YEAR_SOURCES",
]
