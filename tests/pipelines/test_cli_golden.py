"""``relia``'s output, byte for byte, against golden files recorded from a small synthetic fleet.

A fixed sequence of commands (:data:`CASES`: synth, ingest twice, summary, fit, trend, project,
whatif, goodput, errors and the long commands' ``--help``) runs through Typer's ``CliRunner`` in
a temporary folder, with relative paths, so no table's layout depends on where that folder is.
Each case's exit code, stdout and stderr are compared with ``tests/fixtures/cli_golden/<case>.txt``.

The normaliser (:func:`normalise`) masks only what changes from run to run:

- the temporary folder's absolute path (``summary`` prints the warehouse's resolved path) as
  ``<TMP>``;
- a fit run's id (``20260101T120000Z-1a2b3c4d``: the time it ran and a random suffix) as
  ``<RUN_ID>``, and a stored row's ``created_at`` in JSON as ``<CREATED_AT>``;
- ``"seconds"`` in ``relia synth --json`` (how long the simulation took) as ``<SECONDS>``;
- the order of tied rows where the command's own sort leaves it open (:data:`TIED_ROWS`:
  ``relia trend`` lists nodes of equal p-value in whatever order the query returned them), by
  sorting that table's records (:func:`sorted_records`).

A fit's notes list their groups sorted (``N group(s) have fewer than 2 failures ({...}, ...
and 1 more)``), so they are compared whole.

Left out, as they differ from run to run in more than a mask can hide: ``relia fit --json``
(its rows in the order the fit produced them, model weights differing in the last bits) and
``relia project --from-fits ... --format csv`` (unrounded sums over classes taken in set order).

The masks are applied after Rich has laid the output out, and every masked value has a fixed
width, so the layout is that of the real output. ``tests/conftest.py`` pins ``COLUMNS=80``.

To record the files again after a deliberate change of output, run this file with
``RELIA_RECORD_GOLDEN=1`` and review the diff of ``tests/fixtures/cli_golden/``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

if TYPE_CHECKING:
    from collections.abc import Iterator

GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "cli_golden"
RECORD = os.environ.get("RELIA_RECORD_GOLDEN", "") not in ("", "0")

SWEEP = """\
target_gpus: 4096
base:
  checkpoint_s: 60
grid:
  checkpoint_s: [120, 30]
  reload_s: [600, 60]
"""

DB = ("--db", "relia.duckdb")

CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "synth",
        ("synth", "--out", "landing", "--nodes", "8", "--days", "30", "--seed", "3", "--json"),
    ),
    ("ingest_first", ("ingest", "landing", *DB)),
    ("ingest_again", ("ingest", "landing", *DB)),
    ("ingest_again_verbose_csv", ("ingest", "landing", *DB, "--verbose", "--format", "csv")),
    ("summary", ("summary", *DB)),
    ("fit", ("fit", *DB)),
    ("fit_replacement", ("fit", *DB, "--lives", "fct_replacement_lives")),
    ("fit_repairs", ("fit", *DB, "--lives", "stg_repairs")),
    ("trend", ("trend", *DB)),
    ("project_defaults", ("project",)),
    (
        "project_knobs",
        (
            "project",
            "--gpus",
            "4096",
            "--checkpoint-s",
            "30",
            "--strategy",
            "hot_spare",
            "--hot-spares",
            "8",
            "--restart-s",
            "900",
            "--simulate",
            "10",
        ),
    ),
    ("project_knobs_json", ("project", "--gpus", "2048", "--node-group", "0.1:3", "--json")),
    (
        "project_shape_csv",
        ("project", "--gpus", "1024", "--weibull-shape", "0.7", "--format", "csv"),
    ),
    ("project_from_fits", ("project", "--from-fits", "latest", *DB, "--fleet-age", "inventory")),
    ("whatif", ("whatif", "sweep.yaml", "--out", "whatif", *DB)),
    ("goodput", ("goodput", *DB)),
    ("error_missing_warehouse", ("summary", "--db", "missing.duckdb")),
    ("error_process_without_fits", ("project", "--process", "failure")),
    ("error_unknown_lives", ("fit", *DB, "--lives", "nope")),
    ("help_synth", ("synth", "--help")),
    ("help_ingest", ("ingest", "--help")),
    ("help_fit", ("fit", "--help")),
    ("help_trend", ("trend", "--help")),
    ("help_project", ("project", "--help")),
    ("help_whatif", ("whatif", "--help")),
)
"""Each case's name (its golden file's stem) and arguments, in the order they run: later
commands read what earlier ones wrote (the warehouse, the fit runs)."""

TIED_ROWS = {"trend": "unit_id"}
"""Cases whose record table (first key given) is compared with its records sorted: their order
among ties varies."""

_RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{8}\b")
_CREATED_AT = re.compile(r'("created_at": )"[^"]*"')
_SECONDS = re.compile(r'("seconds": )[0-9.]+')


def normalise(text: str, tmp: Path) -> str:
    """Mask what changes from run to run: the temporary folder, run ids, times, durations."""
    for folder in {str(tmp.resolve()), str(tmp)}:
        text = text.replace(folder, "<TMP>")
    text = _RUN_ID.sub("<RUN_ID>", text)
    text = _CREATED_AT.sub(r'\1"<CREATED_AT>"', text)
    return _SECONDS.sub(r"\1<SECONDS>", text)


def sorted_records(text: str, first_key: str) -> str:
    """Sort the records of the record table whose records start with ``first_key``.

    A narrow terminal shows a Rich table as records: one ``key value`` line per column, a blank
    line between records. Each record is as many lines as the first one; the lines after the
    last record (no blank line between) stay where they are.
    """
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith(f"{first_key} ")]
    if not starts:
        return text
    first = starts[0]
    width = lines.index("", first) - first
    records, end = [], first
    while end < len(lines) and lines[end].startswith(f"{first_key} "):
        records.append(lines[end : end + width])
        end += width
        if end + 1 < len(lines) and lines[end] == "" and lines[end + 1].startswith(first_key):
            end += 1
    joined = "\n\n".join("\n".join(r) for r in sorted(records))
    return "\n".join([*lines[:first], joined, *lines[end:]])


def _transcript(args: tuple[str, ...], exit_code: int, stdout: str, stderr: str) -> str:
    return (
        f"$ relia {' '.join(args)}\nexit: {exit_code}\n"
        f"--- stdout\n{stdout}--- stderr\n{stderr}--- end\n"
    )


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Every case's normalised transcript, the commands run in order in one temporary folder."""
    folder = tmp_path_factory.mktemp("cli_golden")
    (folder / "sweep.yaml").write_text(SWEEP)
    runner = CliRunner()
    here = Path.cwd()
    os.chdir(folder)
    try:
        out = {}
        for name, args in CASES:
            result = runner.invoke(app, list(args))
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                raise result.exception
            stdout = result.stdout
            if name in TIED_ROWS:
                stdout = sorted_records(stdout, TIED_ROWS[name])
            out[name] = normalise(
                _transcript(args, result.exit_code, stdout, result.stderr), folder
            )
        yield out
    finally:
        os.chdir(here)


@pytest.mark.parametrize("name", [name for name, _ in CASES])
def test_cli_output_matches_golden(transcripts: dict[str, str], name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if RECORD:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(transcripts[name], encoding="utf-8")
    assert transcripts[name] == path.read_text(encoding="utf-8")
