"""Every command and flow on a warehouse that lacks something (issue #25, section 5).

Six warehouses, built once through the real ingest path (``missing_data_warehouses.py``):
``missing`` (no file yet), ``schema`` (the schema and nothing else), ``ticketless`` (a generated
8-node fleet ingested without its ``repairs/``), ``lifeless`` (a training log only: no host
named, so no unit lives), ``failureless`` (a fleet register, nvidia-smi snapshots and jobs:
units at risk, no failure) and ``jobless`` (the register and snapshots alone: no job).
Each cell runs one command or flow on a fresh copy of one warehouse and states what must happen:
the command does its job (exit 0) and says in its output or report section what is missing, or
it stops with one line naming what is missing and what would supply it (exit 1), leaving no run
behind. Never a traceback, never a DuckDB exception, never default rates without a warning.

The ticket-less cells hold whether or not the views find failures without tickets: a projection
there is asked with ``--default-rates-if-none``, and the cell checks the rates against the fit
run it read (the fit's own rates when it counted failures, else the named defaults with a
warning).
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines import warehouse
from pipelines.cli import app
from pipelines.runtime.errors import MissingDataError, ReliaError, WarehouseMissingError
from tests.pipelines.missing_data_warehouses import KINDS, build

if TYPE_CHECKING:
    from click.testing import Result

runner = CliRunner()
RUN_TABLES = ("fit_runs", "fit_results", "projections", "report_projections", "backtest_runs")
"""Tables a command stores its runs in: a command that fails adds no row to any of them."""
SWEEP = """\
from_fits: latest
target_gpus: 4096
base:
  gpus_per_node: 8
grid:
  n_gpus: [1024, 4096]
  checkpoint_s: [30, 120]
