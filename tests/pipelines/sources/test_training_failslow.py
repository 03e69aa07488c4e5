"""Fail-slow lines of training logs: Megatron-DeepSpeed's seconds, the global batch size,
torchtitan's rank tag, and per-rank straggler reports (docs/goodput.md §1).

The files are the real slices of samples/failslow/ and samples/training/ (provenance and the
figures read by hand in their READMEs); every expectation below was read off the lines by hand.
Lines marked "edited" are a real line with one value changed to make it bad.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pytest

from pipelines.ingest.sources import training
from pipelines.ingest.sources.training import SCHEMA, parse, parse_many
from pipelines.ingest.sources.training_straggler import METRICS

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

SAMPLES = Path(__file__).parent / "samples"
FAILSLOW = SAMPLES / "failslow"
README_LOG = "megatron_core_straggler_readme.log"
SAVANNA = "savanna_hsd_straggler_line.log"


def _parse(name: str, folder: Path = FAILSLOW, **options: str) -> Parsed:
    path = folder / name
    return parse(path.read_bytes(), source_file=f"/landing/training/{name}", **options)


def _figures(rows: pl.DataFrame) -> list[tuple[int, str, float | None, int]]:
    return rows.select("line_no", "metric", "value", "rank").rows()


# --- Megatron-DeepSpeed (BLOOM): elapsed time per iteration in seconds, global batch size ------


@pytest.mark.parametrize(
    ("name", "step", "step_time_s", "loss"),
    [
        ("bloom_tr11_176b_iteration_12695.log", 12695, 105.22, 2.463556),
        ("bloom_tr11_176b_iteration_45000.log", 45000, 111.00, 2.113567),
    ],
)
def test_bloom_iteration_line_in_seconds_is_a_step(
    name: str, step: int, step_time_s: float, loss: float
) -> None:
    result = _parse(name)
    assert result.rejects.height == 0
    assert result.rows.schema == pl.Schema(SCHEMA)
    row = result.rows.row(0, named=True)
    assert (row["event"], row["framework"], row["step"]) == ("step", "megatron", step)
    assert row["step_time_s"] == step_time_s  # "(s): 105.22": seconds as printed, not / 1000
    assert row["global_batch"] == 2048  # "global batch size:  2048"
    assert row["loss"] == loss
    assert (row["ts"], row["ts_inferred"]) == (None, False)  # the line prints no date
    assert (row["rank"], row["metric"], row["value"]) == (None, None, None)


def test_bloom_drop_as_pasted_is_five_cut_lines() -> None:
    # the chronicle wraps each iteration over three lines: the first ends in "learning", not "|"
    result = _parse("bloom_tr11_176b_throughput_drop.log")
    assert result.rows.height == 0
    assert result.rejects["line_no"].to_list() == [1, 4, 7, 10, 13]
    assert set(result.rejects["reason"]) == {"truncated megatron step line: no '|' at the end"}
    assert result.n_ignored == 10  # the wrapped rest of each iteration


def test_bloom_drop_rejoined_gives_the_slowdown_read_by_hand() -> None:
    # the wraps are the Markdown paste's, not the log's: each iteration's three lines rejoined
    lines = (FAILSLOW / "bloom_tr11_176b_throughput_drop.log").read_text().splitlines()
    joined = "\n".join(" ".join(lines[i : i + 3]) for i in range(0, len(lines), 3)) + "\n"
    result = parse(joined.encode(), source_file="/landing/training/bloom.log")
    assert result.rejects.height == 0
    rows = result.rows
    assert rows["step"].to_list() == [42780, 42781, 42782, 42783, 42784]
    assert rows["step_time_s"].to_list() == [105.16, 105.17, 106.25, 110.17, 111.14]
    assert set(rows["global_batch"]) == {2048}
    assert rows["loss"].to_list() == [2.117073, 2.116946, 2.110646, 2.124820, 2.127643]
    assert rows["ts"].to_list() == [None] * 5
    # 111.14 / 105.16: the chronicle's 149 -> 141 TFLOPs
    assert round(rows["step_time_s"][-1] / rows["step_time_s"][0], 3) == 1.057


def test_milliseconds_stay_milliseconds_and_a_bad_batch_size_is_a_reject() -> None:
    text = (
        " iteration      201/  250000 | elapsed time per iteration (ms): 1250.0 | "
        "global batch size:   512 |\n"
        " iteration      202/  250000 | elapsed time per iteration (ms): 1250.0 | "
        "global batch size: 5x2 |\n"  # edited
    )
    result = parse(text.encode(), source_file="train.log")
    assert result.rows.select("step", "step_time_s", "global_batch").rows() == [(201, 1.25, 512)]
    assert result.rejects.select("line_no", "reason").rows() == [
        (2, "non-numeric global batch size '5x2'")
    ]


# --- torchtitan: the [rankN]: tag -------------------------------------------------------------


def test_torchtitan_rank_tag_is_the_rows_rank() -> None:
    # torchtitan_1287_steps.log: [rank0]:[titan] metric lines for steps 200-250
    rows = _parse("torchtitan_1287_steps.log", SAMPLES / "training").rows
    assert rows.height > 0
    assert set(rows["rank"].to_list()) == {0}
    # newcomputebench: step 640, the save start and end, "Training completed", all [rank0]:
    rows = _parse("newcomputebench_torchtitan_checkpoint.log", SAMPLES / "training").rows
    assert rows.select("event", "rank").rows() == [
        ("step", 0),
        ("checkpoint_save_start", 0),
        ("checkpoint_save_end", 0),
        ("train_end", 0),
    ]


def test_torchtitan_without_the_tag_has_no_rank() -> None:
    rows = _parse("torchtitan_2389_no_rank_prefix.log", SAMPLES / "training").rows
    assert rows.height == 8  # seven ranks at step 4, one at step 5 (its README)
    assert rows["rank"].null_count() == 8


# --- Megatron-Core StragglerDetector --------------------------------------------------------

README_MINMAX = [
    ("rtt_min_ms", 3453.08, 8),
    ("rtt_max_ms", 3468.20, 0),
    ("pwr_min_w", 601.796, 8),  # "601796W": NVML's milliwatts
    ("pwr_max_w", 683.801, 18),
    ("tmp_min_c", 52.0, 0),
    ("tmp_max_c", 65.0, 21),
    ("utl_min_pct", 97.0, 8),
    ("utl_max_pct", 100.0, 6),
    ("clk_min_mhz", 1950.0, 28),
    ("clk_max_mhz", 1980.0, 0),
    ("batch_min_ms", 14.27, 23),
    ("batch_max_ms", 34.65, 3),
    ("etpt_min_tf", 296.02, 0),
    ("etpt_max_tf", 297.32, 8),
]


def test_megatron_readme_report_is_one_row_per_figure_and_rank() -> None:
    result = _parse(README_LOG)
    assert result.rejects.height == 0
    assert result.n_ignored == 0
    rows = result.rows
    assert rows.schema == pl.Schema(SCHEMA)
    assert set(rows["event"]) == {"straggler"}
    assert set(rows["framework"]) == {"megatron"}
    assert _figures(rows) == [
        *[(1, metric, value, rank) for metric, value, rank in README_MINMAX],
        (2, "etpt_bottom_tf", 296.02, 0),
        (2, "etpt_bottom_tf", 296.17, 2),
        (2, "etpt_bottom_tf", 296.23, 1),
        (2, "etpt_bottom_tf", 296.23, 4),
        (3, "etpt_top_tf", 297.28, 15),
        (3, "etpt_top_tf", 297.28, 11),
        (3, "etpt_top_tf", 297.32, 12),
        (3, "etpt_top_tf", 297.32, 8),
    ]
    stamp = datetime(2024, 3, 14, 23, 7, 56, tzinfo=UTC)
    # line 1 prints its time; the Bottom/Top lines take it (inferred)
    assert rows.select("line_no", "ts", "ts_inferred").unique(maintain_order=True).rows() == [
        (1, stamp, False),
        (2, stamp, True),
        (3, stamp, True),
    ]
    assert set(rows["metric"]) <= set(METRICS)
    assert rows["step"].null_count() == rows.height


def test_savanna_line_names_rank_30_slowest_by_1_086() -> None:
    result = _parse(SAVANNA)
    assert result.rejects.height == 0
    figures = {m: (v, r) for _, m, v, r in _figures(result.rows)}
    assert len(figures) == 14
    assert figures["rtt_min_ms"] == (1446.49, 13)
    assert figures["rtt_max_ms"] == (1570.32, 30)
    assert figures["etpt_min_tf"] == (560.82, 30)
    assert figures["etpt_max_tf"] == (608.83, 13)
    assert figures["pwr_min_w"] == (617.923, 0)  # "617923.00W"
    assert figures["utl_min_pct"] == (45.0, 20)
    assert figures["batch_max_ms"] == (130.33, 23)
    assert figures["clk_min_mhz"] == (1920.0, 14)
    slowest = figures["rtt_max_ms"][1]
    assert slowest == figures["etpt_min_tf"][1] == 30
    assert round(figures["rtt_max_ms"][0] / figures["rtt_min_ms"][0], 3) == 1.086
    # "2024-10-23 01:29:30] [INFO] |": the date without its "["
    assert set(result.rows["ts"]) == {datetime(2024, 10, 23, 1, 29, 30, tzinfo=UTC)}


def _readme_line(n: int) -> str:
    return (FAILSLOW / README_LOG).read_text().splitlines()[n - 1]


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("3468.20ms/0", "3468.20ms/O", "non-numeric rank 'O' in 'MxRtt/Rnk: 3468.20ms/O'"),
        (
            "601796W/8",
            "601796kW/8",
            "unexpected unit 'kW' in 'MnPwr/Rnk: 601796kW/8' (expected 'W')",
        ),
        ("52C/0", "nanC/0", "non-numeric value in 'MnTmp/Rnk: nanC/0'"),
        ("MnUtl/Rnk", "MnFoo/Rnk", "unknown StragglerDetector figure 'MnFoo/Rnk'"),
    ],
)
def test_a_bad_figure_quarantines_the_whole_line_once(old: str, new: str, reason: str) -> None:
    line = _readme_line(1)
    assert old in line
    text = line.replace(old, new, 1) + "\n" + _readme_line(2) + "\n"  # edited
    result = parse(text.encode(), source_file="s.log")
    assert result.rejects.select("line_no", "reason").rows() == [(1, reason)]
    assert result.rows["line_no"].unique().to_list() == [2]  # the Bottom line still loads
    assert result.rows.height == 4
    assert result.n_ignored == 0


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("296.17/2", "296.17/0", "rank 0 listed twice"),
        ("296.23/1", "29x.23/1", "malformed '<value>/<rank>' entry '29x.23/1'"),
        ("296.23/4,", "296.23/4", "truncated megatron straggler line: no ',' after the last "),
    ],
)
def test_a_bad_rank_list_entry_quarantines_the_line(old: str, new: str, reason: str) -> None:
    line = _readme_line(2)
    text = line.replace(old, new, 1) + "\n"  # edited
    result = parse(text.encode(), source_file="s.log")
    assert result.rows.height == 0
    assert result.rejects["line_no"].to_list() == [1]
    assert result.rejects["reason"][0].startswith(reason)


# --- NVIDIA resiliency extension ---------------------------------------------------------------


def test_nvrx_two_rank_report_has_no_straggler() -> None:
    result = _parse("nvrx_megatron_bridge_2114_two_ranks.log", host="gpu0001")
    assert result.rejects.height == 0
    rows = result.rows
    assert rows.select("line_no", "metric", "rank", "value", "host").rows() == [
        (2, "nvrx_relative", 0, 0.95, "22ca9bdcfc9a"),
        (3, "nvrx_relative", 1, 1.00, "22ca9bdcfc9a"),
        (6, "nvrx_individual", 0, 0.98, "22ca9bdcfc9a"),
        (7, "nvrx_individual", 1, 0.99, "22ca9bdcfc9a"),
    ]
    assert set(rows["framework"]) == {"nvrx"}
    assert set(rows["event"]) == {"straggler"}
    # no time is printed anywhere in the slice
    assert rows.select("ts", "ts_inferred").unique().rows() == [(None, False)]
    # the two headers, two blank lines and the two score summaries
    assert result.n_ignored == 6
    relative = rows.filter(pl.col("metric") == "nvrx_relative")["value"]
    # the summary line's min is 0.9490914940834045, printed per rank as 0.95: above 0.7
    assert relative.min() == 0.95
    assert (relative < 0.7).sum() == 0


def test_nvrx_512_rank_report_names_rank_76_worst_in_both() -> None:
    result = _parse("nvrx_megatron_bridge_docs_512_ranks.log")
    assert result.rejects.height == 0
    rows = result.rows
    assert rows.height == 20
    assert result.n_ignored == 9  # headers, Worst/Best lines, blanks, processing time
    relative = rows.filter(pl.col("metric") == "nvrx_relative")
    individual = rows.filter(pl.col("metric") == "nvrx_individual")
    assert relative.height == individual.height == 10
    worst = relative.filter(pl.col("value") == relative["value"].min())
    assert worst.select("rank", "host").rows() == [
        (76, "h100-001-253-012"),
        (13, "h100-001-010-003"),
        (45, "h100-001-172-026"),
    ]
    assert worst["value"].to_list() == [0.94] * 3
    assert individual.select("rank", "value", "host").row(0) == (76, 0.98, "h100-001-253-012")
    assert individual.filter(pl.col("rank") == 79)["host"].to_list() == ["h100-001-253-012"]


def test_nvrx_warnings_give_one_row_per_affected_rank() -> None:
    result = _parse("nvrx_megatron_bridge_docs_warnings.log")
    assert result.rejects.height == 0
    assert result.rows.select("line_no", "metric", "rank", "value", "detail").rows() == [
        (1, "nvrx_warning", 76, None, "Some GPUs have worse relative performance."),
        (1, "nvrx_warning", 13, None, "Some GPUs have worse relative performance."),
        (1, "nvrx_warning", 45, None, "Some GPUs have worse relative performance."),
        (2, "nvrx_warning", 162, None, "Some GPUs performance dropped."),
        (2, "nvrx_warning", 79, None, "Some GPUs performance dropped."),
        (2, "nvrx_warning", 357, None, "Some GPUs performance dropped."),
    ]


def test_bad_nvrx_lines_are_rejects_with_a_reason() -> None:
    text = (
        "  Rank=0 Node=22ca9bdcfc9a Score=0.95\n"  # before any header
        "GPU relative performance:\n"
        "  Rank=0 Node=22ca9bdcfc9a Score=1.50\n"  # edited
        "  Rank=x Node=22ca9bdcfc9a Score=1.00\n"  # edited
        "  Rank=1 Node=22ca9bdcfc9a Score=l.00\n"  # edited
        "  Rank=1 Node=22ca9bdcfc9a Score=1.00\n"
        "STRAGGLER DETECTION WARNING: Some GPUs performance dropped. Affected ranks: []\n"
        "STRAGGLER DETECTION WARNING: Some GPUs performance dropped. Affected ranks: [1, 1]\n"
    )
    result = parse(text.encode(), source_file="n.log")
    assert result.rejects.select("line_no", "reason").rows() == [
        (
            1,
            "NVRx score line with no 'GPU relative performance:' or 'GPU individual "
            "performance:' header before it in the file",
        ),
        (3, "NVRx score '1.50' outside 0-1"),
        (4, "non-numeric rank 'x'"),
        (5, "non-numeric NVRx score 'l.00'"),
        (7, "no rank listed"),
        (8, "rank 1 listed twice"),
    ]
    assert result.rows.select("line_no", "metric", "rank", "value").rows() == [
        (6, "nvrx_relative", 1, 1.0)
    ]
    assert result.n_ignored == 1  # the header


def test_a_score_line_takes_the_nearest_earlier_printed_time() -> None:
    text = (
        "[NeMo I 2025-03-01 10:00:00 nemo_logging:393] GPU individual performance:\n"
        "  Rank=3 Node=n1 Score=0.91\n"
    )
    rows = parse(text.encode(), source_file="n.log").rows
    assert rows.select("metric", "rank", "ts", "ts_inferred").rows() == [
        ("nvrx_individual", 3, datetime(2025, 3, 1, 10, 0, tzinfo=UTC), True)
    ]


# --- many files, many lines --------------------------------------------------------------------


def test_many_file_parse_of_straggler_logs_equals_parse() -> None:
    names = [README_LOG, "nvrx_megatron_bridge_docs_512_ranks.log", SAVANNA]
    files: list[tuple[bytes, str, dict[str, str | None]]] = [
        ((FAILSLOW / n).read_bytes(), n, {}) for n in names
    ]
    # a score line first in the next file: the NVRx file's headers must not reach it
    files.insert(2, (b"  Rank=1 Node=n Score=0.5\n", "orphan.log", {}))
    together = parse_many(files)
    for (data, name, _), result in zip(files, together, strict=True):
        alone = parse(data, source_file=name)
        assert result.rows.equals(alone.rows), name
        assert result.rejects.equals(alone.rejects), name
        assert result.n_ignored == alone.n_ignored, name
    assert together[2].rows.height == 0
    assert together[2].rejects.height == 1


def test_a_long_log_reads_straggler_lines_as_a_short_one() -> None:
    # past MANY_LINES each regex runs only on its own lines: the rows must be the same
    nvrx = "nvrx_megatron_bridge_docs_512_ranks.log"
    data = (FAILSLOW / README_LOG).read_bytes() + (FAILSLOW / nvrx).read_bytes()
    padding = b"nothing\n" * training.MANY_LINES
    short = parse(data, source_file="a.log")
    long = parse(padding + data, source_file="a.log")
    shifted = short.rows.with_columns(pl.col("line_no") + training.MANY_LINES)
    assert long.rows.equals(shifted)
    assert long.n_ignored == short.n_ignored + training.MANY_LINES
