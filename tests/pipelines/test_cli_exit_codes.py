"""One exit-code rule for every ``relia`` command: 0 success, 1 failed on the data, 2 usage.

Each command runs on a warehouse that is missing, blank (a DuckDB file with nothing in it) or
without unit lives (an ingest of an empty landing folder), and with a bad option or value. A
failure on the data is one ``error:`` line and exit 1; a usage error exits 2 (Click's own usage
errors print its usage box; ours one ``error:`` line); never a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines import ingest
from pipelines.cli import app
from pipelines.cli.root import EXIT_CODES
from pipelines.runtime.errors import (
    EXIT_FAILED,
    EXIT_USAGE,
    UsageError,
    WarehouseEmptyError,
    WarehouseMissingError,
    exit_code_of,
)

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()

SWEEP = "target_gpus: 4096\nfrom_fits: latest\ngrid:\n  checkpoint_s: [120, 30]\n"

COMMANDS = {
    "summary": ["summary"],
    "fit": ["fit"],
    "trend": ["trend"],
    "project": ["project", "--from-fits", "latest", "--samples", "0"],
    "whatif": ["whatif", "{tmp}/sweep.yaml", "--out", "{tmp}/whatif"],
    "goodput": ["goodput"],
    "report": ["report", "--reports-dir", "{tmp}/reports"],
    "predict train": ["predict", "train"],
    "predict score": ["predict", "score"],
}
"""Every command that reads a warehouse, with what it needs besides ``--db``."""

DATA_FAILURES = [
    *[(command, "missing", "no warehouse at") for command in COMMANDS],
    ("summary", "blank", "has no rpt_fleet_summary"),
    ("fit", "blank", "has no fct_component_lives"),
    ("trend", "blank", "has no fct_node_recurrence"),
    ("project", "blank", "no fit run in the warehouse"),
    ("whatif", "blank", "no fit run in the warehouse"),
    ("goodput", "blank", "has no rpt_observation_window"),
    ("report", "blank", "has no stg_observation_window"),
    ("predict train", "blank", "has no int_gpu_health"),
    ("predict score", "blank", "has no int_gpu_health"),
    ("fit", "nolives", "no unit lives in fct_component_lives"),
    ("trend", "nolives", "no nodes in fct_node_recurrence"),
    ("project", "nolives", "no fit run in the warehouse"),
    ("whatif", "nolives", "no fit run in the warehouse"),
    ("report", "nolives", "the warehouse has no telemetry"),
    ("predict train", "nolives", "no DCGM telemetry in the warehouse"),
    ("predict score", "nolives", "no model in predict_models yet"),
]


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``missing``: no file; ``blank``: a DuckDB file with nothing in it; ``nolives``: an ingest
    of an empty landing folder (schema and views, no rows)."""
    root = tmp_path_factory.mktemp("warehouses")
    duckdb.connect(str(root / "blank.duckdb")).close()
    (root / "landing").mkdir()
    ingest.ingest(root / "nolives.duckdb", ingest.discover([root / "landing"]))
    return {name: root / f"{name}.duckdb" for name in ("missing", "blank", "nolives")}


def _args(command: str, tmp: Path) -> list[str]:
    (tmp / "sweep.yaml").write_text(SWEEP)
    return [a.format(tmp=tmp) for a in COMMANDS[command]]


def _one_error_line(result: Any) -> str:
    """The single non-empty line a failing command printed: ``error: ...``, no traceback."""
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize(("command", "which", "message"), DATA_FAILURES)
def test_a_command_that_fails_on_the_data_exits_1_with_one_line(
    warehouses: dict[str, Path], tmp_path: Path, command: str, which: str, message: str
) -> None:
    db = warehouses[which]
    result = runner.invoke(app, [*_args(command, tmp_path), "--db", str(db)])
    assert result.exit_code == EXIT_FAILED == 1, result.output
    assert message in _one_error_line(result)
    if which == "missing":
        assert not db.exists(), "a command created the warehouse it was told is missing"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ingest", "{tmp}/nope"], "does not exist; give a landing folder"),
        (["whatif", "{tmp}/nope.yaml", "--out", "{tmp}/out"], "no such file: "),
    ],
    ids=["ingest", "whatif"],
)
def test_an_input_that_does_not_exist_exits_1(
    tmp_path: Path, args: list[str], message: str
) -> None:
    given = [a.format(tmp=tmp_path) for a in args]
    result = runner.invoke(app, [*given, "--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 1, result.output
    assert message in _one_error_line(result)


def test_ingest_into_a_damaged_warehouse_exits_1(tmp_path: Path) -> None:
    db = tmp_path / "damaged.duckdb"
    db.write_bytes(b"not a duckdb file " * 300)
    (tmp_path / "landing").mkdir()
    result = runner.invoke(app, ["ingest", str(tmp_path / "landing"), "--db", str(db)])
    assert result.exit_code == 1, result.output
    assert "is corrupt" in _one_error_line(result)


@pytest.mark.parametrize("command", ["synth", "ingest", "demo", *COMMANDS])
def test_an_unknown_option_exits_2(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--no-such-option"])
    assert result.exit_code == EXIT_USAGE == 2, result.output
    assert "Traceback" not in result.output
    assert "No such option: --no-such-option" in result.output


OUR_USAGE_ERRORS = [
    (["fit", "--lives", "nope"], "unknown --lives 'nope'"),
    (["project", "--process", "failure"], "--process chooses the rates of --from-fits"),
    (["project", "--fleet-age", "old"], "fleet_age = 'old'"),
    (["synth", "--family", "gpu=nope", "--out", "{tmp}/landing"], "unknown lifetime family"),
    (["fit", "--window-start", "soon"], "is not an ISO date"),
]


@pytest.mark.parametrize(("args", "message"), OUR_USAGE_ERRORS)
def test_a_value_the_command_cannot_use_exits_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    given = [a.format(tmp=tmp_path) for a in args]
    db = [] if given[0] == "synth" else ["--db", str(tmp_path / "w.duckdb")]
    result = runner.invoke(app, [*given, *db])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert message in result.output


def test_the_rule_maps_each_kind_of_error() -> None:
    assert exit_code_of(WarehouseMissingError("x.duckdb")) == 1
    assert exit_code_of(WarehouseEmptyError("no rows")) == 1  # a ValueError, still the data's
    assert exit_code_of(UsageError("bad value")) == 2
    assert exit_code_of(ValueError("bad value")) == 2
    assert exit_code_of(FileNotFoundError(2, "gone", "f")) == 1
    assert exit_code_of(RuntimeError("a bug")) is None


def test_help_states_the_rule() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert " ".join(EXIT_CODES.split()[:4]) in " ".join(result.output.split())
