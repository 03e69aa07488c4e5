"""``relia``: the command line. Commands call the same pipeline functions as the flows.

Heavy imports (GX, lifelines, Prefect) happen inside the command that needs them, so
``relia --help`` is instant. Commands run directly, without Prefect's ephemeral-server start,
unless ``--tracked`` is given or ``PREFECT_API_URL`` points at a server; then they run as tracked
flow runs.

Layout (as Prefect's own CLI): :mod:`pipelines.cli.root` holds the app, its error handling,
``--debug`` and ``--version``; each command group is a module that registers its commands on
that app when imported (:mod:`~pipelines.cli.synth`, :mod:`~pipelines.cli.ingest`,
:mod:`~pipelines.cli.summary`, :mod:`~pipelines.cli.fit` with ``trend``,
:mod:`~pipelines.cli.project` with ``whatif``, :mod:`~pipelines.cli.report`,
:mod:`~pipelines.cli.demo`, :mod:`~pipelines.cli.predict`). The root imports a command's module
only when that command runs (:data:`pipelines.cli.root.COMMANDS` lists them, in the order
``relia --help`` shows them), so ``relia project`` does not pay for the ingest's imports.
:mod:`pipelines.cli.render` prints tables, JSON, CSV and errors, and
:mod:`pipelines.cli.options` holds what the commands share.
"""

from __future__ import annotations

from pipelines.cli.render import console, err
from pipelines.cli.root import app

__all__ = ["app", "console", "err"]
