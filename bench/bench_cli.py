"""Benchmark a cold ``relia project`` and ``relia whatif`` without a warehouse (issue #17).

Run from the repository root::

    python -m bench.bench_cli
    python -m bench.bench_cli --runs 7

Each run is a fresh interpreter (``python -m pipelines.cli``, what the ``relia`` script runs) in
an empty folder with ``RELIA_DB`` naming a file that does not exist: the architect iterating on
what-ifs with default or hand-given rates. ``project`` runs with its defaults; ``whatif`` runs a
2 x 2 grid (two scales, two checkpoint times) with the RSC-1 rate given by hand and writes its
table and plot. Baselines, measured in the same run and interleaved with the commands: a bare
``python -c pass`` and ``python -c "import numpy"``. Figures are medians of ``--runs`` runs.
Then one ``-X importtime`` run of each command: its ten largest top-level imports (cumulative)
and which of the heavy libraries it imported. Target: each command under 0.5 s wall. CPU time
(user + system) is printed too: on a loaded machine it moves far less than wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 0.5
ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "polars",
    "duckdb",
    "great_expectations",
    "prefect",
    "pandas",
    "lifelines",
    "sklearn",
    "scipy.stats",
    "scipy.special",
    "matplotlib",
)
SWEEP = """\
target_gpus: 16384
base: {gpus_per_node: 8, node_failures_per_1000_node_days: 6.5, job_days: 30}
grid: {n_gpus: [1024, 16384], checkpoint_s: [30, 300]}
"""


def _environment(folder: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PREFECT_API_URL", "RELIA_DASK_ADDRESS", "RELIA_DB")
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["RELIA_DB"] = str(folder / "absent.duckdb")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run_s(command: list[str], folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Return the wall and CPU (user + system) seconds of one run of ``command``."""
    start, cpu = time.perf_counter(), _cpu_s()
    subprocess.run(
        command,
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start, _cpu_s() - cpu


def _imports(command: list[str], folder: Path, env: dict[str, str]) -> list[tuple[int, str]]:
    """Return ``(cumulative us, module)`` of every import of one ``-X importtime`` run.

    Nested imports are there too, with their nesting as leading spaces in the name.
    """
    run = subprocess.run(
        [command[0], "-X", "importtime", *command[1:]],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|", 2)
        rows.append((int(cumulative), name.rstrip()[1:]))
    return rows


def main() -> None:
    """Time the cold commands against the bare interpreter; print figures, ratios, PASS/FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        folder = Path(tmp)
        (folder / "sweep.yaml").write_text(SWEEP)
        env = _environment(folder)
        python = sys.executable
        commands = {
            "python -c pass": [python, "-c", "pass"],
            "python -c 'import numpy'": [python, "-c", "import numpy"],
            "relia project": [python, "-m", "pipelines.cli", "project"],
            "relia whatif (2 x 2 grid)": [
                python,
                *("-m", "pipelines.cli", "whatif", "sweep.yaml", "--out", "out"),
            ],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):  # interleaved, so a load spike hits every command alike
            for name, command in commands.items():
                wall_s, cpu_s = _run_s(command, folder, env)
                times[name].append(wall_s)
                cpu[name].append(cpu_s)
        median = {name: statistics.median(t) for name, t in times.items()}
        bare, numpy_s = median["python -c pass"], median["python -c 'import numpy'"]
        print(f"cold processes, median of {args.runs} (min-max), no warehouse; CPU = user + sys:")
        for name, t in times.items():
            print(
                f"  {name:27s} {median[name]:6.3f} s  ({min(t):.3f}-{max(t):.3f})  "
                f"{median[name] / bare:5.1f} x bare python  {median[name] / numpy_s:5.2f} x numpy"
                f"  CPU {statistics.median(cpu[name]):.3f} s"
            )
        ok = True
        for name in ("relia project", "relia whatif (2 x 2 grid)"):
            passed = median[name] < TARGET_SECONDS
            ok = ok and passed
            print(
                f"{name:27s}: {median[name]:.3f} s (target < {TARGET_SECONDS:g} s) "
                f"{'PASS' if passed else 'FAIL'}; "
                f"above import numpy: {median[name] - numpy_s:.3f} s"
            )
        for name in ("relia project", "relia whatif (2 x 2 grid)"):
            rows = _imports(commands[name], folder, env)
            top = sorted(((us, n) for us, n in rows if not n.startswith(" ")), reverse=True)
            names = {n.strip() for _, n in rows}
            heavy = [h for h in HEAVY if any(n == h or n.startswith(f"{h}.") for n in names)]
            print(f"{name}: {len(rows)} modules imported; heavy: {', '.join(heavy) or 'none'}")
            print("  top 10 top-level imports (cumulative ms):")
            for us, module in top[:10]:
                print(f"    {us / 1000:8.1f}  {module}")
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
