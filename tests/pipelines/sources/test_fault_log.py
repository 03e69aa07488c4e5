"""Fault-log ingest through a column mapping: inline hostile files, then the two real data sets."""

from __future__ import annotations

import json
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal

from pipelines.ingest.sources import fault_log
from pipelines.ingest.sources.common import REJECT_SCHEMA
from pipelines.ingest.sources.fault_log import (
    SCHEMA,
    MappingError,
    load_mapping,
    mapping_from_dict,
    parse,
)
from tests.pipelines.sources.helpers import raw_bytes, reject_reasons

REPO = Path(__file__).resolve().parents[3]
MAPPINGS = REPO / "data_samples" / "mappings"
REAL = Path(__file__).resolve().parents[3].parent / "shared" / "real"
TITAN = REAL / "titan-gpu-lifetimes"
HBD = REAL / "infinitehbd-gpu-fault-trace"

needs_titan = pytest.mark.skipif(not TITAN.is_dir(), reason=f"real data not at {TITAN}")
needs_hbd = pytest.mark.skipif(not HBD.is_dir(), reason=f"real data not at {HBD}")


def _mapping(text: str) -> fault_log.FaultLogMapping:
    return mapping_from_dict(yaml.safe_load(textwrap.dedent(text)), where="inline")


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


LIVES_MAPPING = """
    dataset: gpu_segments
    kind: lives
    unit: SN
    time: {format: "%Y-%m-%d %H:%M:%S", timezone: UTC}
    start: insert
    end: remove
    failed: {column: event, true_values: [DBE, OTB]}
    point_events: true
    categories: [event]
    classes: {column: event, map: {DBE: gpu_memory, OTB: pcie}, default: gpu}
    cohorts: {location: location}
    cohort_pattern:
      column: location
      regex: '^c(?P<col>\\d+)-(?P<row>\\d+)c(?P<cage>\\d)s(?P<slot>\\d)n(?P<node>\\d)$'
"""

LIVES_CSV = """
    SN,location,insert,remove,duration,out,event
    0320117100060,c11-2c1s4n1,2017-04-09 21:36:19,2019-08-01 20:07:33,72916274,FALSE,
    0323712007755,c12-7c1s5n0,2014-01-21 10:28:50,2016-07-19 20:15:20,78399390,TRUE,OTB

    0323712007755,c12-7c1s5n0,,2016-07-19 20:15:20,,,DBE
    0323712008316,c15-2c2s2n2,2014-01-21 10:28:50,2016-02-31 04:54:23,,TRUE,DBE
    ,c15-2c2s2n3,2014-01-21 10:28:50,2016-02-21 04:54:23,,FALSE,
    0323712021406,c15-0c2s6n1,2016-11-08 20:02:54,2016-11-08 20:02:50,,FALSE,
    0323712022433,c19-3c2s3n2,2014-01-21 10:28:50,2016-05-01 08:14:20,,FALSE
"""


def test_parse_lives_csv_rows_and_rejects() -> None:
    result = parse(raw_bytes(LIVES_CSV), source_file="gc.csv", mapping=_mapping(LIVES_MAPPING))

    expected = pl.DataFrame(
        {
            "line_no": [2, 3, 5],
            "unit_id": ["0320117100060", "0323712007755", "0323712007755"],
            "record_kind": ["life", "life", "event"],
            "component_class": ["gpu", "pcie", "gpu_memory"],
            "category_l1": [None, "OTB", "DBE"],
            "start_ts": [
                _ts("2017-04-09T21:36:19+00:00"),
                _ts("2014-01-21T10:28:50+00:00"),
                _ts("2016-07-19T20:15:20+00:00"),
            ],
            "end_ts": [
                _ts("2019-08-01T20:07:33+00:00"),
                _ts("2016-07-19T20:15:20+00:00"),
                _ts("2016-07-19T20:15:20+00:00"),
            ],
            "failed": [False, True, True],
        },
        schema={
            k: SCHEMA[k]
            for k in (
                "line_no",
                "unit_id",
                "record_kind",
                "component_class",
                "category_l1",
                "start_ts",
                "end_ts",
                "failed",
            )
        },
    )
    assert_frame_equal(result.rows.select(expected.columns), expected)
    assert result.rows.schema == pl.Schema(SCHEMA)
    assert result.rows["dataset"].unique().to_list() == ["gpu_segments"]
    assert json.loads(result.rows["cohort_json"][0]) == {
        "location": "c11-2c1s4n1",
        "col": "11",
        "row": "2",
        "cage": "1",
        "slot": "4",
        "node": "1",
    }

    assert result.rejects.schema == pl.Schema(REJECT_SCHEMA)
    assert result.rejects["line_no"].to_list() == [6, 7, 8, 9]
    reasons = result.rejects["reason"].to_list()
    assert reasons[0].startswith("bad end time '2016-02-31 04:54:23' in column remove")
    assert reasons[1] == "missing unit id (column SN)"
    assert reasons[2] == "end before start"
    assert reasons[3] == "expected 7 fields, found 6"
    assert (
        result.rejects["raw"][1] == ",c15-2c2s2n3,2014-01-21 10:28:50,2016-02-21 04:54:23,,FALSE,"
    )
    # header and the blank line are out of scope; every other line is a row or a reject
    assert result.n_ignored == 2
    assert result.n_read == 7


