"""Training-loop progress logs as users pasted them (samples/training/, provenance in its README),
and a few synthetic edge cases. Expectations are read off the sample lines by hand.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pipelines.ingest.sources.training import SCHEMA, parse
from tests.pipelines.sources.helpers import utc

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

SAMPLES = Path(__file__).parent / "samples" / "training"


def _sample(name: str) -> Parsed:
    return parse((SAMPLES / name).read_bytes(), source_file=f"/landing/training/{name}")


def _text(text: str, *, crlf: bool = False) -> Parsed:
    body = textwrap.dedent(text).lstrip("\n")
    if crlf:
        body = body.replace("\n", "\r\n")
    return parse(body.encode(), source_file="/landing/training/train.log")


def test_training_real_megatron_iterations_without_date_prefix() -> None:
    # epfLLM/Megatron-LLM#11: four iteration lines, 201-204 of 250000, no [date] prefix
    result = _sample("megatron_llm_11_iterations.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 0
    rows = result.rows
    assert dict(rows.schema) == SCHEMA
    assert rows["line_no"].to_list() == [1, 2, 3, 4]
    assert set(rows["event"]) == {"step"}
    assert set(rows["framework"]) == {"megatron"}
    assert rows["step"].to_list() == [201, 202, 203, 204]
    # elapsed time per iteration (ms): 139113.4, 139221.4, 140346.9, 140197.9
    assert rows["step_time_s"].to_list() == pytest.approx([139.1134, 139.2214, 140.3469, 140.1979])
    # lm loss: 2.373574E+00, 2.413736E+00, 2.383620E+00, 2.425973E+00
    assert rows["loss"].to_list() == pytest.approx([2.373574, 2.413736, 2.383620, 2.425973])
    assert rows["ts"].null_count() == 4
    assert rows["checkpoint_path"].null_count() == 4
    assert set(rows["source_file"]) == {"/landing/training/megatron_llm_11_iterations.log"}


def test_training_real_megatron_skipped_iterations_print_no_loss() -> None:
    # NVIDIA/Megatron-LM#602: iterations 1-4 of 2753818 skipped by the loss scaler (no lm loss),
    # a "[Rank 0] (after 1 iterations) memory (MB)" line after the first
    result = _sample("megatron_lm_602_skipped_iterations.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 1
    rows = result.rows
    assert rows["line_no"].to_list() == [1, 3, 4, 5]
    assert rows["step"].to_list() == [1, 2, 3, 4]
    # elapsed time per iteration (ms): 5801.1, 1152.3, 1118.1, 1119.8
    assert rows["step_time_s"].to_list() == pytest.approx([5.8011, 1.1523, 1.1181, 1.1198])
    assert rows["loss"].to_list() == [None, None, None, None]


def test_training_real_megatron_date_prefix() -> None:
    # NVIDIA/Megatron-LM#1570 (mcore 0.12): the user's "# mcore-0.12 full 10 steps" note, then
    # iterations 1-3 of 10 with the [date] prefix
    result = _sample("megatron_lm_1570_date_prefix.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 1
    rows = result.rows
    assert rows["line_no"].to_list() == [2, 3, 4]
    assert rows["step"].to_list() == [1, 2, 3]
    assert rows["ts"].to_list() == [
        utc("2025-05-09 06:11:17"),
        utc("2025-05-09 06:11:20"),
        utc("2025-05-09 06:11:23"),
    ]
    assert rows["step_time_s"].to_list() == pytest.approx([21.8479, 3.2866, 3.1824])
    # lm loss: 1.186396E+01, 1.186432E+01, 8.431922E+00 (not load_balancing_loss)
    assert rows["loss"].to_list() == pytest.approx([11.86396, 11.86432, 8.431922])


def test_training_real_megatron_checkpoint_load_among_dlrover_lines() -> None:
    # intelligent-machine-learning/dlrover#977: two dlrover saver lines, Megatron's
    # "loading checkpoint from /nas/megatron_gpt/ at iteration 100" (line 3), then four
    # "checkpoint version" / "using checkpoint value" lines
    result = _sample("dlrover_977_megatron_load.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 6
    assert result.rows.select(
        "line_no", "event", "framework", "step", "ts", "checkpoint_path"
    ).rows() == [(3, "checkpoint_load_start", "megatron", 100, None, "/nas/megatron_gpt/")]


def test_training_real_torchtitan_rank_prefixed_steps() -> None:
    # pytorch/torchtitan#1287: steps 200-250 every 10 on lines 2, 5-8, 10; two GC lines and two
    # profiler lines between them
    result = _sample("torchtitan_1287_steps.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 4
    rows = result.rows
    assert rows["line_no"].to_list() == [2, 5, 6, 7, 8, 10]
    assert set(rows["framework"]) == {"torchtitan"}
    assert set(rows["event"]) == {"step"}
    assert rows["step"].to_list() == [200, 210, 220, 230, 240, 250]
    assert rows["loss"].to_list() == pytest.approx([6.1384, 6.0388, 6.0348, 5.9670, 5.8311, 5.8383])
    assert rows["ts"].to_list() == [
        utc("2025-06-16 22:30:50.322"),
        utc("2025-06-16 22:31:04.970"),
        utc("2025-06-16 22:31:18.934"),
        utc("2025-06-16 22:31:32.895"),
        utc("2025-06-16 22:31:46.869"),
        utc("2025-06-16 22:32:00.846"),
    ]
    assert rows["step_time_s"].null_count() == 6


def test_training_real_torchtitan_without_rank_prefix_every_rank_repeats() -> None:
    # pytorch/torchtitan#2389: seven ranks print step 4 at 19:46:17,508, then one step 5 line
    result = _sample("torchtitan_2389_no_rank_prefix.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 0
    rows = result.rows
    assert rows["step"].to_list() == [4, 4, 4, 4, 4, 4, 4, 5]
    assert rows["loss"].to_list() == pytest.approx([7.62585] * 7 + [7.07623])
    assert rows["ts"].to_list() == [utc("2026-02-24 19:46:17.508")] * 7 + [
        utc("2026-02-24 19:46:19.145")
    ]


def test_training_real_hf_trainer_json_lines_with_step() -> None:
    # huggingface/blog#56: two notebook progress-bar lines, then two log dicts (steps 500, 1000)
    result = _sample("hf_blog_56_trainer_json.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 2
    assert result.rows.select("line_no", "event", "framework", "step", "ts").rows() == [
        (3, "step", "hf_trainer", 500, None),
        (4, "step", "hf_trainer", 1000, None),
    ]
    assert result.rows["loss"].to_list() == [7.152712148666382, 6.928811420440674]


def test_training_real_hf_trainer_dicts_without_step() -> None:
    # Time-MoE/Time-MoE#71: a tqdm bar line, then nine log dicts padded with spaces by tqdm;
    # they print no step (grad_norm nan in two)
    result = _sample("time_moe_71_trainer_dict.log")
    assert result.rejects.height == 0
    assert result.n_ignored == 1
    rows = result.rows
    assert rows["line_no"].to_list() == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert set(rows["framework"]) == {"hf_trainer"}
    assert set(rows["event"]) == {"step"}
    assert rows["step"].null_count() == 9
    assert rows["loss"].to_list() == [
        0.1474,
        0.1549,
        0.1864,
        0.1819,
        0.1558,
        0.1568,
        0.1471,
        0.1558,
        0.173,
    ]


def test_training_megatron_date_prefix_and_checkpoint_lines() -> None:
    result = _text(
        """
         [2024-05-01 12:00:00] iteration      100/  500000 | consumed samples:        12800 | elapsed time per iteration (ms): 1250.0 | learning rate: 3.000E-04 | global batch size:   128 | lm loss: 7.500000E+00 | loss scale: 1.0 |
        saving checkpoint at iteration     100 to /ckpt/gpt
          successfully saved checkpoint at iteration     100 to /ckpt/gpt
         loading checkpoint from /ckpt/gpt at iteration 100
          successfully loaded checkpoint from /ckpt/gpt [ t 0/1, p 0/1 ] at iteration 100
        > building GPT2BPETokenizer tokenizer ...
        """  # noqa: E501
    )
    assert result.rejects.height == 0
    assert result.n_ignored == 1
    # the save lines print no time: both take the iteration line's (docs/goodput.md §1); the
    # load lines take none
    noon = utc("2024-05-01 12:00:00")
    assert result.rows.select(
        "event", "step", "ts", "ts_inferred", "step_time_s", "loss", "checkpoint_path"
    ).rows() == [
        ("step", 100, noon, False, 1.25, 7.5, None),
        ("checkpoint_save_start", 100, noon, True, None, None, "/ckpt/gpt"),
        ("checkpoint_save_end", 100, noon, True, None, None, "/ckpt/gpt"),
        ("checkpoint_load_start", 100, None, False, None, None, "/ckpt/gpt"),
        ("checkpoint_load_end", 100, None, False, None, None, "/ckpt/gpt"),
    ]


def test_training_truncated_and_non_numeric_lines_are_rejects() -> None:
    result = _text(
        """
         iteration      201/  250000 | consumed samples:       205824 | elapsed ti
         iteration      202/  250000 | elapsed time per iteration (ms): 139221.4 | learning ra
         iteration      abc/  250000 | elapsed time per iteration (ms): 1.0 |
         iteration      203/  250000 | elapsed time per iteration (ms): n/a |
        [titan] 2026-02-24 19:46:19,145 - root - INFO - step:  5  loss:  7.07623  grad_norm: 46
        [titan] 2026-13-45 19:46:19,145 - root - INFO - step:  6  loss:  7.0  mfu: 13.93%
        {'loss': 2.1, 'grad_no
        """
    )
    assert result.rows.height == 0
    assert result.n_ignored == 0
    assert result.rejects.select("line_no", "reason").rows() == [
        (1, "truncated or malformed megatron step line: no 'elapsed time per iteration (ms)'"),
        (2, "truncated megatron step line: no '|' at the end"),
        (3, "non-numeric step 'abc'"),
        (4, "non-numeric elapsed time per iteration 'n/a'"),
        (5, "truncated torchtitan step line: no 'mfu: <n>%' at the end"),
        (6, "malformed time '2026-13-45 19:46:19,145'"),
        (7, "truncated hf_trainer step line: no '}' at the end"),
    ]
    assert (
        result.rejects["raw"][2]
        == " iteration      abc/  250000 | elapsed time per iteration (ms): 1.0 |"
    )


def test_training_crlf_lines_parse_like_lf() -> None:
    text = """
        [titan] 2026-02-24 19:46:19,145 - root - INFO - step:  5  loss:  7.07623  grad_norm: 46.5000  memory: 66.91GiB(37.51%)  tps: 10,007  tflops: 313.36  mfu: 13.93%
         iteration      202/  250000 | elapsed time per iteration (ms): 1500.0 | lm loss: 2.5E+00 |
        """  # noqa: E501
    crlf, lf = _text(text, crlf=True), _text(text)
    assert crlf.rejects.height == 0
    assert crlf.rows.select("framework", "step", "ts", "step_time_s", "loss").rows() == [
        ("torchtitan", 5, utc("2026-02-24 19:46:19.145"), None, 7.07623),
        ("megatron", 202, None, 1.5, 2.5),
    ]
    assert crlf.rows.equals(lf.rows)


def test_training_hf_trainer_dict_without_step_and_checkpoint_save() -> None:
    result = _text(
        """
        {'loss': 2.1, 'grad_norm': 0.9, 'learning_rate': 5e-05, 'epoch': 0.5}
        [INFO|trainer.py:3000] 2024-05-01 12:00:00,123 >> Saving model checkpoint to out/checkpoint-500
        [INFO|trainer.py:3000] 2024-05-01 12:30:00,000 >> Saving model checkpoint to out
        {'eval_loss': 0.62, 'epoch': 1.0}
        """  # noqa: E501
    )
    assert result.rejects.height == 0
    assert result.n_ignored == 1
    assert result.rows.select(
        "event", "framework", "step", "ts", "loss", "checkpoint_path"
    ).rows() == [
        ("step", "hf_trainer", None, None, 2.1, None),
        (
            "checkpoint_save_start",
            "hf_trainer",
            500,
            utc("2024-05-01 12:00:00.123"),
            None,
            "out/checkpoint-500",
        ),
        ("checkpoint_save_start", "hf_trainer", None, utc("2024-05-01 12:30:00"), None, "out"),
    ]


def test_training_empty_file_and_non_utf8_line() -> None:
    empty = parse(b"", source_file="/landing/training/empty.log")
    assert empty.rows.height == 0
    assert empty.rejects.select("line_no", "reason").rows() == [(0, "empty file")]
    bad = parse(
        b"noise \xff\n iteration 1/ 2 | elapsed time per iteration (ms): 5.0 | \xff |\n",
        source_file="/landing/training/bad.log",
    )
    assert bad.n_ignored == 1
    assert bad.rows.height == 0
    assert bad.rejects.select("line_no", "reason").rows() == [(2, "line is not valid UTF-8")]
