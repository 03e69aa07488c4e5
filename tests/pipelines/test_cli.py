"""The ``relia`` command line over the shared synthetic warehouse."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.cli.fit import FIT_CSV_COLUMNS, RATE_CSV_COLUMNS

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


def _failure_truth(truth: dict) -> dict[str, int]:
    """In-window failures per class of the failure process, every fix kind (data contract §6)."""
    return {cls: row["n_failures"] for cls, row in truth["failure_process"].items()}


def test_summary_json_matches_truth(fleet: tuple[Path, Path, dict]) -> None:
    db, _, truth = fleet
    result = runner.invoke(app, ["summary", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    # failures: every job-stopping failure in the window, whatever fixed it (not the tickets)
    failures = {r["component_class"]: r for r in summary["failures_by_class"]}
    expected = _failure_truth(truth)
    assert sum(expected.values()) > sum(truth["failures_by_class"].values())  # most replace none
    for cls, n in expected.items():
        row = failures.get(cls, {"n_failures": 0, "n_failure_events": 0})
        assert (cls, row["n_failures"], row["n_failure_events"]) == (cls, n, n)
    # replacements: the replace tickets, apart, with the replacement AFR's exact interval
    replacements = {r["component_class"]: r for r in summary["replacements_by_class"]}
    assert {cls: replacements[cls]["n_replacements"] for cls in truth["failures_by_class"]} == (
        truth["failures_by_class"]
    )
    for row in replacements.values():
        assert row["replacement_afr_lo_pct"] <= row["replacement_afr_pct"]
        assert row["replacement_afr_pct"] <= row["replacement_afr_hi_pct"]
    causes = {
        (r["cause_class"], r["attribution"]): r["n_interruptions"]
        for r in summary["interruptions_by_cause"]
    }
    assert causes == {
        (r["cause_class"], r["attribution"]): r["n"] for r in truth["interruptions_by_cause"]
    }


def test_ingest_prints_counts_per_file_and_skips_known_bytes(fleet: tuple) -> None:
    db, landing, _ = fleet
    result = runner.invoke(app, ["ingest", str(landing / "repairs"), "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    [counts] = json.loads(result.stdout)
    assert counts["skipped"] is True
    assert counts["n_read"] == counts["n_loaded"] + counts["n_quarantined"]


def test_ingest_of_a_missing_path_exits_with_a_message(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope"), "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 1  # an input that does not exist, as whatif's missing sweep file
    assert "does not exist" in result.output


def test_fit_and_trend_json(fleet: tuple) -> None:
    db, _, truth = fleet
    result = runner.invoke(app, ["fit", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["run_id"]
    assert payload["process"] == "failure process: every job-stopping failure"
    failed = {cls for cls, n in _failure_truth(truth).items() if n}
    assert {r["component_class"] for r in payload["fits"]} >= failed
    assert {r["component_class"] for r in payload["rates"]} >= failed
    result = runner.invoke(app, ["trend", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    trend = json.loads(result.stdout)
    # the trend pools every job-stopping failure of every node (fct_node_recurrence)
    assert trend["n_failures"] == sum(_failure_truth(truth).values())
    assert trend["crow_amsaa"]["verdict"] in {"improving", "stable", "degrading"}


def test_fit_reports_observed_rates_and_the_headline(fleet: tuple) -> None:
    from scipy import stats

    db, _, truth = fleet
    result = runner.invoke(app, ["fit", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    fits = {r["component_class"]: r for r in payload["fits"]}
    rates = {r["component_class"]: r for r in payload["rates"]}
    assert set(rates) == set(fits)
    for name, n in _failure_truth(truth).items():
        if name not in fits:  # a class with no failure event and no unit of its own
            assert n == 0, name
            continue
        row, rate = fits[name], rates[name]
        assert row["n_failures"] == rate["n_failures"] == n
        assert row["afr_observed_pct"] == 100 * n / (row["exposure_h"] / 8766)
        # the headline is the observed rate, computed once: the fits carry the rates' numbers
        assert row["headline_method"] == rate["headline_method"]
        assert row["headline_method"] == ("chi_square_bound" if n == 0 else "observed_rate")
        for column in ("headline_mtbf_h", "headline_mtbf_lo_h", "headline_mtbf_hi_h"):
            assert row[column] == rate[column], (name, column)
        exposure = rate["exposure_h"]
        if n:
            assert rate["headline_mtbf_h"] == pytest.approx(exposure / n, rel=1e-12)
            # the exact chi-square interval, both ends finite
            lo = 2 * exposure / stats.chi2.ppf(0.975, 2 * n + 2)
            hi = 2 * exposure / stats.chi2.ppf(0.025, 2 * n)
            assert (rate["headline_mtbf_lo_h"], rate["headline_mtbf_hi_h"]) == pytest.approx(
                (lo, hi), rel=1e-9
            )
        else:  # one representation of an open end: null, the method says why
            assert rate["headline_mtbf_h"] is None
            assert rate["headline_mtbf_hi_h"] is None
            assert rate["headline_mtbf_lo_h"] == pytest.approx(
                2 * exposure / stats.chi2.ppf(0.95, 2), rel=1e-9
            )
        # rates per 1000 node-days: the same failures over the node-days, exact Poisson bounds
        assert rate["rate_per_1000_node_days"] == pytest.approx(
            1000 * n / rate["node_days"], rel=1e-12
        )
        assert rate["rate_hi_per_1000_node_days"] == pytest.approx(
            1000 * stats.chi2.ppf(0.975 if n else 0.95, 2 * n + 2) / 2 / rate["node_days"],
            rel=1e-9,
        )
        assert row["lifetime_method"] == (
            "chi_square" if n == 0 else "weibayes_lr" if n <= 5 else "model_average"
        )
        assert row["method"] in {"chi_square", "mle_delta", "weibayes_lr"}
    table = runner.invoke(app, ["fit", "--db", str(db), "--wide"])  # every column, both tables
    assert table.exit_code == 0, table.output
    text = " ".join(table.stdout.split())
    # rates first, lifetimes second and named as such
    assert text.index("interruption rates") < text.index("lifetimes (times between failures")
    assert "≥ " in text  # the classes with no failure: their one-sided bound
    assert "inf" not in text.split()


def test_fit_on_replacement_lives_counts_replacements(fleet: tuple) -> None:
    db, _, truth = fleet
    args = ["fit", "--db", str(db), "--lives", "fct_replacement_lives"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["process"] == "replacement lifetimes: replace tickets"
    assert payload["mean"] == "MTBR"
    rates = {r["component_class"]: r for r in payload["rates"]}
    assert {c: rates[c]["n_replacements"] for c in truth["failures_by_class"]} == (
        truth["failures_by_class"]
    )
    for rows in (payload["rates"], payload["fits"]):
        for row in rows:
            assert not [k for k in row if "failure" in k or "mtbf" in k], row
    for row in payload["rates"]:
        # the replacement AFR: replacements per 100 unit-years, as the rate per unit-hour says
        assert row["replacement_afr_observed_pct"] == pytest.approx(
            row["replacement_rate_per_h"] * 876_600, rel=1e-12
        )
    assert all("failure" not in note for note in payload["notes"])
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "replacement" in table.stdout
    assert "failure" not in table.stdout
    header, rows = _csv_rows(_invoke(*args, "--format", "csv"))
    assert "n_replacements" in header
    assert "replacement_afr_observed_pct" in header
    assert not [h for h in header if "failure" in h or "mtbf" in h]


# --------------------------------------------------------------------------- what-if knobs (#13)
HAND = [
    "project",
    "--gpus",
    "16384",
    "--node-failures-per-1000-node-days",
    "6.5",
    "--samples",
    "0",
    "--json",
]


def _project_json(*flags: str) -> dict:
    result = runner.invoke(app, [*HAND, *flags])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("flags", "field", "expected"),
    [
        (["--weibull-shape", "0.7"], "weibull_shape", 0.7),
        (["--weibull-shape", "node=0.7"], "weibull_shape", [["node", 0.7]]),
        (["--fleet-age", "new"], "fleet_age", "new"),
        (["--fleet-age", "8760"], "fleet_age", 8760.0),
        (["--detect-s", "30"], "detect_s", 30.0),
        (["--detect-hang-s", "900"], "detect_hang_s", 900.0),
        (["--hang-share", "0.25"], "hang_share", 0.25),
        (["--reschedule-s", "45"], "reschedule_s", 45.0),
        (["--reload-s", "90"], "reload_s", 90.0),
        (["--warmup-s", "30"], "warmup_s", 30.0),
        (["--repair-sigma", "0.8"], "repair_sigma", 0.8),
        (["--job-interruptions-per-h", "0.02"], "job_interruptions_per_h", 0.02),
        (["--node-group", "0.1:3"], "node_groups", [[0.1, 3.0]]),
        (
            ["--node-group", "0.1:3", "--node-group", "0.05:10"],
            "node_groups",
            [[0.1, 3.0], [0.05, 10.0]],
        ),
        (["--strategy", "elastic", "--replica-gpus", "64"], "replica_gpus", 64),
    ],
)
def test_project_knob_flags_reach_the_scenario(
    flags: list[str], field: str, expected: object
) -> None:
    payload = _project_json(*flags)
    assert payload["scenario"][field] == expected


def test_project_knob_flags_move_goodput_the_right_way() -> None:
    plain = _project_json()["goodput"]
    for slower in (
        ["--detect-s", "600"],
        ["--reschedule-s", "1200"],
        ["--reload-s", "900"],
        ["--warmup-s", "900"],
    ):
        assert _project_json(*slower)["goodput"] < plain, slower
    # a new fleet with infant mortality fails more often in its first month than steady state
    young = _project_json("--weibull-shape", "0.7", "--fleet-age", "new")
    assert young["goodput"] < _project_json("--weibull-shape", "0.7")["goodput"]
    assert "new" in young["fleet_age_assumption"]
    # elastic: a failure removes a whole model-parallel group, so bigger groups lose more
    small = _project_json("--strategy", "elastic", "--hot-spares", "40", "--replica-gpus", "8")
    large = _project_json("--strategy", "elastic", "--hot-spares", "40", "--replica-gpus", "512")
    assert large["goodput"] < small["goodput"]


def test_restart_s_sets_rescheduling_and_keeps_the_other_phases() -> None:
    payload = _project_json("--restart-s", "600")
    assert payload["scenario"]["reschedule_s"] == pytest.approx(600 - (120 + 180 + 120))
    assert (
        payload["scenario"]["detect_s"],
        payload["scenario"]["reload_s"],
        payload["scenario"]["warmup_s"],
    ) == (120.0, 180.0, 120.0)
    assert payload["restart_shorthand"] == {
        "restart_s": 600.0,
        "reschedule_s": 180.0,
        "detect_s": 120.0,
        "reload_s": 180.0,
        "warmup_s": 120.0,
    }
    tuned = _project_json("--restart-s", "600", "--detect-s", "30", "--warmup-s", "0")
    assert tuned["scenario"]["reschedule_s"] == pytest.approx(600 - 30 - 180 - 0)
    # the whole restart is what the shorthand says, whatever the split
    assert tuned["mean_restart_min"] == pytest.approx(payload["mean_restart_min"]) == 10.0
    text = runner.invoke(app, [*HAND[:-1], "--restart-s", "600"])
    assert text.exit_code == 0, text.output
    assert "set reschedule_s = 180 s" in text.output


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--restart-s", "300"], "shorter than detection"),
        (["--restart-s", "900", "--reschedule-s", "60"], "not both"),
        (["--hang-share", "1.5"], "hang_share"),
        (["--detect-hang-s", "-1"], "detect_hang_s"),
        (["--repair-sigma", "-0.5"], "repair_sigma"),
        (["--job-interruptions-per-h", "-1"], "job_interruptions_per_h"),
        (["--weibull-shape", "0"], "weibull_shape"),
        (["--weibull-shape", "gpu=0.7"], "no rate"),
        (["--weibull-shape", "0.7", "--weibull-shape", "node=0.5"], "not both"),
        (["--node-group", "0.1"], "share:rate_multiplier"),
        (["--node-group", "0.6:2", "--node-group", "0.6:2"], "more than 1"),
        (["--node-group", "0.1:x"], "rate_multiplier"),
        (["--fleet-age", "old"], "fleet_age"),
        (["--strategy", "elastic", "--replica-gpus", "12"], "replica_gpus"),
        (["--strategy", "teleport"], "strategy"),
    ],
)
def test_bad_knob_values_are_one_line_errors(flags: list[str], message: str) -> None:
    result = runner.invoke(app, [*HAND, *flags])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:")
    assert message in lines[0]
    assert "Traceback" not in result.output


def test_fit_takes_a_known_weibayes_shape(fleet: tuple) -> None:
    db, _, truth = fleet
    # Weibayes takes classes with 1 to 5 failures of the failure process (every fix kind)
    few = sorted(c for c, n in _failure_truth(truth).items() if 1 <= n <= 5)
    assert few  # the small fleet has classes with 1 to 5 failures
    result = runner.invoke(app, ["fit", "--db", str(db), "--json", "--weibayes-shape", "1.7"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    rows = {r["component_class"]: r for r in payload["fits"]}
    for name in few:
        assert rows[name]["method"] == "weibayes_lr"
        assert rows[name]["shape"] == 1.7
    assert any("1.7 (given)" in note for note in payload["notes"])
    per_class = runner.invoke(
        app, ["fit", "--db", str(db), "--json", "--weibayes-shape", f"{few[0]}=0.8"]
    )
    rows = {r["component_class"]: r for r in json.loads(per_class.stdout)["fits"]}
    assert rows[few[0]]["shape"] == 0.8
    for bad in ("-1", "gpu=x", "=2"):
        wrong = runner.invoke(app, ["fit", "--db", str(db), "--weibayes-shape", bad])
        assert wrong.exit_code == 2, (bad, wrong.output)
        assert len(wrong.output.strip().splitlines()) == 1, wrong.output
        assert "--weibayes-shape" in wrong.output


def test_tables_wider_than_the_terminal_become_records(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from pipelines.cli import render

    rows = [
        {"component_class": name, **{f"figure_{i}": f"{i * 1234.5:,.1f} (lo-hi)" for i in range(9)}}
        for name in ("gpu_memory", "host_memory")
    ]
    for width, records in ((80, True), (400, False)):
        screen = Console(width=width, record=True)
        monkeypatch.setattr(render, "console", screen)
        screen.print(render.rows_table("fit run", rows))
        text = screen.export_text()
        assert "…" not in text  # nothing cut to "gp…"
        assert all(len(line.rstrip()) <= width for line in text.splitlines())
        for name in ("gpu_memory", "host_memory", "figure_8", "9,876.0 (lo-hi)"):
            assert name in text
        assert ("┃" not in text) is records


def test_a_no_op_reingest_of_many_files_is_summarised_by_source(fleet: tuple) -> None:
    db, landing, _ = fleet
    n_files = sum(1 for p in landing.rglob("*") if p.is_file() and p.name != "ground_truth.json")
    assert n_files > 40  # the fleet's landing has more files than are listed one by one
    again = runner.invoke(app, ["ingest", str(landing), "--db", str(db)], terminal_width=200)
    assert again.exit_code == 0, again.output
    text = " ".join(again.stdout.split())
    assert "by source and outcome" in text
    assert len(again.stdout.splitlines()) < 40
    assert "no new lines" in text or "already loaded" in text
    listed = runner.invoke(app, ["ingest", str(landing), "--db", str(db), "--verbose", "--json"])
    per_file = json.loads(listed.stdout)
    assert len(per_file) > 40
    assert {c["status"] for c in per_file} <= {"already loaded", "no new lines"}  # no change
    verbose = runner.invoke(app, ["ingest", str(landing), "--db", str(db), "--verbose"])
    assert "by source and outcome" not in " ".join(verbose.stdout.split())


# ------------------------------------------------------------- --format table|json|csv (#15)
REPO = Path(__file__).resolve().parents[2]
HAND_RATES = REPO / "data_samples/sweeps/hand_rates.yaml"


def _strict_loads(text: str) -> Any:
    def refuse(constant: str) -> None:
        msg = f"not strict JSON: {constant}"
        raise ValueError(msg)

    return json.loads(text, parse_constant=refuse)


def _csv_rows(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of strict CSV: no NaN or infinity, nulls as empty fields."""
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert reader.fieldnames, text
    for row in rows:
        assert len(row) == len(reader.fieldnames), row
        assert None not in row, row  # no field beyond the header
        assert not {v.strip().lower() for v in row.values()} & {"nan", "inf", "-inf", "none"}
    return list(reader.fieldnames), rows


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_python_m_pipelines_cli_runs_the_app() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "summary", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert "Usage: relia summary" in " ".join(shown.stdout.split())
    assert "--format" in shown.stdout