def test_parse_missing_column_named_in_mapping_is_a_clear_error() -> None:
    data = raw_bytes("""
        serial,location,installed,removed,event
        0320117100060,c11-2c1s4n1,2017-04-09 21:36:19,2019-08-01 20:07:33,
    """)
    with pytest.raises(ValueError, match=r"mapping key 'unit' names column 'SN'.*serial, location"):
        parse(data, source_file="renamed.csv", mapping=_mapping(LIVES_MAPPING))


def test_parse_empty_file_gives_one_reject() -> None:
    result = parse(b"", source_file="empty.csv", mapping=_mapping(LIVES_MAPPING))
    assert result.rows.height == 0
    assert result.rows.schema == pl.Schema(SCHEMA)
    assert result.rejects.rows() == [("empty.csv", 0, "", "empty file")]


def test_parse_quoted_line_breaks_keep_line_numbers() -> None:
    mapping = _mapping("""
        dataset: tickets
        kind: events
        unit: node
        start: opened
        end: closed
        categories: [component, description]
        classes: {column: component, map: {psu: power, gpu: gpu}, default: unknown}
    """)
    data = raw_bytes("""
        node,component,opened,closed,description
        gpu0001,psu,2026-06-01T00:00:00Z,2026-06-01T06:30:00Z,"PSU 2 failed;
        replaced with spare"
        gpu0002,gpu,2026-06-02T12:00:00+02:00,,still open
        gpu0003,fan,2026-06-03 08:00:00,2026-06-03T09:00:00Z,"fan, rear"
        gpu0004,gpu,2026-06-05T00:00:00Z,2026-06-04T00:00:00Z,clock skew
    """)
    result = parse(data, source_file="tickets.csv", mapping=mapping)

    assert result.rows["line_no"].to_list() == [2, 4, 5]
    assert result.rows["record_kind"].to_list() == ["fault", "fault", "fault"]
    assert result.rows["component_class"].to_list() == ["power", "gpu", "unknown"]
    assert result.rows["category_l2"][0] == "PSU 2 failed;\nreplaced with spare"
    assert result.rows["start_ts"].to_list() == [
        _ts("2026-06-01T00:00:00+00:00"),
        _ts("2026-06-02T10:00:00+00:00"),  # the offset is honoured
        _ts("2026-06-03T08:00:00+00:00"),  # no offset: the mapping's zone (UTC)
    ]
    assert result.rows["end_ts"][1] is None  # still open
    assert result.rejects.select("line_no", "reason").rows() == [(6, "end before start")]
    assert result.n_read == 4


def test_time_zone_and_dst_ambiguity() -> None:
    text = """
        dataset: dst
        kind: lives
        unit: SN
        time: {{format: "%Y-%m-%d %H:%M:%S", timezone: America/New_York, ambiguous: {how}}}
        start: insert
        end: remove
        failed: {{column: event, true_values: [DBE]}}
    """
    data = raw_bytes("""
        SN,insert,remove,event
        a,2016-06-01 12:00:00,2016-11-06 01:30:00,DBE
        b,2016-03-13 02:30:00,2016-06-01 12:00:00,
    """)
    earliest = parse(data, source_file="x", mapping=_mapping(text.format(how="earliest")))
    latest = parse(data, source_file="x", mapping=_mapping(text.format(how="latest")))
    reject = parse(data, source_file="x", mapping=_mapping(text.format(how="reject")))
    assert earliest.rows["start_ts"][0] == _ts("2016-06-01T16:00:00+00:00")  # EDT, UTC-4
    assert earliest.rows["end_ts"][0] == _ts("2016-11-06T05:30:00+00:00")  # first 01:30 (EDT)
    assert latest.rows["end_ts"][0] == _ts("2016-11-06T06:30:00+00:00")  # second 01:30 (EST)
    assert reject.rows.height == 0
    # 02:30 on 2016-03-13 never happened in New York
    assert earliest.rejects["reason"][0].startswith("bad start time '2016-03-13 02:30:00'")
    assert reject.rejects["line_no"].to_list() == [2, 3]


