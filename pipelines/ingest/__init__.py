"""The ingest stage: landing files in, raw rows, quarantine rows and held lines out.

``from pipelines import ingest`` gives the stage's entry points (:func:`ingest`, :func:`discover`
and the names below, re-exported from :mod:`pipelines.ingest.run`). Its parts, in the order a file
meets them:

- :mod:`~pipelines.ingest.landing` finds files and their parser options, inside the landing's
  fence (:mod:`~pipelines.ingest.fence`) and by path pattern
  (:mod:`~pipelines.runtime.path_patterns`);
- :mod:`~pipelines.ingest.plan` decides what is new (whole files by content, kernel logs as
  :mod:`~pipelines.ingest.streams` of lines);
- :mod:`~pipelines.ingest.parse` reads, inflates (:mod:`~pipelines.ingest.archives`) and parses with
  one parser per format (:mod:`pipelines.ingest.sources`);
- :mod:`~pipelines.ingest.quality` validates with Great Expectations
  (:mod:`~pipelines.ingest.quality_sql` for the checks run in DuckDB);
- :mod:`~pipelines.ingest.run` loads each batch into the warehouse in one transaction.
"""

from __future__ import annotations

from pipelines.ingest.run import (
    BATCH_BYTES_PER_ROW,
    BATCH_FILES,
    HOLD_QUIET_S,
    REFUSED,
    TAILED,
    TIME_FROM_MTIME,
    LandingFile,
    ParsedFile,
    check_parser_options,
    discover,
    file_options,
    identity_options,
    ingest,
    ingest_into,
    landing_files,
    parse_files,
    quarantine_kinds,
)

__all__ = [
    "BATCH_BYTES_PER_ROW",
    "BATCH_FILES",
    "HOLD_QUIET_S",
    "REFUSED",
    "TAILED",
    "TIME_FROM_MTIME",
    "LandingFile",
    "ParsedFile",
    "check_parser_options",
    "discover",
    "file_options",
    "identity_options",
    "ingest",
    "ingest_into",
    "landing_files",
    "parse_files",
    "quarantine_kinds",
]
