"""Projections and what-if sweeps driven by warehouse fits and by hand-given rates."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import warnings
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from models.exceptions import FewFailuresWarning
from pipelines.analysis import fit, project
from pipelines.cli import app

HOURS_PER_DAY = 24.0


@pytest.fixture(scope="module")
def fit_run(fleet: tuple[Path, Path, dict]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        return fit.run_fit(fleet[0])["run_id"]


def _true_interruptions(truth: dict, *, n_gpus: int, gpus_per_node: int, days: float) -> float:
    """Failures a job on ``n_gpus`` sees in ``days`` at the generator's true rates.

    The failure process's rate per unit-hour over the ages observed (``failure_process``: every
    failure whatever fixed it, bad units, non-hardware interruptions), not the classes' nominal
    laws, which bad units and the non-hardware classes leave short.
    """
    per_h = 0.0
    for row in truth["failure_process"].values():
        units = n_gpus if row["level"] == "gpu" else n_gpus / gpus_per_node
        per_h += units * row["rate_per_unit_h"]
    return per_h * days * HOURS_PER_DAY


def test_projection_from_fits_covers_the_true_interruption_rate(fleet: tuple, fit_run: str) -> None:
    db, _, truth = fleet
    n_gpus = truth["n_gpus"]
    result = project.run_projection(
        db,
        {"n_gpus": n_gpus, "gpus_per_node": 8, "job_days": 30.0},
        fit_run=fit_run,
        n_samples=4000,
        seed=1,
    ).to_json_dict()
    assert result["fit_run_id"] == fit_run
    # the projection counts interruptions over the job's wall time, which restarts stretch
    wall_days = result["daly_wall_time_h"] / HOURS_PER_DAY
    expected = _true_interruptions(truth, n_gpus=n_gpus, gpus_per_node=8, days=wall_days)
    lo, hi = result["expected_interruptions_lo"], result["expected_interruptions_hi"]
    assert lo <= expected <= hi
    assert lo < result["expected_interruptions"] < hi
    assert result["measured_restart"]["n"] > 0
    assert "steady state" in result["fleet_age_assumption"]


def test_projection_uses_the_headline_rate_and_weibull_fits_at_ages(
    fleet: tuple, fit_run: str
) -> None:
    from pipelines import warehouse

    db = fleet[0]
    with warehouse.connect(db, read_only=True) as con:
        rows = warehouse.query(
            con,
            "select component_class, family, mtbf_h, shape, headline_mtbf_h, headline_mtbf_lo_h, "
            "headline_mtbf_hi_h, headline_method, lifetime_extrapolated from fit_results "
            "where run_id = $id and cohort = 'all' and n_failures > 0",
            {"id": fit_run},
        )
    flagged = sorted(set(rows.filter(pl.col("lifetime_extrapolated"))["component_class"]))
    assert flagged  # the default fleet is young against its classes' mean lives
    # steady state: the observed rate over the ages watched, with its exact interval; it is
    # no extrapolation, and no family mixture is sampled
    steady = project.run_projection(db, {"n_gpus": 16_384}, fit_run=fit_run).to_json_dict()
    assert steady["extrapolated_classes"] == []
    headline = {r["component_class"]: r for r in rows.iter_rows(named=True)}
    for rate in steady["scenario"]["rates"]:
        head = headline[rate["component_class"]]
        assert head["headline_method"] == "observed_rate"
        assert rate["mtbf_h"] == pytest.approx(head["headline_mtbf_h"], rel=1e-12)
        assert rate["mtbf_lo_h"] == pytest.approx(head["headline_mtbf_lo_h"], rel=1e-12)
        assert rate["mtbf_hi_h"] == pytest.approx(head["headline_mtbf_hi_h"], rel=1e-12)
        assert rate["weibull_shape"] == 1.0
        assert not rate["mtbf_mixture"]
    # at given ages: each class's Weibull fit, flagged where its mean is an extrapolation
    new = project.run_projection(
        db, {"n_gpus": 16_384, "fleet_age": "new"}, fit_run=fit_run
    ).to_json_dict()
    assert sorted(new["extrapolated_classes"]) == flagged
    assert "Weibull fit's hazard" in new["extrapolation_note"]
    weibull = {
        r["component_class"]: (r["mtbf_h"], r["shape"])
        for r in rows.filter(pl.col("family") == "weibull").iter_rows(named=True)
    }
    for rate in new["scenario"]["rates"]:
        assert (rate["mtbf_h"], rate["weibull_shape"]) == weibull[rate["component_class"]]
        assert not rate["mtbf_mixture"]


def test_measured_restart_sets_the_rescheduling_wait(fleet: tuple, fit_run: str) -> None:
    result = project.run_projection(
        fleet[0], {"n_gpus": 1024}, fit_run="latest", n_samples=0
    ).to_json_dict()
    measured = result["measured_restart"]["median_s"]
    assert result["scenario"]["reschedule_s"] == pytest.approx(
        max(0.0, measured - result["scenario"]["detect_s"])
    )


def test_hand_rates_reproduce_metas_projection() -> None:
    result = project.run_projection(
        None, {"n_gpus": 16_384, "node_failures_per_1000_node_days": 6.5}, n_samples=0
    ).to_json_dict()
    assert round(result["mtti_h"], 1) == 1.8


def test_whatif_sweep_writes_table_and_plots(tmp_path: Path) -> None:
    sweep_file = Path(__file__).resolve().parents[2] / "data_samples/sweeps/hand_rates.yaml"
    spec = project.load_sweep(sweep_file)
    result = project.run_sweep(spec, db_path=None, out_dir=tmp_path)
    table = pl.read_parquet(tmp_path / "whatif.parquet")
    assert table.height == result["n_points"] == 3 * 2 * 2
    assert (tmp_path / "whatif.csv").exists()
    assert len(result["plots"]) == 2
    assert all(Path(p).stat().st_size > 10_000 for p in result["plots"])
    gains = [g["gain"] for g in result["gains"]]
    assert gains == sorted(gains, reverse=True)
    assert result["best_knob"]["knob"] in {"checkpoint_s", "reschedule_s"}
    # the file's baseline: 5-minute checkpoints and a 10-minute wait for replacement nodes
    assert result["baseline_values"] == {"checkpoint_s": "300.0", "reschedule_s": "600.0"}
    assert all(g["gain"] > 0 and g["baseline_value"] != g["best_value"] for g in result["gains"])
    at_target = table.filter(pl.col("n_gpus") == spec.target_gpus)
    assert at_target["goodput"].max() > at_target["goodput"].min()


def test_project_cli_prints_the_documented_json_keys() -> None:
    result = CliRunner().invoke(
        app,
        [
            "project",
            "--gpus",
            "16384",
            "--gpus-per-node",
            "8",
            "--node-failures-per-1000-node-days",
            "6.5",
            "--checkpoint-s",
            "300",
            "--restart-s",
            "600",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    for key in ("mtti_h", "young_interval_min", "daly_interval_min", "ettr", "goodput"):
        assert isinstance(payload[key], float)
    assert payload["young_interval_min"] == pytest.approx((2 * 300 * 1.8028846 * 3600) ** 0.5 / 60)


def test_project_cli_drain_knobs_reach_the_model() -> None:
    """A perfect, free warning of every failure leaves no rework and no restart (only drains)."""
    common = [
        "project",
        "--gpus",
        "16384",
        "--node-failures-per-1000-node-days",
        "6.5",
        "--checkpoint-s",
        "300",
        "--restart-s",
        "600",
        "--json",
    ]
    runner = CliRunner()
    plain = json.loads(runner.invoke(app, common).stdout)
    warned = runner.invoke(app, [*common, "--drain-recall", "1", "--drain-migration-s", "0"])
    assert warned.exit_code == 0, warned.output
    drained = json.loads(warned.stdout)
    assert drained["lost_gpu_h_rework"] == pytest.approx(0.0, abs=1e-6)
    assert drained["lost_gpu_h_restart"] == pytest.approx(0.0, abs=1e-6)
    assert drained["expected_drains"] == pytest.approx(plain["expected_interruptions"], rel=0.05)
    assert drained["goodput"] > plain["goodput"]
    noisy = json.loads(
        runner.invoke(app, [*common, "--drain-recall", "1", "--drain-precision", "0.2"]).stdout
    )
    # precision 0.2: four false alarms per real failure warned of
    assert noisy["expected_false_alarms"] == pytest.approx(4 * noisy["expected_interruptions"])
    assert noisy["goodput"] < drained["goodput"]


def test_a_bad_sweep_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "sweep.yaml"
    bad.write_text("grid: {n_gpus: []}\n")
    with pytest.raises(ValueError, match="non-empty list"):
        project.load_sweep(bad)


def test_a_chosen_family_without_a_finite_mean_falls_back_to_the_exponential_row() -> None:
    from models import rates_from_fits

    rows = {
        "component_class": ["network", "network", "power", "power", "fans"],
        "cohort": ["all"] * 5,
        "unit_level": ["node"] * 5,
        "family": ["loglogistic", "exponential", "weibull", "exponential", "exponential"],
        "n_failures": [40, 40, 26, 26, 0],
        "shape": [0.8, 1.0, 1.3, 1.0, 1.0],
        "mtbf_h": [float("inf"), 79_826.0, 120_000.0, 125_879.0, float("nan")],
        "mtbf_lo_h": [float("nan"), 60_000.0, 90_000.0, 88_000.0, 50_000.0],
        "mtbf_hi_h": [float("inf"), 110_000.0, 160_000.0, 190_000.0, float("inf")],
        "chosen": [True, False, True, False, True],
    }
    picked = project.projection_fits(pl.DataFrame(rows)).sort("component_class")
    assert picked.select("component_class", "family").rows() == [
        ("network", "exponential"),
        ("power", "weibull"),
    ]
    rates = {r.component_class: r.mtbf_h for r in rates_from_fits(picked)}
    assert rates == {"network": 79_826.0, "power": 120_000.0}


# --------------------------------------------------------------------------- ranking (#13)
SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "sweeps"
ACCEPTANCE_SWEEP = {
    "target_gpus": 100_000,
    "base": {
        "gpus_per_node": 8,
        "node_failures_per_1000_node_days": 6.5,
        "job_days": 30,
        "fleet_age": "new",
        "hot_spares": 256,
        "reload_s": 180,
        "warmup_s": 120,
    },
    "baseline": {"checkpoint_s": 300, "detect_s": 120, "strategy": "restart", "weibull_shape": 0.7},
    "grid": {
        "n_gpus": [16_384, 65_536],
        "checkpoint_s": [30, 300, 600],
        "detect_s": [30, 120],
        "reschedule_s": [600, 60],
        "strategy": ["restart", "hot_spare", "elastic"],
        "weibull_shape": [1.0, 0.7],
        "node_groups": ["none", "0.1:3"],
    },
}
FLAGS = {"n_gpus": "--gpus", "node_groups": "--node-group"}


def _flags(knobs: dict) -> list[str]:
    """``relia project`` options for a mapping of knob -> value (labels in CLI syntax)."""
    out = []
    for knob, value in knobs.items():
        if str(value) in ("none", "fits"):
            continue
        out += [FLAGS.get(knob, "--" + knob.replace("_", "-")), str(value)]
    return out


def _cli_goodput(knobs: dict) -> float:
    result = CliRunner().invoke(app, ["project", *_flags(knobs), "--samples", "0", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["goodput"]


@pytest.fixture(scope="module")
def acceptance(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    import yaml

    root = tmp_path_factory.mktemp("ranking")
    (root / "sweep.yaml").write_text(yaml.safe_dump(ACCEPTANCE_SWEEP))
    runner = CliRunner()
    as_json = runner.invoke(
        app, ["whatif", str(root / "sweep.yaml"), "--out", str(root / "out"), "--json"]
    )
    assert as_json.exit_code == 0, as_json.output
    text = runner.invoke(app, ["whatif", str(root / "sweep.yaml"), "--out", str(root / "txt")])
    assert text.exit_code == 0, text.output
    return json.loads(as_json.stdout), text.stdout, root / "out"


def test_every_gain_is_relia_project_with_that_knob_changed_minus_the_baseline(
    acceptance: tuple[dict, str, Path],
) -> None:
    result, _, _ = acceptance
    fixed = {"n_gpus": ACCEPTANCE_SWEEP["target_gpus"], **ACCEPTANCE_SWEEP["base"]}
    held = result["baseline_values"]
    assert held == {
        "checkpoint_s": "300.0",
        "detect_s": "120.0",
        "reschedule_s": "600.0",
        "strategy": "restart",
        "weibull_shape": "0.7",
        "node_groups": "none",
    }
    at_baseline = _cli_goodput({**fixed, **held})
    assert result["baseline"]["n_gpus"] == 100_000
    assert result["baseline"]["weibull_shape"] == 0.7
    assert result["baseline"]["hot_spares"] == 256
    assert {g["knob"] for g in result["gains"]} == set(ACCEPTANCE_SWEEP["grid"]) - {"n_gpus"}
    for gain in result["gains"]:
        assert gain["goodput_baseline"] == pytest.approx(at_baseline, abs=1e-4)
        changed = _cli_goodput({**fixed, **held, gain["knob"]: gain["best_value"]})
        assert gain["gain"] == pytest.approx(changed - at_baseline, abs=1e-4), gain["knob"]
        assert gain["goodput_best"] == max(gain["goodputs"])
        for value, goodput in zip(gain["values"], gain["goodputs"], strict=True):
            expected = _cli_goodput({**fixed, **held, gain["knob"]: value})
            assert goodput == pytest.approx(expected, abs=1e-4), (gain["knob"], value)
        if gain["gain"] == 0:
            assert gain["best_value"] == gain["baseline_value"]
        for key in ("gain_useful_gpu_h", "gain_lo", "gain_hi", "within_uncertainty"):
            assert key in gain
    best = max(result["gains"], key=lambda g: g["gain"])
    assert result["best_knob"]["knob"] == best["knob"]
    assert result["best_knob"]["gain"] == best["gain"] > 0
    pair = result["interaction"]
    top = sorted(result["gains"], key=lambda g: g["gain"], reverse=True)[:2]
    both = _cli_goodput({**fixed, **held, **{g["knob"]: g["best_value"] for g in top}})
    expected = both - at_baseline - top[0]["gain"] - top[1]["gain"]
    assert pair["knobs"] == [g["knob"] for g in top]
    assert pair["interaction"] == pytest.approx(expected, abs=1e-4)


def test_plots_and_cli_table_agree_on_the_best_knob(acceptance: tuple[dict, str, Path]) -> None:
    result, text, out = acceptance
    best = result["best_knob"]
    lines = pl.read_csv(out / "whatif_lines.csv", schema_overrides={"value": pl.String})
    at_target = lines.filter(pl.col("n_gpus") == result["target_gpus"])
    for gain in result["gains"]:
        line = at_target.filter(pl.col("knob") == gain["knob"])
        base_row = line.filter(pl.col("is_baseline"))
        assert base_row["value"].to_list() == [gain["baseline_value"]]
        top = line.sort("goodput", descending=True).row(0, named=True)
        assert top["goodput"] - base_row["goodput"][0] == pytest.approx(gain["gain"], abs=1e-9)
        if gain["gain"] > 0:
            assert top["value"] == gain["best_value"]
    gains_on_plots = {
        k: g["goodput"].max() - g.filter(pl.col("is_baseline"))["goodput"][0]
        for (k,), g in at_target.group_by("knob")
    }
    assert max(gains_on_plots, key=gains_on_plots.__getitem__) == best["knob"]
    assert len(result["plots"]) == len(result["gains"])
    # the terminal prints the baseline held and names the same knob
    assert "baseline at 100,000 GPUs (held for every other knob): checkpoint_s=300.0" in text
    assert f"largest gain: {best['knob']} = {best['best_value']}" in " ".join(text.split())


def test_hot_spare_is_no_longer_judged_against_its_worst_case() -> None:
    """Issue #13: "strategy = elastic (+0.1534 vs hot_spare)" compared with a goodput of 1e-67;
    the sample sweep now ranks from its baseline (whole-job restarts)."""
    import yaml

    spec = yaml.safe_load((SAMPLES / "scale_checkpoint_domain.yaml").read_text())
    assert spec["baseline"]["strategy"] == "restart"
    loaded = project.load_sweep(SAMPLES / "scale_checkpoint_domain.yaml")
    hand = dataclasses.replace(
        loaded, from_fits=None, base={**loaded.base, "node_failures_per_1000_node_days": 6.5}
    )
    result = project.run_sweep(hand, db_path=None, out_dir=Path(tempfile.mkdtemp()))
    strategy = next(g for g in result["gains"] if g["knob"] == "strategy")
    assert strategy["baseline_value"] == "restart"
    assert strategy["goodput_baseline"] > 0.1


@pytest.mark.parametrize("name", ["hand_rates", "new_fleet_knobs"])
def test_sample_sweeps_run_and_rank_from_their_baseline(name: str, tmp_path: Path) -> None:
    spec = project.load_sweep(SAMPLES / f"{name}.yaml")
    assert spec.baseline
    result = project.run_sweep(spec, db_path=None, out_dir=tmp_path)
    assert result["best_knob"] is not None
    assert all(0 < g["goodput_baseline"] < 1 for g in result["gains"])
    if name == "new_fleet_knobs":  # hand rates with intervals: paired intervals per gain
        assert result["gain_uncertainty"].startswith("paired")
        assert all(g["within_uncertainty"] is not None for g in result["gains"] if g["gain"] > 0)
        assert result["restart_shorthand"]["reschedule_s"] == 480.0
        assert result["baseline"]["reschedule_s"] == 480.0
        assert result["baseline"]["weibull_shape"] == (("gpu", 0.7),)


def test_sweep_yaml_takes_the_cli_knob_names_and_values(tmp_path: Path) -> None:
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        "base: {restart_s: 600, node-failures-per-1000-node-days: 6.5, hang_share: 0.2,\n"
        "       node_group: '0.1:3', weibull_shape: {node: 0.8}, fleet_age: '8760'}\n"
        "grid:\n"
        "  n_gpus: [1024, 16384]\n"
        "  weibull_shape: [0.7, {node: 1.5}, 'node=2']\n"
        "  node_groups: [none, '0.1:3,0.05:10', [0.2, 2], [[0.1, 3]],\n"
        "                [{share: 0.1, rate_multiplier: 4}]]\n"
        "baseline: {weibull_shape: 'node=2'}\n"
    )
    spec = project.load_sweep(sweep_file)
    assert spec.base["node_groups"] == ((0.1, 3.0),)
    assert spec.base["fleet_age"] == 8760.0
    assert spec.grid["weibull_shape"] == [0.7, {"node": 1.5}, {"node": 2.0}]
    assert spec.grid["node_groups"] == [
        (),
        ((0.1, 3.0), (0.05, 10.0)),
        ((0.2, 2.0),),
        ((0.1, 3.0),),
        ((0.1, 4.0),),
    ]
    assert spec.baseline == {"weibull_shape": {"node": 2.0}, "node_groups": ()}
    result = project.run_sweep(spec, db_path=None, out_dir=tmp_path / "out")
    assert result["restart_shorthand"]["reschedule_s"] == 600 - 420
    table = pl.read_parquet(result["table"])
    assert table.height == 2 * 3 * 5
    assert set(table["weibull_shape"]) == {"0.7", "node=1.5", "node=2"}
    assert "0.1:3,0.05:10" in set(table["node_groups"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("grid: {n_gpus: [8]}\nbase: {detect_s: fast}\n", "detect_s"),
        ("grid: {weibull_shape: [0.7, -1]}\n", "weibull_shape"),
        ("grid: {node_groups: ['0.1']}\n", "share:rate_multiplier"),
        ("grid: {hot_spares: [1.5]}\n", "whole number"),
        ("grid: {checkpoint_s: [30]}\nbaseline: {detect_s: 30}\n", "not swept"),
        ("grid: {checkpoint_s: [30]}\nbaseline: {n_gpus: 8}\n", "target_gpus"),
        ("grid: {restart_s: [600]}\n", "reschedule_s instead"),
        ("grid: {teleport_s: [1]}\n", "unknown knob"),
        ("grid: {checkpoint_s: [30]}\nbasline: {}\n", "unknown key"),
        ("grid: {checkpoint_s: [30\n", "not valid YAML"),
        ("grid: {checkpoint_s: [30]}\nbase: {restart_s: 100}\n", "shorter than detection"),
        ("grid: {hang_share: [0.5, 2]}\n", "hang_share"),
    ],
)
def test_bad_sweep_values_are_one_line_cli_errors(tmp_path: Path, text: str, message: str) -> None:
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(text)
    result = CliRunner().invoke(app, ["whatif", str(sweep_file), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_repair_from_warehouse_takes_median_and_lognormal_sigma(fleet: tuple) -> None:
    import duckdb
    import numpy as np

    db = fleet[0]
    with duckdb.connect(str(db), read_only=True) as con:
        hours = np.array(
            [
                r[0]
                for r in con.execute(
                    "select repair_h from stg_repairs where action = 'replace' and repair_h > 0"
                ).fetchall()
            ]
        )
    assert hours.size >= 2
    result = CliRunner().invoke(
        app,
        [
            "project",
            "--db",
            str(db),
            "--repair-from-warehouse",
            "--strategy",
            "hot_spare",
            "--hot-spares",
            "4",
            "--samples",
            "0",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["measured_repair"]["n"] == hours.size
    assert payload["scenario"]["repair_h"] == pytest.approx(np.median(hours))
    assert payload["scenario"]["repair_sigma"] == pytest.approx(np.log(hours).std(ddof=1))
    both = CliRunner().invoke(
        app, ["project", "--db", str(db), "--repair-from-warehouse", "--repair-sigma", "1"]
    )
    assert both.exit_code == 2
    assert "not both" in both.stderr


def test_a_spec_built_without_a_baseline_holds_the_first_values(tmp_path: Path) -> None:
    spec = project.SweepSpec(
        base={"node_failures_per_1000_node_days": 6.5, "checkpoint_s": 5.0},
        grid={"n_gpus": [1024, 16_384], "checkpoint_s": [300.0, 30.0]},
        target_gpus=16_384,
    )
    result = project.run_sweep(spec, db_path=None, out_dir=tmp_path)
    assert result["baseline_values"] == {"checkpoint_s": "300.0"}
    assert result["baseline"]["checkpoint_s"] == 300.0
    assert result["best_knob"]["best_value"] == "30.0"


def test_fleet_age_inventory_reads_the_ages_in_service_at_the_window_end(
    fleet: tuple, tmp_path: Path
) -> None:
    import duckdb
    import numpy as np

    db = fleet[0]
    with duckdb.connect(str(db), read_only=True) as con:
        # independently: each unit life still open at the window end, aged by its exit_h
        rows = con.execute(
            "select distinct unit_id, exit_h from int_component_lives "
            "where observed_to_ts = (select max(observed_to_ts) from int_component_lives) "
            "and observed_to_ts = (select window_end from stg_observation_window)"
        ).fetchall()
    ages = np.sort(np.array([age for _, age in rows]))
    bins = np.array_split(ages, min(10, ages.size))  # equal-count bins, the first ones longer
    want = [(float(b.mean()), b.size / ages.size) for b in bins]
    result = CliRunner().invoke(
        app,
        [
            "project",
            "--db",
            str(db),
            "--fleet-age",
            "inventory",
            "--weibull-shape",
            "0.7",
            "--samples",
            "0",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    inventory = payload["inventory_ages"]
    assert inventory["n_units"] == ages.size
    assert len(inventory["bins"]) == len(want) <= 10
    np.testing.assert_allclose(payload["scenario"]["fleet_age"], want, rtol=1e-9)
    bins_read = [(b["age_h"], b["share"]) for b in inventory["bins"]]
    np.testing.assert_allclose(bins_read, want, rtol=1e-9)
    assert "age mix" in payload["fleet_age_assumption"]
    text = CliRunner().invoke(
        app, ["project", "--db", str(db), "--fleet-age", "inventory", "--samples", "0"]
    )
    assert f"{ages.size:,} units in service on" in text.stdout
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        "base: {fleet_age: inventory, weibull_shape: 0.7}\ngrid: {n_gpus: [8192, 16384]}\n"
    )
    spec = project.load_sweep(sweep_file)
    swept = project.run_sweep(spec, db_path=db, out_dir=tmp_path / "out")
    np.testing.assert_allclose(swept["baseline"]["fleet_age"], want, rtol=1e-9)


def test_fleet_age_inventory_without_a_warehouse_is_one_line(tmp_path: Path) -> None:
    missing = CliRunner().invoke(
        app, ["project", "--db", str(tmp_path / "none.duckdb"), "--fleet-age", "inventory"]
    )
    assert missing.exit_code == 1  # a missing warehouse is not a usage error
    assert "no warehouse" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
