"""Prefect flows: ingest telemetry, fit reliability, what-if sweeps and the weekly report."""