EVENTS_MAPPING = """
    dataset: trace
    kind: events
    format: json
    unit: node_id
    time: {unit: days, origin: 2024-03-30T00:00:00Z}
    events: {type: event_type, time: event_time, start: [fault_start], end: [fault_end]}
    categories: [fault_type.Level, fault_type.Class, fault_type.Desc]
    classes:
      column: fault_type.Class
      map: {GPU: gpu, NIC: nic, Change: maintenance}
      overrides:
        - column: fault_type.Desc
          map: {Remote Optical Module Failure: network}
      default: unknown
    population: 10
    window: {start: 0, end: 10}
"""


def _event(node: str, t: float | str, kind: str, cls: str, desc: str) -> dict[str, object]:
    return {
        "node_id": node,
        "event_time": t,
        "event_type": kind,
        "fault_type": {"Level": "Hardware Failure", "Class": cls, "Desc": desc},
    }


def test_parse_paired_json_events() -> None:
    events = [
        _event("n1", 1.5, "fault_start", "GPU", "GPU Lost"),  # 1
        _event("n2", 2.0, "fault_start", "NIC", "NIC Lost"),  # 2
        _event("n1", 1.75, "fault_end", "GPU", "GPU Lost"),  # 3
        _event("n3", 2.5, "fault_end", "GPU", "GPU Lost"),  # 4: nothing open on n3
        _event("n1", 3.0, "fault_start", "GPU", "GPU Lost"),  # 5
        _event("n1", 3.0, "fault_end", "GPU", "GPU Lost"),  # 6: zero-length fault
        _event("n2", "soon", "fault_end", "NIC", "NIC Lost"),  # 7: bad time
        _event("n4", 4.0, "fault_start", "Change", "Remote Optical Module Failure"),  # 8
        _event("n4", 4.5, "maintenance", "Change", "Remote Optical Module Failure"),  # 9
        {"event_time": 5.0, "event_type": "fault_start", "fault_type": {"Class": "GPU"}},  # 10
        _event("n1", 2.0, "fault_end", "NIC", "NIC Lost"),  # 11: n2's NIC fault, not n1's
    ]
    text = json.dumps(events, indent=4)
    result = parse(text.encode(), source_file="trace.json", mapping=_mapping(EVENTS_MAPPING))

    # the line of each object's opening brace, by the object's number above
    braces = [n for n, line in enumerate(text.splitlines(), start=1) if line == "    {"]
    starts = dict(enumerate(braces, start=1))
    rows = result.rows.sort("line_no")
    assert rows["line_no"].to_list() == [starts[1], starts[2], starts[5], starts[8]]
    assert rows["end_line_no"].to_list() == [starts[3], None, starts[6], None]
    assert rows["unit_id"].to_list() == ["n1", "n2", "n1", "n4"]
    assert rows["component_class"].to_list() == ["gpu", "nic", "gpu", "network"]
    assert rows["category_l2"].to_list() == ["GPU", "NIC", "GPU", "Change"]
    assert rows["start_ts"][0] == _ts("2024-03-31T12:00:00+00:00")  # 1.5 days after the origin
    assert rows["end_ts"][0] == _ts("2024-03-31T18:00:00+00:00")
    assert rows["start_ts"][2] == rows["end_ts"][2]
    assert rows["end_ts"][1] is None  # open: its end (line 7) has a bad time
    assert rows["population"].unique().to_list() == [10]
    assert rows["window_end"][0] == _ts("2024-04-09T00:00:00+00:00")

    reasons = dict(result.rejects.select("line_no", "reason").iter_rows())
    assert reasons[starts[4]].startswith("end event with no open start event")
    assert reasons[starts[7]].startswith("bad event time 'soon' in column event_time")
    assert reasons[starts[9]].startswith("event type 'maintenance' in column event_type")
    assert reasons[starts[10]] == "missing unit id (column node_id)"
    assert reasons[starts[11]].startswith("end event with no open start event")
    assert json.loads(result.rejects.filter(pl.col("line_no") == starts[4])["raw"][0]) == events[3]
    # two end events were paired into their start's rows; everything else is a row or a reject
    assert result.n_ignored == 2
    assert result.n_read + result.n_ignored == len(events)


