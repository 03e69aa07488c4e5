"""prefect.yaml for real: a Prefect server on loopback, a process worker, a deployment run.

Starts ``prefect server start`` on a free 127.0.0.1 port with a throw-away PREFECT_HOME, creates
the work pool, deploys every deployment from prefect.yaml, starts a process worker and triggers
``weekly-report`` on a small synthetic warehouse; then checks the HTML report and the
artifacts (a link to it and its headline markdown). Everything it started is stopped by
process id.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pipelines import ingest
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).with_name("prefect"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


RETRIED = (429, 502, 503)
"""What Prefect's own client retries (``PREFECT_CLIENT_RETRY_EXTRA_CODES`` aside): a busy server
(its SQLite database locked by another request on a loaded machine) answers 503 for a moment."""


def _api(url: str, path: str, body: dict | None = None) -> object:
    request = urllib.request.Request(
        f"{url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    for delay in (1, 2, 4, 8, 16, 0):
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # loopback only
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            if error.code not in RETRIED or not delay:
                raise
            time.sleep(delay)
    raise AssertionError  # unreachable: the last attempt returns or raises


def _wait(predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(1.0)
    msg = f"timed out after {timeout_s:.0f} s waiting for {what}"
    raise TimeoutError(msg)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process group: TERM, then INT (a Prefect worker needs a second signal), then KILL."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def _started(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield process
        finally:
            _stop(process)


def test_weekly_report_deployment_runs_under_a_worker(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    synthesize(
        landing, SynthConfig(nodes=16, days=35, seed=5, start=datetime(2026, 6, 1, tzinfo=UTC))
    )
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    reports = tmp_path / "reports"
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": api,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_UI_ENABLED": "false",
        "RELIA_PROJECT_DIR": str(REPO),
        "RELIA_DB": str(db),
        "RELIA_REPORTS": str(reports),
        "RELIA_LANDING": str(landing),
    }
    server_cmd = [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with _started(server_cmd, env, tmp_path / "server.log"):
        _wait(lambda: _api(api, "/health") is True, 120, "the Prefect server")
        for command in (
            [PREFECT, "work-pool", "create", "relia-pool", "--type", "process"],
            [PREFECT, "--no-prompt", "deploy", "--all"],
        ):
            subprocess.run(command, env=env, cwd=REPO, check=True, capture_output=True, timeout=120)
        deployments = _api(api, "/deployments/filter", {})
        names = {d["name"] for d in deployments}  # type: ignore[union-attr]
        assert names == {
            "ingest-telemetry-every-15-min",
            "fit-reliability-daily",
            "backtest-goodput-daily",
            "weekly-report-mondays",
            "what-if-on-demand",
        }
        weekly = next(d for d in deployments if d["name"] == "weekly-report-mondays")  # type: ignore[union-attr]
        assert weekly["schedules"][0]["schedule"]["cron"] == "0 6 * * 1"
        worker_cmd = [PREFECT, "worker", "start", "--pool", "relia-pool", "--type", "process"]
        with _started(worker_cmd, env, tmp_path / "worker.log"):
            run = _api(api, f"/deployments/{weekly['id']}/create_flow_run", {"parameters": {}})
            run_id = run["id"]  # type: ignore[index]

            def finished() -> bool:
                state = _api(api, f"/flow_runs/{run_id}")["state"]  # type: ignore[index]
                if state["type"] in {"FAILED", "CRASHED", "CANCELLED"}:
                    logs = (tmp_path / "worker.log").read_text()[-3000:]
                    msg = f"weekly-report ended {state['type']}: {state.get('message')}\n{logs}"
                    raise AssertionError(msg)
                return state["type"] == "COMPLETED"

            _wait(finished, 300, "the weekly-report flow run")
        artifacts = _api(
            api,
            "/artifacts/filter",
            {"artifacts": {"key": {"any_": ["weekly-report", "weekly-report-headline"]}}},
        )
    assert sorted(a["key"] for a in artifacts) == ["weekly-report", "weekly-report-headline"]  # type: ignore[union-attr]
    for artifact in artifacts:  # type: ignore[union-attr]
        assert artifact["type"] == "markdown"  # a link artifact is markdown too
        assert artifact["flow_run_id"] == run_id
    html = list(reports.glob("*.html"))
    assert len(html) == 1
    assert html[0].stat().st_size > 10_000
