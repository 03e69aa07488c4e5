"""Relia pipelines: sources, warehouse, fits, reports and the ``relia`` CLI."""
