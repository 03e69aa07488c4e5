"""Run benchmarks and record their output in ``bench/results.md`` (``make bench``).

Each benchmark prints its own figures next to a baseline measured in the same run (ratios, not
absolute times, are what to compare across machines). Pass benchmark names to run a subset:
``python -m bench bench_fit``. Only the sections of the benchmarks that ran are rewritten
(:func:`merge_results`): the other sections, and the notes written by hand under a section's
output, stay as they were.
"""

from __future__ import annotations

import os
import platform
import re
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
    "bench_bombs",
    "bench_failslow",
)

TITLE = "# Benchmark results"
_HEADING = re.compile(r"^## (?P<name>[A-Za-z0-9_.]+)(?:\s|$)")
_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC, ")


def split_results(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """Split a results file into its preamble and its sections, by ``## name (...)`` headings.

    Parameters
    ----------
    text
        The contents of ``bench/results.md``.

    Returns
    -------
    tuple[list[str], dict[str, list[str]]]
        The lines before the first heading, and each section's lines (heading, output block and
        any notes after it, up to the next heading) by benchmark name, in file order. A ``## ``
        line inside a fenced code block is output, not a heading.
    """
    preamble: list[str] = []
    sections: dict[str, list[str]] = {}
    current = preamble
    fenced = False
    for line in text.splitlines():
        heading = None if fenced else _HEADING.match(line)
        if heading is not None:
            current = sections.setdefault(heading["name"], [])
            if current:  # the same name twice: keep both, in order
                current.append("")
        current.append(line)
        if line.startswith("```"):
            fenced = not fenced
    return preamble, sections


def _notes(lines: list[str]) -> list[str]:
    """Return what follows a section's first code block (notes written by hand), if anything."""
    fences = [i for i, line in enumerate(lines) if line.startswith("```")]
    if len(fences) < 2:
        return []
    rest = lines[fences[1] + 1 :]
    while rest and not rest[0].strip():
        rest = rest[1:]
    while rest and not rest[-1].strip():
        rest = rest[:-1]
    return rest


def merge_results(
    old: str, ran: dict[str, tuple[str, str]], stamp: str, order: tuple[str, ...] = BENCHES
) -> str:
    """Return ``bench/results.md`` with the sections of the benchmarks that ran replaced.

    Parameters
    ----------
    old
        The file as it is (empty when there is none).
    ran
        Benchmark name -> (heading detail, e.g. ``"50 s wall; 2026-11-26 04:00 UTC"``, and its
        printed output) for the benchmarks of this run.
    stamp
        The line naming this run's date and machine; it replaces the preamble's stamp line.
    order
        The benchmarks' order in the file; sections of other names follow, as they were.

    Returns
    -------
    str
        The new file: a section that ran gets its new heading and output, and keeps the notes
        that followed its output block; every other section is kept line for line.
    """
    preamble, sections = split_results(old)
    if not preamble or preamble[0] != TITLE:
        preamble = [TITLE, "", *preamble]
    stamped = [i for i, line in enumerate(preamble) if _STAMP.match(line)]
    if stamped:
        preamble[stamped[0]] = stamp
    else:
        preamble[1:1] = ["", stamp]
    while preamble and not preamble[-1].strip():
        preamble.pop()
    out = [*preamble, ""]
    names = [n for n in order if n in ran or n in sections]
    names += [n for n in sections if n not in names]
    names += [n for n in ran if n not in names]
    for name in names:
        if name in ran:
            detail, output = ran[name]
            block = [f"## {name} ({detail})", "", "```text", output.rstrip(), "```"]
            notes = _notes(sections.get(name, []))
            lines = block + (["", *notes] if notes else [])
        else:
            lines = sections[name]
            while lines and not lines[-1].strip():
                lines = lines[:-1]
        out += [*lines, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> None:
    """Run the benchmarks named on the command line (default: all) and record their output."""
    names = [a for a in sys.argv[1:] if a in BENCHES] or list(BENCHES)
    here = Path(__file__).resolve().parent
    now = datetime.now(UTC)
    stamp = (
        f"{now:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.machine()} (the latest run; each "
        "section's heading gives its own date)."
    )
    ran: dict[str, tuple[str, str]] = {}
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
        finished = datetime.now(UTC)
        detail = f"{seconds:.0f} s wall; {finished:%Y-%m-%d %H:%M} UTC, `python -m bench {name}`"
        ran[name] = (detail, run.stdout)
    results = here / "results.md"
    old = results.read_text() if results.exists() else ""
    results.write_text(merge_results(old, ran, stamp))
    if failed:
        sys.exit(f"benchmarks failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
