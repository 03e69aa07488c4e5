"""``python -m pipelines.cli``: the ``relia`` command line without its console script."""

from __future__ import annotations

from pipelines.cli import app

if __name__ == "__main__":
    app(prog_name="relia")
