"""``relia fit``'s default view: one line per class within the terminal's 80 columns, short notes.

``tests/conftest.py`` pins ``COLUMNS=80``; the assertions read the real output of a fit of the
48-node synthetic fleet (``fleet``) and compare widths with 80, the width that pin gives.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from pipelines.analysis.headline import sig_text
from pipelines.cli import app
from pipelines.cli.fit_view import compact_hours, span

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()
WIDTH = 80


@pytest.fixture(scope="module")
def db(fleet: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fleet's warehouse (the fits store runs in it)."""
    copy = tmp_path_factory.mktemp("fit_view") / "relia.duckdb"
    shutil.copy(fleet[0], copy)
    return copy


def _fit(db: Path, *args: str) -> tuple[str, str]:
    result = runner.invoke(app, ["fit", "--db", str(db), *args])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.stdout, result.stderr


@pytest.mark.parametrize("lives", ["fct_component_lives", "fct_replacement_lives", "stg_repairs"])
def test_default_view_fits_80_columns_one_line_per_class(db: Path, lives: str) -> None:
    stdout, stderr = _fit(db, "--lives", lives)
    lines = stdout.splitlines() + stderr.splitlines()
    assert max(len(line) for line in lines) <= WIDTH, [ln for ln in lines if len(ln) > WIDTH]
    payload = json.loads(_fit(db, "--lives", lives, "--format", "json")[0])
    classes = {r["component_class"] for r in payload["fits"]}
    # after the title (up to 2 lines) and the header: exactly one line per class, class first
    table = [line for line in stdout.splitlines() if line.split(" ")[0] in classes]
    assert sorted(line.split(" ")[0] for line in table) == sorted(classes)
    assert all(line.startswith("note: ") or line.startswith("  ") for line in stderr.splitlines())


def test_default_view_shows_the_rate_and_mtbf_with_their_intervals(db: Path) -> None:
    stdout, stderr = _fit(db)
    header = next(line for line in stdout.splitlines() if line.startswith("class "))
    assert header.split() == [
        "class", "level", "failures", "node-days", "per", "1000", "node-days", "MTBF", "h",
        "per", "unit",
    ]  # fmt: skip
    assert "per_1e6_gpu_h" not in stdout  # the wide table's columns stay in --wide
    assert "relia fit --wide" in " ".join(stderr.split())
    assert "{'component_class'" not in stderr  # the models' long notes are summarised


def test_wide_prints_every_column_and_the_lifetimes(db: Path) -> None:
    stdout, stderr = _fit(db, "--wide")
    for column in ("per_1e6_gpu_h", "gpu_hours", "trend", "lifetime_mean_h", "rmst_h"):
        assert column in stdout
    assert "lifetimes (times between failures per unit" in stdout
    assert "{'component_class'" in stderr  # the models' notes whole, as they were


@pytest.mark.parametrize(
    ("hours", "digits", "text"),
    [
        (4895.4, 3, "4,895"),
        (56182.0, 3, "56.2k"),
        (541078.0, 3, "541k"),
        (1_440_000.0, 3, "1.44M"),
        (21_371_433.0, 2, "21M"),
        (float("nan"), 3, "-"),
        (None, 3, "-"),
    ],
)
def test_compact_hours(hours: float | None, digits: int, text: str) -> None:
    assert compact_hours(hours, digits) == text


def test_span_rounds_bounds_outward_to_two_digits() -> None:
    # 44,952-71,190 h: the lower bound down to 44k, the upper up to 72k; the value to 3 digits
    assert span(56182.0, 44952.0, 71190.0, compact_hours) == "56.2k (44k-72k)"
    # bounds already round at 2 digits are not widened by float noise
    assert span(3.42, 2.7, 4.3, sig_text) == "3.42 (2.7-4.3)"
    # no failure: the rate's upper bound 0.1333 up to 0.14; a lone lower bound to 3 digits, down
    assert span(0.0, 0.0, 0.1333, sig_text) == "0 (0-0.14)"
    assert span(None, 180_590.0, None, compact_hours) == "≥ 180k"
