"""Waiting for the warehouse's lock, and the settings that say how long (issue #15).

``warehouse.connect`` reports a wait for another process's lock to an ``on_wait`` hook about
every second (what it awaits, who holds it, how long it has waited), which the CLI turns into a
Rich spinner (``warehouse.busy_spinner``). How long writers and readers wait comes from
``Settings`` (``RELIA_LOCK_TIMEOUT_S``, ``RELIA_READ_LOCK_TIMEOUT_S``), the one home of the
timeouts and of the Prefect environment defaults.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from rich.console import Console

from pipelines import warehouse
from pipelines.runtime.settings import (
    DEFAULT_LOCK_TIMEOUT_S,
    DEFAULT_READ_LOCK_TIMEOUT_S,
    PREFECT_DEFAULTS,
    Settings,
    apply_prefect_defaults,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

HOLD = (
    "import sys, duckdb; con = duckdb.connect(sys.argv[1]); print('held', flush=True); "
    "sys.stdin.read()"
)
"""A second process that holds the warehouse open for writing until its stdin closes."""


def _open(db: Path, **options: Any) -> None:
    with warehouse.connect(db, **options):
        pass


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A warehouse another process holds for writing: its path and the holder's PID."""
    db = tmp_path / "relia.duckdb"
    with warehouse.connect(db) as con:
        warehouse.apply_schema(con)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        yield db, holder.pid
    finally:
        holder.communicate("", timeout=30)


def test_connect_reports_the_wait_to_its_hook(held: tuple[Path, int]) -> None:
    db, pid = held
    seen: list[warehouse.WaitStatus] = []
    started = time.monotonic()
    with pytest.raises(warehouse.WarehouseBusyError) as raised:
        _open(db, lock_timeout_s=2, on_wait=seen.append)
    assert time.monotonic() - started >= 2
    assert seen, "the hook was never called"
    assert all(s.path == str(db) and s.timeout_s == 2 and not s.done for s in seen)
    assert any(f"PID {pid}" in s.holder for s in seen)
    assert [s.waited_s for s in seen] == sorted(s.waited_s for s in seen)
    assert seen[-1].waited_s >= 1.0
    assert len(seen) >= 2  # about every second
    assert "waited 2 s" in str(raised.value)


def test_a_hook_set_for_the_context_reports_every_connect_inside_it(
    held: tuple[Path, int],
) -> None:
    """``reporting_waits`` (what the CLI sets once per command) reaches a ``connect`` deep inside
    a pipeline step that passes no hook; outside the block nothing is reported."""
    db, _ = held
    seen: list[warehouse.WaitStatus] = []
    with warehouse.reporting_waits(seen.append), pytest.raises(warehouse.WarehouseBusyError):
        _open(db, lock_timeout_s=1.5)
    assert seen
    assert all(s.path == str(db) for s in seen)
    n_seen = len(seen)
    with pytest.raises(warehouse.WarehouseBusyError):
        _open(db, lock_timeout_s=0.5)
    assert len(seen) == n_seen


def test_connect_without_a_wait_never_calls_the_hook(tmp_path: Path) -> None:
    seen: list[warehouse.WaitStatus] = []
    with warehouse.connect(tmp_path / "free.duckdb", lock_timeout_s=2, on_wait=seen.append):
        pass
    assert seen == []


def test_busy_spinner_shows_the_wait_and_stops(held: tuple[Path, int]) -> None:
    db, pid = held
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    with warehouse.busy_spinner(console) as on_wait, pytest.raises(warehouse.WarehouseBusyError):
        _open(db, lock_timeout_s=1.5, on_wait=on_wait)
    assert f"waiting for {db}" in out.getvalue()
    assert f"PID {pid}" in out.getvalue()
    status = warehouse.WaitStatus(str(db), "another process", 3.2, 60.0)
    assert warehouse.describe_wait(status) == (
        f"waiting for {db} (locked by another process): 3 s of 60 s"
    )


