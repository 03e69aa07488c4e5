"""Fleet register CSV: inline raw text, expected frames, hostile inputs as rejects."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
from polars.testing import assert_frame_equal

from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.ingest.sources.fleet import SCHEMA, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons

HEADER = "node,rack,cluster,batch,installed,removed"
NOW = datetime(2026, 9, 1, tzinfo=UTC)
SOURCE = "/landing/fleet/fleet.csv"


def _parse(text: str | bytes) -> Parsed:
    data = raw_bytes(text) if isinstance(text, str) else text
    return parse(data, source_file=SOURCE, now=NOW)


def test_fleet_register_becomes_typed_rows() -> None:
    result = _parse(
        f"""
        {HEADER}
        gpu0001,r01,east,2025a,2025-11-03T00:00:00Z,
        gpu0002,r01,east,2025a,2025-11-03T00:00:00Z,2026-07-15T12:30:00Z
        "gpu0003","r02, row 4",east,,2026-02-01T08:00:00+01:00,
        """
    )
    expected = pl.DataFrame(
        [
            (SOURCE, 2, "gpu0001", "r01", "east", "2025a", datetime(2025, 11, 3, tzinfo=UTC), None),
            (
                SOURCE,
                3,
                "gpu0002",
                "r01",
                "east",
                "2025a",
                datetime(2025, 11, 3, tzinfo=UTC),
                datetime(2026, 7, 15, 12, 30, tzinfo=UTC),
            ),
            (
                SOURCE,
                4,
                "gpu0003",
                "r02, row 4",
                "east",
                None,
                datetime(2026, 2, 1, 7, tzinfo=UTC),
                None,
            ),
        ],
        schema=SCHEMA,
        orient="row",
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=3, n_ignored=1)


def test_fleet_hostile_lines_are_rejected_with_a_reason() -> None:
    result = _parse(
        f"""
        {HEADER}
        gpu0001,r01,east,2025a,2025-11-03T00:00:00Z,
        gpu0002,r01,east,2025a,2025-13-03T00:00:00Z,
        gpu0003,r01,east,2025a,2025-11-03T00:00:00Z,soon
        gpu0004,r01,east,2025a,2025-11-03T00:00:00Z
        gpu0005;r01;east;2025a;2025-11-03T00:00:00Z;
        gpu0006,"r01,east,2025a,2025-11-03T00:00:00Z,
        gpu0007,r01,east,2025a,2027-01-01T00:00:00Z,
        gpu0008,r01,east,2025a,2026-06-01T00:00:00Z,2026-05-01T00:00:00Z
        """
    )
    assert result.rows["node"].to_list() == ["gpu0001", "gpu0008"]  # removal before install: GX
    assert reject_reasons(result) == {
        3: "malformed installed time '2025-13-03T00:00:00Z'",
        4: "malformed removed time 'soon'",
        5: "expected 6 fields separated by ',', found 5",
        6: "expected 6 fields separated by ',', found 1",
        7: "unbalanced double quotes",
        8: "installed time in the future: 2027-01-01T00:00:00Z",
    }
    assert_accounted(result, SCHEMA, n_in_scope=8, n_ignored=1)


def test_fleet_wrong_header_rejects_every_line() -> None:
    result = _parse(
        """
        host;rack;installed
        gpu0001;r01;2025-11-03T00:00:00Z
        """
    )
    assert result.rejects["line_no"].to_list() == [1, 2]
    assert result.rejects["reason"][0].startswith(
        "fleet CSV header is missing columns node, rack, cluster, batch, installed, removed"
    )
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=0)


def test_fleet_non_utf8_line_is_rejected() -> None:
    data = f"{HEADER}\ngpu0001,r01,east,2025a,2025-11-03T00:00:00Z,\n".encode()
    data += "gpu0002,r\xf6,east,2025a,2025-11-03T00:00:00Z,\n".encode("latin-1")
    result = _parse(data)
    assert reject_reasons(result) == {3: "line is not valid UTF-8"}
    assert result.rejects["raw"].to_list() == ["gpu0002,r\\xf6,east,2025a,2025-11-03T00:00:00Z,"]
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_fleet_empty_file_is_one_reject() -> None:
    result = _parse(b"")
    expected = pl.DataFrame([(SOURCE, 0, "", "empty file")], schema=REJECT_SCHEMA, orient="row")
    assert_frame_equal(result.rejects, expected)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)
