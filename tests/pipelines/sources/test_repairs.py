"""Repair tickets CSV: inline raw text, expected frames, hostile inputs as rejects."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
from polars.testing import assert_frame_equal

from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.ingest.sources.repairs import SCHEMA, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons

HEADER = "ticket_id,node,component_class,slot,serial_out,serial_in,opened,closed,action,description"
NOW = datetime(2026, 9, 1, tzinfo=UTC)
SOURCE = "/landing/repairs/tickets.csv"


def _parse(text: str | bytes) -> Parsed:
    data = raw_bytes(text) if isinstance(text, str) else text
    return parse(data, source_file=SOURCE, now=NOW)


def test_repairs_tickets_become_typed_rows() -> None:
    result = _parse(
        f'''
        {HEADER}
        T-0001,gpu0003,nvlink,gpu5,1650124014249,1650124019999,2026-06-10T04:00:00Z,2026-06-11T10:00:00Z,replace,"Xid 74 on link 3, GPU swapped"
        T-0002,gpu0004,power,power,,,2026-06-12T00:00:00Z,,reseat,PSU 2 reseated

        T-0003,gpu0005,gpu_memory,gpu0,1650124014250,,2025-12-01T00:00:00Z,2025-12-02T00:00:00Z,planned_replace,"said ""row remap pending"""
        T-0004,gpu0006,gpu,gpu1,,,2026-06-13T00:00:00Z,2026-06-13T01:00:00Z,no_fault_found,
        '''  # noqa: E501
    )
    expected = pl.DataFrame(
        [
            (
                SOURCE,
                2,
                "T-0001",
                "gpu0003",
                "nvlink",
                "gpu5",
                "1650124014249",
                "1650124019999",
                datetime(2026, 6, 10, 4, tzinfo=UTC),
                datetime(2026, 6, 11, 10, tzinfo=UTC),
                "replace",
                "Xid 74 on link 3, GPU swapped",
            ),
            (
                SOURCE,
                3,
                "T-0002",
                "gpu0004",
                "power",
                "power",
                None,
                None,
                datetime(2026, 6, 12, tzinfo=UTC),
                None,
                "reseat",
                "PSU 2 reseated",
            ),
            (
                SOURCE,
                5,
                "T-0003",
                "gpu0005",
                "gpu_memory",
                "gpu0",
                "1650124014250",
                None,
                datetime(2025, 12, 1, tzinfo=UTC),
                datetime(2025, 12, 2, tzinfo=UTC),
                "planned_replace",
                'said "row remap pending"',
            ),
            (
                SOURCE,
                6,
                "T-0004",
                "gpu0006",
                "gpu",
                "gpu1",
                None,
                None,
                datetime(2026, 6, 13, tzinfo=UTC),
                datetime(2026, 6, 13, 1, tzinfo=UTC),
                "no_fault_found",
                None,
            ),
        ],
        schema=SCHEMA,
        orient="row",
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=4, n_ignored=2)


def test_repairs_hostile_lines_are_rejected_with_a_reason() -> None:
    result = _parse(
        f"""
        {HEADER}
        T-1,gpu0001,gpu,gpu0,,,2026-06-10T00:00:00Z,,swap,unknown action
        T-2,gpu0001,gpu,gpu0,,,2026-06-31T00:00:00Z,,replace,bad date
        T-3,gpu0001,gpu,gpu0,,,2026-06-10T00:00:00Z,tomorrow,replace,bad close
        T-4,gpu0001,gpu,gpu0,,,2026-06-10T00:00:00Z,,replace
        T-5,gpu0001,gpu,gpu0,,,2026-06-10T00:00:00Z,,replace,"never closed quote
        T-6,gpu0001,gpu,gpu0,,,2026-12-10T00:00:00Z,,replace,in the future
        T-7,gpu0001,warp_core,gpu0,,,2026-06-10T00:00:00Z,2026-06-09T00:00:00Z,replace,checked later
        """
    )
    assert result.rows["ticket_id"].to_list() == ["T-7"]  # class and close order: validation
    assert reject_reasons(result) == {
        2: "unknown action 'swap' (expected one of replace, planned_replace, reseat, "
        "no_fault_found)",
        3: "malformed opened time '2026-06-31T00:00:00Z'",
        4: "malformed closed time 'tomorrow'",
        5: "expected 10 fields separated by ',', found 9",
        6: "unbalanced double quotes",
        7: "opened time in the future: 2026-12-10T00:00:00Z",
    }
    assert_accounted(result, SCHEMA, n_in_scope=7, n_ignored=1)


def test_repairs_wrong_delimiter_rejects_every_line() -> None:
    header = HEADER.replace(",", "|")
    result = _parse(
        f"""
        {header}
        T-1|gpu0001|gpu|gpu0|||2026-06-10T00:00:00Z||replace|x
        """
    )
    assert result.rejects["line_no"].to_list() == [1, 2]
    assert result.rejects["reason"][1].startswith(
        "tickets CSV header is missing columns ticket_id, node, component_class"
    )
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=0)


def test_repairs_non_utf8_line_is_rejected() -> None:
    data = f"{HEADER}\n".encode()
    data += "T-1,gpu0001,gpu,gpu0,,,2026-06-10T00:00:00Z,,replace,r\xe9sum\xe9\n".encode("latin-1")
    result = _parse(data)
    assert reject_reasons(result) == {2: "line is not valid UTF-8"}
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=1)


def test_repairs_empty_file_is_one_reject() -> None:
    result = _parse(b"")
    expected = pl.DataFrame([(SOURCE, 0, "", "empty file")], schema=REJECT_SCHEMA, orient="row")
    assert_frame_equal(result.rejects, expected)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)
