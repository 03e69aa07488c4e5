"""``relia fit|summary --window-start/--window-end``: an explicit observation window, stored in
cfg_params for the views; bad dates are usage errors that name the option."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()
SCRAPE = 'DCGM_FI_DEV_GPU_TEMP{{gpu="0",Hostname="gpu0001"}} 41 {ms}\n'


def _warehouse(tmp_path: Path) -> Path:
    landing = tmp_path / "dcgm"
    landing.mkdir()
    ms = int(datetime(2026, 6, 3, 6, tzinfo=UTC).timestamp() * 1000)
    (landing / "gpu0001.20260603.prom").write_text(SCRAPE.format(ms=ms))
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    return db


def _window(db: Path) -> tuple[datetime, datetime]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute("select * from stg_observation_window").fetchone()


def test_summary_window_options_set_the_observation_window(tmp_path: Path) -> None:
    db = _warehouse(tmp_path)
    assert _window(db) == (datetime(2026, 6, 3, tzinfo=UTC), datetime(2026, 6, 4, tzinfo=UTC))
    result = runner.invoke(
        app,
        [
            "summary",
            "--db",
            str(db),
            "--json",
            "--window-start",
            "2026-05-01",
            "--window-end",
            "2026-07-01T12:00",
        ],
    )
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
    assert _window(db) == (
        datetime(2026, 5, 1, tzinfo=UTC),
        datetime(2026, 7, 1, 12, tzinfo=UTC),
    )


def test_window_options_reject_bad_dates_naming_the_option(tmp_path: Path) -> None:
    db = _warehouse(tmp_path)
    bad = runner.invoke(app, ["summary", "--db", str(db), "--window-start", "June 1st"])
    assert bad.exit_code == 2
    assert "--window-start" in bad.output
    assert "2026-03-01" in bad.output  # the message shows a date to write
    swapped = runner.invoke(
        app,
        ["summary", "--db", str(db), "--window-start", "2026-07-01", "--window-end", "2026-06-01"],
    )
    assert swapped.exit_code == 2
    assert "--window-end" in swapped.output
    assert _window(db) == (datetime(2026, 6, 3, tzinfo=UTC), datetime(2026, 6, 4, tzinfo=UTC))


def test_fit_takes_the_window_options() -> None:
    result = runner.invoke(app, ["fit", "--help"])
    assert result.exit_code == 0
    assert "--window-start" in result.output
    assert "--window-end" in result.output


def test_window_options_on_a_missing_warehouse_say_what_to_do(tmp_path: Path) -> None:
    missing = tmp_path / "none.duckdb"
    result = runner.invoke(app, ["summary", "--db", str(missing), "--window-start", "2026-06-01"])
    assert result.exit_code == 1
    assert "relia ingest" in result.output
    assert not missing.exists()