def test_shell_completion_is_offered() -> None:
    result = runner.invoke(app, ["--help"])
    assert "--install-completion" in result.output
    assert "--show-completion" in result.output


def test_json_and_format_csv_together_are_a_usage_error(fleet: tuple) -> None:
    result = runner.invoke(app, ["summary", "--db", str(fleet[0]), "--json", "--format", "csv"])
    assert result.exit_code == 2
    assert "--json" in result.output


@pytest.mark.parametrize(
    "table",
    ["failures_by_class", "replacements_by_class", "interruptions_by_cause", "files", "quarantine"],
)
def test_summary_format_csv_and_json(fleet: tuple, table: str) -> None:
    db = str(fleet[0])
    payload = _strict_loads(_invoke("summary", "--db", db, "--format", "json"))
    assert payload == _strict_loads(_invoke("summary", "--db", db, "--json"))
    header, rows = _csv_rows(_invoke("summary", "--db", db, "--format", "csv", "--table", table))
    expected = {
        "failures_by_class": [
            "component_class",
            "units_at_risk",
            "n_failures",
            "n_failure_events",
            "exposure_h",
            "naive_mtbf_h",
            "n_interruptions",
        ],
        "interruptions_by_cause": [
            "cause_class",
            "attribution",
            "n_interruptions",
            "gpu_hours_interrupted",
            "median_restart_overhead_s",
        ],
        "files": ["source", "n_files", "n_read", "n_loaded", "n_quarantined"],
        "quarantine": ["target_table", "stage", "reason", "n_rows"],
        "replacements_by_class": [
            "component_class",
            "n_replacements",
            "unit_years",
            "replacement_afr_pct",
            "replacement_afr_lo_pct",
            "replacement_afr_hi_pct",
        ],
    }[table]
    assert len(rows) == len(payload[table])
    if rows:
        assert header == expected
    assert [r[expected[0]] for r in rows] == [str(r[expected[0]]) for r in payload[table]]


