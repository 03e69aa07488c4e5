"""One headline per class and fit run, read by every consumer (issue 25 §2).

One ``relia fit`` run on the shared small fleet; each class's headline (point, lower and upper
bound, method) and its rate per 1000 node-days, as given by ``relia fit --json``, the
``rpt_class_rates`` view, the report's data, the rendered HTML class table, the ``fit-mtbf``
table artifact and the ``weekly-report-headline`` markdown artifact, must agree: numbers to the
precision each prints, the open end of a class with no failure null in data and ``≥ x`` in text.
The issue saw one run give three headlines (artifact, HTML, and a second artifact).
"""

from __future__ import annotations

import json
import shutil
import warnings
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from pipelines import warehouse
from pipelines.analysis import fit as fitting
from pipelines.cli import app
from pipelines.report import read_report_data, render_html, render_markdown
from pipelines.report.render import METHOD_WORDS

if TYPE_CHECKING:
    from pathlib import Path

HEADLINE = ("headline_mtbf_h", "headline_mtbf_lo_h", "headline_mtbf_hi_h", "headline_method")
RATE = "rate_per_1000_node_days"


class _ClassTable(HTMLParser):
    """Per row of ``#class-table``: the text of the cells' headline and rate spans."""

    WANTED = ("mtbf-headline", "mtbf-interval", "mtbf-method", "rate-node-days")

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, str]] = {}
        self._in_table = False
        self._row: str | None = None
        self._span: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._in_table = found.get("id") == "class-table"
        elif self._in_table and tag == "tr" and found.get("data-class"):
            self._row = str(found["data-class"])
            self.rows[self._row] = dict.fromkeys(self.WANTED, "")
        elif self._row and tag == "span" and found.get("class") in self.WANTED:
            self._span = found["class"]

    def handle_endtag(self, tag: str) -> None:
        if tag == "span":
            self._span = None
        elif tag == "table":
            self._in_table = False
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row and self._span:
            self.rows[self._row][self._span] += data


def _number(text: str) -> tuple[float, float]:
    """The number written in ``text`` (``67,274 h``, ``2.85``) and half its last digit."""
    digits = text.replace("≥", "").replace("h", "").replace(",", "").strip()
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), 0.5 * 10.0**-decimals


def _shows(text: str, value: float) -> bool:
    """Whether ``text`` shows ``value`` to the precision it prints."""
    number, half = _number(text)
    return abs(number - value) <= half * (1 + 1e-9)


