"""The interactive path imports only what it needs (issue #17): cold ``relia project`` and
``relia whatif`` without a warehouse, and ``relia --help``.

Each command runs in a fresh interpreter, in an empty folder, with ``RELIA_DB`` pointing at a
file that does not exist, under a wrapper that prints ``sorted(sys.modules)`` on stderr at exit.
The printed figures are checked against the formulas (MTTI = 1 / the summed failure rate,
Young's and Daly's intervals) and against lines of the output before the imports were made lazy.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WRAPPER = (
    "import atexit, runpy, sys; "
    "atexit.register(lambda: print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)); "
    "sys.argv = ['relia', *sys.argv[1:]]; "
    "runpy.run_module('pipelines.cli', run_name='__main__')"
)
NEVER = ("polars", "duckdb", "great_expectations", "prefect")
"""Never imported by the interactive path without a warehouse (``whatif`` writes its table with
polars, so it is allowed polars)."""
AVOIDED = ("pandas", "lifelines", "sklearn", "scipy.stats", "matplotlib")
"""Not imported by ``relia project`` either (the fits, predictors and plots need them)."""

# the defaults of ``relia project``: Meta's RSC-1 rate of 6.5 node failures per 1000 node-days,
# 16,384 GPUs at 8 per node, a 60 s checkpoint and a 30-day job
NODES = 16_384 / 8
FAILURES_PER_H = NODES * 6.5 / 1000 / 24
CHECKPOINT_S = 60.0


def _relia(tmp_path: Path, *args: str, prelude: str = "") -> tuple[str, set[str]]:
    """Stdout of ``relia ARGS`` in a fresh interpreter and the modules it had imported."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PREFECT_API_URL", "RELIA_DASK_ADDRESS", "PYTHONPATH")
    }
    env |= {"PYTHONPATH": str(REPO), "RELIA_DB": str(tmp_path / "absent.duckdb")}
    env |= {"COLUMNS": "100", "TERM": "dumb"}
    shown = subprocess.run(
        [sys.executable, "-c", prelude + WRAPPER, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    [line] = [x for x in shown.stderr.splitlines() if x.startswith("MODULES ")]
    assert not (tmp_path / "absent.duckdb").exists(), "the command created a warehouse"
    return shown.stdout, set(line.split()[1:])


def _imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in modules or any(m.startswith(f"{n}.") for m in modules)]


def _daly_min(mtti_s: float) -> float:
    """Daly's (2006) higher-order optimum, in minutes: checkpoint time << MTTI."""
    x = CHECKPOINT_S / (2.0 * mtti_s)
    tau = math.sqrt(2.0 * CHECKPOINT_S * mtti_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0)
    return (tau - CHECKPOINT_S) / 60.0


def test_project_without_a_warehouse_imports_no_io_layer(tmp_path: Path) -> None:
    """Issue #17: the default projection imports none of polars, DuckDB, GX, Prefect (nor the
    fitting libraries), and its figures are the formulas'."""
    text, modules = _relia(tmp_path, "project", "--json")
    assert _imported(modules, NEVER) == []
    assert _imported(modules, AVOIDED) == []
    result = json.loads(text)
    mtti_h = 1.0 / FAILURES_PER_H  # 1.8029 h: 2,048 nodes at 6.5 per 1000 node-days
    assert result["mtti_h"] == pytest.approx(mtti_h, rel=1e-12)
    assert result["expected_interruptions"] == pytest.approx(30 * 24 / mtti_h, rel=1e-12)
    young_min = math.sqrt(2.0 * CHECKPOINT_S * mtti_h * 3600.0) / 60.0
    assert result["young_interval_min"] == pytest.approx(young_min, rel=1e-12)
    assert result["daly_interval_min"] == pytest.approx(_daly_min(mtti_h * 3600.0), rel=1e-12)
    assert result["checkpoint_interval_min"] == result["daly_interval_min"]
    assert result["fit_run_id"] is None


def test_project_table_and_csv_are_what_they_were(tmp_path: Path) -> None:
    """The table and CSV print what they printed before the lazy imports (lines taken from the
    eager CLI's output), and the same text when every command and model is imported first."""
    table, modules = _relia(tmp_path, "project")
    assert _imported(modules, NEVER + AVOIDED) == []
    lines = table.splitlines()
    assert lines[0].rstrip() == "projection: 16,384 GPUs, restart"
    for row in (
        "│ mtti_h                  │         1.8 │",
        "│ expected_interruptions  │       399.4 │",
        "│ young_interval_min      │        14.7 │",
        "│ daly_interval_min       │          14 │",
        "│ goodput                 │       0.779 │",
        "│ lost_gpu_h_restart      │ 1,238,649.1 │",
    ):
        assert row in lines
    assert lines[-1] == "analytical goodput within ±0.00014 of the event-level model"
    assert "fit_run_id: None" in lines
    eager = (
        "import importlib, models, pipelines.cli.root as root; "
        "[importlib.import_module(f'pipelines.cli.{m}') for m, _ in root.COMMANDS.values()]; "
        "[getattr(models, name) for name in models.__all__]; "
    )
    same, everything = _relia(tmp_path, "project", prelude=eager)
    # the prelude did import every command and model
    assert _imported(everything, ("polars", "lifelines", "sklearn")) == [
        "polars",
        "lifelines",
        "sklearn",
    ]
    assert same == table

    rows, _ = _relia(tmp_path, "project", "--format", "csv")
    figures = {r["figure"]: float(r["value"]) for r in csv.DictReader(io.StringIO(rows))}
    assert list(figures)[:3] == ["mtti_h", "expected_interruptions", "young_interval_min"]
    assert figures["mtti_h"] == pytest.approx(1.0 / FAILURES_PER_H, rel=1e-12)
    assert figures["lost_gpu_h_spares_wait"] == 0.0  # no hot spares: nobody waits for one


def test_whatif_without_a_warehouse_imports_no_orchestrator(tmp_path: Path) -> None:
    """An untracked ``relia whatif`` runs the sweep in-process: no Prefect, DuckDB or GX; its
    table (polars, Parquet) and plots (matplotlib) are what it writes."""
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        textwrap.dedent(
            """\
            target_gpus: 16384
            base: {gpus_per_node: 8, node_failures_per_1000_node_days: 6.5, job_days: 30}
            grid: {n_gpus: [1024, 16384], checkpoint_s: [30, 300]}
            """
        )
    )
    text, modules = _relia(tmp_path, "whatif", str(sweep), "--out", "out")
    assert _imported(modules, ("duckdb", "great_expectations", "prefect")) == []
    lines = text.splitlines()
    assert lines[0] == "baseline at 16,384 GPUs (held for every other knob): checkpoint_s=30.0"
    assert "4 scenarios; table out/whatif.parquet; plots:" in lines  # 2 scales x 2 checkpoints
    assert "  out/goodput_vs_scale_checkpoint_s.png" in lines
    assert lines[-1] == "no knob improves on the baseline at this scale"
    with (tmp_path / "out" / "whatif.csv").open() as table:
        points = list(csv.DictReader(table))
    assert sorted((int(p["n_gpus"]), float(p["checkpoint_s"])) for p in points) == [
        (1024, 30.0),
        (1024, 300.0),
        (16384, 30.0),
        (16384, 300.0),
    ]
    at_target = {
        float(p["checkpoint_s"]): float(p["goodput"]) for p in points if int(p["n_gpus"]) == 16384
    }
    assert at_target[30.0] > at_target[300.0]  # a longer blocking checkpoint costs goodput

    payload, _ = _relia(tmp_path, "whatif", str(sweep), "--out", "out2", "--json")
    result = json.loads(payload)
    assert result["n_points"] == 4
    assert result["best_knob"] is None
    [gain] = result["gains"]
    assert gain["goodput_baseline"] == pytest.approx(at_target[30.0], rel=1e-12)


