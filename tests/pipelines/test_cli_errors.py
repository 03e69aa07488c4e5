"""Errors a person can act on: one line, exit 1 (2 for usage), a traceback only under --debug.

Also strict JSON (no NaN/Infinity) and ``relia --version``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines import ingest
from pipelines.cli import app
from pipelines.runtime.jsonsafe import json_ready as _strict_json

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]

WAREHOUSE_COMMANDS = {
    "fit": ["fit"],
    "project": ["project", "--from-fits", "latest", "--samples", "0"],
    "report": ["report", "--reports-dir", "{tmp}/reports"],
    "summary": ["summary"],
    "trend": ["trend"],
}


def _strict_loads(text: str) -> Any:
    def refuse(constant: str) -> None:
        msg = f"not strict JSON: {constant}"
        raise ValueError(msg)

    return json.loads(text, parse_constant=refuse)


def _one_line(result: Any) -> str:
    """The single non-empty line a failing command printed (stdout and stderr together)."""
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``missing``: no file; ``blank``: a DuckDB file with nothing in it; ``nolives``: an ingest
    of an empty landing folder (schema and views, no rows)."""
    root = tmp_path_factory.mktemp("warehouses")
    duckdb.connect(str(root / "blank.duckdb")).close()
    (root / "landing").mkdir()
    ingest.ingest(root / "nolives.duckdb", ingest.discover([root / "landing"]))
    return {name: root / f"{name}.duckdb" for name in ("missing", "blank", "nolives")}


WAREHOUSE_CASES = [
    *[(command, "missing", "no warehouse at") for command in WAREHOUSE_COMMANDS],
    ("fit", "blank", "has no fct_component_lives"),
    ("project", "blank", "no fit run in the warehouse"),
    ("report", "blank", "has no stg_observation_window"),
    ("summary", "blank", "has no rpt_fleet_summary"),
    ("trend", "blank", "has no fct_node_recurrence"),
    ("fit", "nolives", "no unit lives in fct_component_lives"),
    ("project", "nolives", "no fit run in the warehouse"),
    ("report", "nolives", "the warehouse has no telemetry"),
    ("trend", "nolives", "no nodes in fct_node_recurrence"),
]


@pytest.mark.parametrize(("command", "which", "message"), WAREHOUSE_CASES)
def test_cli_missing_or_empty_warehouse_is_one_line_exit_1(
    warehouses: dict[str, Path], tmp_path: Path, command: str, which: str, message: str
) -> None:
    db = warehouses[which]
    args = [a.format(tmp=tmp_path) for a in WAREHOUSE_COMMANDS[command]]
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == 1, result.output
    assert message in _one_line(result)
    if which == "missing":
        assert not db.exists(), "a command created the warehouse it was told is missing"


@pytest.mark.parametrize(
    ("text", "message", "code"),
    [
        (None, "no such file: ", 1),
        ("grid: {checkpoint_s: [30\n", "not valid YAML", 2),
        ("grid: {checkpoint_s: [30]}\nbogus: 1\n", "unknown key(s) ['bogus']", 2),
    ],
    ids=["missing", "invalid-yaml", "unknown-key"],
)
def test_cli_whatif_sweep_file_errors_are_one_line(
    tmp_path: Path, text: str | None, message: str, code: int
) -> None:
    sweep = tmp_path / "sweep.yaml"
    if text is not None:
        sweep.write_text(text)
    result = runner.invoke(app, ["whatif", str(sweep), "--out", str(tmp_path / "out")])
    assert result.exit_code == code, result.output
    assert message in _one_line(result)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["project", "--fleet-age", "old"], "fleet_age = 'old'"),
        (["fit", "--lives", "nope"], "unknown --lives 'nope'"),
    ],
    ids=["fleet-age", "lives"],
)
def test_cli_bad_option_values_are_one_line_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2, result.output
    assert message in _one_line(result)