def test_parse_truncated_json_keeps_what_was_read() -> None:
    events = [_event("n1", 1.0, "fault_start", "GPU", "GPU Lost")]
    data = (json.dumps(events)[:-1] + ', {"node_id": "n1", "event_ti').encode()
    result = parse(data, source_file="cut.json", mapping=_mapping(EVENTS_MAPPING))
    assert result.rows.height == 1
    assert result.rejects["reason"][0].startswith("invalid JSON")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"colour": "red"}, r"key 'colour' is not a mapping key"),
        ({"kind": "tickets"}, r"key 'kind' is 'tickets'; use lives or events"),
        (
            {"classes": {"column": "fault_type.Class", "map": {"GPU": "gpus"}}},
            r"key \"classes.map\['GPU'\]\" is 'gpus', not a component class",
        ),
        ({"window": None}, r"key 'window' population needs a window"),
        ({"time": {"unit": "fortnights", "origin": "2024-03-30"}}, r"key 'time.unit'"),
        ({"time": {"unit": "days"}}, r"key 'time.origin' is required"),
        ({"time": {"timezone": "Mars/Olympus"}}, r"key 'time.timezone'"),
        (
            {"events": {"type": "event_type", "time": "event_time", "start": ["a"]}},
            r"key 'events.end'",
        ),
        ({"failed": {"column": "x", "true_values": [1]}}, r"key 'failed' applies to kind: lives"),
        ({"dataset": "Trace 1"}, r"key 'dataset'"),
    ],
)
def test_mapping_errors_name_the_key(change: dict[str, object], match: str) -> None:
    raw = yaml.safe_load(textwrap.dedent(EVENTS_MAPPING))
    raw.update(change)
    with pytest.raises(MappingError, match=match):
        mapping_from_dict(raw, where="inline")


def test_lives_mapping_needs_times_and_flag() -> None:
    raw = yaml.safe_load(textwrap.dedent(LIVES_MAPPING))
    del raw["end"]
    with pytest.raises(MappingError, match=r"key 'end' kind: lives needs start and end"):
        mapping_from_dict(raw)
    raw = yaml.safe_load(textwrap.dedent(LIVES_MAPPING))
    del raw["failed"]
    with pytest.raises(MappingError, match=r"key 'failed' is required for kind: lives"):
        mapping_from_dict(raw)


def test_component_classes_are_the_seed_vocabulary() -> None:
    seed = pl.read_csv(REPO / "sql" / "seeds" / "dim_component_class.csv")
    assert sorted(fault_log.COMPONENT_CLASSES) == sorted(seed["component_class"])


@pytest.mark.parametrize(
    "name", ["titan_gc_full", "titan_gc_summary", "infinitehbd", "lanl_failures"]
)
def test_shipped_mappings_load(name: str) -> None:
    mapping = load_mapping(MAPPINGS / f"{name}.yaml")
    assert mapping.dataset == name


# ---------------------------------------------------------------------------------------------
# The real data sets (shared/real beside the repository)


@pytest.fixture(scope="module")
def gc_summary() -> fault_log.Parsed:
    data = (TITAN / "gc_summary_loc.csv").read_bytes()
    return parse(
        data,
        source_file="gc_summary_loc.csv",
        mapping=load_mapping(MAPPINGS / "titan_gc_summary.yaml"),
    )


@pytest.fixture(scope="module")
def gc_full() -> fault_log.Parsed:
    data = (TITAN / "gc_full.csv").read_bytes()
    return parse(
        data, source_file="gc_full.csv", mapping=load_mapping(MAPPINGS / "titan_gc_full.yaml")
    )


@pytest.fixture(scope="module")
def infinitehbd() -> fault_log.Parsed:
    data = (HBD / "fault_trace.json").read_bytes()
    return parse(
        data, source_file="fault_trace.json", mapping=load_mapping(MAPPINGS / "infinitehbd.yaml")
    )


