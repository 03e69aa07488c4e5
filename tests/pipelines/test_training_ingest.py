"""Training logs end to end: landing/training/ files through the real ingest into
raw_training_events and stg_training_events (docs/goodput.md §1).

The files are the real slices of tests/pipelines/sources/samples/training/ (provenance in its
README); the expected rows per event are counted by hand from their lines (see the comments).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines import ingest, warehouse
from pipelines.cli import app
from pipelines.ingest.sources.training import parse as parse_training
from pipelines.runtime.path_patterns import PathPatternError, parse_patterns

SAMPLES = Path(__file__).parent / "sources" / "samples" / "training"

BIGSCIENCE = "bigscience_tr1_13b_megatron_deepspeed_save.log"
# file in landing/training/ -> the sample it copies
FILES = {
    "newcomputebench_torchtitan_checkpoint.log": "newcomputebench_torchtitan_checkpoint.log",
    "megatron_gpt2_note_save_timer.log": "megatron_gpt2_note_save_timer.log",
    "hyperpod_megatron_srun_label_save.log": "hyperpod_megatron_srun_label_save.log",
    BIGSCIENCE: BIGSCIENCE,
    # the same bytes under Slurm's default output name: a second log (same head), job 1234
    "slurm-1234.out": BIGSCIENCE,
}
# (loaded, ignored) per file, read off the samples:
# torchtitan: step 640, save start 644, save end 644, "Training completed" (the run's end);
#   "Sleeping" ignored
# GPT-2 note: the training-start banner (line 7), save starts at iterations 1 and 2, the
#   save-checkpoint timer; 18 lines ignored (other banners, other timers, validation lines,
#   "successfully saved" superseded by its timer)
# HyperPod: iteration 1, save start, timer; the timer header and "successfully saved" ignored
# bigscience: iteration 33240, save start, one-line timer; 4 ignored
EXPECTED = {
    "newcomputebench_torchtitan_checkpoint.log": (4, 1),
    "megatron_gpt2_note_save_timer.log": (4, 18),
    "hyperpod_megatron_srun_label_save.log": (3, 2),
    BIGSCIENCE: (3, 4),
    "slurm-1234.out": (3, 4),
}
BAD = (
    # a torchtitan step in 2099: parses, fails the GX time range (quarantined at validation)
    "[rank0]:2099-01-01 00:00:00,000 - root - INFO - step: 1  loss:  1.0000  mfu: 1.00%\n"
    # a timer cut mid-line: a parse reject
    "    save-checkpoint ................................: (81611.24, 816\n"
    "nothing to see here\n"
)

GROWTH = (
    " [2021-08-11 11:30:00] iteration    33250/  311541 | elapsed time per iteration (ms): "
    "23000.0 | lm loss: 2.700000E+00 |\n"
    "saving checkpoint at iteration   33250 to /ckpt/tr1-13B\n"
    "(min, max) time across ranks (ms):\n"
    "    save-checkpoint ................................: (50000.00, 51000.00)\n"
)


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    folder = root / "training"
    folder.mkdir(parents=True)
    for name, sample in FILES.items():
        shutil.copyfile(SAMPLES / sample, folder / name)
    (folder / "bad.log").write_text(BAD)
    return root


def _events(db: Path, view: str = "raw_training_events") -> dict[str, int]:
    with warehouse.connect(db, read_only=True) as con:
        rows = con.execute(f"select event, count(*) from {view} group by event").fetchall()
    return dict(rows)


def test_training_logs_load_with_counts_per_event_and_job_from_the_name(
    landing: Path, tmp_path: Path
) -> None:
    db = tmp_path / "w.duckdb"
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([landing]))}
    for c in counts.values():
        assert c.source == "training"
        assert c.table == "raw_training_events"
        assert c.n_read == c.n_loaded + c.n_quarantined + c.n_held
    for name, (loaded, ignored) in EXPECTED.items():
        assert (counts[name].n_loaded, counts[name].n_quarantined) == (loaded, 0), name
        assert counts[name].n_ignored == ignored, name
    assert (counts["bad.log"].n_loaded, counts["bad.log"].n_quarantined) == (0, 2)
    assert counts["bad.log"].n_ignored == 1
    # steps: 640, 1 (HyperPod), 33240 twice; save starts: 644, 1 and 2, 1, 33241 twice; ends: one
    # per save that has an end line (644, 1 by timer, 1 by timer, 33241 by timer twice); the GPT-2
    # note's training-start banner; torchtitan's "Training completed"
    expected = {
        "step": 4,
        "checkpoint_save_start": 6,
        "checkpoint_save_end": 5,
        "train_start": 1,
        "train_end": 1,
    }
    assert _events(db) == expected
    assert _events(db, "stg_training_events") == expected
    with warehouse.connect(db, read_only=True) as con:
        jobs = con.execute(
            "select distinct regexp_extract(source_file, '[^/]+$'), job_id "
            "from raw_training_events order by 1"
        ).fetchall()
        reasons = con.execute(
            "select line_no, stage from raw_quarantine where source_file like '%bad.log' "
            "order by line_no"
        ).fetchall()
    assert jobs == [
        ("bigscience_tr1_13b_megatron_deepspeed_save.log", None),
        ("hyperpod_megatron_srun_label_save.log", None),
        ("megatron_gpt2_note_save_timer.log", None),
        ("newcomputebench_torchtitan_checkpoint.log", None),
        ("slurm-1234.out", "1234"),
    ]
    assert reasons == [(1, "validate"), (2, "parse")]


def test_a_grown_log_loads_only_its_new_lines_and_a_rerun_changes_nothing(
    landing: Path, tmp_path: Path
) -> None:
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    log = landing / "training" / "slurm-1234.out"
    log.write_bytes(log.read_bytes() + GROWTH.encode())
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([landing]))}
    grown = counts["slurm-1234.out"]
    # the iteration, the save start and the timer; the timer header ignored
    assert (grown.n_read, grown.n_loaded, grown.n_quarantined, grown.n_ignored) == (3, 3, 0, 1)
    assert grown.status == "appended"
    for name, c in counts.items():
        assert c.n_read == c.n_loaded + c.n_quarantined + c.n_held
        if name != "slurm-1234.out":
            assert c.n_loaded == 0, name
    with warehouse.connect(db, read_only=True) as con:
        new = con.execute(
            "select line_no, event, step, ts, ts_inferred, duration_s, job_id "
            "from stg_training_events where source_file like '%slurm-1234.out' and line_no > 7 "
            "order by line_no"
        ).fetchall()
        before = con.execute("select count(*) from raw_training_events").fetchone()
    # lines 8-11 continue the file's numbering; the save start takes line 8's time, the end is
    # that time + the max 51000.00 ms
    assert [(n, e, s, i, d, j) for n, e, s, _, i, d, j in new] == [
        (8, "step", 33250, False, None, "1234"),
        (9, "checkpoint_save_start", 33250, True, None, "1234"),
        (11, "checkpoint_save_end", 33250, True, 51.0, "1234"),
    ]
    assert new[1][3].isoformat() == "2021-08-11T11:30:00+00:00"
    assert new[2][3].isoformat() == "2021-08-11T11:30:51+00:00"
    assert _events(db) == {
        "step": 5,
        "checkpoint_save_start": 7,
        "checkpoint_save_end": 6,
        "train_start": 1,
        "train_end": 1,
    }
    again = ingest.ingest(db, ingest.discover([landing]))
    assert sum(c.n_loaded + c.n_quarantined for c in again) == 0
    with warehouse.connect(db, read_only=True) as con:
        assert con.execute("select count(*) from raw_training_events").fetchone() == before


def test_job_from_the_option_and_from_a_path_pattern(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    root = tmp_path / "landing"
    (root / "training" / "5555").mkdir(parents=True)
    shutil.copyfile(
        SAMPLES / "hyperpod_megatron_srun_label_save.log", root / "training" / "5555" / "train.log"
    )
    patterns = parse_patterns("training={job}/*.log")
    files = ingest.discover([root], path_patterns=patterns)
    ingest.ingest(db, files)
    other = tmp_path / "other" / "training"
    other.mkdir(parents=True)
    shutil.copyfile(SAMPLES / "newcomputebench_torchtitan_checkpoint.log", other / "run.log")
    named = ingest.discover([other.parent])
    options = ingest.identity_options(named, host="gpu0007", job="777_2")
    assert options == {"training": {"host": "gpu0007", "job": "777_2"}}
    ingest.ingest(db, named, parser_options=options)
    with warehouse.connect(db, read_only=True) as con:
        rows = con.execute(
            "select regexp_extract(source_file, '[^/]+$'), job_id, host, count(*) "
            "from stg_training_events group by all order by 1"
        ).fetchall()
    # run.log: step, save start and end, and "Training completed"
    assert rows == [("run.log", "777_2", "gpu0007", 4), ("train.log", "5555", None, 3)]


def test_training_events_in_a_lake_read_like_the_table(landing: Path, tmp_path: Path) -> None:
    files = ingest.discover([landing])
    tables_db, lake_db, root = tmp_path / "t.duckdb", tmp_path / "l.duckdb", tmp_path / "lake"
    ingest.ingest(tables_db, files)
    ingest.ingest(lake_db, files, lake_dir=root)
    parts = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet"))
    # one part per file with rows, under the training source; rows without ts (bigscience,
    # HyperPod) and with one go to their own date partitions
    assert parts
    assert all(p.startswith("source=training/date=") for p in parts)
    query = "select * exclude (ts), epoch_us(ts) as ts_us from {} order by source_file, line_no"
    frames = {}
    for db in (tables_db, lake_db):
        with warehouse.connect(db, read_only=True) as con:
            frames[db] = [
                warehouse.query(con, query.format(name))
                for name in ("raw_training_events", "stg_training_events")
            ]
    for table, lake_view in zip(frames[tables_db], frames[lake_db], strict=True):
        assert table.height == sum(loaded for loaded, _ in EXPECTED.values())
        assert table.equals(lake_view)


def test_the_committed_training_sample_loads_whole(tmp_path: Path) -> None:
    # data_samples/training/slurm-4242.out: iterations 5-130 every 5 (26 lines), then, requeued,
    # 105-200 every 5 (20); saves at 50, 100, 150, 200, each with its timer; one load (of 100);
    # a training-start banner in each attempt (lines 19 and 68); the runs' lines: two launch
    # banners in each attempt ("using world size", "[after megatron is initialized]": lines 1, 7,
    # 58, 59), srun's task exit (57) and "[after training is done]" (97)
    sample = Path(__file__).resolve().parents[2] / "data_samples" / "training"
    db = tmp_path / "w.duckdb"
    (c,) = ingest.ingest(db, ingest.discover([sample]))
    assert (c.n_read, c.n_loaded, c.n_quarantined) == (64, 64, 0)
    with warehouse.connect(db, read_only=True) as con:
        rows = con.execute(
            "select event, count(*), min(step), max(step), any_value(job_id) "
            "from stg_training_events group by event order by event"
        ).fetchall()
    assert rows == [
        ("checkpoint_load_end", 1, 100, 100, "4242"),
        ("checkpoint_load_start", 1, 100, 100, "4242"),
        ("checkpoint_save_end", 4, 50, 200, "4242"),
        ("checkpoint_save_start", 4, 50, 200, "4242"),
        ("launch", 4, None, None, "4242"),
        ("step", 46, 5, 200, "4242"),
        ("task_exit", 1, None, None, "4242"),
        ("train_end", 1, None, None, "4242"),
        ("train_start", 2, None, None, "4242"),
    ]


def test_relia_ingest_job_option_names_the_job(tmp_path: Path) -> None:
    folder = tmp_path / "training"
    folder.mkdir()
    shutil.copyfile(SAMPLES / "hyperpod_megatron_srun_label_save.log", folder / "slurm-1.out")
    db = tmp_path / "w.duckdb"
    result = CliRunner().invoke(
        app, ["ingest", str(folder), "--db", str(db), "--job", "31_2", "--host", "n7", "--json"]
    )
    assert result.exit_code == 0, result.output
    with warehouse.connect(db, read_only=True) as con:
        named = con.execute("select distinct job_id, host from raw_training_events").fetchall()
    assert named == [("31_2", "n7")]  # --job wins over the slurm-<id>.out name
    with pytest.raises(PathPatternError, match="the kernel parser takes no job"):
        parse_patterns("kernel={job}/*")
    with pytest.raises(
        PathPatternError, match=r"unknown placeholder \{node\}; use \{host\} or \{job\}"
    ):
        parse_patterns("training={node}/*")


def test_a_save_split_across_reads_of_a_live_log_is_repaired_in_staging(tmp_path: Path) -> None:
    # the iteration line, then the save start, then "successfully saved" and the timer, each
    # ingested as it arrives: no read holds a save's start with a time, nor its end with its start
    log = tmp_path / "training" / "slurm-9.out"
    log.parent.mkdir()
    db = tmp_path / "w.duckdb"
    lines = GROWTH.replace(
        "(min, max)",
        "  successfully saved checkpoint at iteration   33250 to /ckpt/tr1-13B\n(min, max)",
    ).splitlines(keepends=True)
    written = ""
    for part in (lines[:1], lines[1:2], lines[2:]):
        written += "".join(part)
        log.write_text(written)
        for c in ingest.ingest(db, ingest.discover([log.parent])):
            assert c.n_read == c.n_loaded + c.n_quarantined + c.n_held
    whole = parse_training(log.read_bytes(), source_file=str(log.resolve()))
    query = (
        "select line_no, event, step, ts, ts_inferred, duration_s from {} "
        "where event != 'step' order by line_no"
    )
    with warehouse.connect(db, read_only=True) as con:
        raw = con.execute(query.format("raw_training_events")).fetchall()
        staged = con.execute(query.format("stg_training_events")).fetchall()
    # the parser alone: the save start's time was in the previous read, so was the start itself
    assert [(n, e, s, t, i, d) for n, e, s, t, i, d in raw] == [
        (2, "checkpoint_save_start", 33250, None, False, None),
        (5, "checkpoint_save_end", 33250, None, False, 51.0),
    ]
    # staging repairs both: 11:30:00 from the iteration line, the end 51 s (the max) later
    assert [(n, e, s, t.isoformat(), i, d) for n, e, s, t, i, d in staged] == [
        (2, "checkpoint_save_start", 33250, "2021-08-11T11:30:00+00:00", True, None),
        (5, "checkpoint_save_end", 33250, "2021-08-11T11:30:51+00:00", True, 51.0),
    ]
    # ... as the whole file parsed at once gives
    assert whole.rows.filter(whole.rows["event"] != "step").select(
        "line_no", "ts", "ts_inferred"
    ).rows() == [(n, t, i) for n, _, _, t, i, _ in staged]


def test_the_suite_quarantines_a_zero_step_time_and_a_future_time(tmp_path: Path) -> None:
    folder = tmp_path / "training"
    folder.mkdir()
    (folder / "odd.log").write_text(
        # parses (a number) but a step cannot take no time: GX step_time_s > 0
        " iteration        1/      10 | elapsed time per iteration (ms): 0.0 | lm loss: 1.0E+00 |\n"
        " [2099-01-01 00:00:00] iteration        2/      10 | elapsed time per iteration (ms): "
        "5.0 | lm loss: 1.0E+00 |\n"
        " iteration        3/      10 | elapsed time per iteration (ms): 5.0 | lm loss: nan |\n"
    )
    db = tmp_path / "w.duckdb"
    (c,) = ingest.ingest(db, ingest.discover([folder]))
    assert (c.n_read, c.n_loaded, c.n_quarantined) == (3, 1, 2)
    with warehouse.connect(db, read_only=True) as con:
        reasons = con.execute(
            "select line_no, stage, reason from raw_quarantine order by line_no"
        ).fetchall()
        kept = con.execute("select step, isnan(loss) from raw_training_events").fetchall()
    assert [(n, s) for n, s, _ in reasons] == [(1, "validate"), (2, "validate")]
    assert "step_time_s > 0" in reasons[0][2]
    assert "ts between 2000-01-01 and now + 1 day" in reasons[1][2]
    assert kept == [(3, True)]  # a NaN loss (a diverged step) is kept
