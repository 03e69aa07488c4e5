"""The ``relia`` command line over the shared synthetic warehouse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()


def test_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys; from pipelines.cli import app; "
        "heavy = [m for m in ('prefect', 'great_expectations', 'lifelines', 'sklearn', 'duckdb') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("synth", "ingest", "summary", "fit", "trend", "demo"):
        assert command in result.output


def test_summary_json_matches_truth(fleet: tuple[Path, Path, dict]) -> None:
    db, _, truth = fleet
    result = runner.invoke(app, ["summary", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    failures = {r["component_class"]: r["n_failures"] for r in summary["failures_by_class"]}
    assert {cls: failures[cls] for cls in truth["failures_by_class"]} == truth["failures_by_class"]
    causes = {(r["cause_class"], r["attribution"]): r["n_interruptions"]
              for r in summary["interruptions_by_cause"]}  # fmt: skip
    assert causes == {(r["cause_class"], r["attribution"]): r["n"]
                      for r in truth["interruptions_by_cause"]}  # fmt: skip


def test_ingest_prints_counts_per_file_and_skips_known_bytes(fleet: tuple) -> None:
    db, landing, _ = fleet
    result = runner.invoke(app, ["ingest", str(landing / "repairs"), "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    [counts] = json.loads(result.stdout)
    assert counts["skipped"] is True
    assert counts["n_read"] == counts["n_loaded"] + counts["n_quarantined"]


def test_ingest_of_a_missing_path_exits_with_a_message(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope"), "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_fit_and_trend_json(fleet: tuple) -> None:
    db = fleet[0]
    result = runner.invoke(app, ["fit", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["run_id"]
    assert {r["component_class"] for r in payload["fits"]} >= set(fleet[2]["failures_by_class"])
    result = runner.invoke(app, ["trend", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    trend = json.loads(result.stdout)
    assert trend["n_failures"] == sum(fleet[2]["failures_by_class"].values())
    assert trend["crow_amsaa"]["verdict"] in {"improving", "stable", "degrading"}
