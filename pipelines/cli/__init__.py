"""``relia``: the command line. Commands call the same pipeline functions as the flows.

Heavy imports (GX, lifelines, Prefect) happen inside the command that needs them, so
``relia --help`` is instant. Commands run directly, without Prefect's ephemeral-server start,
unless ``--tracked`` is given or ``PREFECT_API_URL`` points at a server; then they run as tracked
flow runs.

Layout (as Prefect's own CLI): :mod:`pipelines.cli.root` holds the app, its error handling,
``--debug`` and ``--version``; each command group is a module that registers its commands on
that app when imported here (:mod:`~pipelines.cli.synth`, :mod:`~pipelines.cli.ingest`,
:mod:`~pipelines.cli.summary`, :mod:`~pipelines.cli.fit` with ``trend``,
:mod:`~pipelines.cli.project` with ``whatif``, :mod:`~pipelines.cli.report`,
:mod:`~pipelines.cli.demo`, :mod:`~pipelines.cli.predict`); :mod:`pipelines.cli.render` prints
tables, JSON, CSV and errors, and :mod:`pipelines.cli.options` holds what the commands share.
"""

from __future__ import annotations

# the command modules register their commands on ``app`` as they are imported, in the order
# ``relia --help`` lists them (so not sorted)
# isort: off
import pipelines.cli.synth
import pipelines.cli.ingest
import pipelines.cli.summary
import pipelines.cli.goodput
import pipelines.cli.fit
import pipelines.cli.project
import pipelines.cli.report
import pipelines.cli.demo
import pipelines.cli.predict  # noqa: F401

# isort: on
from pipelines.cli.render import console, err
from pipelines.cli.root import app

__all__ = ["app", "console", "err"]