@needs_titan
def test_titan_summary_batches(gc_summary: fault_log.Parsed) -> None:
    assert gc_summary.rejects.height == 0
    assert gc_summary.rows.height == 30_207
    by_batch = (
        gc_summary.rows.with_columns(
            pl.col("cohort_json").str.json_path_match("$.batch").alias("batch")
        )
        .group_by("batch")
        .agg(pl.len().alias("n"), pl.col("failed").sum().alias("n_dead"))
        .sort("batch")
    )
    assert by_batch.rows() == [("new", 11_370, 62), ("old", 18_837, 5_027)]
    # "over 100,000 collective years": 100,889 GPU-years in service
    years = gc_summary.rows["duration_s"].sum() / (365 * 86400)
    assert years == pytest.approx(100_889.5, abs=1)


@needs_titan
def test_titan_full_segments_and_events(gc_full: fault_log.Parsed) -> None:
    rows = gc_full.rows
    # every segment's stated duration equals remove - insert read in America/New_York
    assert gc_full.rejects.height == 0
    assert gc_full.n_read == 37_343
    assert rows.filter(pl.col("category_l1") == "DBE").height == 4_826
    assert rows.filter(pl.col("category_l1") == "OTB").height == 1_541
    kinds = rows.group_by("record_kind").len().sort("record_kind").rows()
    assert kinds == [("event", 1_158), ("life", 36_185)]
    assert rows["unit_id"].n_unique() == 30_207


@needs_hbd
def test_infinitehbd_trace(infinitehbd: fault_log.Parsed) -> None:
    rows = infinitehbd.rows
    assert infinitehbd.rejects.height == 0
    assert rows.height == 584
    assert infinitehbd.n_ignored == 584  # every end event paired into its start's row
    assert rows["end_ts"].null_count() == 0
    assert rows.filter(pl.col("end_ts") < pl.col("start_ts")).height == 0
    assert rows["unit_id"].n_unique() == 231
    levels = dict(rows.group_by("category_l1").len().iter_rows())
    assert levels == {"Hardware Failure": 298, "Other Failure": 262, "Software Failure": 24}
    stats = json.loads((HBD / "fault_statistics.json").read_text())
    expected = {
        (level, cls): body["ClassTotal"]
        for level, classes in stats.items()
        for cls, body in classes.items()
        if cls != "LevelTotal"
    }
    found = {(r[0], r[1]): r[2] for r in rows.group_by("category_l1", "category_l2").len().rows()}
    assert found == expected
    assert rows["start_ts"].min() == _ts("2024-04-02T21:29:31.200000+00:00")  # day 3.8955
    repair_d = (rows["end_ts"] - rows["start_ts"]).dt.total_microseconds() / 86.4e9
    assert repair_d.median() == pytest.approx(0.85, abs=0.01)
    assert repair_d.mean() == pytest.approx(5.5, abs=0.05)


def test_parse_summary_style_lives_with_strict_flag_and_bom() -> None:
    mapping = _mapping("""
        dataset: gpu_summary
        kind: lives
        unit: SN
        time: {format: "%Y-%m-%d %H:%M:%S", timezone: America/New_York}
        start: first
        end: last
        duration: {column: time, unit: days}
        failed: {column: dead, true_values: ["TRUE"], false_values: ["FALSE"]}
        cohorts: [batch]
    """)
    data = b"\xef\xbb\xbf" + raw_bytes("""
        SN,first,last,time,dead,batch
        a,,2019-08-01 20:07:33,843.5,FALSE,new
        b,2014-01-01 00:00:00,2014-01-11 00:00:00,10,TRUE,old
        c,2014-01-01 00:00:00,2014-01-11 00:00:00,12,TRUE,old
        d,,2019-08-01 20:07:33,-1,FALSE,old
        e,,2019-08-01 20:07:33,843.5,maybe,new
    """)
    result = parse(data, source_file="summary.csv", mapping=mapping)
    assert result.rows["unit_id"].to_list() == ["a", "b"]
    assert result.rows["duration_s"].to_list() == [843.5 * 86400, 10 * 86400]
    assert result.rows["failed"].to_list() == [False, True]
    assert result.rows["start_ts"][0] is None  # a life given by its length only
    assert result.rows["end_ts"][0] == _ts("2019-08-02T00:07:33+00:00")  # EDT
    reasons = result.rejects["reason"].to_list()
    assert reasons[0] == "duration 1036800.0 s disagrees with end - start = 864000.0 s"
    assert reasons[1].startswith("bad duration '-1' in column time")
    assert reasons[2] == (
        "failed value 'maybe' in column dead is neither true ['TRUE'] nor false ['FALSE']"
    )


