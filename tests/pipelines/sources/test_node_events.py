"""sacctmgr show event --parsable2 exports: inline raw text, expected frames, hostile lines."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import polars as pl
from polars.testing import assert_frame_equal

from pipelines.ingest.sources.node_events import SCHEMA, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons, utc

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

HEADER = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User"
NOW = datetime(2026, 9, 1, tzinfo=UTC)
SOURCE = "/landing/node_events/sacctmgr_events_20260830.txt"


def _parse(text: str | bytes) -> Parsed:
    data = raw_bytes(text) if isinstance(text, str) else text
    return parse(data, source_file=SOURCE, now=NOW)


def test_node_events_become_typed_rows() -> None:
    result = _parse(
        f"""
        {HEADER}
        alpha||2026-06-01T00:00:00|||Cluster Registered TRES|
        alpha|gpu0007|2026-06-02T10:00:12|2026-06-02T10:20:00|DOWN*|Not responding|slurm(64030)
        alpha|gpu0007|2026-06-02T10:20:00||DRAIN|PSU failure, node lost power (RT104233)|root(0)
        alpha|gpu[0011-0012]|2026-06-03T08:00:00|2026-06-03T09:30:00|IDLE+DRAIN|NHC: Xid 79: GPU gpu3 has fallen off the bus|root(0)

        alpha|gpu0013|2026-06-04T01:00:00|2026-06-04T02:00:00|MAINT+RESERVED|planned maintenance|root(0)
        """  # noqa: E501
    )
    expected = pl.DataFrame(
        [
            (
                SOURCE,
                3,
                "alpha",
                "gpu0007",
                ["gpu0007"],
                utc("2026-06-02T10:00:12"),
                utc("2026-06-02T10:20:00"),
                "DOWN*",
                "down",
                "Not responding",
                "slurm(64030)",
            ),
            (
                SOURCE,
                4,
                "alpha",
                "gpu0007",
                ["gpu0007"],
                utc("2026-06-02T10:20:00"),
                None,
                "DRAIN",
                "drain",
                "PSU failure, node lost power (RT104233)",
                "root(0)",
            ),
            (
                SOURCE,
                5,
                "alpha",
                "gpu[0011-0012]",
                ["gpu0011", "gpu0012"],
                utc("2026-06-03T08:00:00"),
                utc("2026-06-03T09:30:00"),
                "IDLE+DRAIN",
                "drain",
                "NHC: Xid 79: GPU gpu3 has fallen off the bus",
                "root(0)",
            ),
            (
                SOURCE,
                7,
                "alpha",
                "gpu0013",
                ["gpu0013"],
                utc("2026-06-04T01:00:00"),
                utc("2026-06-04T02:00:00"),
                "MAINT+RESERVED",
                "maint",
                "planned maintenance",
                "root(0)",
            ),
        ],
        schema=SCHEMA,
        orient="row",
    )
    assert_frame_equal(result.rows, expected)
    # header, blank line and the cluster event are outside the table
    assert_accounted(result, SCHEMA, n_in_scope=4, n_ignored=3)


def test_node_events_without_cluster_and_user_columns() -> None:
    result = _parse(
        """
        NodeName|TimeStart|TimeEnd|State|Reason
        gpu0001|2026-06-02T10:00:00|Unknown|down|Kill task failed
        """
    )
    row = result.rows.row(0, named=True)
    assert (row["cluster"], row["user_name"], row["end_ts"], row["state_base"]) == (
        None,
        None,
        None,
        "down",
    )


def test_node_events_parsable_with_a_trailing_bar() -> None:
    # `sacctmgr -p` ends the header and every line with "|" (sacctmgr(1): "'|' delimited with a
    # '|' at the end"); an open event's TimeEnd is Unknown
    text = textwrap.dedent(
        """\
        Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|
        alpha|gpu0007|2026-06-02T10:00:00|Unknown|DOWN*|Not responding|slurm(64030)|
        """
    )
    result = parse(text.encode(), source_file=SOURCE, now=NOW)
    assert result.rejects.height == 0
    assert result.rows.select(
        "node_name", "start_ts", "end_ts", "state_base", "user_name"
    ).rows() == [("gpu0007", datetime(2026, 6, 2, 10, tzinfo=UTC), None, "down", "slurm(64030)")]


def test_node_events_table_output_is_not_read_and_says_why() -> None:
    # plain `sacctmgr show event` prints fixed-width columns that cut long values (a Reason or
    # User ending in "+"): not read; every line is a reject naming the expected header
    text = textwrap.dedent(
        """\
           Cluster        NodeName           TimeStart             TimeEnd  State                         Reason       User
        ---------- --------------- ------------------- ------------------- ------ ------------------------------ ----------
             alpha         gpu0007 2026-06-02T10:00:00             Unknown  DOWN*                 Not responding slurm(640+
        """  # noqa: E501
    )
    result = parse(text.encode(), source_file=SOURCE, now=NOW)
    assert result.rows.height == 0
    assert result.rejects["line_no"].to_list() == [1, 2, 3]
    assert set(result.rejects["reason"]) == {
        "sacctmgr show event --parsable2 header is missing columns NodeName, TimeStart, TimeEnd, "
        "State, Reason: expected a first line naming NodeName|TimeStart|TimeEnd|State|Reason "
        "(separated by '|')"
    }


def test_node_events_hostile_lines_are_rejected_with_a_reason() -> None:
    result = _parse(
        f"""
        {HEADER}
        alpha|gpu0001|2026-06-31T10:00:00||DRAIN|bad day|root(0)
        alpha|gpu0001|2026-06-02T10:00:00|tomorrow|DRAIN|bad end|root(0)
        alpha|gpu0001|2099-01-01T00:00:00||DRAIN|clock from the future|root(0)
        alpha|gpu0001|2026-06-02T10:00:00||DR AIN|bad state|root(0)
        alpha|gpu[0001|2026-06-02T10:00:00||DRAIN|bad host list|root(0)
        alpha|gpu0001|2026-06-02T10:00:00||DRAIN|a | in the reason|root(0)
        alpha|gpu0001|2026-06-02T10:00:00||DRAIN|ok|root(0)
        """
    )
    assert reject_reasons(result) == {
        2: "malformed TimeStart time '2026-06-31T10:00:00'",
        3: "malformed TimeEnd time 'tomorrow'",
        4: "TimeStart time in the future: 2099-01-01T00:00:00",
        5: "malformed State 'DR AIN'",
        6: "malformed NodeName 'gpu[0001'",
    }
    # a '|' typed into the Reason (the only free-text column) is joined back into it
    assert result.rows.select("line_no", "event_reason").rows() == [
        (7, "a | in the reason"),
        (8, "ok"),
    ]
    assert_accounted(result, SCHEMA, n_in_scope=7, n_ignored=1)


def test_node_events_wrong_header_rejects_every_line() -> None:
    result = _parse("Cluster|Node|Start\nalpha|gpu0001|2026-06-02T10:00:00\n")
    assert result.rows.height == 0
    assert result.rejects.height == 2
    assert result.rejects["reason"][0].startswith(
        "sacctmgr show event --parsable2 header is missing columns NodeName, TimeStart, TimeEnd"
    )


def test_node_events_empty_file_is_one_reject() -> None:
    result = _parse(b"")
    assert result.rejects.to_dicts() == [
        {"source_file": SOURCE, "line_no": 0, "raw": "", "reason": "empty file"}
    ]
