"""sacct --parsable2 exports: inline raw text, expected frames, and hostile inputs as rejects."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from pipelines.ingest.sources import sacct
from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.ingest.sources.sacct import SCHEMA, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons, utc

HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|End|"
    "Elapsed|State|ExitCode|Restarts"
)
NOW = datetime(2026, 9, 1, tzinfo=UTC)
SOURCE = "/landing/slurm/sacct_20260601.txt"


def _parse(text: str | bytes) -> Parsed:
    data = raw_bytes(text) if isinstance(text, str) else text
    return parse(data, source_file=SOURCE, now=NOW)


def test_sacct_allocation_and_steps_become_typed_rows() -> None:
    result = _parse(
        f"""
        {HEADER}
        1042|1042|train|gpu|ml|ana|2|billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2|gpu[0001-0002]|2026-06-01T00:00:00|2026-06-01T00:01:00|2026-06-02T01:01:00|1-01:00:00|NODE_FAIL|0:0|1
        1042.batch|1042.batch|batch||ml||1|cpu=64,gres/gpu=8,mem=500G,node=1|gpu0001|2026-06-01T00:01:00|2026-06-01T00:01:00|2026-06-02T01:01:00|1-01:00:00|CANCELLED|0:15|
        1042.extern|1042.extern|extern||ml||2|billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2|gpu[0001-0002]|2026-06-01T00:01:00|2026-06-01T00:01:00|2026-06-02T01:01:00|1-01:00:00|COMPLETED|0:0|
        1042.0|1042.0|python||ml||2|cpu=128,gres/gpu=16,mem=1000G,node=2|gpu[0001-0002]|2026-06-01T00:01:05|2026-06-01T00:01:05|2026-06-02T01:01:00|1-00:59:55|FAILED|1:0|
        """
    )
    start, end = utc("2026-06-01T00:01:00"), utc("2026-06-02T01:01:00")
    both = ["gpu0001", "gpu0002"]
    tres = "billing=128,cpu=128,gres/gpu=16,mem=1000G,node=2"
    expected = pl.DataFrame(
        [
            (
                SOURCE,
                2,
                None,
                "1042",
                "1042",
                None,
                "train",
                "gpu",
                "ml",
                "ana",
                2,
                tres,
                16,
                "gpu[0001-0002]",
                both,
                utc("2026-06-01T00:00:00"),
                start,
                end,
                90000,
                "NODE_FAIL",
                None,
                0,
                0,
                1,
            ),
            (
                SOURCE,
                3,
                None,
                "1042.batch",
                "1042",
                "batch",
                "batch",
                None,
                "ml",
                None,
                1,
                "cpu=64,gres/gpu=8,mem=500G,node=1",
                8,
                "gpu0001",
                ["gpu0001"],
                start,
                start,
                end,
                90000,
                "CANCELLED",
                None,
                0,
                15,
                None,
            ),
            (
                SOURCE,
                4,
                None,
                "1042.extern",
                "1042",
                "extern",
                "extern",
                None,
                "ml",
                None,
                2,
                tres,
                16,
                "gpu[0001-0002]",
                both,
                start,
                start,
                end,
                90000,
                "COMPLETED",
                None,
                0,
                0,
                None,
            ),
            (
                SOURCE,
                5,
                None,
                "1042.0",
                "1042",
                "0",
                "python",
                None,
                "ml",
                None,
                2,
                "cpu=128,gres/gpu=16,mem=1000G,node=2",
                16,
                "gpu[0001-0002]",
                both,
                utc("2026-06-01T00:01:05"),
                utc("2026-06-01T00:01:05"),
                end,
                89995,
                "FAILED",
                None,
                1,
                0,
                None,
            ),
        ],
        schema=SCHEMA,
        orient="row",
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=4, n_ignored=1)


def test_sacct_job_arrays_and_heterogeneous_jobs_keep_their_ids() -> None:
    result = _parse(
        f"""
        {HEADER}
        500_3|503|sweep|gpu|ml|bo|1|gres/gpu=8|gpu0003|2026-06-01T00:00:00|2026-06-01T00:00:10|2026-06-01T00:10:10|00:10:00|COMPLETED|0:0|0
        500_3.batch|503.batch|batch||ml||1|gres/gpu=8|gpu0003|2026-06-01T00:00:10|2026-06-01T00:00:10|2026-06-01T00:10:10|00:10:00|COMPLETED|0:0|
        500_[4-9%2]|500|sweep|gpu|ml|bo|0||None assigned|2026-06-01T00:00:00|Unknown|Unknown|00:00:00|PENDING|0:0|0
        700+0|700|het|gpu|ml|bo|1|gres/gpu=8|gpu0004|2026-06-01T00:00:00|2026-06-01T00:00:05|Unknown|00:05:00|RUNNING|0:0|0
        700+1|701|het|cpu|ml|bo|1|cpu=4|cpu0001|2026-06-01T00:00:00|2026-06-01T00:00:05|Unknown|00:05:00|RUNNING|0:0|0
        700+0.0|700.0|python||ml||1|gres/gpu=8|gpu0004|2026-06-01T00:00:06|2026-06-01T00:00:06|Unknown|00:04:59|RUNNING|0:0|
        """  # noqa: E501
    )
    got = result.rows.select("job_id", "job_id_raw", "step", "n_gpus", "nodes", "end_ts")
    expected = pl.DataFrame(
        {
            "job_id": ["500_3", "500_3.batch", "500_[4-9%2]", "700+0", "700+1", "700+0.0"],
            "job_id_raw": ["503", "503", "500", "700", "701", "700"],
            "step": [None, "batch", None, None, None, "0"],
            "n_gpus": [8, 8, 0, 8, 0, 8],
            "nodes": [["gpu0003"], ["gpu0003"], [], ["gpu0004"], ["cpu0001"], ["gpu0004"]],
            "end_ts": [
                utc("2026-06-01T00:10:10"),
                utc("2026-06-01T00:10:10"),
                None,
                None,
                None,
                None,
            ],
        },
        schema={c: SCHEMA[c] for c in got.columns},
    )
    assert_frame_equal(got, expected)
    assert_accounted(result, SCHEMA, n_in_scope=6, n_ignored=1)


def test_sacct_job_arrays_and_heterogeneous_jobs_load_without_jobidraw() -> None:
    # The lines above without their JobIDRaw field (Slurm 23 --format=JobID,JobName,... dumps).
    # Where Slurm makes it exact the key is the numeric id: the pending record of an array's
    # remaining tasks is the array's own job (500), the first het component is the leader (700).
    # A started task or a later component keeps its id as printed: its own number is not shown.
    header = HEADER.replace("JobIDRaw|", "")
    result = _parse(
        f"""
        {header}
        500_3|sweep|gpu|ml|bo|1|gres/gpu=8|gpu0003|2026-06-01T00:00:00|2026-06-01T00:00:10|2026-06-01T00:10:10|00:10:00|COMPLETED|0:0|0
        500_3.batch|batch||ml||1|gres/gpu=8|gpu0003|2026-06-01T00:00:10|2026-06-01T00:00:10|2026-06-01T00:10:10|00:10:00|COMPLETED|0:0|
        500_[4-9%2]|sweep|gpu|ml|bo|0||None assigned|2026-06-01T00:00:00|Unknown|Unknown|00:00:00|PENDING|0:0|0
        500_[10-12]|sweep|gpu|ml|bo|0||None assigned|2026-06-01T00:00:00|Unknown|Unknown|00:00:00|PENDING|0:0|0
        700+0|het|gpu|ml|bo|1|gres/gpu=8|gpu0004|2026-06-01T00:00:00|2026-06-01T00:00:05|Unknown|00:05:00|RUNNING|0:0|0
        700+1|het|cpu|ml|bo|1|cpu=4|cpu0001|2026-06-01T00:00:00|2026-06-01T00:00:05|Unknown|00:05:00|RUNNING|0:0|0
        700+0.0|python||ml||1|gres/gpu=8|gpu0004|2026-06-01T00:00:06|2026-06-01T00:00:06|Unknown|00:04:59|RUNNING|0:0|
        700+1.batch|batch||ml||1|cpu=4|cpu0001|2026-06-01T00:00:06|2026-06-01T00:00:06|Unknown|00:04:59|RUNNING|0:0|
        5908801_3.extern|extern||ml||1|gres/gpu=8|gpu0005|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T00:01:00|00:01:00|COMPLETED|0:0|
        """  # noqa: E501
    )
    got = result.rows.select("job_id", "job_id_raw", "step", "n_gpus", "nodes")
    expected = pl.DataFrame(
        {
            "job_id": [
                "500_3",
                "500_3.batch",
                "500_[4-9%2]",
                "500_[10-12]",
                "700+0",
                "700+1",
                "700+0.0",
                "700+1.batch",
                "5908801_3.extern",
            ],
            "job_id_raw": [
                "500_3",
                "500_3",
                "500",
                "500",
                "700",
                "700+1",
                "700",
                "700+1",
                "5908801_3",
            ],
            "step": [None, "batch", None, None, None, None, "0", "batch", "extern"],
            "n_gpus": [8, 8, 0, 0, 8, 0, 8, 0, 8],
            "nodes": [
                ["gpu0003"],
                ["gpu0003"],
                [],
                [],
                ["gpu0004"],
                ["cpu0001"],
                ["gpu0004"],
                ["cpu0001"],
                ["gpu0005"],
            ],
        },
        schema={c: SCHEMA[c] for c in got.columns},
    )
    assert_frame_equal(got, expected)
    assert_accounted(result, SCHEMA, n_in_scope=9, n_ignored=1)


def test_sacct_malformed_jobid_is_still_rejected_without_jobidraw() -> None:
    header = "JobID|State|Start|End|NodeList"
    result = _parse(
        f"""
        {header}
        500_|COMPLETED|2026-06-01T00:00:00|2026-06-01T00:01:00|gpu0001
        x7|COMPLETED|2026-06-01T00:00:00|2026-06-01T00:01:00|gpu0001
        700+|COMPLETED|2026-06-01T00:00:00|2026-06-01T00:01:00|gpu0001
        """
    )
    assert reject_reasons(result) == {
        2: "malformed JobID '500_'",
        3: "malformed JobID 'x7'",
        4: "malformed JobID '700+'",
    }
    assert result.rows.height == 0


@pytest.mark.parametrize(
    ("state_text", "state", "uid"),
    [
        ("COMPLETED", "COMPLETED", None),
        ("FAILED", "FAILED", None),
        ("CANCELLED by 123", "CANCELLED", 123),
        ("CANCELLED by 0", "CANCELLED", 0),
        ("NODE_FAIL", "NODE_FAIL", None),
        ("OUT_OF_MEMORY", "OUT_OF_MEMORY", None),
        ("TIMEOUT", "TIMEOUT", None),
        ("PREEMPTED", "PREEMPTED", None),
        ("REQUEUED", "REQUEUED", None),
        ("RUNNING", "RUNNING", None),
        ("PENDING", "PENDING", None),
        ("BOOT_FAIL", "BOOT_FAIL", None),
        ("DEADLINE", "DEADLINE", None),
        ("REVOKED", "REVOKED", None),
        ("SUSPENDED", "SUSPENDED", None),
    ],
)
def test_sacct_state_keeps_base_word_and_cancelling_uid(
    state_text: str, state: str, uid: int | None
) -> None:
    result = _parse(
        f"""
        {HEADER}
        9|9|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|{state_text}|0:0|0
        """
    )
    assert result.rows.select("state", "state_by_uid").row(0) == (state, uid)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=1)


def test_sacct_unknown_state_words_are_rejected() -> None:
    result = _parse(
        f"""
        {HEADER}
        9|9|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|EXPLODED|0:0|0
        10|10|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|completed|0:0|0
        11|11|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|CANCELLED by alice|0:0|0
        """  # noqa: E501
    )
    assert reject_reasons(result) == {
        2: "unknown State 'EXPLODED'",
        3: "unknown State 'completed'",
        4: "malformed uid in State 'CANCELLED by alice'",
    }
    assert_accounted(result, SCHEMA, n_in_scope=3, n_ignored=1)


def test_sacct_unknown_and_none_times_are_null() -> None:
    result = _parse(
        f"""
        {HEADER}
        9|9|j|gpu|ml|ana|0||None assigned|2026-06-01T00:00:00|Unknown|Unknown|00:00:00|PENDING|0:0|0
        10|10|j|gpu|ml|ana|0||None assigned|2026-06-01T00:00:00|None|Unknown|00:00:00|CANCELLED by 7|0:0|0
        """  # noqa: E501
    )
    expected = pl.DataFrame(
        {"start_ts": [None, None], "end_ts": [None, None], "nodes": [[], []]},
        schema={c: SCHEMA[c] for c in ("start_ts", "end_ts", "nodes")},
    )
    assert_frame_equal(result.rows.select("start_ts", "end_ts", "nodes"), expected)
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_sacct_gpus_come_from_plain_or_typed_gres() -> None:
    result = _parse(
        f"""
        {HEADER}
        1|1|j|gpu|ml|ana|1|billing=8,cpu=8,gres/gpu:h100=8,gres/gpu=8,node=1|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        2|2|j|gpu|ml|ana|1|cpu=8,gres/gpu:a100=4|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        3|3|j|cpu|ml|ana|1|cpu=8,mem=16G|cpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        4|4|j|cpu|ml|ana|1|cpu=8,gres/gpu=lots|cpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        """
    )
    assert result.rows["n_gpus"].to_list() == [8, 4, 0]
    assert reject_reasons(result) == {5: "malformed AllocTRES 'cpu=8,gres/gpu=lots'"}
    assert_accounted(result, SCHEMA, n_in_scope=4, n_ignored=1)


def test_sacct_hostlists_expand_with_several_brackets_and_zero_padding() -> None:
    result = _parse(
        f"""
        {HEADER}
        1|1|j|gpu|ml|ana|4|gres/gpu=32|gpu[008-010],login[1,3]|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        2|2|j|gpu|ml|ana|4|gres/gpu=32|rack[1-2]-gpu[01-02]|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        3|3|j|gpu|ml|ana|2|gres/gpu=16|gpu[9-10]|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        """
    )
    assert result.rows["nodes"].to_list() == [
        ["gpu008", "gpu009", "gpu010", "login1", "login3"],
        ["rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"],
        ["gpu9", "gpu10"],
    ]
    assert result.rows["node_list"].to_list() == [
        "gpu[008-010],login[1,3]",
        "rack[1-2]-gpu[01-02]",
        "gpu[9-10]",
    ]
    assert_accounted(result, SCHEMA, n_in_scope=3, n_ignored=1)


def test_sacct_malformed_hostlists_are_rejected() -> None:
    result = _parse(
        f"""
        {HEADER}
        1|1|j|gpu|ml|ana|4|gres/gpu=32|gpu[008-|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        2|2|j|gpu|ml|ana|4|gres/gpu=32|gpu[a-c]|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        """
    )
    assert reject_reasons(result) == {
        2: "malformed NodeList 'gpu[008-'",
        3: "malformed NodeList 'gpu[a-c]'",
    }
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_sacct_malformed_fields_are_rejected_with_the_field_named() -> None:
    result = _parse(
        f"""
        {HEADER}
        1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-31T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        2|2|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|yesterday|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        3|3|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|1h|COMPLETED|0:0|0
        4|4|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0|0
        5|5|j|gpu|ml|ana|one|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        6|6|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|-1
        7x|7|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        8|8.|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        """
    )
    assert reject_reasons(result) == {
        2: "malformed Submit time '2026-06-31T00:00:00'",
        3: "malformed Start time 'yesterday'",
        4: "malformed Elapsed '1h'",
        5: "malformed ExitCode '0'",
        6: "malformed AllocNodes 'one'",
        7: "malformed Restarts '-1'",
        8: "malformed JobID '7x'",
        9: "malformed JobIDRaw '8.'",
    }
    assert_accounted(result, SCHEMA, n_in_scope=8, n_ignored=1)


def test_sacct_end_before_start_is_left_to_validation() -> None:
    result = _parse(
        f"""
        {HEADER}
        1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T02:00:00|2026-06-01T02:00:00|2026-06-01T01:00:00|00:00:00|FAILED|1:0|0
        """
    )
    assert result.rows.select("start_ts", "end_ts").row(0) == (
        utc("2026-06-01T02:00:00"),
        utc("2026-06-01T01:00:00"),
    )
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=1)


def test_sacct_future_timestamps_are_rejected() -> None:
    result = _parse(
        f"""
        {HEADER}
        1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-09-01T12:00:00|2026-09-01T12:00:00|Unknown|00:00:00|RUNNING|0:0|0
        2|2|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-09-03T00:00:00|Unknown|Unknown|00:00:00|PENDING|0:0|0
        """
    )
    assert result.rows["job_id"].to_list() == ["1"]  # within a day of now
    assert reject_reasons(result) == {3: "Submit time in the future: 2026-09-03T00:00:00"}
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_sacct_wrong_number_of_fields_is_rejected() -> None:
    result = _parse(
        f"""
        {HEADER}
        1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:0
        2|2|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0|
        """
    )
    assert reject_reasons(result) == {
        2: "expected 16 fields separated by '|', found 12",
        3: "expected 16 fields separated by '|', found 17",
    }
    assert result.rejects["raw"][0].endswith("2026-06-01T01:0")
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_sacct_comma_delimiter_reads_lines_whose_fields_hold_no_comma() -> None:
    # sacct --delimiter=, : a TRES string holds commas of its own, so such a line has more fields
    # than the header and is rejected; a line whose TRES has one entry reads.
    header = HEADER.replace("|", ",")
    result = _parse(
        f"""
        {header}
        1,1,j,gpu,ml,ana,1,gres/gpu=8,gpu0001,2026-06-01T00:00:00,2026-06-01T00:00:00,2026-06-01T01:00:00,01:00:00,COMPLETED,0:0,0
        2,2,j,gpu,ml,ana,1,cpu=8,gres/gpu=8,gpu0001,2026-06-01T00:00:00,2026-06-01T00:00:00,2026-06-01T01:00:00,01:00:00,COMPLETED,0:0,0
        """
    )
    assert result.rows.select("job_id", "n_gpus", "nodes").rows() == [("1", 8, ["gpu0001"])]
    assert reject_reasons(result) == {3: "expected 16 fields separated by ',', found 17"}
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_sacct_missing_header_rejects_every_line() -> None:
    result = _parse(
        """
        1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        2|2|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0
        """
    )
    assert result.rejects["line_no"].to_list() == [1, 2]
    assert result.rejects["reason"][0].startswith(
        "sacct header is missing columns JobID, State, Start, End, NodeList: expected a first "
        "line naming JobID|State|Start|End|NodeList"
    )
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=0)
    # the first line is a record (--noheader): the reason says how to export
    assert set(result.rejects["reason"]) == {
        "sacct header is missing columns JobID, State, Start, End, NodeList: expected a first "
        "line naming JobID|State|Start|End|NodeList, found a job record (a dump written with "
        "--noheader): run sacct with --parsable2 and without --noheader (-n), or put the "
        "--format names, joined by the delimiter, as its first line"
    }


def test_sacct_headerless_dump_with_another_delimiter_names_the_fix() -> None:
    result = _parse(
        b"\n5908801_3;COMPLETED;2026-06-01T00:00:00;2026-06-01T00:01:00;gpu0001\n"
        b"5908802;FAILED;2026-06-01T00:00:00;2026-06-01T00:01:00;gpu0001\n"
    )
    assert result.rejects["line_no"].to_list() == [2, 3]
    assert result.rejects["reason"][1].endswith(
        "found a job record (a dump written with --noheader): run sacct with --parsable2 and "
        "without --noheader (-n), or put the --format names, joined by the delimiter, as its "
        "first line"
    )
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_sacct_header_with_other_order_and_extra_columns_is_read_by_name() -> None:
    result = _parse(
        """
        State|JobIDRaw|JobID|Cluster|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|End|Elapsed|ExitCode|Restarts
        TIMEOUT|5|5|c1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|0:1|0
        """
    )
    assert result.rows.select("job_id", "state", "exit_signal").row(0) == ("5", "TIMEOUT", 1)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=1)


def test_sacct_non_utf8_line_is_rejected() -> None:
    good = "1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0"  # noqa: E501
    data = f"{HEADER}\n{good}\n".encode() + good.replace("|j|", "|caf\xe9|").encode("latin-1")
    result = _parse(data)
    assert result.rows["line_no"].to_list() == [2]
    assert reject_reasons(result) == {3: "line is not valid UTF-8"}
    assert "|caf\\xe9|" in result.rejects["raw"][0]
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_sacct_blank_lines_and_repeated_headers_are_ignored() -> None:
    line = "1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|2026-06-01T00:00:00|2026-06-01T01:00:00|01:00:00|COMPLETED|0:0|0"  # noqa: E501
    result = _parse(f"\n{HEADER}\n{line}\n\n{HEADER}\r\n{line}\r\n".encode())
    assert result.rows["line_no"].to_list() == [3, 6]
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=4)


def test_sacct_empty_file_is_one_reject() -> None:
    result = _parse(b"")
    expected = pl.DataFrame([(SOURCE, 0, "", "empty file")], schema=REJECT_SCHEMA, orient="row")
    assert_frame_equal(result.rejects, expected)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)


def test_sacct_header_only_file_has_no_rows() -> None:
    result = _parse(f"{HEADER}\n".encode())
    assert_accounted(result, SCHEMA, n_in_scope=0, n_ignored=1)


def test_sacct_now_defaults_to_the_current_time() -> None:
    line = "1|1|j|gpu|ml|ana|1|gres/gpu=8|gpu0001|2999-06-01T00:00:00|Unknown|Unknown|00:00:00|PENDING|0:0|0"  # noqa: E501
    result = parse(f"{HEADER}\n{line}\n".encode(), source_file=SOURCE)
    assert reject_reasons(result) == {2: "Submit time in the future: 2999-06-01T00:00:00"}


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.lists(
            st.sampled_from(
                [
                    "1",
                    "1.batch",
                    "gpu[01-02]",
                    "",
                    "COMPLETED",
                    "CANCELLED by 1",
                    "0:0",
                    "2026-06-01T00:00:00",
                    "Unknown",
                    "01:00:00",
                    "gres/gpu=8",
                    "x|y",
                    "\xe9",
                    "[",
                ]
            ),
            min_size=0,
            max_size=18,
        ).map("|".join),
        max_size=12,
    )
)
def test_sacct_any_input_is_accounted_for_without_raising(lines: list[str]) -> None:
    data = "".join(f"{line}\n" for line in [HEADER, *lines]).encode()
    result = _parse(data)
    n_blank = sum(1 for line in lines if not line.strip())
    n_header_repeats = sum(1 for line in lines if line == HEADER)
    assert result.rows.height + result.rejects.height == len(lines) - n_blank - n_header_repeats
    assert result.n_ignored == 1 + n_blank + n_header_repeats


def test_sacct_module_declares_the_contract_columns() -> None:
    assert list(sacct.SCHEMA)[:2] == ["source_file", "line_no"]
    assert sacct.SCHEMA["submit_ts"] == pl.Datetime("us", "UTC")
