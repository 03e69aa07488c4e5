"""Prefect flows: ingest telemetry, fit reliability, what-if sweeps and the weekly report."""

from pipelines.runtime.text import install_log_sanitiser

install_log_sanitiser()  # the flows' log lines (telemetry in messages) reach handlers printable
