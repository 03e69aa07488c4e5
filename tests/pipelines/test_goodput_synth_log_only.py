"""The synthetic fleet's log-only training logs (``SynthConfig.training_log_only_jobs``) through
the ingest: the warehouse finds the attempts the truth's ``log_only_jobs`` lists, each under its
own job id, with the end cause the log shows (docs/goodput.md §2 "Log-only attempts", §6)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from pipelines import ingest, warehouse
from synth import synthesize
from synth.config import SynthConfig

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

CONFIG = SynthConfig(
    nodes=8,
    gpus_per_node=8,
    days=5,
    seed=3,
    start=datetime(2026, 4, 6, tzinfo=UTC),
    training_logs=True,
    training_log_only_jobs=4,
    training_step_s=(20.0, 40.0),
    training_log_interval_steps=(5, 5),
    training_checkpoint_interval_steps=(20, 60),
)
PARTS = ("productive_s", "checkpoint_s", "wasted_s", "restart_s", "startup_s", "other_s")


def test_the_knob_is_off_by_default_and_leaves_the_params_alone() -> None:
    assert SynthConfig().training_log_only_jobs == 0
    assert "training_log_only_jobs" not in replace(CONFIG, training_log_only_jobs=0).to_params()
    assert CONFIG.to_params()["training_log_only_jobs"] == 4
    with pytest.raises(ValueError, match="needs training_logs on"):
        replace(CONFIG, training_logs=False)


def test_the_warehouse_finds_the_log_only_attempts_the_truth_lists(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    truth = synthesize(landing, CONFIG)
    files = truth["log_only_jobs"]
    assert [f["appended"] for f in files] == [False, True, False, True]
    # only the scheduler and the training logs: the ties need nothing else
    chosen = [f for f in ingest.discover([landing]) if f.source in ("slurm", "training")]
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, chosen)
    with warehouse.connect(db, read_only=True) as con:
        attempts = warehouse.query(
            con,
            "select la.job_id_raw, la.attempt, ta.end_cause, la.start_ts, la.end_ts, "
            "la.source_file from int_training_log_attempts as la "
            "inner join int_training_attempts as ta using (job_id_raw, attempt) "
            "where ta.attempt_source = 'training_log' order by la.job_id_raw, la.attempt",
        ).to_dicts()
        ledger = {
            r["job_id_raw"]: r
            for r in warehouse.query(
                con, "select * from fct_job_goodput where attempt_source = 'training_log'"
            ).to_dicts()
        }
        # the other synthetic logs stay tied to their sacct jobs
        (n_untied,) = con.execute(
            "select count(*) from int_training_log_ties where tie = 'none'"
        ).fetchone() or (0,)
    expected: dict[str, list[str]] = {}
    for f in files:
        for a in f["attempts"]:
            expected.setdefault(f"log:{a['job_id']}", []).append(a["end_cause"])
    assert n_untied == sum(len(f["job_ids"]) for f in files)
    found: dict[str, list[str]] = {}
    for a in attempts:
        found.setdefault(a["job_id_raw"], []).append(a["end_cause"])
    # a requeued job: two attempts (crash, completed); an appended file: two jobs of one each
    assert found == expected
    for f in files:
        got = [a for a in attempts if a["source_file"].endswith("/" + f["file"])]
        assert len(got) == len(f["attempts"])
        for a, t in zip(got, f["attempts"], strict=True):
            # the log's times lie within the physical run (its untimed set-up is not seen)
            assert t["start_ms"] <= a["start_ts"].timestamp() * 1000 <= t["end_ms"]
            assert a["end_ts"].timestamp() * 1000 <= t["end_ms"]
    assert set(ledger) == set(expected)
    for row in ledger.values():
        assert row["measured"]
        assert sum(row[k] for k in PARTS) == pytest.approx(row["wall_s"])
        assert row["final_end_cause"] == "completed" or row["n_attempts"] == 1
