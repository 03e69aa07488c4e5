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

# The stage's names are run.py's own ``__all__``, kept in one place.
from pipelines.ingest.run import *  # noqa: F403
from pipelines.ingest.run import __all__ as __all__
