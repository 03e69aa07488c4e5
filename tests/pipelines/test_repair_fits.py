"""Repair-time (MTTR) fits: `relia fit --lives <repair view>`, their storage and their readers."""

from __future__ import annotations

import csv
import json
import math
import warnings
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import duckdb
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

from models.exceptions import FewFailuresWarning
from pipelines import ingest, warehouse
from pipelines.analysis import fit, project
from pipelines.cli import app
from synth import SynthConfig, synthesize
from synth.config import ClassSpec

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()

# Short lives and long history: every unit renews a few times between its install (about 120 and
# 400 days before the window) and the window end, so the tickets hold hundreds of repairs.
REPAIR_SIGMA = 0.6
CLASSES = {  # every failure replaced: each repair is on a ticket
    "gpu": ClassSpec("gpu", 1.0, 2_000.0, 10.0, fixes={"replace": 1.0}),
    "nic": ClassSpec("node", 1.0, 2_000.0, 6.0, fixes={"replace": 1.0}),
}
CONFIG = SynthConfig(
    nodes=24,
    gpus_per_node=8,
    days=30,
    seed=11,
    start=datetime(2026, 3, 2, tzinfo=UTC),
    classes=CLASSES,
    repair_sigma=REPAIR_SIGMA,
    node_events=True,
)