def _markdown_rows(markdown: str) -> dict[str, list[str]]:
    """The rows of the markdown's per-class table (under ``## Failures by component class``)."""
    section = markdown.split("## Failures by component class", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows  # type: ignore[return-value]


@pytest.fixture(scope="module")
def one_run(
    fleet: tuple[Path, Path, dict], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """One ``relia fit`` run on a copy of the shared fleet and what every consumer shows of it."""
    from pipelines.flows import artifacts

    db = tmp_path_factory.mktemp("one-headline") / "relia.duckdb"
    shutil.copy(fleet[0], db)
    with warehouse.connect(db) as con:  # other tests store fit runs in the shared warehouse
        con.execute("delete from fit_rates")
        con.execute("delete from fit_results")
        con.execute("delete from fit_runs")
    result = CliRunner().invoke(app, ["fit", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    run_id = payload["run_id"]
    with warehouse.connect(db, read_only=True) as con:
        view = warehouse.query(
            con, "select * from rpt_class_rates where run_id = $id", {"id": run_id}
        )
        outcome = {
            "run_id": run_id,
            "quantity": "lifetime",
            "lives": "fct_component_lives",
            "rates": fitting.read_rates(con, run_id),
            "results": fitting.read_fit(con, run_id),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = read_report_data(con, target_gpus=(1024,))
    published: dict[str, Any] = {}

    def table_artifact(*, key: str, table: Any, description: str) -> None:
        published[key] = json.loads(json.dumps(table, allow_nan=False))

    def markdown_artifact(*, key: str, markdown: str, description: str) -> None:
        published[key] = markdown

    mp = pytest.MonkeyPatch()
    mp.setattr(artifacts, "create_table_artifact", table_artifact)
    mp.setattr(artifacts, "create_markdown_artifact", markdown_artifact)
    mp.setattr(artifacts, "create_link_artifact", lambda **_: None)
    try:
        artifacts.publish_fit(outcome)
        artifacts.publish_report(db.parent / "report.html", render_markdown(data), "week")
    finally:
        mp.undo()
    parser = _ClassTable()
    parser.feed(render_html(data, {}))
    return {
        "json": {r["component_class"]: r for r in payload["rates"]},
        "view": {r["component_class"]: r for r in view.to_dicts()},
        "data": {r["component_class"]: r for r in data.classes.to_dicts()},
        "data_run": data.fit.run_id,
        "run_id": run_id,
        "html": parser.rows,
        "fit_artifact": {r["component_class"]: r for r in published[artifacts.KEYS["fit_mtbf"]]},
        "markdown": _markdown_rows(published[artifacts.KEYS["weekly_headline"]]),
    }


def test_every_consumer_reads_the_runs_rates(one_run: dict[str, Any]) -> None:
    view = one_run["view"]
    assert one_run["data_run"] == one_run["run_id"]  # the report matched the stored run
    assert any(r["n_failures"] == 0 for r in view.values())  # open ends are in the test
    assert any(r["n_failures"] >= 5 for r in view.values())
    for name in ("json", "data", "html", "fit_artifact", "markdown"):
        assert set(one_run[name]) == set(view), name


def test_data_consumers_give_the_views_numbers(one_run: dict[str, Any]) -> None:
    """JSON, the report's data and the table artifact carry the view's numbers, bit for bit."""
    for cls, row in one_run["view"].items():
        expected = [row[c] for c in (*HEADLINE, RATE)]
        cli = one_run["json"][cls]
        data = one_run["data"][cls]
        artifact = one_run["fit_artifact"][cls]
        assert [cli[c] for c in (*HEADLINE, RATE)] == expected, cls
        assert [data[c] for c in (*HEADLINE, RATE)] == expected, cls
        shown = [artifact[c] for c in ("mtbf_h", "mtbf_lo_h", "mtbf_hi_h", "method", RATE)]
        assert shown == expected, cls
        # one representation of an open end: null, with the method saying why
        if row["n_failures"] == 0:
            assert row["headline_method"] == "chi_square_bound"
            assert row["headline_mtbf_h"] is None
            assert row["headline_mtbf_hi_h"] is None
            assert row["headline_mtbf_lo_h"] > 0
        else:
            assert row["headline_method"] == "observed_rate"
            assert 0 < row["headline_mtbf_lo_h"] < row["headline_mtbf_h"]
            assert row["headline_mtbf_h"] < row["headline_mtbf_hi_h"] < float("inf")


def test_text_consumers_show_the_views_numbers(one_run: dict[str, Any]) -> None:
    """The HTML class table and the markdown artifact show the same numbers as printed."""
    words = {v: k for k, v in METHOD_WORDS.items()}
    for cls, row in one_run["view"].items():
        html = {k: " ".join(v.split()) for k, v in one_run["html"][cls].items()}
        md = one_run["markdown"][cls]
        point, lo, hi, method = (row[c] for c in HEADLINE)
        assert words[html["mtbf-method"]] == words[md["method"]] == method, cls
        assert _shows(html["rate-node-days"], row[RATE]), (cls, html)
        assert _shows(md["per 1000 node-days (95 %)"].split(" (")[0], row[RATE]), (cls, md)
        if point is None:  # the open end: '≥ lower bound' in text
            for text in (html["mtbf-headline"], md["MTBF per unit"]):
                assert text.startswith("≥ "), (cls, text)
                assert _shows(text, lo), (cls, text)
            assert html["mtbf-interval"] == "no failure"
            assert md["95 % CI"] == "one-sided"
            continue
        for text in (html["mtbf-headline"], md["MTBF per unit"]):
            assert _shows(text, point), (cls, text, point)
        for text in (html["mtbf-interval"], md["95 % CI"]):
            shown_lo, shown_hi = text.split(" – ")
            assert _shows(shown_lo, lo), (cls, text, lo)
            assert _shows(shown_hi, hi), (cls, text, hi)