def test_summary_files_and_quarantine_come_from_rpt_ingest_quality(fleet: tuple) -> None:
    """The view gives what the raw-table queries the summary used before gave."""
    import duckdb

    db = fleet[0]
    payload = _strict_loads(_invoke("summary", "--db", str(db), "--json"))
    with duckdb.connect(str(db), read_only=True) as con:
        files = con.execute(
            "select source, count(*), sum(n_read)::bigint, sum(n_loaded)::bigint, "
            "sum(n_quarantined)::bigint from raw_ingest_files group by source order by source"
        ).fetchall()
        quarantine = con.execute(
            "select target_table, stage, reason, count(*) from raw_quarantine group by all"
        ).fetchall()
    assert [tuple(r.values()) for r in payload["files"]] == files
    assert sorted(tuple(r.values()) for r in payload["quarantine"]) == sorted(quarantine)
    assert quarantine  # the synthetic fleet has rows to quarantine


def test_ingest_format_csv_and_json(fleet: tuple) -> None:
    db, landing, _ = fleet
    repairs = str(landing / "repairs")
    counts = _strict_loads(_invoke("ingest", repairs, "--db", str(db), "--format", "json"))
    header, rows = _csv_rows(_invoke("ingest", repairs, "--db", str(db), "--format", "csv"))
    assert header == [
        "file",
        "source",
        "read",
        "loaded",
        "quarantined",
        "held",
        "ignored",
        "status",
    ]
    assert len(rows) == len(counts) == 1
    assert rows[0]["status"] == "already loaded"
    # past 40 files the CSV holds the table's rows: one per source and outcome
    header, rows = _csv_rows(_invoke("ingest", str(landing), "--db", str(db), "--format", "csv"))
    assert header[:2] == ["source", "files"]
    assert header[-1] == "status"
    assert sum(int(r["files"]) for r in rows) > 40


