"""Landing-file parsers, one module per source, and the registry the ingest looks them up in.

Each module exposes ``SCHEMA`` (the raw table's columns as polars dtypes) and
``parse(data, *, source_file, **options) -> Parsed`` (``docs/data_contract.md`` §2). The
registry maps a landing folder (the source) to the raw table it feeds and its parser module; the
sources' names, tables and options are :mod:`pipelines.runtime.source_names`'s.
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
from pipelines.runtime.source_names import (
    BOOT_TIME_SOURCES,
    IDENTITY_OPTIONS,
    MTIME_OPTIONS,
    RAW_TABLES,
    YEAR_SOURCES,
)

if TYPE_CHECKING:
    from types import ModuleType

_MODULES: dict[str, ModuleType] = {
    "slurm": sacct,
    "kernel": xid,
    "nvidia_smi": inventory,
    "fleet": fleet,
    "repairs": repairs,
    "fault_log": fault_log,  # needs mapping=load_mapping(path)
    "k8s_events": k8s_events,
    "k8s_pods": k8s_pods,
    "elastic": elastic,  # takes file_mtime= for glog years
    "dcgm": dcgm,
    "node_events": node_events,
    "training": training,  # takes job= / host=
}

PARSERS: dict[str, tuple[str, ModuleType]] = {
    source: (table, _MODULES[source]) for source, table in RAW_TABLES.items()
}
"""Source folder name → (raw table name, parser module), for every source of
:data:`~pipelines.runtime.source_names.RAW_TABLES` (a source without a parser fails on import)."""

__all__ = ["BOOT_TIME_SOURCES", "IDENTITY_OPTIONS", "MTIME_OPTIONS", "PARSERS", "YEAR_SOURCES"]
