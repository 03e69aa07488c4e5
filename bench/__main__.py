"""Run every benchmark and write ``bench/results.md`` (``make bench`` / ``python -m bench``).

Each benchmark prints its own figures next to a baseline measured in the same run (ratios, not
absolute times, are what to compare across machines). Pass benchmark names to run a subset:
``python -m bench bench_fit``.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

BENCHES = (
    "bench_fit",
    "bench_simulate",
    "bench_sweep",
    "bench_ingest",
    "bench_dcgm",
    "bench_goodput",
    "bench_cli",
    "bench_validate",
)


def main() -> None:
    """Run the benchmarks named on the command line (default: all) and record their output."""
    names = [a for a in sys.argv[1:] if a in BENCHES] or list(BENCHES)
    here = Path(__file__).resolve().parent
    sections = [
        "# Benchmark results",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.machine()}.",
        "",
    ]
    failed = []
    for name in names:
        if not (here / f"{name}.py").exists():
            continue
        started = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", f"bench.{name}"],
            cwd=here.parent,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr[-4000:] if run.returncode else "")
        if run.returncode:
            failed.append(name)
        sections += [
            f"## {name} ({seconds:.0f} s wall)",
            "",
            "```text",
            run.stdout.rstrip(),
            "```",
            "",
        ]
    (here / "results.md").write_text("\n".join(sections) + "\n")
    if failed:
        sys.exit(f"benchmarks failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