def test_parse_json_path_missing_everywhere_is_a_clear_error() -> None:
    events = [{"node_id": "n1", "event_time": 1.0, "event_type": "fault_start"}]
    with pytest.raises(ValueError, match=r"mapping key 'categories' names column 'fault_type"):
        parse(
            json.dumps(events).encode(), source_file="flat.json", mapping=_mapping(EVENTS_MAPPING)
        )


def test_parse_json_lines_and_instant_failures() -> None:
    mapping = _mapping("""
        dataset: disks
        kind: events
        unit: [enclosure, slot]
        start: failed_at
        categories: [model]
    """)
    data = raw_bytes("""
        {"enclosure": "e1", "slot": 3, "failed_at": "2021-05-01T10:00:00Z", "model": "X1"}
        {"enclosure": "e1", "slot": 4, "failed_at": "yesterday", "model": "X1"}
    """)
    result = parse(data, source_file="disks.jsonl", mapping=mapping)
    assert result.rows.select("line_no", "unit_id", "record_kind", "component_class").rows() == [
        (1, "e1/3", "event", "unknown")
    ]
    assert result.rows["start_ts"][0] == result.rows["end_ts"][0]
    assert result.rejects["reason"][0].startswith("bad start time 'yesterday'")


# ---------------------------------------------------------------------------------------------
# Multi-system traces: groups, one-hot blame columns, many categories, time range (issue #12)

GROUPS_MAPPING = """
    dataset: systems
    kind: events
    unit: [System, node]
    time: {format: "%m/%d/%Y %H:%M", timezone: UTC, earliest: 1996-01-01}
    start: Prob Started
    end: Prob Fixed
    blame: {Facilities: facilities, Hardware: unknown, Human Error: human_error, Software: software}
    classes: {column: Hardware, map: {CPU: host_cpu}}
    categories: [fru type, purpose]
    groups:
      column: System
      population: nodes
      values:
        "2": {population: 5, window: {start: 1999-01-01, end: 1999-02-01}}
        "3": {window: {start: 1999-01-10, end: 1999-01-20}}
"""

GROUPS_HEADER = (
    "System,nodes,node,fru type,purpose,Prob Started,Prob Fixed,Facilities,Hardware,Human Error,"
    "Software"
)
GROUPS_RECORDS = [  # System, nodes, node, fru type, purpose, times, then the blame columns
    "2,49,0,part,compute,1/2/1999 0:00,1/2/1999 6:00,,CPU,,",  # 2
    "2,49,1,part,compute,1/3/1999 0:00,1/3/1999 1:00,,Disk,,",  # 3
    "3,8,4,part,graphics,1/11/1999 0:00,1/11/1999 1:00,Power Outage,,,",  # 4
    "3,8,4,,,1/12/1999 0:00,1/12/1999 1:00,,,,",  # 5: no cause given
    "3,8,5,part,compute,1/13/1999 0:00,1/13/1999 1:00,,CPU,Wrong cable,",  # 6: two causes
    "4,many,6,part,compute,1/14/1999 0:00,1/14/1999 1:00,,,,OS",  # 7
    "4,2,7,part,compute,1/15/1999 0:00,1/15/1999 1:00,,,,OS",  # 8: group 4 has no window
    ",2,8,part,compute,1/15/1999 0:00,1/15/1999 1:00,,,,OS",  # 9
    "4,,9,part,compute,1/15/1995 0:00,1/15/1995 1:00,,,,OS",  # 10
    "4,,9,part,compute,1/15/2099 0:00,1/15/2099 1:00,,,,OS",  # 11
]


