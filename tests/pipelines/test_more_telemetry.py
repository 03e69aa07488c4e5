"""End to end with every source: a synthetic fleet that runs some jobs under Kubernetes and some
under torchrun, with Slurm node events and DCGM scrapes. The views reproduce the generator's
ground truth exactly: attribution per cause and scheduler, restart overheads, node
unavailability per class and DCGM counter increases."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from pipelines import ingest, warehouse
from synth import SynthConfig, default_classes, synthesize

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

NEW_TABLES = [
    "raw_k8s_pods",
    "raw_k8s_events",
    "raw_elastic_events",
    "raw_node_events",
    "raw_dcgm_samples",
]
CONFIG = SynthConfig(
    nodes=16,
    days=21,
    # a seed whose three weeks hold every kind of job, cause and outage the tests below need
    # (seed 1 did before the failure process changed the draws; 6 and 20 of 1-24 do now)
    seed=6,
    start=datetime(2026, 3, 2, tzinfo=UTC),
    # failures 25 times as frequent as the default fleet's, to see every kind in three weeks
    classes={k: replace(v, scale_h=v.scale_h / 25) for k, v in default_classes().items()},
    p_app_failure=0.08,
    p_oom=0.05,
    n_ambiguous=2,
    k8s_share=0.35,
    elastic_share=0.35,
    node_events=True,
    dcgm_interval_s=4 * 3600,
)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("mixed")
    truth = synthesize(root / "landing", CONFIG)
    db = root / "relia.duckdb"
    ingest.ingest(db, ingest.discover([root / "landing"]))
    return db, truth


@pytest.fixture
def con(mixed: tuple[Path, dict]) -> duckdb.DuckDBPyConnection:
    with warehouse.connect(mixed[0], read_only=True) as con:
        yield con


def test_every_kind_of_job_and_cause_is_present(mixed: tuple[Path, dict]) -> None:
    truth = mixed[1]
    assert min(truth["jobs_by_scheduler"].values()) > 5
    kinds = Counter((r.get("scheduler", "slurm"), r["attribution"]) for r in truth["interruptions"])
    for scheduler in ("slurm", "kubernetes", "elastic"):
        for attribution in ("hardware-confirmed", "scheduler-only", "application"):
            assert kinds[(scheduler, attribution)] > 0, (scheduler, attribution)
    causes = Counter((r["cause_class"], r["attribution"]) for r in truth["interruptions"])
    assert causes[("unknown", "scheduler-only")] > 0  # a node event alone
    assert causes[("unknown", "unattributed")] > 0


def test_attribution_counts_per_cause_and_scheduler_match_truth(
    con: duckdb.DuckDBPyConnection, mixed: tuple[Path, dict]
) -> None:
    truth = mixed[1]
    expected = Counter(
        (r.get("scheduler", "slurm"), r["cause_class"], r["attribution"])
        for r in truth["interruptions"]
    )
    observed = Counter(
        {
            (scheduler, cause, attribution): n
            for scheduler, cause, attribution, n in con.execute(
                "select scheduler, cause_class, attribution, count(*) "
                "from int_job_interruptions group by all"
            ).fetchall()
        }
    )
    assert observed == expected
    by_cause = {
        (r["cause_class"], r["attribution"]): r["n"] for r in truth["interruptions_by_cause"]
    }
    rows = con.execute(
        "select cause_class, attribution, n_interruptions from rpt_interruptions_by_cause"
    ).fetchall()
    assert {(c, a): n for c, a, n in rows} == by_cause


def test_each_interruption_and_restart_overhead_match(
    con: duckdb.DuckDBPyConnection, mixed: tuple[Path, dict]
) -> None:
    truth = {
        (r["job_id_raw"], r["attempt"]): (
            r.get("scheduler", "slurm"),
            r["cause_class"],
            r["attribution"],
            r["restart_overhead_s"],
        )
        for r in mixed[1]["interruptions"]
    }
    rows = con.execute(
        "select job_id_raw, attempt, scheduler, cause_class, attribution, restart_overhead_s "
        "from int_job_interruptions"
    ).fetchall()
    observed = {
        (job, attempt): (scheduler, cause, attribution, None if o is None else int(o))
        for job, attempt, scheduler, cause, attribution, o in rows
    }
    assert observed == truth
    measured = [v[3] for k, v in truth.items() if v[0] != "slurm" and v[3] is not None]
    assert len(measured) >= 5  # Kubernetes and torchrun restarts with a measured overhead


def test_job_ids_are_namespaced_per_scheduler(
    con: duckdb.DuckDBPyConnection, mixed: tuple[Path, dict]
) -> None:
    rows = con.execute(
        "select scheduler, count(distinct job_id_raw), "
        "count(distinct job_id_raw) filter (where job_id_raw similar to '[0-9]+'), "
        "count(distinct job_id_raw) filter (where job_id_raw like 'k8s:%/%'), "
        "count(distinct job_id_raw) filter (where job_id_raw like 'elastic:%') "
        "from int_job_attempts group by all"
    ).fetchall()
    counts = {scheduler: n for scheduler, n, *_ in rows}
    assert counts == mixed[1]["jobs_by_scheduler"]
    shapes = {scheduler: tuple(rest) for scheduler, n, *rest in rows}
    assert shapes["slurm"] == (counts["slurm"], 0, 0)
    assert shapes["kubernetes"] == (0, counts["kubernetes"], 0)
    assert shapes["elastic"] == (0, 0, counts["elastic"])


def test_new_sources_rows_and_quarantine_match_truth(
    con: duckdb.DuckDBPyConnection, mixed: tuple[Path, dict]
) -> None:
    truth = mixed[1]
    quarantined = dict(
        con.execute("select target_table, count(*) from raw_quarantine group by all").fetchall()
    )
    for table in NEW_TABLES:
        assert quarantined.get(table, 0) == truth["expected_quarantine"][table] == 1, table
        loaded = con.execute(f"select count(*) from {table}").fetchone()[0]
        assert loaded == truth["expected_rows"][table], table
    assert (
        con.execute(
            "select count(*) from raw_ingest_files where n_read <> n_loaded + n_quarantined"
        ).fetchone()[0]
        == 0
    )


def test_node_unavailability_and_mttr_per_class_match_truth(
    con: duckdb.DuckDBPyConnection, mixed: tuple[Path, dict]
) -> None:
    rows = con.execute(
        "select unavailability_class, count(*), count(end_ts), "
        "sum(epoch(end_ts - start_ts))::bigint, any_value(mttr_class_h) "
        "from int_node_unavailability where source = 'slurm' group by all"
    ).fetchall()
    observed = {c: {"n_outages": n, "n_closed": k, "repair_s": s or 0} for c, n, k, s, _ in rows}
    assert observed == mixed[1]["node_unavailability"]
    for cls, _, n_closed, repair_s, mttr_h in rows:
        if n_closed:
            assert mttr_h == pytest.approx(repair_s / n_closed / 3600), cls
    assert {"power", "maintenance", "unknown"} <= set(observed)


def test_gpu_health_counters_match_truth_and_never_go_negative(
    con: duckdb.DuckDBPyConnection, mixed: tuple[Path, dict]
) -> None:
    truth = mixed[1]["dcgm"]
    row = con.execute(
        "select sum(n_samples), sum(n_counter_resets), sum(energy_kwh) * 3.6e9, "
        "sum(ecc_sbe_volatile_delta), sum(ecc_dbe_volatile_delta), sum(retired_sbe_delta), "
        "sum(retired_dbe_delta), sum(nvlink_crc_flit_errors_delta), sum(pcie_replays_delta), "
        "least(min(ecc_sbe_volatile_delta), min(ecc_dbe_volatile_delta), "
        "min(retired_sbe_delta), min(nvlink_crc_flit_errors_delta), min(pcie_replays_delta), "
        "min(energy_kwh)), count(*) filter (where xid_last_max > 0) from int_gpu_health"
    ).fetchone()
    n_samples, n_resets, energy, *increases, lowest, n_xid_hours = row
    assert (n_samples, n_resets) == (truth["n_samples"], truth["n_resets"])
    assert n_resets > 0
    assert energy == pytest.approx(truth["increase"]["energy_mj"], rel=1e-12)
    names = [
        "ecc_sbe_volatile",
        "ecc_dbe_volatile",
        "retired_sbe",
        "retired_dbe",
        "nvlink_crc_flit_errors",
        "pcie_replays",
    ]
    assert dict(zip(names, increases, strict=True)) == {n: truth["increase"][n] for n in names}
    assert lowest >= 0
    # the Xid gauge shows codes, yet every interruption matched the truth built from kernel
    # logs alone (test above): the gauge is never a failure
    assert n_xid_hours > 0


def test_static_rendezvous_logs_without_join_lines_or_role_tag_still_give_attempts(
    con: duckdb.DuckDBPyConnection, mixed: tuple[Path, dict]
) -> None:
    landing = mixed[0].parent / "landing" / "elastic"
    static_runs = {
        path.name.split("__")[0]
        for path in landing.glob("*.log")
        if "has joined round" not in (text := path.read_text()) and "[default]" not in text
    }
    assert len(static_runs) >= 2  # the generator's real-format variant is present
    jobs = {f"elastic:{run}" for run in static_runs}
    attempts = con.execute(
        "select job_id_raw, count(*) from int_job_attempts where scheduler = 'elastic' group by all"
    ).fetchall()
    assert jobs <= {job for job, n in attempts if n >= 1}
    # and their interruptions are among those matched one by one against the truth above
    assert any(r["job_id_raw"] in jobs for r in mixed[1]["interruptions"])
