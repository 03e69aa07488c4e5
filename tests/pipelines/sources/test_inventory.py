"""nvidia-smi --query-gpu CSV snapshots: inline raw text, expected frames, hostile inputs."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.ingest.sources.inventory import SCHEMA, host_of, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons

HEADER = "timestamp, index, pci.bus_id, serial, uuid, name"
NOW = datetime(2026, 9, 1, tzinfo=UTC)
SOURCE = "/landing/nvidia_smi/gpu0001__20260601T000000Z.csv"


def _parse(text: str | bytes, *, source_file: str = SOURCE) -> Parsed:
    data = raw_bytes(text) if isinstance(text, str) else text
    return parse(data, source_file=source_file, now=NOW)


def test_inventory_snapshot_becomes_one_row_per_gpu() -> None:
    result = _parse(
        f"""
        {HEADER}
        2026/06/01 00:00:00.000, 0, 00000000:18:00.0, 1650124014249, GPU-509665ad-b600-ac93-3616-d754b23d636d, NVIDIA H100 80GB HBM3
        2026/06/01 00:00:00.123, 1, 00000000:2A:00.0, [N/A], GPU-0b1e0f2c-0000-0000-0000-000000000001, NVIDIA H100 80GB HBM3
        """  # noqa: E501
    )
    snapshot = datetime(2026, 6, 1, tzinfo=UTC)
    expected = pl.DataFrame(
        [
            (
                SOURCE,
                2,
                "gpu0001",
                snapshot,
                0,
                "0000:18:00",
                "1650124014249",
                "GPU-509665ad-b600-ac93-3616-d754b23d636d",
                "NVIDIA H100 80GB HBM3",
            ),
            (
                SOURCE,
                3,
                "gpu0001",
                snapshot.replace(microsecond=123000),
                1,
                "0000:2a:00",
                None,
                "GPU-0b1e0f2c-0000-0000-0000-000000000001",
                "NVIDIA H100 80GB HBM3",
            ),
        ],
        schema=SCHEMA,
        orient="row",
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


@pytest.mark.parametrize(
    ("source_file", "host"),
    [
        ("/landing/nvidia_smi/gpu0001__20260601T000000Z.csv", "gpu0001"),
        ("node-a.cluster__20260601T000000Z.csv", "node-a.cluster"),
        ("gpu0002.csv", "gpu0002"),
    ],
)
def test_inventory_host_comes_from_the_file_name(source_file: str, host: str) -> None:
    assert host_of(source_file) == host


def test_inventory_hostile_lines_are_rejected_with_a_reason() -> None:
    result = _parse(
        f"""
        {HEADER}
        2026/06/01 00:00:00.000, 0, 00000000:18:00.0, 1650124014249, GPU-a, NVIDIA H100 80GB HBM3
        2026/06/01 00:00:00.000, zero, 00000000:18:00.0, 1650124014249, GPU-a, NVIDIA H100 80GB HBM3
        2026/13/01 00:00:00.000, 1, 00000000:2A:00.0, 1650124014250, GPU-b, NVIDIA H100 80GB HBM3
        2026/06/01 00:00:00.000, 2, 0000:2A, 1650124014251, GPU-c, NVIDIA H100 80GB HBM3
        2026/06/01 00:00:00.000, 3, 00000000:3B:00.0, 1650124014252
        2026/06/01 00:00:00.000| 4| 00000000:5D:00.0| 1650124014253| GPU-e| NVIDIA H100 80GB HBM3
        2027/01/01 00:00:00.000, 5, 00000000:9B:00.0, 1650124014254, GPU-f, NVIDIA H100 80GB HBM3
        """
    )
    assert result.rows["gpu_index"].to_list() == [0]
    assert reject_reasons(result) == {
        3: "malformed index 'zero'",
        4: "malformed timestamp '2026/13/01 00:00:00.000'",
        5: "malformed pci.bus_id '0000:2A'",
        6: "expected 6 fields separated by ',', found 4",
        7: "expected 6 fields separated by ',', found 1",
        8: "timestamp in the future: 2027/01/01 00:00:00.000",
    }
    assert_accounted(result, SCHEMA, n_in_scope=7, n_ignored=1)


def test_inventory_wrong_header_rejects_every_line() -> None:
    result = _parse(
        """
        index, pci.bus_id, serial
        0, 00000000:18:00.0, 1650124014249
        """
    )
    assert result.rows.height == 0
    assert set(result.rejects["reason"]) == {
        "nvidia-smi CSV header is missing columns timestamp, uuid, name: expected a first line "
        "naming timestamp,index,pci.bus_id,serial,uuid,name (separated by ',')"
    }
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=0)


def test_inventory_non_utf8_line_is_rejected() -> None:
    line = "2026/06/01 00:00:00.000, 0, 00000000:18:00.0, 1650124014249, GPU-a, NVIDIA H100"
    data = f"{HEADER}\n{line}\n".encode() + line.replace("NVIDIA", "NVIDI\xc4").encode("latin-1")
    result = _parse(data)
    assert reject_reasons(result) == {3: "line is not valid UTF-8"}
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_inventory_empty_file_is_one_reject() -> None:
    result = _parse(b"")
    expected = pl.DataFrame([(SOURCE, 0, "", "empty file")], schema=REJECT_SCHEMA, orient="row")
    assert_frame_equal(result.rejects, expected)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)