def test_parse_groups_blame_and_categories_12() -> None:
    result = parse(
        "\n".join([GROUPS_HEADER, *GROUPS_RECORDS]).encode(),
        source_file="systems.csv",
        mapping=_mapping(GROUPS_MAPPING),
        now=datetime(2026, 6, 1, tzinfo=UTC),
    )
    rows = result.rows.select(
        "line_no",
        "unit_id",
        "unit_group",
        "component_class",
        "category_l1",
        "category_l2",
        "category_l3",
        "population",
        "window_start",
        "window_end",
    ).rows()
    jan = [_ts(f"1999-01-{d:02d}T00:00:00Z") for d in (1, 10, 20)]
    feb = _ts("1999-02-01T00:00:00Z")
    assert rows == [
        # the Hardware text refines the blame column's class; the population of the mapping
        # wins over the nodes column; categories: blame column, its text, then the rest joined
        (2, "2/0", "2", "host_cpu", "Hardware", "CPU", "part / compute", 5, jan[0], feb),
        (3, "2/1", "2", "unknown", "Hardware", "Disk", "part / compute", 5, jan[0], feb),
        (
            4,
            "3/4",
            "3",
            "facilities",
            "Facilities",
            "Power Outage",
            "part / graphics",
            8,
            jan[1],
            jan[2],
        ),
        # no blame column filled: the default class, no categories
        (5, "3/4", "3", "unknown", None, None, None, 8, jan[1], jan[2]),
    ]
    reasons = reject_reasons(result)
    assert reasons == {
        6: "several blame columns are filled (Hardware, Human Error); a record must name one cause",
        7: "bad population 'many' in column nodes (expected a positive whole number of units)",
        8: "group '4' has a population but no window; give it one under groups.values, "
        "groups.window or a top-level window (start and end)",
        9: "missing unit id (column System/node)",  # the group is part of the unit id
        10: "start time '1/15/1995 0:00' in column Prob Started is before 1996-01-01; set "
        "time.earliest in the mapping if the trace is that old",
        11: "start time '1/15/2099 0:00' in column Prob Started is in the future",
    }


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"blame": {"Software": "os"}}, r"key \"blame\['Software'\]\" is 'os', not a component"),
        ({"blame": ["Software"]}, r"key 'blame' must map one-hot cause columns"),
        ({"groups": {"population": "nodes"}}, r"key 'groups.column' is required"),
        (
            {"groups": {"column": "System", "values": {"2": {"nodes": 4}}}},
            r"key \"groups.values\['2'\]\" must be a mapping with population and / or window",
        ),
        (
            {"groups": {"column": "System", "values": {"2": {"population": 0}}}},
            r"key \"groups.values\['2'\].population\" must be a positive whole number",
        ),
        (
            {"groups": {"column": "System", "values": {"2": {"population": 4}}}},
            r"key \"groups.values\['2'\].window\" a population needs a window",
        ),
        (
            {
                "groups": {
                    "column": "System",
                    "values": {"2": {"window": {"start": "1999-02-01", "end": "1999-01-01"}}},
                }
            },
            r"key \"groups.values\['2'\].window.end\" must be later than the window start",
        ),
        (
            {"groups": {"column": "System", "values": {"2": {"window": ["1999-01-01"]}}}},
            r"key \"groups.values\['2'\].window\" must be a mapping with keys start and / or end",
        ),
        (
            {"blame": {"columns": {"Software": "software"}, "empty": [["0"]]}},
            r"key 'blame.empty' must be a value or a list of plain values",
        ),
        (
            {"time": {"format": "%m/%d/%Y %H:%M", "earliest": "long ago"}},
            r"key 'time.earliest' 'long ago' is not a timestamp",
        ),
    ],
)
def test_mapping_errors_for_groups_and_blame_12(change: dict[str, object], match: str) -> None:
    raw = yaml.safe_load(textwrap.dedent(GROUPS_MAPPING))
    raw.update(change)
    with pytest.raises(MappingError, match=match):
        mapping_from_dict(raw, where="inline")


def test_groups_population_applies_to_events_only_12() -> None:
    raw = yaml.safe_load(textwrap.dedent(LIVES_MAPPING))
    raw["unit"] = ["location", "SN"]
    raw["groups"] = {"column": "location", "population": "nodes"}
    with pytest.raises(MappingError, match=r"key 'groups.population' applies to kind: events"):
        mapping_from_dict(raw)
    raw["groups"] = {"column": "location"}  # a window per group is fine for lives
    assert mapping_from_dict(raw).groups == fault_log.GroupSpec(column="location")


def test_group_column_is_part_of_the_unit_12() -> None:
    raw = yaml.safe_load(textwrap.dedent(GROUPS_MAPPING))
    raw["unit"] = "node"
    with pytest.raises(MappingError, match=r"key 'groups.column' 'System' must also be a unit"):
        mapping_from_dict(raw, where="inline")


@pytest.mark.parametrize(
    ("regex", "problem"),
    [
        (r"^c(?P<col>\d+)(?=-)", "look-around"),
        (r"^(?P<col>\d)\1", "backreferences"),
    ],
)
def test_cohort_regex_is_checked_by_the_engine_that_runs_it_12(regex: str, problem: str) -> None:
    raw = yaml.safe_load(textwrap.dedent(LIVES_MAPPING))
    raw["cohort_pattern"]["regex"] = regex  # Python's re compiles both
    with pytest.raises(MappingError, match=rf"cohort_pattern.regex' .*Rust regex.*{problem}"):
        mapping_from_dict(raw, where="inline")