@pytest.fixture(scope="module")
def repair_fleet(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A fleet with node events, ingested; a lifetime run stored first, then repair runs."""
    root = tmp_path_factory.mktemp("repair_fleet")
    landing = root / "landing"
    truth = synthesize(landing, CONFIG)
    db = root / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        lifetime = fit.run_fit(db)
        tickets = fit.run_fit(db, lives="stg_repairs")
        outages = fit.run_fit(db, lives="int_node_unavailability")
    return {
        "db": db,
        "landing": landing,
        "truth": truth,
        "lifetime": lifetime,
        "tickets": tickets,
        "outages": outages,
    }


def _ticket_rows(landing: Path) -> list[dict[str, str]]:
    """The landing tickets.csv read with the csv module: the well-formed replacement tickets."""
    with (landing / "repairs" / "tickets.csv").open(newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["action"] == "replace"]


def test_ticket_runs_count_every_replacement_ticket(repair_fleet: dict) -> None:
    rows = _ticket_rows(repair_fleet["landing"])
    results = repair_fleet["tickets"]["results"].filter(pl.col("family") == "exponential")
    for component_class in [*CLASSES, fit.POOLED_CLASS]:
        mine = [r for r in rows if component_class in (fit.POOLED_CLASS, r["component_class"])]
        row = results.filter(pl.col("component_class") == component_class).row(0, named=True)
        assert row["n_units"] == len(mine)
        assert row["n_failures"] == sum(1 for r in mine if r["closed"])
    counts = repair_fleet["tickets"]["repairs"]
    assert counts["n_repairs"] == len(rows)
    assert counts["n_open"] == sum(1 for r in rows if not r["closed"]) > 0
    assert counts["n_open_no_age"] == counts["n_no_length"] == counts["n_before_window"] == 0


@pytest.mark.parametrize("component_class", list(CLASSES))
def test_ticket_lognormal_recovers_the_generator_repair_law(
    repair_fleet: dict, component_class: str
) -> None:
    """Repairs are median * exp(sigma * Z) with a 1 h floor (about 3e-4 of draws at the lowest
    median here): the log-normal's mean lies in the fitted MTTR interval, and its median and sigma
    in intervals from the normal approximation of the log-normal MLE."""
    spec = CLASSES[component_class]
    row = (
        repair_fleet["tickets"]["results"]
        .filter((pl.col("component_class") == component_class) & (pl.col("family") == "lognormal"))
        .row(0, named=True)
    )
    params = json.loads(row["params_json"])
    true_mean_h = spec.repair_median_h * math.exp(REPAIR_SIGMA**2 / 2)
    assert row["mtbf_lo_h"] <= true_mean_h <= row["mtbf_hi_h"]
    n = row["n_failures"]
    z = stats.norm.ppf(0.995)
    mu_half = z * params["sigma_"] / math.sqrt(n)
    assert abs(params["mu_"] - math.log(spec.repair_median_h)) <= mu_half
    assert abs(params["sigma_"] - REPAIR_SIGMA) <= z * REPAIR_SIGMA / math.sqrt(2 * n)


def test_node_outage_runs_match_the_generator_outages(repair_fleet: dict) -> None:
    """Every merged outage of the Slurm node events is one repair of its class (planned work is
    its own class; the generator's truth counts it under 'maintenance'), open ones censored."""
    truth = repair_fleet["truth"]["node_unavailability"]
    results = repair_fleet["outages"]["results"].filter(pl.col("family") == "exponential")
    got: dict[str, list[int]] = {}
    for row in results.filter(pl.col("component_class") != fit.POOLED_CLASS).iter_rows(named=True):
        cls = "maintenance" if row["component_class"] == "planned" else row["component_class"]
        got.setdefault(cls, [0, 0])
        got[cls][0] += row["n_units"]
        got[cls][1] += row["n_failures"]
    assert got == {c: [t["n_outages"], t["n_closed"]] for c, t in truth.items()}
    with duckdb.connect(str(repair_fleet["db"]), read_only=True) as con:
        closed_s = dict(
            con.execute(
                "select case when component_class = 'planned' then 'maintenance' "
                "else component_class end, sum(exit_h) * 3600 from int_repair_lives "
                "where lives_view = 'int_node_unavailability' and failed group by 1"
            ).fetchall()
        )
    for cls, t in truth.items():
        assert closed_s.get(cls, 0.0) == pytest.approx(t["repair_s"], abs=1e-3)
    pool = results.filter(pl.col("component_class") == fit.POOLED_CLASS).row(0, named=True)
    planned = results.filter(pl.col("component_class") == "planned")
    assert pool["n_units"] == sum(t["n_outages"] for t in truth.values()) - planned["n_units"].sum()


def test_runs_store_their_lives_view_and_quantity(repair_fleet: dict) -> None:
    with warehouse.connect(repair_fleet["db"], read_only=True) as con:
        lives = dict(con.execute("select run_id, lives from fit_runs").fetchall())
        assert fit.latest_run_id(con) == repair_fleet["lifetime"]["run_id"]
        assert fit.latest_run_id(con, quantity="repair_time") == repair_fleet["outages"]["run_id"]
        assert fit.latest_run_id(con, lives="stg_repairs") == repair_fleet["tickets"]["run_id"]
    assert lives[repair_fleet["lifetime"]["run_id"]] == "fct_component_lives"
    assert lives[repair_fleet["tickets"]["run_id"]] == "stg_repairs"
    assert repair_fleet["tickets"]["quantity"] == "repair_time"
    assert repair_fleet["lifetime"]["quantity"] == "lifetime"


def test_old_warehouse_gains_the_lives_column(tmp_path: Path) -> None:
    """A fit_runs table made before the column existed gets it; its runs count as lifetimes."""
    db = tmp_path / "old.duckdb"
    with warehouse.connect(db) as con:
        con.execute(
            "create table fit_runs (run_id varchar primary key, created_at timestamptz not null, "
            "window_start timestamptz, window_end timestamptz, by_columns varchar, "
            "versions varchar)"
        )
        con.execute("insert into fit_runs values ('old-run', now(), null, null, '', '{}')")
        assert fit.latest_run_id(con) == "old-run"  # no lives column yet: a lifetime run
        assert fit.latest_run_id(con, quantity="repair_time") is None
        warehouse.apply_schema(con)
        columns = [r[0] for r in con.execute("describe fit_runs").fetchall()]
        assert "lives" in columns
        assert fit.latest_run_id(con) == "old-run"


def test_cli_fit_repairs_says_mttr(repair_fleet: dict) -> None:
    db = str(repair_fleet["db"])
    result = runner.invoke(app, ["fit", "--db", db, "--lives", "stg_repairs", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["quantity"] == "repair_time"
    assert payload["mean"] == "MTTR"
    assert payload["lives"] == "stg_repairs"
    assert {r["component_class"] for r in payload["fits"]} == {*CLASSES, fit.POOLED_CLASS}
    assert all("mttr_h" in r and "mtbf_h" not in r for r in payload["fits"])
    table = runner.invoke(app, ["fit", "--db", db, "--lives", "stg_repairs"])
    assert table.exit_code == 0, table.output
    assert "MTTR" in table.stdout
    assert "MTBF" not in table.stdout
    lifetime = json.loads(runner.invoke(app, ["fit", "--db", db, "--json"]).stdout)
    assert lifetime["quantity"] == "lifetime"
    assert lifetime["mean"] == "MTBF"


def test_cli_unknown_lives_is_one_line_listing_the_views(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fit", "--db", str(tmp_path / "w.duckdb"), "--lives", "repairs"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for view in (
        "fct_component_lives",
        "int_fault_lives",
        "int_fault_repairs",
        "int_node_unavailability",
        "stg_repairs",
    ):
        assert view in lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "w.duckdb").exists()


def _newest(db: Path, views: tuple[str, ...]) -> str:
    """The newest stored run on one of ``views``, straight from SQL."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "select run_id from fit_runs where list_contains($views, lives) "
            "order by created_at desc limit 1",
            {"views": list(views)},
        ).fetchone()
    assert row is not None
    return row[0]


def _newer_repair_run(db: Path) -> tuple[str, str]:
    """Store a repair run now: ``(newest lifetime run, that repair run)``."""
    repair = _small_fit(db, "int_node_unavailability")["run_id"]
    lifetime = _newest(db, ("fct_component_lives",))
    assert _newest(db, ("fct_component_lives", "int_node_unavailability")) == repair
    return lifetime, repair


def test_from_fits_latest_ignores_newer_repair_runs(repair_fleet: dict) -> None:
    db = str(repair_fleet["db"])
    lifetime, _ = _newer_repair_run(repair_fleet["db"])
    result = runner.invoke(
        app, ["project", "--db", db, "--from-fits", "latest", "--samples", "0", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["fit_run_id"] == lifetime
    wrong = runner.invoke(
        app, ["project", "--db", db, "--from-fits", repair_fleet["tickets"]["run_id"]]
    )
    assert wrong.exit_code == 2
    assert len(wrong.stderr.strip().splitlines()) == 1
    assert "repair" in wrong.stderr


def test_report_reads_lifetime_runs_only(repair_fleet: dict) -> None:
    from pipelines.report.inputs import read_fits
    from pipelines.report.period import Notes

    lifetime, _ = _newer_repair_run(repair_fleet["db"])
    with warehouse.connect(repair_fleet["db"], read_only=True) as con:
        lives = fit.read_lives(con)
        rows, info = read_fits(con, lives, Notes())
    assert info.run_id == lifetime
    assert fit.POOLED_CLASS not in set(rows["component_class"])


def _pooled_lognormal(db: Path, run_id: str) -> tuple[float, float, float, float]:
    """``(mu_, sigma_, mtbf_lo_h, mtbf_hi_h)`` of a run's pooled log-normal, straight from SQL."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "select cast(params_json ->> 'mu_' as double), "
            "cast(params_json ->> 'sigma_' as double), mtbf_lo_h, mtbf_hi_h from fit_results "
            "where run_id = $id and component_class = 'all' and cohort = 'all' "
            "and family = 'lognormal'",
            {"id": run_id},
        ).fetchone()
    assert row is not None
    return row


def test_repair_from_fits_sets_the_repair_law(repair_fleet: dict) -> None:
    db = repair_fleet["db"]
    args = ["project", "--db", str(db), "--strategy", "hot_spare", "--hot-spares", "4"]
    _newer_repair_run(db)
    latest = _newest(db, fit.REPAIR_VIEWS)
    for given, run_id in (("latest", latest), (repair_fleet["tickets"]["run_id"],) * 2):
        mu, sigma, lo, hi = _pooled_lognormal(db, run_id)
        result = runner.invoke(
            app, [*args, "--repair-from-fits", given, "--samples", "0", "--json"]
        )
        assert result.exit_code == 0, result.output
        payload = json.loads(result.stdout)
        assert payload["scenario"]["repair_h"] == pytest.approx(math.exp(mu), rel=1e-12)
        assert payload["scenario"]["repair_sigma"] == pytest.approx(sigma, rel=1e-12)
        fitted = payload["fitted_repair"]
        assert fitted["run_id"] == run_id
        assert fitted["mttr_lo_h"] == pytest.approx(lo)
        assert fitted["mttr_hi_h"] == pytest.approx(hi)
        assert fitted["mttr_lo_h"] <= fitted["mttr_h"] <= fitted["mttr_hi_h"]
    text = runner.invoke(app, [*args, "--repair-from-fits", "latest", "--samples", "0"])
    assert text.exit_code == 0, text.output
    assert latest in text.stdout
    assert "MTTR" in text.stdout
    for bad in (
        ["--repair-from-fits", repair_fleet["lifetime"]["run_id"]],
        ["--repair-from-fits", "latest", "--repair-sigma", "1"],
        ["--repair-from-fits", "latest", "--repair-from-warehouse"],
    ):
        result = runner.invoke(app, [*args, *bad])
        assert result.exit_code == 2, result.output
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_repair_from_fits_without_a_repair_run(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with warehouse.connect(db) as con:
        warehouse.init(con)
        with pytest.raises(ValueError, match="no repair-time fit run"):
            project.fitted_repair(con)


# a hand-made warehouse ------------------------------------------------------------------------


def _ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=UTC)


TICKETS = [  # ticket, node, class, slot, action, opened, closed
    ("T1", "n1", "gpu", "gpu0", "replace", "2026-01-01T00:00", "2026-01-01T10:00"),  # 10 h
    ("T2", "n1", "gpu", "gpu1", "replace", "2026-01-02T00:00", None),  # open: 72 h to 01-05
    ("T3", "n2", "nic", "nic", "replace", "2026-01-03T12:00", "2026-01-03T18:00"),  # 6 h
    ("T4", "n2", "gpu", "gpu0", "reseat", "2026-01-02T00:00", "2026-01-02T01:00"),  # no repair
    ("T5", "n3", "gpu", "gpu0", "planned_replace", "2026-01-02T00:00", None),  # no repair
    ("T6", "n3", "gpu", "gpu2", "replace", "2026-01-06T00:00", None),  # open after the window
    ("T7", "n3", "nic", "nic", "replace", "2026-01-04T00:00", "2026-01-04T00:00"),  # no length
    ("T8", "n4", "gpu", "gpu3", "replace", "2026-01-01T06:00", "2026-01-02T06:00"),  # 24 h
]
FAULTS = [  # dataset, unit, class, start, end, window start, window end
    ("logs", "u1", "gpu", "2026-01-01T00:00", "2026-01-01T05:00", "2026-01-01", "2026-01-03"),
    ("logs", "u1", "gpu", "2026-01-02T00:00", None, "2026-01-01", "2026-01-03"),  # open: 24 h
    ("logs", "u2", None, "2026-01-01T10:00", "2026-01-01T12:00", "2026-01-01", "2026-01-03"),
    ("bare", "u3", "gpu", "2026-01-01T00:00", "2026-01-01T03:00", None, None),
    ("bare", "u3", "gpu", "2026-01-01T08:00", None, None, None),  # open at the file's end
]
NODE_EVENTS = [  # node, state, reason, start, end
    (
        "n1",
        "DRAIN",
        "NHC: Xid 79: GPU 0 has fallen off the bus",
        "2025-12-31T22:00",
        "2026-01-01T04:00",
    ),  # began 2 h before the window: enters at 2 h, out at 6 h
    ("n2", "DRAIN", "firmware update", "2026-01-04T00:00", None),  # planned, open: 24 h
    ("n3", "DOWN", "Not responding", "2025-12-30T00:00", "2025-12-31T00:00"),  # before window
    ("n4", "DRAIN", "PSU failure", "2026-01-02T00:00", "2026-01-02T08:00"),  # 8 h
]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("repairs_small") / "relia.duckdb"
    with warehouse.connect(db) as con:
        warehouse.init(con)
        warehouse.set_param(con, "window_start_epoch_s", _ts("2026-01-01T00:00").timestamp())
        warehouse.set_param(con, "window_end_epoch_s", _ts("2026-01-05T00:00").timestamp())
        for k, (ticket, node, cls, slot, action, opened, closed) in enumerate(TICKETS):
            con.execute(
                "insert into raw_repairs values ('t.csv', $k, $ticket, $node, $cls, $slot, "
                "'s-out', 's-in', $opened, $closed, $action, '')",
                {
                    "k": k + 2,
                    "ticket": ticket,
                    "node": node,
                    "cls": cls,
                    "slot": slot,
                    "opened": _ts(opened),
                    "closed": _ts(closed),
                    "action": action,
                },
            )
        for k, (dataset, unit, cls, start, end, w0, w1) in enumerate(FAULTS):
            con.execute(
                "insert into raw_fault_events by name select 'f.csv' as source_file, "
                "$k as line_no, $dataset as dataset, $unit as unit_id, 'fault' as record_kind, "
                "$cls as component_class, 'hw' as category_l1, $start as start_ts, "
                "$end as end_ts, true as failed, $w0 as window_start, $w1 as window_end",
                {
                    "k": k + 2,
                    "dataset": dataset,
                    "unit": unit,
                    "cls": cls,
                    "start": _ts(start),
                    "end": _ts(end),
                    "w0": _ts(w0),
                    "w1": _ts(w1),
                },
            )
        for k, (node, state, reason, start, end) in enumerate(NODE_EVENTS):
            con.execute(
                "insert into raw_node_events values ('e.txt', $k, 'alpha', $node, [$node], "
                "$start, $end, $state, lower($state), $reason, 'root(0)')",
                {
                    "k": k + 2,
                    "node": node,
                    "start": _ts(start),
                    "end": _ts(end),
                    "state": state,
                    "reason": reason,
                },
            )
    return db


def _small_fit(db: Path, lives: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        return fit.run_fit(db, lives=lives)


@pytest.mark.parametrize(
    ("lives", "expected"),
    [
        (
            "stg_repairs",
            {
                "n_repairs": 6,
                "n_repaired": 3,
                "n_open": 1,
                "n_open_no_age": 1,
                "n_no_length": 1,
                "n_before_window": 0,
            },
        ),
        (
            "int_fault_repairs",
            {
                "n_repairs": 5,
                "n_repaired": 3,
                "n_open": 1,
                "n_open_no_age": 1,
                "n_no_length": 0,
                "n_before_window": 0,
            },
        ),
        (
            "int_node_unavailability",
            {
                "n_repairs": 9,
                "n_repaired": 5,
                "n_open": 2,
                "n_open_no_age": 1,
                "n_no_length": 0,
                "n_before_window": 1,
            },
        ),
    ],
)
def test_open_repairs_are_censored_and_the_unusable_counted(
    small: Path, lives: str, expected: dict
) -> None:
    outcome = _small_fit(small, lives)
    assert outcome["repairs"] == expected
    pool = outcome["results"].filter(pl.col("component_class") == fit.POOLED_CLASS)
    assert pool["n_units"].unique().to_list() == [
        expected["n_repaired"] + expected["n_open"] - (lives == "int_node_unavailability")
    ]  # the planned outage (open) is not pooled
    assert pool["n_failures"].unique().to_list() == [expected["n_repaired"]]


def test_ticket_censoring_ages_and_exposure(small: Path) -> None:
    results = _small_fit(small, "stg_repairs")["results"].filter(pl.col("family") == "exponential")
    by_class = {r["component_class"]: r for r in results.iter_rows(named=True)}
    # gpu: T1 10 h and T8 24 h repaired, T2 open 72 h at the window end
    assert (by_class["gpu"]["n_units"], by_class["gpu"]["n_failures"]) == (3, 2)
    assert by_class["gpu"]["exposure_h"] == pytest.approx(106.0)
    assert by_class["gpu"]["mtbf_h"] == pytest.approx(53.0)
    assert (by_class["nic"]["n_units"], by_class["nic"]["n_failures"]) == (1, 1)
    assert by_class["nic"]["exposure_h"] == pytest.approx(6.0)
    assert by_class["all"]["exposure_h"] == pytest.approx(112.0)
    assert by_class["all"]["afr_pct"] is None


def test_slurm_outages_before_the_window_enter_late(small: Path) -> None:
    with warehouse.connect(small, read_only=True) as con:
        rows = fit.read_lives(con, view="int_node_unavailability").filter(
            pl.col("source") == "slurm"
        )
    got = {
        r["node"]: (r["component_class"], r["status"], r["entry_h"], r["exit_h"])
        for r in rows.iter_rows(named=True)
    }
    assert got == {
        "n1": ("pcie", "repaired", pytest.approx(2.0), pytest.approx(6.0)),
        "n2": ("planned", "open", 0.0, pytest.approx(24.0)),
        "n3": ("unknown", "before_window", pytest.approx(48.0), None),
        "n4": ("power", "repaired", 0.0, pytest.approx(8.0)),
    }