"""
ASK = ("--default-rates-if-none",)
NO_WAREHOUSE = ("no warehouse at", "relia ingest LANDING")
NO_LIVES = ("no unit lives in fct_component_lives", "fleet/ register", "nvidia_smi/")
NO_FIT_NO_LIVES = ("no fit run in the warehouse and no unit lives to fit one from", "fleet/")
NO_JOBS = "no finished job in fct_job_goodput"
NO_FAILURES = (
    "has no failure in any component class",
    "kernel/ logs with Xid lines",
    "--node-failures-per-1000-node-days",
    "--default-rates-if-none",
)


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every warehouse of :data:`KINDS`, built once; cells work on copies."""
    root = tmp_path_factory.mktemp("missing_data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generator's few-failure notes are not the subject
        built = {kind: build(kind, root) for kind in KINDS}
    with duckdb.connect(str(built["lifeless"]), read_only=True) as con:
        assert con.execute("select count(*) from fct_component_lives").fetchone() == (0,)
        assert con.execute("select count(*) from int_fleet_nodes").fetchone() == (0,)
        assert con.execute("select count(*) from raw_training_events").fetchone()[0] > 0  # type: ignore[index]
    with duckdb.connect(str(built["failureless"]), read_only=True) as con:
        # 2 nodes: 16 GPU slots x 4 GPU-level classes + 2 nodes x 11 node-level classes, no
        # failure (the same serials at both snapshots, no job in a hardware-like state)
        assert con.execute(
            "select count(*) > 0, count(*) filter (where failed) from fct_component_lives"
        ).fetchone() == (True, 0)
        assert con.execute("select count(*) from fct_job_goodput").fetchone() == (5,)
    with duckdb.connect(str(built["jobless"]), read_only=True) as con:
        assert con.execute("select count(*) from fct_job_goodput").fetchone() == (0,)
    return built


def _copy(warehouses: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    db = tmp_path / "relia.duckdb"
    if warehouses[kind].exists():
        shutil.copy(warehouses[kind], db)
    return db


def _run_counts(db: Path) -> dict[str, int]:
    """Rows of every run table (0 for a table the file does not have, or no file)."""
    if not db.exists():
        return {}
    with duckdb.connect(str(db), read_only=True) as con:
        present = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        return {
            t: int(con.execute(f"select count(*) from {t}").fetchone()[0])  # type: ignore[index]
            for t in RUN_TABLES
            if t in present
        }


def _no_traceback(result: Result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output


def _flat(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Expect:
    """What one cell must do: its exit code and what it says.

    ``says``: fragments of the one-line error (exit 1) or of the output (exit 0); ``html``:
    fragments of the report it wrote.
    """

    code: int
    says: tuple[str, ...] = ()
    html: tuple[str, ...] = ()


COMMANDS = ("fit", "project", "goodput", "report", "whatif")

CLI_CELLS: dict[tuple[str, str], Expect] = {
    # no file: every command names the path and the ingest that creates it, and creates nothing
    **{(command, "missing"): Expect(1, NO_WAREHOUSE) for command in COMMANDS},
    # a schema only: nothing ingested, nothing to fit, no window
    ("fit", "schema"): Expect(1, ("has no fct_component_lives", "nothing was ingested")),
    ("project", "schema"): Expect(1, NO_FIT_NO_LIVES),
    ("goodput", "schema"): Expect(1, ("has no rpt_observation_window", "relia ingest")),
    ("report", "schema"): Expect(1, ("has no stg_observation_window", "relia ingest")),
    ("whatif", "schema"): Expect(1, NO_FIT_NO_LIVES),
    # no tickets: every command works (with or without failures seen from telemetry)
    ("fit", "ticketless"): Expect(0, ("fit run",)),
    ("project", "ticketless"): Expect(0, ("fit_run_id:",)),
    ("goodput", "ticketless"): Expect(0, ("realised goodput",)),
    ("report", "ticketless"): Expect(
        0,
        ("report:",),
        html=("Goodput projection", "No replacement counts: the warehouse has no repair tickets"),
    ),
    ("whatif", "ticketless"): Expect(0, ("scenarios; table",)),
    # no unit lives (telemetry that names no host): no fit, no projection from fits; goodput and
    # the report do their job and say what is missing in the back-test and the report's sections
    ("fit", "lifeless"): Expect(1, NO_LIVES),
    ("project", "lifeless"): Expect(1, NO_FIT_NO_LIVES),
    ("goodput", "lifeless"): Expect(
        0, ("back-test: not run: no unit lives in fct_component_lives",)
    ),
    ("report", "lifeless"): Expect(
        0,
        ("report:", "Fits: none, no unit lives in fct_component_lives"),
        html=(
            "No projection: no unit lives in fct_component_lives",
            "No back-test: no unit lives in fct_component_lives",
            "Fits: none, no unit lives in fct_component_lives",
        ),
    ),
    ("whatif", "lifeless"): Expect(1, NO_FIT_NO_LIVES),
    # units at risk and jobs, no failure: the fit works (bounds only); a projection from it stops
    # (no rate to project from) unless defaults are asked for; the back-test expects nothing
    ("fit", "failureless"): Expect(0, ("fit run", "no failure in any class in the window")),
    ("project", "failureless"): Expect(1, NO_FAILURES),
    ("goodput", "failureless"): Expect(0, ("nothing expected",)),
    ("report", "failureless"): Expect(
        0,
        ("report:",),
        html=("No projection: fit run", "has no failure in any component class"),
    ),
    ("whatif", "failureless"): Expect(1, NO_FAILURES),
    # units at risk and no job: no goodput to measure nor back-test, said in place
    ("goodput", "jobless"): Expect(
        0, ("no realised goodput yet", f"back-test: not run: {NO_JOBS}")
    ),
    ("report", "jobless"): Expect(0, ("report:",), html=(f"No back-test: {NO_JOBS}",)),
}


def _args(command: str, kind: str, tmp_path: Path) -> list[str]:
    if command == "project":
        args = ["project", "--gpus", "1024", "--samples", "0", "--from-fits", "latest"]
    elif command == "whatif":
        sweep = tmp_path / "sweep.yaml"
        sweep.write_text(SWEEP)
        args = ["whatif", str(sweep), "--out", str(tmp_path / "whatif")]
    elif command == "report":
        args = ["report", "--reports-dir", str(tmp_path / "reports")]
    else:
        args = [command]
    if command in ("project", "whatif") and kind == "ticketless":
        args.append("--default-rates-if-none")
    return args


@pytest.mark.parametrize(
    ("command", "kind"), list(CLI_CELLS), ids=[f"{c}-{k}" for c, k in CLI_CELLS]
)
def test_command_on_a_warehouse_that_lacks_something(
    warehouses: dict[str, Path], tmp_path: Path, command: str, kind: str
) -> None:
    expect = CLI_CELLS[command, kind]
    db = _copy(warehouses, kind, tmp_path)
    if command in ("project", "whatif") and db.exists():
        runner.invoke(app, ["fit", "--db", str(db)])  # what a user runs first; may fail
    before = _run_counts(db)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few-failure notes of the fits
        result = runner.invoke(app, [*_args(command, kind, tmp_path), "--db", str(db)])
    _no_traceback(result)
    assert result.exit_code == expect.code, result.output
    if expect.code:
        [line] = [ln for ln in result.output.splitlines() if ln.strip()]
        assert line.startswith("error: ")
        for fragment in expect.says:
            assert fragment in line, line
        assert _run_counts(db) == before  # nothing half-written
        assert db.exists() == (kind != "missing")  # no empty warehouse made on the way
        return
    for fragment in expect.says:
        assert fragment in _flat(result.output), result.output
    if expect.html:
        [page] = (tmp_path / "reports").glob("*.html")
        text = _flat(page.read_text())
        for fragment in expect.html:
            assert fragment in text


def _latest_fit_failures(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        (n,) = con.execute(
            "select coalesce(sum(n_failures), 0) from fit_results where chosen and run_id = "
            "(select run_id from fit_runs order by created_at desc limit 1)"
        ).fetchone() or (0,)
    return int(n)


@pytest.mark.parametrize("kind", ["ticketless", "failureless"])
def test_project_default_rates_only_when_asked_and_named(
    warehouses: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    """With --default-rates-if-none, a fit with failures still gives its own rates; one without
    gives Meta RSC-1's with a warning on stderr and ``rates_warning`` in the JSON that name them
    and the fit run."""
    db = _copy(warehouses, kind, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert runner.invoke(app, ["fit", "--db", str(db)]).exit_code == 0
    args = ["project", "--gpus", "1024", "--samples", "0", "--from-fits", "latest"]
    result = runner.invoke(app, [*args, "--default-rates-if-none", "--json", "--db", str(db)])
    _no_traceback(result)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    if _latest_fit_failures(db):  # a ticket-less fleet whose telemetry shows failures
        assert payload["rate_source"].startswith(
            f"fit run {payload['fit_run_id']}: interruption rates of the failure process"
        )
        assert payload["rate_process"] == "failure"
        assert "rates_warning" not in payload
        assert "warning:" not in result.stderr
        return
    assert payload["rate_source"].startswith("default: Meta RSC-1, 6.5 node failures")
    warning = payload["rates_warning"]
    assert warning.startswith(f"fit run {payload['fit_run_id']} has no failure")
    assert warning.endswith(payload["rate_source"])
    assert _flat(result.stderr) == f"warning: {warning}"
    # the same through whatif, whose sweep reads the same fit
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(SWEEP)
    out = runner.invoke(
        app,
        ["whatif", str(sweep), "--out", str(tmp_path / "w"), "--json", "--db", str(db), *ASK],
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["rates_warning"] == warning


def test_failureless_back_test_says_nothing_expected_instead_of_an_interval(
    warehouses: dict[str, Path], tmp_path: Path
) -> None:
    """No failure before any job: every back-test row expected 0 interruptions, so its verdict
    is "nothing expected" and its predicted goodput carries no interval (JSON null, CSV empty),
    while the point prediction and the measured goodput stay."""
    db = _copy(warehouses, "failureless", tmp_path)
    result = runner.invoke(app, ["goodput", "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["backtest_missing"] is None
    rows = payload["backtest"]
    # the five hand-written jobs: 16, 8, 8, 8 and 16 GPUs, all started in the window's halves
    assert {(r["bucket"], r["period"]) for r in rows} >= {("all", "all"), ("9-64", "all")}
    for row in rows:
        assert row["interruptions_expected"] == 0.0
        assert row["interruptions_observed"] == 0
        assert row["verdict"] == "nothing expected"
        assert (row["goodput_predicted_lo"], row["goodput_predicted_hi"]) == (None, None)
        assert 0.0 < row["goodput_predicted"] <= 1.0
        assert 0.0 < row["goodput_measured"] <= 1.0
    csv = runner.invoke(
        app, ["goodput", "--stored", "--format", "csv", "--table", "backtest", "--db", str(db)]
    )
    header, first = csv.stdout.splitlines()[:2]
    cells = dict(zip(header.split(","), first.split(","), strict=True))
    assert (cells["goodput_predicted_lo"], cells["verdict"]) == ("", "nothing expected")


def test_lifeless_report_then_project_names_the_missing_lives(
    warehouses: dict[str, Path], tmp_path: Path
) -> None:
    """The issue's sequence: a report on a warehouse without unit lives once stored an empty fit
    run, after which ``project --from-fits latest`` blamed ``--by``. The report stores no run
    now, and the projection names the missing lives."""
    db = _copy(warehouses, "lifeless", tmp_path)
    report = runner.invoke(app, ["report", "--reports-dir", str(tmp_path), "--db", str(db)])
    assert report.exit_code == 0, report.output
    assert _run_counts(db)["fit_runs"] == 0
    args = ["project", "--samples", "0", "--from-fits", "latest", "--db", str(db)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert "--by" not in result.output
    assert "no fit run in the warehouse and no unit lives to fit one from" in result.output


def test_an_empty_fit_run_of_an_older_relia_says_what_it_lacks(
    warehouses: dict[str, Path], tmp_path: Path
) -> None:
    """A fit run with no row (stored by a relia before issue #25) is named as such, not as a
    run split by cohort."""
    db = _copy(warehouses, "failureless", tmp_path)
    with warehouse.connect(db) as con:
        con.execute(
            "insert into fit_runs (run_id, created_at, by_columns, versions, lives) "
            "values ('20260101T000000Z-empty', now(), '', '{}', 'fct_component_lives')"
        )
    args = ["project", "--samples", "0", "--from-fits", "latest", "--db", str(db)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: fit run 20260101T000000Z-empty has no rows")
    assert "run `relia fit`" in line
    assert "--by" not in line


def test_a_report_stage_that_fails_leaves_no_run_behind(
    warehouses: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's fit, projection and back-test are stored in one transaction: when the last
    stage fails, the fit run and the projection made before it are rolled back."""
    from pipelines.analysis import backtest
    from pipelines.report.inputs import refresh_warehouse

    db = _copy(warehouses, "failureless", tmp_path)
    before = _run_counts(db)

    def broken(*args: Any, **kwargs: Any) -> None:
        msg = "back-test broke"
        raise RuntimeError(msg)

    monkeypatch.setattr(backtest, "run_backtest", broken)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="back-test broke"):
            refresh_warehouse(db, lock_timeout_s=5.0)
    assert _run_counts(db) == before
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids = refresh_warehouse(db, lock_timeout_s=5.0)
    after = _run_counts(db)
    assert all(ids.values())  # fit, projection (saying what is missing) and back-test stored
    assert {t: after[t] - before[t] for t in ("fit_runs", "report_projections")} == {
        "fit_runs": 1,
        "report_projections": 1,
    }


# --- flows ---------------------------------------------------------------------------------------

FLOWS = ("fit-reliability", "weekly-report", "what-if", "backtest-goodput")


@dataclass(frozen=True)
class FlowExpect:
    """What a flow run must do: raise ``error`` (one line with ``says``) or return."""

    error: type[ReliaError] | None
    says: tuple[str, ...] = ()


FLOW_CELLS: dict[tuple[str, str], FlowExpect] = {
    # no file: the first step says what to run first, and no file is created
    **{(flow, "missing"): FlowExpect(WarehouseMissingError, NO_WAREHOUSE) for flow in FLOWS},
    # a schema only (the README's recipe on a fresh machine): the views are created, then the
    # stage says which data is missing, never a DuckDB CatalogException
    ("fit-reliability", "schema"): FlowExpect(MissingDataError, NO_LIVES),
    ("weekly-report", "schema"): FlowExpect(ReliaError, ("the warehouse has no telemetry",)),
    ("what-if", "schema"): FlowExpect(MissingDataError, NO_FIT_NO_LIVES),
    ("backtest-goodput", "schema"): FlowExpect(MissingDataError, NO_LIVES),
    ("fit-reliability", "ticketless"): FlowExpect(None),
    ("weekly-report", "ticketless"): FlowExpect(None),
    ("what-if", "ticketless"): FlowExpect(None),
    ("backtest-goodput", "ticketless"): FlowExpect(None),
    ("fit-reliability", "lifeless"): FlowExpect(MissingDataError, NO_LIVES),
    ("weekly-report", "lifeless"): FlowExpect(
        None, ("No projection: no unit lives", "No back-test: no unit lives")
    ),
    ("what-if", "lifeless"): FlowExpect(MissingDataError, NO_FIT_NO_LIVES),
    ("backtest-goodput", "lifeless"): FlowExpect(MissingDataError, NO_LIVES),
    ("fit-reliability", "failureless"): FlowExpect(None),
    ("weekly-report", "failureless"): FlowExpect(None, ("No projection: fit run",)),
    ("what-if", "failureless"): FlowExpect(MissingDataError, NO_FAILURES),
    ("backtest-goodput", "failureless"): FlowExpect(None),
    ("backtest-goodput", "jobless"): FlowExpect(MissingDataError, (NO_JOBS, "slurm/")),
}


def _flow(name: str, db: Path, tmp_path: Path, kind: str) -> Any:
    from pipelines.flows.backtest_goodput import backtest_goodput
    from pipelines.flows.fit_reliability import fit_reliability
    from pipelines.flows.weekly_report import weekly_report
    from pipelines.flows.what_if import what_if

    if name == "fit-reliability":
        return fit_reliability(db_path=db)
    if name == "weekly-report":
        return weekly_report(db_path=db, reports_dir=tmp_path / "reports")
    if name == "backtest-goodput":
        return backtest_goodput(db_path=db)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(SWEEP)
    if db.exists():  # the daily fit-reliability run before an on-demand what-if
        runner.invoke(app, ["fit", "--db", str(db)])
    return what_if(
        sweep_file=sweep,
        out_dir=tmp_path / "whatif",
        db_path=db,
        default_rates_if_none=kind == "ticketless",
    )


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.parametrize(
    ("flow", "kind"), list(FLOW_CELLS), ids=[f"{f}-{k}" for f, k in FLOW_CELLS]
)
def test_flow_run_on_a_warehouse_that_lacks_something(
    prefect_harness: None, warehouses: dict[str, Path], tmp_path: Path, flow: str, kind: str
) -> None:
    """Each flow as a real flow run under the harness (what a deployment runs)."""
    expect = FLOW_CELLS[flow, kind]
    db = _copy(warehouses, kind, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if expect.error is None:
            result = _flow(flow, db, tmp_path, kind)
        else:
            with pytest.raises(expect.error) as raised:
                _flow(flow, db, tmp_path, kind)
    if expect.error is not None:
        message = str(raised.value)
        assert "\n" not in message
        assert not isinstance(raised.value, duckdb.Error)
        for fragment in expect.says:
            assert fragment in message, message
        assert db.exists() == (kind != "missing")
        return
    assert result
    if flow == "weekly-report":
        text = _flat(Path(result).read_text())
        for fragment in expect.says:
            assert fragment in text