def test_fit_and_trend_format_csv_and_json(fleet: tuple) -> None:
    db = str(fleet[0])
    payload = _strict_loads(_invoke("fit", "--db", db, "--format", "json"))
    header, rows = _csv_rows(_invoke("fit", "--db", db, "--format", "csv"))
    assert header == list(RATE_CSV_COLUMNS)  # the rates, by default
    assert len(rows) == len(payload["rates"])
    assert {r["component_class"] for r in rows} == {r["component_class"] for r in payload["rates"]}
    # an open end is an empty field, as it is null in the JSON
    for row, rate in zip(
        sorted(rows, key=lambda r: r["component_class"]),
        sorted(payload["rates"], key=lambda r: r["component_class"]),
        strict=True,
    ):
        assert (row["headline_mtbf_hi_h"] == "") == (rate["headline_mtbf_hi_h"] is None)
    header, rows = _csv_rows(_invoke("fit", "--db", db, "--format", "csv", "--table", "fits"))
    assert header == list(FIT_CSV_COLUMNS)
    assert len(rows) == len(payload["fits"])
    assert {r["component_class"] for r in rows} == {r["component_class"] for r in payload["fits"]}
    trend = _strict_loads(_invoke("trend", "--db", db, "--format", "json"))
    header, rows = _csv_rows(_invoke("trend", "--db", db, "--format", "csv"))
    assert header == [
        "unit_id",
        "observed",
        "expected",
        "p_value",
        "p_adjusted",
        "lemon",
        "classes",
    ]
    assert len(rows) == len(trend["most_suspect_nodes"])


