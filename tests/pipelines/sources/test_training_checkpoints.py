"""Checkpoint save and load lines of training logs, job and host identity (docs/goodput.md §1).

Real slices (samples/training/, provenance in its README) and look-alike lines. Expectations are
read off the sample lines by hand: times the lines print, carried from the nearest earlier line
that prints one (Megatron's checkpoint lines), or a save start's time plus the timer's max.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pipelines.ingest.sources.training import SCHEMA, job_from_name, parse
from tests.pipelines.sources.helpers import raw_bytes, utc

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

SAMPLES = Path(__file__).parent / "samples" / "training"
COLUMNS = ("line_no", "event", "framework", "step", "ts", "ts_inferred", "duration_s")


def _sample(name: str) -> Parsed:
    return parse((SAMPLES / name).read_bytes(), source_file=f"/landing/training/{name}")


def _text(text: str, **options: str) -> Parsed:
    body = raw_bytes(text)
    return parse(body, source_file="/landing/training/train.log", **options)


def test_training_real_torchtitan_last_step_save_with_the_missing_space() -> None:
    # AICrossSim/NewComputeBench docs: step 640/644 (the fork's "= 99.3789%" form), "Saving a full
    # checkpoint at last step, step 644.", "...enabled)in 5.53 seconds.", "Sleeping 2 seconds ..."
    # (ignored) and "Training completed" (line 5: the run's training end, no step)
    result = _sample("newcomputebench_torchtitan_checkpoint.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 1
    rows = result.rows
    assert dict(rows.schema) == SCHEMA
    assert rows.select(*COLUMNS).rows() == [
        (1, "step", "torchtitan", 640, utc("2025-04-01 00:25:47.084"), False, None),
        (
            2,
            "checkpoint_save_start",
            "torchtitan",
            644,
            utc("2025-04-01 00:25:54.090"),
            False,
            None,
        ),
        (3, "checkpoint_save_end", "torchtitan", 644, utc("2025-04-01 00:25:59.616"), False, 5.53),
        (5, "train_end", "torchtitan", None, utc("2025-04-01 00:26:01.706"), False, None),
    ]
    assert rows["loss"].to_list() == [6.2116, None, None, None]
    assert rows["job_id"].to_list() == [None] * 4


def test_training_real_megatron_deepspeed_one_line_timer_supersedes_successfully_saved() -> None:
    # bigscience tr1-13B: iteration 33240 (no date), "time (ms)", save start at 33241 (no earlier
    # line prints a time), a DeepSpeed line at 01:00:44,221, "successfully saved", then
    # "time (ms) | save-checkpoint: 57514.53" and the exit banner
    result = _sample("bigscience_tr1_13b_megatron_deepspeed_save.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 4  # lines 2, 4, 5 (superseded by the timer) and 7
    path = "/gpfsscratch/rech/six/commun/checkpoints/tr1-13B/checkpoints"  # codespell:ignore
    rows = result.rows
    assert rows.select(*COLUMNS, "checkpoint_path").rows() == [
        (1, "step", "megatron", 33240, None, False, None, None),
        (3, "checkpoint_save_start", "megatron", 33241, None, False, None, path),
        # the start has no time, so neither has the end; the DeepSpeed line came mid-save
        (6, "checkpoint_save_end", "megatron", 33241, None, False, pytest.approx(57.51453), path),
    ]
    assert rows["step_time_s"].to_list()[0] == pytest.approx(23.4914)


def test_training_real_megatron_minmax_timer_block_after_a_datetime_banner() -> None:
    # a Megatron-LM GPT-2 note: "[before the start of training step] datetime: 2024-01-24
    # 11:10:16" (line 7), evaluate timers, save at iteration 1 (13), successfully saved (14), the
    # (min, max) block with save-checkpoint (21027.08, 21027.08) (16), the next save start (22);
    # the banner itself is the training start (line 7, its own time, no step)
    result = _sample("megatron_gpt2_note_save_timer.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 22 - 4
    start = utc("2024-01-24 11:10:16")
    rows = result.rows
    assert rows.select(*COLUMNS, "checkpoint_path").rows() == [
        (7, "train_start", "megatron", None, start, False, None, None),
        (13, "checkpoint_save_start", "megatron", 1, start, True, None, "./checkpoints/gpt-2"),
        (
            16,
            "checkpoint_save_end",
            "megatron",
            1,
            start + timedelta(milliseconds=21027.08),
            True,
            pytest.approx(21.02708),
            "./checkpoints/gpt-2",
        ),
        # the nearest earlier printed time is still line 7's
        (22, "checkpoint_save_start", "megatron", 2, start, True, None, "./checkpoints/gpt-2"),
    ]


def test_training_real_megatron_srun_label_prefix_and_last_rank_timer() -> None:
    # HyperPod guide: "1: iteration 1/ 508626" (skipped, no loss), "0: saving ...", "0:
    # successfully saved ...", "1: (min, max) time across ranks (ms):", "1:     save-checkpoint
    # ...: (81611.24, 81611.82)": the max is the slowest rank
    result = _sample("hyperpod_megatron_srun_label_save.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 2
    assert result.rows.select(*COLUMNS, "checkpoint_path", "step_time_s").rows() == [
        (1, "step", "megatron", 1, None, False, None, None, pytest.approx(440.3526)),
        (2, "checkpoint_save_start", "megatron", 1, None, False, None, "/fsx/checkpoints", None),
        (
            5,
            "checkpoint_save_end",
            "megatron",
            1,
            None,
            False,
            pytest.approx(81.61182),
            "/fsx/checkpoints",
            None,
        ),
    ]


def test_training_torchtitan_load_and_older_save_messages() -> None:
    result = _text(
        """
        [rank0]:[titan] 2025-06-16 22:00:00,000 - root - INFO - Loading the checkpoint at step 500.
        [rank0]:[titan] 2025-06-16 22:00:03,210 - root - INFO - Finished loading the checkpoint in 3.21 seconds.
        [rank0]:[titan] 2025-06-16 22:10:00,000 - root - INFO - step: 600  loss:  5.0000  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%
        [rank0]:[titan] 2025-06-16 22:10:00,100 - root - INFO - Saving the checkpoint (or staging if async is enabled).
        [rank0]:[titan] 2025-06-16 22:10:04,100 - root - INFO - Finished saving the checkpoint (or staging if async is enabled) in 4.00 seconds.
        [rank0]:[titan] 2025-06-16 22:20:00,000 - root - INFO - Saving a full checkpoint at step 700
        [rank0]:[titan] 2025-06-16 22:20:02,500 - root - INFO - Finished saving the checkpoint in 2.50 seconds
        """  # noqa: E501
    )
    assert result.rejects.height == 0
    assert result.n_ignored == 0
    assert result.rows.select(*COLUMNS).rows() == [
        (1, "checkpoint_load_start", "torchtitan", 500, utc("2025-06-16 22:00:00"), False, None),
        (2, "checkpoint_load_end", "torchtitan", 500, utc("2025-06-16 22:00:03.21"), False, 3.21),
        (3, "step", "torchtitan", 600, utc("2025-06-16 22:10:00"), False, None),
        # "Saving the checkpoint" names no step, so neither does its end
        (4, "checkpoint_save_start", "torchtitan", None, utc("2025-06-16 22:10:00.1"), False, None),
        (5, "checkpoint_save_end", "torchtitan", None, utc("2025-06-16 22:10:04.1"), False, 4.0),
        (6, "checkpoint_save_start", "torchtitan", 700, utc("2025-06-16 22:20:00"), False, None),
        (7, "checkpoint_save_end", "torchtitan", 700, utc("2025-06-16 22:20:02.5"), False, 2.5),
    ]


def test_training_megatron_max_only_timer_and_a_save_without_timer() -> None:
    result = _text(
        """
         [2024-07-15 15:27:27] iteration      100/    1000 | elapsed time per iteration (ms): 742.5 | lm loss: 9.911994E-01 |
        saving checkpoint at iteration     100 to /ckpt
          successfully saved checkpoint from iteration     100 to /ckpt [ t 1/4, p 1/2 ]
        INFO:megatron.core.timers:max time across ranks (ms):
            save-checkpoint ................................: 18512.90
         [2024-07-15 15:28:05] iteration      110/    1000 | elapsed time per iteration (ms): 719.8 | lm loss: 9.327390E-01 |
        saving checkpoint at iteration     110 to /ckpt
          successfully saved checkpoint from iteration     110 to /ckpt [ t 1/4, p 1/2 ]
        """  # noqa: E501
    )
    assert result.rejects.height == 0
    assert result.n_ignored == 2  # the header line and the first "successfully saved"
    t100, t110 = utc("2024-07-15 15:27:27"), utc("2024-07-15 15:28:05")
    assert result.rows.select(*COLUMNS).rows() == [
        (1, "step", "megatron", 100, t100, False, None),
        (2, "checkpoint_save_start", "megatron", 100, t100, True, None),
        (
            5,
            "checkpoint_save_end",
            "megatron",
            100,
            t100 + timedelta(seconds=18.5129),
            True,
            pytest.approx(18.5129),
        ),
        (6, "step", "megatron", 110, t110, False, None),
        (7, "checkpoint_save_start", "megatron", 110, t110, True, None),
        # no timer: "successfully saved" is the end, with no duration
        (8, "checkpoint_save_end", "megatron", 110, t110, True, None),
    ]


def test_training_look_alike_checkpoint_lines_are_rejects_or_ignored() -> None:
    result = _text(
        """
            save-checkpoint ................................: (81611.24, 816
            save-checkpoint ................................: (abc, def)
            save-checkpoint ................................: -5.0
        [rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished saving the checkpoint (or staging if async is enabled)in 5.5
        [rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished loading the checkpoint in x.y seconds.
        [rank0]:2025-04-01 00:25:59,616 - root - INFO - Loading the checkpoint at step abc.
        [rank0]:2025-13-01 00:25:54,090 - root - INFO - Saving a full checkpoint at last step, step 644.
            save-checkpoint-non-persistent .................: (10.0, 12.0)
            load-checkpoint ................................: (1.04, 1.37)
        """  # noqa: E501
    )
    assert result.rows.height == 0
    assert result.n_ignored == 2
    assert result.rejects.select("line_no", "reason").rows() == [
        (
            1,
            "truncated megatron checkpoint save end line: no '(<min>, <max>)' or '<max>' after "
            "'save-checkpoint ...:'",
        ),
        (2, "non-numeric or negative save-checkpoint time 'def'"),
        (3, "non-numeric or negative save-checkpoint time '-5.0'"),
        (4, "truncated or malformed torchtitan checkpoint save end line: no 'in <x> seconds'"),
        (5, "non-numeric or negative duration 'x.y'"),
        (6, "non-numeric step 'abc'"),
        (7, "malformed time '2025-13-01 00:25:54,090'"),
    ]


def test_training_a_rejected_save_start_names_nothing_for_its_end() -> None:
    result = _text(
        """
        [rank0]:2025-04-01 00:25:54,090 - root - INFO - Saving a full checkpoint at last step, step 6x4.
        [rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished saving the checkpoint in 5.53 seconds.
        """  # noqa: E501
    )
    assert result.rejects.select("line_no", "reason").rows() == [(1, "non-numeric step '6x4'")]
    assert result.rows.select("line_no", "step", "duration_s").rows() == [(2, None, 5.53)]


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("slurm-1234.out", "1234"),
        ("slurm-77_3.out", "77_3"),
        ("slurm-1234.out.1", None),
        ("train-1234.out", None),
        ("slurm-abc.out", None),
    ],
)
def test_training_job_id_from_slurm_default_output_name(name: str, job: str | None) -> None:
    assert job_from_name(f"/landing/training/{name}") == job


def test_training_job_and_host_options_win_over_the_file_name() -> None:
    line = b" iteration      201/  250000 | elapsed time per iteration (ms): 1250.0 |\n"
    named = parse(line, source_file="/landing/training/slurm-1234.out")
    assert named.rows.select("job_id", "host").row(0) == ("1234", None)
    given = parse(line, source_file="/landing/training/slurm-1234.out", job="99_1", host="gpu7")
    assert given.rows.select("job_id", "host").row(0) == ("99_1", "gpu7")
    plain = parse(line, source_file="/landing/training/train.log", host="gpu7")
    assert plain.rows.select("job_id", "host").row(0) == (None, "gpu7")


def test_training_real_torchtitan_fork_training_start_line() -> None:
    # a torchtitan-derived trainer's log: line 2 "Training starts at step 1, with local batch
    # size 1, ..." at 2025-02-03 09:19:51 (the step about to run: nothing to resume); the error
    # and profiler lines around it are not training events
    result = _sample("torchtitan_fork_training_starts.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 2
    assert result.rows.select(*COLUMNS).rows() == [
        (2, "train_start", "torchtitan", 1, utc("2025-02-03 09:19:51"), False, None),
    ]
