"""Real ``dcgmi dmon`` output (NVIDIA/DCGM issue #244, samples/dcgm/README.md) parses to its lines.

The sample's fields are DCGM's profiling fields (GRACT, SMACT, ... FP16A), none of which
``raw_dcgm_samples`` keeps: every GPU line is a row with its GPU, time and line number and no
metric, the header and the units line are ignored, and nothing is rejected.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.ingest.sources import dcgm

SAMPLE = Path(__file__).parent / "samples" / "dcgm" / "dcgm_issue244_dmon_profiling.txt"
START = datetime(2026, 6, 1, tzinfo=UTC)


def _with_ts(text: str) -> bytes:
    """Put a time before every line, one second apart, as ``dmon | ts`` would."""
    return "".join(
        f"{(START + timedelta(seconds=i)):%Y-%m-%dT%H:%M:%SZ} {line}\n"
        for i, line in enumerate(text.splitlines())
    ).encode()


def test_real_dmon_lines_give_one_row_per_gpu_line() -> None:
    parsed = dcgm.parse(_with_ts(SAMPLE.read_text()), source_file="/landing/dcgm/b76d14397.dmon")
    rows = parsed.rows.sort("line_no")
    # lines 3-10: GPUs 0-7 of the first sample; lines 11-12: GPUs 0 and 1 of the next
    assert rows["line_no"].to_list() == list(range(3, 13))
    assert rows["gpu_index"].to_list() == [*range(8), 0, 1]
    assert rows["ts"].to_list() == [START + timedelta(seconds=n - 1) for n in range(3, 13)]
    assert set(rows["host"].to_list()) == {"b76d14397"}
    assert set(rows["source_format"].to_list()) == {"dmon"}
    metrics = [c for c in dcgm.METRICS if c in rows.columns]
    assert metrics  # the kept metric columns exist, and the profiling fields fill none of them
    assert rows.select(metrics).null_count().row(0) == (rows.height,) * len(metrics)
    assert parsed.rejects.height == 0
    assert parsed.n_ignored == 2  # "#Entity ..." and "ID"


def test_many_file_parse_of_the_real_sample_equals_parse() -> None:
    data = _with_ts(SAMPLE.read_text())
    alone = dcgm.parse(data, source_file="/landing/dcgm/b76d14397.dmon")
    (together, _) = dcgm.parse_many(
        [
            (data, "/landing/dcgm/b76d14397.dmon", {}),
            (data, "/landing/dcgm/other.dmon", {}),
        ]
    )
    assert together.rows.equals(alone.rows)
    assert together.n_ignored == alone.n_ignored