def test_project_format_csv_and_json() -> None:
    payload = _strict_loads(_invoke(*HAND[:-1], "--format", "json"))
    header, rows = _csv_rows(_invoke(*HAND[:-1], "--format", "csv"))
    assert header == ["figure", "value"]
    figures = [r["figure"] for r in rows]
    assert len(set(figures)) == len(figures)
    assert set(figures) <= set(payload)  # each row is one figure of the JSON result
    assert {"mtti_h", "goodput", "daly_interval_min"} <= {r["figure"] for r in rows}
    assert float(next(r["value"] for r in rows if r["figure"] == "goodput")) == pytest.approx(
        payload["goodput"]
    )


def test_whatif_format_csv_and_json(tmp_path: Path) -> None:
    payload = _strict_loads(
        _invoke("whatif", str(HAND_RATES), "--out", str(tmp_path / "j"), "--format", "json")
    )
    header, rows = _csv_rows(
        _invoke("whatif", str(HAND_RATES), "--out", str(tmp_path / "c"), "--format", "csv")
    )
    assert header == [
        "knob",
        "baseline",
        "best",
        "goodput_baseline",
        "goodput_best",
        "gain",
        "gain 95 %",
        "within_uncertainty",
        "useful GPU-h gained",
    ]
    assert [r["knob"] for r in rows] == [g["knob"] for g in payload["gains"]]


