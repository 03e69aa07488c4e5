"""What every stage runs on.

Settings read once from the environment (:mod:`~pipelines.runtime.settings`, with the grammars of
two of them: :mod:`~pipelines.runtime.path_patterns` and :mod:`~pipelines.runtime.archive_limits`),
the errors a user is shown (:mod:`~pipelines.runtime.errors`), waiting for the warehouse's lock
(:mod:`~pipelines.runtime.lock_wait`), the optional Dask runner, JSON-safe values and terminal text.
"""