def test_cohort_regex_named_groups_in_rust_syntax_12() -> None:
    raw = yaml.safe_load(textwrap.dedent(LIVES_MAPPING))
    raw["cohort_pattern"]["regex"] = r"^c(?<col>\d+)-(?<row>\d+)c(?<cage>\d)"  # not Python re
    mapping = mapping_from_dict(raw, where="inline")
    result = parse(raw_bytes(LIVES_CSV), source_file="gc.csv", mapping=mapping)
    cohort = json.loads(result.rows["cohort_json"][0])
    assert cohort == {"location": "c11-2c1s4n1", "col": "11", "row": "2", "cage": "1"}


def test_parse_time_range_uses_the_other_sources_bounds_12() -> None:
    data = raw_bytes("""
        node,down,up
        a,1999-12-31T23:00:00Z,2000-01-01T01:00:00Z
        b,2026-06-02T00:00:00Z,2026-06-02T01:00:00Z
        c,2026-06-03T00:00:00Z,
    """)
    mapping = _mapping("""
        dataset: bounds
        kind: events
        unit: node
        start: down
        end: up
    """)
    result = parse(data, source_file="b.csv", mapping=mapping, now=_ts("2026-06-01T12:00:00Z"))
    assert result.rows["unit_id"].to_list() == ["b"]  # within a day of the ingest
    assert result.rejects["reason"].to_list() == [
        "start time '1999-12-31T23:00:00Z' in column down is before 2000-01-01; set "
        "time.earliest in the mapping if the trace is that old",
        "start time '2026-06-03T00:00:00Z' in column down is in the future",
    ]


def test_parse_blame_flags_with_empty_values_12() -> None:
    mapping = _mapping("""
        dataset: flags
        kind: events
        unit: node
        start: down
        blame:
          columns: {hw: unknown, sw: software, net: network}
          empty: ["0"]
    """)
    data = raw_bytes("""
        node,down,hw,sw,net
        a,2021-05-01T10:00:00Z,0,1,0
        b,2021-05-02T10:00:00Z,0,0,0
        c,2021-05-03T10:00:00Z,1,0,1
    """)
    result = parse(data, source_file="flags.csv", mapping=mapping)
    assert result.rows.select(
        "unit_id", "component_class", "category_l1", "category_l2"
    ).rows() == [
        ("a", "software", "sw", "1"),
        ("b", "unknown", None, None),
    ]
    assert result.rejects["reason"].to_list() == [
        "several blame columns are filled (hw, net); a record must name one cause"
    ]


SERVICE_MAPPING = """
    dataset: service
    kind: events
    unit: [sys, node]
    time: {format: "%m/%d/%Y %H:%M"}
    start: down
    end: up
    groups:
      column: sys
      population: nodes
      window: {start: prod, end: decom, format: "%m/%d/%Y", open: [current]}
    window: {end: 2001-01-01}
"""


def test_parse_group_windows_from_service_date_columns_12() -> None:
    data = raw_bytes("""
        sys,nodes,node,prod,decom,down,up
        s1,4,n1,01/01/2000,current,03/01/2000 10:00,03/01/2000 12:00
        s1,4,n2,02/01/2000,06/30/2000,03/02/2000 10:00,03/02/2000 12:00
        s2,2,n3,never,current,03/03/2000 10:00,03/03/2000 12:00
        s2,2,n4,03/01/2000,soon,03/04/2000 10:00,03/04/2000 12:00
    """)
    result = parse(data, source_file="service.csv", mapping=_mapping(SERVICE_MAPPING))
    rows = result.rows.select("unit_id", "population", "window_start", "window_end").rows()
    assert rows == [
        # "current": still in service, so the top-level window end
        ("s1/n1", 4, _ts("2000-01-01T00:00:00Z"), _ts("2001-01-01T00:00:00Z")),
        ("s1/n2", 4, _ts("2000-02-01T00:00:00Z"), _ts("2000-06-30T00:00:00Z")),
    ]
    assert result.rejects["reason"].to_list() == [
        "bad service start 'never' in column prod (expected format %m/%d/%Y in UTC)",
        "bad service end 'soon' in column decom (expected format %m/%d/%Y in UTC or one of "
        "['current'])",
    ]
