"""The weekly report in a real browser: Debian's headless Chromium driven by chromedriver.

chromedriver speaks the W3C WebDriver protocol over loopback HTTP, so the test drives it with
``urllib`` (no selenium). The page must show every section heading, load every image from its
inline data URI, fetch nothing over the network and log no console error. A full-page screenshot
is written next to the report. The test fails, and does not skip, when the browser is missing:
CI installs it with ``apt-get install -y chromium chromium-driver``.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pipelines.report import SECTIONS, build_report

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from pipelines.report import ReportResult

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1280,1000",
]
MISSING = (
    "headless Chromium is needed for this test: install it with "
    "`apt-get install -y chromium chromium-driver` (Debian), which provides {path}"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class WebDriver:
    """A minimal W3C WebDriver client for one chromedriver session over loopback HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session: str | None = None

    def call(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        """Send one command and return its ``value``; raise with chromedriver's message."""
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            msg = f"WebDriver {method} {path} failed: {detail}"
            raise RuntimeError(msg) from error

    def start(self, user_data_dir: Path) -> None:
        """Open a session on a fresh Chromium profile with browser logging enabled."""
        capabilities = {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [*CHROMIUM_ARGS, f"--user-data-dir={user_data_dir}"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }
        value = self.call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})
        self.session = value["sessionId"]

    def command(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        """A command inside the session."""
        return self.call(method, f"/session/{self.session}{path}", payload)

    def script(self, body: str) -> Any:
        """Run synchronous JavaScript in the page (the page itself has none)."""
        return self.command("POST", "/execute/sync", {"script": body, "args": []})

    def _capture(self, x: float, y: float, width: float, height: float) -> bytes:
        shot = self.command(
            "POST",
            "/goog/cdp/execute",
            {
                "cmd": "Page.captureScreenshot",
                "params": {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": x, "y": y, "width": width, "height": height, "scale": 1},
                },
            },
        )
        return base64.b64decode(shot["data"])

    def full_page_png(self) -> bytes:
        """A screenshot of the whole page, beyond the viewport (Chrome DevTools protocol)."""
        width, height = self.script(
            "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        return self._capture(0, 0, width, height)

    def element_png(self, css: str) -> bytes:
        """A screenshot of the whole first element matching ``css``, however tall."""
        x, y, width, height = self.script(
            f"const r = document.querySelector({json.dumps(css)}).getBoundingClientRect();"
            "return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]"
        )
        return self._capture(x, y, width, height)

    def browser_log(self) -> list[dict[str, Any]]:
        """Console and page errors logged since the last call."""
        return list(self.command("POST", "/se/log", {"type": "browser"}))


@contextmanager
def chromium(tmp_path: Path) -> Iterator[WebDriver]:
    """Start chromedriver and one headless Chromium session; stop both afterwards."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            pytest.fail(MISSING.format(path=path))
    port = _free_port()
    log_file = (tmp_path / "chromedriver.log").open("w")
    process = subprocess.Popen(
        [CHROMEDRIVER, f"--port={port}", "--allowed-ips=127.0.0.1"],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    driver = WebDriver(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if driver.call("GET", "/status").get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError, RuntimeError):
                pass
            if time.monotonic() > deadline:
                pytest.fail("chromedriver did not become ready within 30 s")
            time.sleep(0.2)
        driver.start(tmp_path / "chromium-profile")
        yield driver
    finally:
        if driver.session is not None:
            with suppress(urllib.error.URLError, RuntimeError):
                driver.call("DELETE", f"/session/{driver.session}")
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log_file.close()


@dataclass(frozen=True)
class PageCheck:
    """What the browser saw."""

    headings: list[str]
    n_images: int
    n_broken_images: int
    n_resources: int
    errors: list[str]
    screenshot: bytes


def check_page(driver: WebDriver, report: Path) -> PageCheck:
    """Open ``report`` and collect headings, image state, network use, console errors."""
    driver.command("POST", "/url", {"url": report.resolve().as_uri()})
    driver.script("return document.readyState")
    headings = driver.script(
        "return Array.from(document.querySelectorAll('section > h2'))"
        ".map(h => h.textContent.trim())"
    )
    n_images, n_broken = driver.script(
        "const imgs = Array.from(document.images);"
        "return [imgs.length, imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length]"
    )
    n_resources = driver.script("return performance.getEntriesByType('resource').length")
    screenshot = driver.full_page_png()
    errors = [
        f"{entry.get('level')}: {entry.get('message')}"
        for entry in driver.browser_log()
        if entry.get("level") in ("SEVERE", "ERROR")
    ]
    return PageCheck(headings, n_images, n_broken, n_resources, errors, screenshot)


@pytest.fixture(scope="module")
def report(
    fleet: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory
) -> ReportResult:
    root = tmp_path_factory.mktemp("browser-report")
    db = root / "relia.duckdb"
    shutil.copy(fleet[0], db)  # the shared warehouse stays untouched by this module
    return build_report(db, week=None, reports_dir=root / "reports")


@pytest.mark.slow
def test_report_renders_in_headless_chromium(report: ReportResult, tmp_path: Path) -> None:
    with chromium(tmp_path) as driver:
        page = check_page(driver, report.path)
    shot = report.path.with_suffix(".png")
    shot.write_bytes(page.screenshot)

    assert page.errors == []
    for number, (_anchor, title) in enumerate(SECTIONS, start=1):
        assert f"{number}.{title}" in page.headings
    assert page.n_images >= 4
    assert page.n_broken_images == 0
    assert page.n_resources == 0  # inline data URIs only: nothing fetched
    assert page.screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(page.screenshot) > 50_000


@pytest.mark.slow
def test_probability_plots_show_and_load(
    report: ReportResult, fleet: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    import duckdb

    from pipelines.report import MIN_PLOT_FAILURES

    with duckdb.connect(str(fleet[0]), read_only=True) as con:
        [(n_classes,)] = con.execute(
            "select count(*) from (select component_class from fct_component_lives "
            "group by 1 having count(*) filter (where failed) >= $n)",
            {"n": MIN_PLOT_FAILURES},
        ).fetchall()
    with chromium(tmp_path) as driver:
        driver.command("POST", "/url", {"url": report.path.resolve().as_uri()})
        papers, n_broken, widths = driver.script(
            "const imgs = Array.from("
            "document.querySelectorAll('#survival #probability-plots img'));"
            "return [imgs.map(i => i.dataset.paper),"
            " imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length,"
            " imgs.map(i => i.naturalWidth)]"
        )
        sources = driver.script(
            "return Array.from(document.querySelectorAll('#probability-plots img'))"
            ".map(i => i.getAttribute('src').slice(0, 22))"
        )
        errors = [e for e in driver.browser_log() if e.get("level") in ("SEVERE", "ERROR")]
        shot = driver.element_png("#probability-plots")
    (tmp_path / "probability.png").write_bytes(shot)
    assert n_classes >= 1
    assert sorted(papers) == sorted(["weibull", "lognormal"] * n_classes)
    assert n_broken == 0
    assert min(widths) > 200
    assert set(sources) == {"data:image/png;base64,"}
    assert errors == []
    assert shot.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.slow
def test_class_table_shows_rates_headline_mtbf_and_the_lifetime_mean(
    report: ReportResult, fleet: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    import duckdb

    # the observed AFR, from the unit lives by hand: 100 x failures per unit-year of exposure
    with duckdb.connect(str(fleet[0]), read_only=True) as con:
        counts = con.execute(
            "select component_class, count(*) filter (where failed), sum(exit_h - entry_h) "
            "from fct_component_lives group by 1"
        ).fetchall()
    expected = {name: (n, 100.0 * n / (hours / 8766.0)) for name, n, hours in counts}
    with chromium(tmp_path) as driver:
        driver.command("POST", "/url", {"url": report.path.resolve().as_uri()})
        rows = driver.script(
            "return Array.from(document.querySelectorAll('#class-table tbody tr')).map(r => ["
            " r.cells[0].textContent.trim(),"
            " r.querySelector('.afr-observed').textContent.trim(),"
            " r.querySelector('.mtbf-cell').textContent.trim(),"
            " r.querySelector('.extrapolation').textContent.trim()])"
        )
        note = driver.script("return document.querySelector('#class-method-note').innerText")
        heads = driver.script(
            "return Array.from(document.querySelectorAll('#class-table th'))"
            ".map(h => h.textContent.trim())"
        )
        replacements = driver.script("return document.querySelector('#replacement-table') !== null")
        errors = [e for e in driver.browser_log() if e.get("level") in ("SEVERE", "ERROR")]
    assert errors == []
    assert {
        "Per 1000 node-days",
        "Per million GPU-hours",
        "AFR observed",
        "MTBF per unit (headline)",
        "Trend",
        "Lifetime mean (model)",
    } <= set(heads)
    assert replacements  # the shared fleet has repair tickets: replacements shown apart
    assert all(afr for _, afr, _, _ in rows)
    assert {r[0] for r in rows} == set(expected)
    for name, afr, mtbf, lifetime in rows:
        n, observed = expected[name]
        assert afr == f"{observed:.2f} %", name
        # the headline is the observed rate; with no failure its one-sided bound, '≥ x'
        shown = " ".join(mtbf.split())
        if n == 0:
            assert shown.startswith("≥ "), (name, shown)
            assert "(one-sided bound)" in shown, (name, shown)
        else:
            assert "(observed rate)" in shown, (name, shown)
        # the lifetime mean is beside it, as a model
        assert "mean" in lifetime, (name, lifetime)
    # the default fleet is young against its classes' mean lives: most lifetime means are
    # extrapolated
    assert sum("extrapolated" in r[3] for r in rows) >= 3
    assert "Turek" in note
    assert "model quantity" in note


@pytest.mark.slow
def test_no_table_is_wider_than_its_section(report: ReportResult, tmp_path: Path) -> None:
    with chromium(tmp_path) as driver:
        driver.command("POST", "/url", {"url": report.path.resolve().as_uri()})
        overflowing = driver.script(
            "return Array.from(document.querySelectorAll('table')).map(t => {"
            " const s = t.closest('section'); const cs = getComputedStyle(s);"
            " const right = s.getBoundingClientRect().right - parseFloat(cs.paddingRight);"
            " const over = t.getBoundingClientRect().right - right;"
            " return [t.id || t.parentElement.id, Math.round(over)];"
            "}).filter(x => x[1] > 0)"
        )
    assert overflowing == []