def test_synth_format_csv_and_json(tmp_path: Path) -> None:
    small = ["--nodes", "2", "--days", "2", "--seed", "1"]
    payload = _strict_loads(
        _invoke("synth", "--out", str(tmp_path / "j"), *small, "--format", "json")
    )
    header, rows = _csv_rows(
        _invoke("synth", "--out", str(tmp_path / "c"), *small, "--format", "csv")
    )
    assert header == list(payload)
    assert len(rows) == 1
    assert rows[0]["gpus"] == str(payload["gpus"])


@pytest.mark.slow
def test_predict_format_csv_and_json(tmp_path: Path) -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    from pipelines import ingest
    from synth import SynthConfig, default_classes, synthesize

    # memoryless lifetimes failing often, DCGM scraped hourly (as tests/pipelines/test_predict_e2e)
    classes = {
        name: replace(
            spec,
            shape=1.0,
            scale_h=spec.scale_h / (25 if spec.level == "gpu" else 8),
            repair_median_h=6.0,
        )
        for name, spec in default_classes().items()
    }
    config = SynthConfig(
        nodes=8,
        days=30,
        seed=5,
        start=datetime(2026, 3, 2, tzinfo=UTC),
        classes=classes,
        dcgm_interval_s=3600,
        precursor_share=0.0,
    )
    synthesize(tmp_path / "landing", config)
    db = str(tmp_path / "relia.duckdb")
    ingest.ingest(Path(db), ingest.discover([tmp_path / "landing"]))
    train = ("predict", "train", "--db", db, "--as-of-checks", "0")
    assert set(_strict_loads(_invoke(*train, "--format", "json"))["metrics"]) >= {"model"}
    header, rows = _csv_rows(_invoke(*train, "--format", "csv"))
    assert header == [
        "predictor",
        "threshold",
        "precision",
        "recall",
        "pr_auc",
        "lead_time_h",
        "alarms_per_day",
        "caught",
    ]
    assert [r["predictor"] for r in rows] == ["classifier", "SBE rule", "never predict"]
    score = ("predict", "score", "--db", db, "--top", "5")
    scores = _strict_loads(_invoke(*score, "--format", "json"))["scores"]
    header, rows = _csv_rows(_invoke(*score, "--format", "csv"))
    assert len(rows) == len(scores) == 5
    assert header == list(scores[0])