def test_help_lists_every_command_without_importing_them(tmp_path: Path) -> None:
    text, modules = _relia(tmp_path, "--help")
    assert _imported(modules, (*NEVER, *AVOIDED, "numpy", "models")) == []
    assert not [
        m
        for m in modules
        if m.startswith("pipelines.cli.")
        and m
        not in (
            "pipelines.cli.render",
            "pipelines.cli.root",
            "pipelines.cli.__main__",
        )
    ]
    order = ["synth", "ingest", "summary", "goodput", "fit", "trend"]
    order += ["project", "whatif", "report", "demo", "predict"]
    listed = [
        line.split()[1]
        for line in text.splitlines()
        if line.startswith("│ ") and line.split()[1] in order
    ]
    assert listed == order
    assert (
        "│ project  Project MTTI, checkpoint intervals, ETTR and goodput for a job at a given"
        in (text)
    )


def test_help_lines_are_the_commands_own() -> None:
    """``COMMANDS`` (what ``relia --help`` prints without importing the commands) holds each
    command's module and the first paragraph of its own help."""
    import importlib
    import inspect

    import typer.main

    from pipelines.cli.root import COMMANDS, app

    for module, _ in COMMANDS.values():
        importlib.import_module(f"pipelines.cli.{module}")
    commands = {info.name or info.callback.__name__: info for info in app.registered_commands}
    groups = {info.name for info in app.registered_groups}
    assert commands.keys() | groups == COMMANDS.keys()  # every command is listed, nothing else
    group = typer.main.get_group(app)
    for name, (module, help_line) in COMMANDS.items():
        command = group.commands[name]
        assert inspect.cleandoc(command.help or "").split("\n\n")[0] == help_line, name
        if name in commands:  # a sub-app (predict) registers its commands in its own module
            assert commands[name].callback.__module__ == f"pipelines.cli.{module}", name