def test_cli_locked_warehouse_says_how_long_it_waited_and_who_holds_it(
    fleet: tuple, tmp_path: Path
) -> None:
    db = tmp_path / "busy.duckdb"
    shutil.copy(fleet[0], db)
    hold = textwrap.dedent(f"""
        import duckdb, sys, time
        con = duckdb.connect({str(db)!r})
        print("locked", flush=True)
        sys.stdin.read()
    """)
    holder = subprocess.Popen(
        [sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        for command in (["summary"], ["fit"]):
            result = runner.invoke(
                app, [*command, "--db", str(db)], env={"RELIA_LOCK_TIMEOUT_S": "0.5"}
            )
            assert result.exit_code == 1, result.output
            line = _one_line(result)
            assert line.startswith("error: warehouse busy:")
            assert "waited 0.5 s" in line
            assert f"PID {holder.pid}" in line
    finally:
        holder.communicate("", timeout=30)


def test_cli_shows_a_spinner_while_it_waits_for_the_lock(
    fleet: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal, a command that waits for the warehouse's lock says so while it waits:
    what it waits for, who holds it and for how long
    (``pipelines.runtime.lock_wait.busy_spinner``)."""
    import io

    from rich.console import Console

    from pipelines.cli import root

    db = tmp_path / "busy.duckdb"
    shutil.copy(fleet[0], db)
    hold = f"import duckdb, sys; con = duckdb.connect({str(db)!r}); print('locked', flush=True); "
    hold += "sys.stdin.read()"
    holder = subprocess.Popen(
        [sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    screen = io.StringIO()
    # wide enough for the whole status line: DuckDB names the holder by its full program path
    monkeypatch.setattr(root, "err", Console(file=screen, force_terminal=True, width=500))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        result = runner.invoke(
            app, ["summary", "--db", str(db)], env={"RELIA_LOCK_TIMEOUT_S": "2.5"}
        )
        assert result.exit_code == 1
    finally:
        holder.communicate("", timeout=30)
    # the text without the terminal's control and colour sequences (Rich highlights numbers)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    assert f"waiting for {db} (locked by PID {holder.pid}" in shown
    assert "s of 2.5 s" in shown
    assert "warehouse busy:" in shown
    assert "waited 2.5 s" in shown


@pytest.mark.parametrize("how", ["option", "env"])
def test_cli_debug_shows_the_traceback(tmp_path: Path, how: str) -> None:
    args = ["whatif", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")]
    if how == "option":
        result = runner.invoke(app, ["--debug", *args])
    else:
        result = runner.invoke(app, args, env={"RELIA_DEBUG": "1"})
    assert result.exit_code == 1
    assert isinstance(result.exception, FileNotFoundError)
    assert "error:" not in result.output  # the exception itself, not the one line
    shown = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "--debug", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert shown.returncode == 1
    assert "Traceback" in shown.stderr
    assert "FileNotFoundError" in shown.stderr


def test_cli_a_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pipelines.cli.summary as cli
    from pipelines import warehouse
    from pipelines.analysis import summary

    def broken(con: object) -> dict[str, Any]:
        raise KeyError("a bug")

    monkeypatch.setattr(summary, "fleet_summary", broken)
    monkeypatch.setattr(cli, "require_warehouse", lambda *_a, **_k: None)
    db = tmp_path / "w.duckdb"
    with warehouse.connect(db):  # the command opens it (read-only) before the stage runs
        pass
    result = runner.invoke(app, ["summary", "--db", str(db)])
    assert result.exit_code == 1
    assert isinstance(result.exception, KeyError)


def test_strict_json_turns_nan_and_infinity_into_null() -> None:
    np = pytest.importorskip("numpy")
    payload = {
        "a": float("nan"),
        "b": [float("inf"), 1.5, (float("-inf"), np.float32("nan"))],
        "c": {"d": np.float64("inf"), "e": np.array([1.0, np.nan]), "f": np.int64(3)},
        "g": "NaN",
    }
    assert _strict_json(payload) == {
        "a": None,
        "b": [None, 1.5, [None, None]],
        "c": {"d": None, "e": [1.0, None], "f": 3},
        "g": "NaN",
    }


def test_cli_fit_and_project_json_are_strict(fleet: tuple, tmp_path: Path) -> None:
    db = tmp_path / "relia.duckdb"
    shutil.copy(fleet[0], db)
    fitted = runner.invoke(app, ["fit", "--db", str(db), "--json", "--all-families"])
    assert fitted.exit_code == 0, fitted.output
    payload = _strict_loads(fitted.stdout)
    zero = [r for r in payload["fits"] if r["n_failures"] == 0]
    assert zero, "the fleet fixture should have a class with no failures"
    assert any(v is None for r in zero for v in r.values())  # its NaN/inf figures are null
    chosen = runner.invoke(app, ["fit", "--db", str(db), "--json"])
    assert chosen.exit_code == 0, chosen.output
    _strict_loads(chosen.stdout)
    projected = runner.invoke(
        app, ["project", "--db", str(db), "--from-fits", "latest", "--samples", "200", "--json"]
    )
    assert projected.exit_code == 0, projected.output
    assert _strict_loads(projected.stdout)["fit_run_id"] == _strict_loads(chosen.stdout)["run_id"]


def test_cli_version_prints_the_installed_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"relia {version('relia')}"


def test_python_m_pipelines_cli_help_works() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert "whatif" in shown.stdout
    assert "--version" in shown.stdout
    assert "--debug" in shown.stdout