class _Status:
    """Stands in for ``rich.status.Status``: records what the spinner did."""

    def __init__(self, calls: list[str], text: str) -> None:
        self.calls = calls
        self.calls.append(f"status {text}")

    def start(self) -> None:
        self.calls.append("start")

    def update(self, text: str) -> None:
        self.calls.append(f"update {text}")

    def stop(self) -> None:
        self.calls.append("stop")


class _Console:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def status(self, text: str) -> _Status:
        return _Status(self.calls, text)


def test_busy_spinner_stops_when_the_wait_is_done() -> None:
    console = _Console()
    with warehouse.busy_spinner(console) as on_wait:  # type: ignore[arg-type]
        on_wait(warehouse.WaitStatus("w.duckdb", "another process", 0.0, 5.0))
        on_wait(warehouse.WaitStatus("w.duckdb", "another process", 1.0, 5.0))
        on_wait(warehouse.WaitStatus("w.duckdb", "another process", 1.5, 5.0, done=True))
        assert console.calls == [
            "status waiting for w.duckdb (locked by another process): 0 s of 5 s",
            "start",
            "update waiting for w.duckdb (locked by another process): 1 s of 5 s",
            "stop",
        ]
    assert console.calls[-1] == "stop"
    assert console.calls.count("stop") == 1  # leaving the block stops nothing twice


def test_settings_lock_timeouts_default_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELIA_LOCK_TIMEOUT_S", raising=False)
    monkeypatch.delenv("RELIA_READ_LOCK_TIMEOUT_S", raising=False)
    settings = Settings.from_env()
    assert settings.lock_timeout_s == DEFAULT_LOCK_TIMEOUT_S == 60.0
    assert settings.read_lock_timeout_s == DEFAULT_READ_LOCK_TIMEOUT_S == 30.0
    monkeypatch.setenv("RELIA_LOCK_TIMEOUT_S", "5")
    monkeypatch.setenv("RELIA_READ_LOCK_TIMEOUT_S", "2.5")
    settings = Settings.from_env()
    assert (settings.lock_timeout_s, settings.read_lock_timeout_s) == (5.0, 2.5)
    assert Settings.from_env(read_lock_timeout_s=1.0).read_lock_timeout_s == 1.0


def test_apply_prefect_defaults_keeps_or_overrides(tmp_path: Path) -> None:
    env = {"DO_NOT_TRACK": "0"}
    apply_prefect_defaults(env, home=tmp_path)
    assert env == {**PREFECT_DEFAULTS, "DO_NOT_TRACK": "0", "PREFECT_HOME": str(tmp_path)}
    apply_prefect_defaults(env, home=tmp_path / "other", override=True)
    assert env == {**PREFECT_DEFAULTS, "PREFECT_HOME": str(tmp_path / "other")}
    env = {}
    apply_prefect_defaults(env)
    assert env["PREFECT_HOME"] == str(Path.cwd() / ".prefect")


@pytest.mark.parametrize("given", ["0", "0.5"])
def test_stages_called_without_settings_wait_as_long_as_the_read_setting_says(
    held: tuple[Path, int], monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """A projection from a warehouse and the report's figures open it themselves: they wait
    ``RELIA_READ_LOCK_TIMEOUT_S``, as every other reader does, not a number of their own."""
    import polars as pl

    from pipelines.analysis.project import SweepSpec, run_projection, run_sweep
    from pipelines.report.figures import write_fit_plots
    from pipelines.runtime.settings import read_lock_timeout_s

    db, _ = held
    monkeypatch.setenv("RELIA_READ_LOCK_TIMEOUT_S", given)
    assert read_lock_timeout_s() == float(given)
    waited = f"waited {float(given):g} s"
    with pytest.raises(warehouse.WarehouseBusyError, match=waited):
        run_projection(db, {"n_gpus": 1024}, fit_run="latest")
    spec = SweepSpec(base={}, grid={"n_gpus": [1024]}, target_gpus=1024, from_fits="latest")
    with pytest.raises(warehouse.WarehouseBusyError, match=waited):
        run_sweep(spec, db_path=db, out_dir=db.parent / "sweep")
    with pytest.raises(warehouse.WarehouseBusyError, match=waited):
        write_fit_plots(db, pl.DataFrame(), db.parent / "plots")
