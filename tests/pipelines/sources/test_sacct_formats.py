"""sacct dumps as sites write them (#12 §3): any ``--format`` holding JobID, State, Start, End
and NodeList, in any order, any ``--delimiter``, ``--parsable``'s trailing delimiter, node and GPU
counts from whichever field the dump has, multi-cluster dumps keyed by cluster, and sacct's
fixed-width table output refused with a reason. Real samples are in ``samples/sacct/`` (see its
README); every expectation below was read off the sample lines by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipelines import ingest, warehouse
from pipelines.ingest.sources.sacct import parse
from tests.pipelines.sources.helpers import raw_bytes, reject_reasons, utc

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

SAMPLES = Path(__file__).parent / "samples" / "sacct"
NOW = datetime(2026, 9, 1, tzinfo=UTC)


def _parse(text: str | bytes, name: str = "sacct.txt") -> Parsed:
    data = raw_bytes(text) if isinstance(text, str) else text
    return parse(data, source_file=name, now=NOW)


def test_real_simulator_dump_with_cluster_nnodes_and_reqtres() -> None:
    # Slurm 23.02 (UB Slurm Simulator) --parsable2 with its own --format: no AllocNodes, AllocTRES
    # or Restarts; Cluster, NNodes and ReqTRES instead; 26 fields, the last (NTasks) empty.
    result = _parse((SAMPLES / "slurm_sim_micro_acct.txt").read_bytes())
    assert result.rejects.height == 0
    assert result.n_ignored == 1  # the header
    got = result.rows.select(
        "line_no",
        "cluster",
        "job_id",
        "job_id_raw",
        "step",
        "account",
        "user_name",
        "partition",
        "job_name",
        "alloc_nodes",
        "n_gpus",
        "nodes",
        "start_ts",
        "end_ts",
        "elapsed_s",
        "state",
        "exit_code",
        "exit_signal",
        "restarts",
    ).rows()
    assert got == [
        (
            2,
            "micro",
            "1001",
            "1001",
            None,
            "account2",
            "user5",
            "normal",
            "jobid_1001",
            1,
            0,
            ["b1"],
            utc("2022-01-01T05:01:14"),
            utc("2022-01-01T05:01:14"),
            0,
            "COMPLETED",
            0,
            0,
            None,
        ),
        (
            3,
            "micro",
            "1002",
            "1002",
            None,
            "account1",
            "user1",
            "normal",
            "jobid_1002",
            1,
            0,
            ["n1"],
            utc("2022-01-01T05:01:16"),
            utc("2022-01-01T05:02:16"),
            60,
            "TIMEOUT",
            0,
            0,
            None,
        ),
        (
            4,
            "micro",
            "1003",
            "1003",
            None,
            "account2",
            "user4",
            "normal",
            "jobid_1003",
            1,
            0,
            ["b1"],
            utc("2022-01-01T05:01:16"),
            utc("2022-01-01T05:01:21"),
            5,
            "COMPLETED",
            0,
            0,
            None,
        ),
        # NNodes says 2 (its ReqTRES says node=1: the request, not the allocation)
        (
            5,
            "micro",
            "1004",
            "1004",
            None,
            "account1",
            "user3",
            "normal",
            "jobid_1004",
            2,
            0,
            ["b1", "g1"],
            utc("2022-01-01T05:01:30"),
            utc("2022-01-01T05:01:51"),
            21,
            "COMPLETED",
            0,
            0,
            None,
        ),
    ]
    assert result.rows["alloc_tres"][3] == "billing=24,cpu=24,mem=67200M,node=1"
    assert result.rows["submit_ts"][1] == utc("2022-01-01T05:01:15")


def test_real_table_output_is_refused_line_by_line_with_the_fix() -> None:
    result = _parse((SAMPLES / "soperator_table_output.txt").read_bytes())
    assert result.rows.height == 0
    assert result.rejects["line_no"].to_list() == [1, 2, 3, 4, 5]
    assert set(result.rejects["reason"]) == {
        "sacct table output (space-padded columns, values may be cut) cannot be read: export "
        "with --parsable2 (or --parsable / --delimiter)"
    }
    assert result.rejects["raw"][3].startswith("20                sleep")


def test_minimal_format_in_any_order_with_another_delimiter() -> None:
    # sacct -P --delimiter=';' --format=State,NodeList,End,JobID,Start
    result = _parse(
        """
        State;NodeList;End;JobID;Start
        NODE_FAIL;gpu[0001-0004];2026-06-01T03:30:00;77;2026-06-01T01:00:00
        COMPLETED;gpu0009;2026-06-01T02:00:00;77.0;2026-06-01T01:00:05
        PENDING;None assigned;Unknown;78;Unknown
        """
    )
    assert result.rejects.height == 0
    assert result.rows.select(
        "job_id",
        "job_id_raw",
        "step",
        "alloc_nodes",
        "nodes",
        "elapsed_s",
        "submit_ts",
        "account",
        "n_gpus",
    ).rows() == [
        ("77", "77", None, 4, ["gpu0001", "gpu0002", "gpu0003", "gpu0004"], 9000, None, None, 0),
        ("77.0", "77", "0", 1, ["gpu0009"], 3595, None, None, 0),
        ("78", "78", None, None, [], None, None, None, 0),
    ]


def test_tab_and_multi_character_delimiters() -> None:
    tab = "JobID\tState\tStart\tEnd\tNodeList\n5\tFAILED\t2026-06-01T00:00:00\t2026-06-01T00:10:00\tg1\n"  # noqa: E501
    colons = "JobID::NodeList::State::Start::End\n6::g[1-2]::TIMEOUT::2026-06-01T00:00:00::2026-06-01T01:00:00\n"  # noqa: E501
    assert _parse(tab.encode()).rows.select("job_id", "state", "elapsed_s").row(0) == (
        "5",
        "FAILED",
        600,
    )
    assert _parse(colons.encode()).rows.select("job_id", "alloc_nodes", "state").row(0) == (
        "6",
        2,
        "TIMEOUT",
    )


def test_parsable_trailing_delimiter_is_one_more_empty_field() -> None:
    # sacct --parsable (not --parsable2) ends every line, the header too, with the delimiter
    result = _parse(
        """
        JobID|State|Start|End|NodeList|AllocTRES|
        9|NODE_FAIL|2026-06-01T00:00:00|2026-06-01T05:00:00|gpu[01-02]|cpu=16,gres/gpu=16|
        9|NODE_FAIL|2026-06-01T00:00:00|2026-06-01T05:00:00|gpu[01-02]
        """
    )
    assert result.rows.select("job_id", "n_gpus", "alloc_nodes").rows() == [("9", 16, 2)]
    assert reject_reasons(result) == {3: "expected 7 fields separated by '|', found 5"}


def test_gpus_counted_once_from_typed_and_untyped_entries_and_from_reqtres() -> None:
    result = _parse(
        """
        JobID|State|Start|End|NodeList|AllocTRES|ReqTRES|NNodes
        1|COMPLETED|2026-06-01T00:00:00|2026-06-01T01:00:00|g1|billing=54,cpu=16,gres/gpu:a100=4,gres/gpu=4,mem=208G,node=1|gres/gpu=4|1
        2|COMPLETED|2026-06-01T00:00:00|2026-06-01T01:00:00|g[1-2]|cpu=32,gres/gpu:a100=2,gres/gpu:v100=4,node=2||2
        3|PENDING|Unknown|Unknown|None assigned||cpu=64,gres/gpu=16,node=2|2
        4|COMPLETED|2026-06-01T00:00:00|2026-06-01T01:00:00|g1|cpu=8,gres/gpumem=40G,node=1||1
        5|COMPLETED|2026-06-01T00:00:00|2026-06-01T01:00:00|g1|gres/gpu=many||1
        """
    )
    gpus = dict(result.rows.select("job_id", "n_gpus").rows())
    assert gpus == {"1": 4, "2": 6, "3": 16, "4": 0}
    nodes = dict(result.rows.select("job_id", "alloc_nodes").rows())
    assert nodes == {"1": 1, "2": 2, "3": 2, "4": 1}  # NNodes, even for the pending job
    assert (
        result.rows.filter(pl.col("job_id") == "3")["alloc_tres"][0] == "cpu=64,gres/gpu=16,node=2"
    )
    assert reject_reasons(result) == {6: "malformed AllocTRES 'gres/gpu=many'"}


def test_times_printed_with_a_utc_offset_are_honoured() -> None:
    # SLURM_TIME_FORMAT='%Y-%m-%dT%H:%M:%S%z'
    result = _parse(
        """
        JobID|State|Submit|Start|End|NodeList
        1481508|COMPLETED|2023-02-21T13:49:20+0100|2023-02-21T13:49:26+0100|2023-02-21T15:10:23+0100|compute-[0-2]
        """
    )
    assert result.rows.select("start_ts", "end_ts", "alloc_nodes", "elapsed_s").row(0) == (
        utc("2023-02-21T12:49:26"),
        utc("2023-02-21T14:10:23"),
        3,
        4857,
    )


def test_a_dump_without_a_needed_field_names_what_is_missing() -> None:
    # the shape of a job-report paste: State and AllocTRES, but no Start, End or NodeList
    result = _parse(
        """
        JobID|JobName|User|Account|State|ExitCode|Elapsed|AllocTRES
        11|rccl|alice|project-a|COMPLETED|0:0|00:00:36|billing=448,cpu=448,gres/gpu=16,node=2
        """
    )
    assert result.rows.height == 0
    assert result.rejects["reason"][0].startswith(
        "sacct header is missing columns Start, End, NodeList:"
    )


def _dump(cluster_a: str, cluster_b: str) -> str:
    return (
        "Cluster|JobID|JobIDRaw|State|Submit|Start|End|NodeList|AllocTRES\n"
        f"{cluster_a}|1042|1042|NODE_FAIL|2026-06-01T00:00:00|2026-06-01T00:00:00|"
        "2026-06-01T10:00:00|a[001-002]|gres/gpu=16\n"
        f"{cluster_b}|1042|1042|COMPLETED|2026-06-01T01:00:00|2026-06-01T01:00:00|"
        "2026-06-01T03:00:00|b001|gres/gpu=8\n"
    )


def test_multi_cluster_dump_keeps_one_job_id_per_cluster(tmp_path: Path) -> None:
    # sacct -M alpha,beta: job 1042 exists on both clusters; neither hides the other
    slurm = tmp_path / "slurm"
    slurm.mkdir()
    (slurm / "sacct_all_clusters.txt").write_text(_dump("alpha", "beta"))
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([slurm]))
    with warehouse.connect(db, read_only=True) as con:
        staged = con.execute(
            "select cluster, job_id, state from stg_slurm_jobs order by cluster"
        ).fetchall()
        attempts = con.execute(
            "select job_id_raw, state, n_gpus, len(nodes) from int_job_attempts "
            "where scheduler = 'slurm' order by job_id_raw"
        ).fetchall()
        conflicts = con.execute("select count(*) from stg_slurm_job_conflicts").fetchone()
    assert staged == [("alpha", "1042", "NODE_FAIL"), ("beta", "1042", "COMPLETED")]
    assert attempts == [("alpha/1042", "NODE_FAIL", 16, 2), ("beta/1042", "COMPLETED", 8, 1)]
    assert conflicts == (0,)


def test_array_and_het_jobs_without_jobidraw_reach_the_attempts(tmp_path: Path) -> None:
    # Slurm 23 --format=JobID,JobName,... (no JobIDRaw): task 500_3 ran twice (requeued after a
    # NODE_FAIL, --duplicates), 500_4 once, het job 700 has two components; nothing is quarantined
    # and each task or component is one job in the attempts, requeues numbered within it
    slurm = tmp_path / "slurm"
    slurm.mkdir()
    (slurm / "sacct_arrays.txt").write_text(
        "JobID|JobName|State|Submit|Start|End|NodeList|AllocTRES\n"
        "500_3|sweep|NODE_FAIL|2026-06-01T00:00:00|2026-06-01T00:00:10|2026-06-01T00:10:10|"
        "gpu0003|gres/gpu=8\n"
        "500_3.batch|batch|CANCELLED|2026-06-01T00:00:10|2026-06-01T00:00:10|2026-06-01T00:10:10|"
        "gpu0003|gres/gpu=8\n"
        "500_3|sweep|COMPLETED|2026-06-01T00:10:20|2026-06-01T00:11:00|2026-06-01T00:21:00|"
        "gpu0004|gres/gpu=8\n"
        "500_4|sweep|COMPLETED|2026-06-01T00:00:00|2026-06-01T00:00:10|2026-06-01T00:05:00|"
        "gpu0005|gres/gpu=8\n"
        "700+0|het|COMPLETED|2026-06-01T00:00:00|2026-06-01T00:00:05|2026-06-01T00:30:00|"
        "gpu0006|gres/gpu=8\n"
        "700+1|het|COMPLETED|2026-06-01T00:00:00|2026-06-01T00:00:05|2026-06-01T00:30:00|"
        "cpu0001|cpu=4\n"
    )
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([slurm]))
    with warehouse.connect(db, read_only=True) as con:
        quarantined = con.execute("select count(*) from raw_quarantine").fetchone()
        attempts = con.execute(
            "select job_id_raw, attempt, job_id, state, n_gpus from int_job_attempts "
            "where scheduler = 'slurm' order by job_id_raw, attempt"
        ).fetchall()
    assert quarantined == (0,)
    assert attempts == [
        ("500_3", 1, "500_3", "NODE_FAIL", 8),
        ("500_3", 2, "500_3", "COMPLETED", 8),
        ("500_4", 1, "500_4", "COMPLETED", 8),
        ("700", 1, "700+0", "COMPLETED", 8),
        ("700+1", 1, "700+1", "COMPLETED", 0),
    ]


def test_real_json_documents_of_two_data_parser_versions() -> None:
    # Slurm 23.11.10 (data_parser v0.0.39: bare numbers, state a word) and 24.11.5 (v0.0.41:
    # {"set","number"} numbers, state a list, exit signal): one job and its batch step each.
    # Values read off the documents: time.* are Unix seconds (1727355355 = 2024-09-26T12:55:55Z)
    old = _parse((SAMPLES / "slurmweb_slurmdb_23.11_v0.0.39_completed.json").read_bytes())
    new = _parse((SAMPLES / "slurmweb_slurmdb_24.11_v0.0.41_failed.json").read_bytes())
    columns = ["line_no", "cluster", "job_id", "job_id_raw", "step", "job_name", "partition"]
    columns += ["account", "user_name", "alloc_nodes", "n_gpus", "nodes", "submit_ts", "start_ts"]
    columns += ["end_ts", "elapsed_s", "state", "exit_code", "exit_signal", "restarts"]
    assert old.rows.select(columns).rows() == [
        (1, "hpc", "58", "58", None, "wrap", "normal", "biology", "cgross", 4, 0,
         ["cn1", "cn2", "cn3", "cn4"], utc("2024-09-26T12:55:55"), utc("2024-09-26T13:44:21"),
         utc("2024-09-26T13:50:22"), 361, "COMPLETED", 0, 0, None),
        (2, "hpc", "58.batch", "58", "batch", "batch", None, "biology", None, 1, 0, ["cn1"],
         utc("2024-09-26T13:44:21"), utc("2024-09-26T13:44:21"), utc("2024-09-26T13:50:22"),
         361, "COMPLETED", 0, 0, None),
    ]  # fmt: skip
    assert new.rows.select(columns).rows() == [
        (1, "hpc", "5966", "5966", None, "wrap", "normal", "optic", "ksoto", 1, 0, ["cn1"],
         utc("2025-05-20T14:32:00"), utc("2025-05-20T14:32:01"), utc("2025-05-20T14:32:02"), 1,
         "FAILED", 1, 0, None),
        (2, "hpc", "5966.batch", "5966", "batch", "batch", None, "optic", None, 1, 0, ["cn1"],
         utc("2025-05-20T14:32:01"), utc("2025-05-20T14:32:01"), utc("2025-05-20T14:32:02"), 1,
         "FAILED", 1, 0, None),
    ]  # fmt: skip
    assert old.rejects.height == new.rejects.height == 0
    assert old.n_ignored == new.n_ignored == 0


_JSON_JOBS = """
{"meta": {"plugin": {"data_parser": "data_parser/v0.0.41"}, "command": ["sacct", "--json"]},
 "jobs": [
  {"job_id": 503, "name": "sweep", "partition": "gpu", "account": "ml", "user": "bo",
   "cluster": "alpha", "array": {"job_id": 500, "task_id": {"set": true, "number": 3}},
   "het": {"job_id": 0, "job_offset": {"set": false, "number": 0}},
   "state": {"current": ["NODE_FAIL"]}, "allocation_nodes": 2, "nodes": "gpu[0001-0002]",
   "exit_code": {"status": ["ERROR"], "return_code": {"set": true, "number": 0},
                 "signal": {"id": {"set": true, "number": 9}}},
   "time": {"submission": 1780272000, "start": 1780272010, "end": 1780272610, "elapsed": 600},
   "tres": {"allocated": [{"type": "cpu", "name": "", "count": 16},
                          {"type": "gres", "name": "gpu", "count": 16},
                          {"type": "gres", "name": "gpu:h100", "count": 16}]},
   "steps": [{"step": {"id": "503.0", "name": "python"}, "state": ["FAILED"],
              "exit_code": {"status": ["ERROR"], "return_code": {"set": true, "number": 1}},
              "nodes": {"count": 2, "range": "gpu[0001-0002]"},
              "time": {"start": {"set": true, "number": 1780272015}, "end": 1780272610,
                       "elapsed": 595},
              "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 16}]}}]},
  {"job_id": 500, "name": "sweep", "partition": "gpu", "account": "ml", "user": "bo",
   "cluster": "alpha", "array": {"job_id": 500, "task_id": {"set": false, "number": 0},
   "task": "4-9%2"}, "state": {"current": "PENDING"}, "allocation_nodes": 0,
   "nodes": "None assigned", "time": {"submission": 1780272000, "start": 0, "end": 0,
   "elapsed": 0}, "steps": []},
  {"job_id": 701, "name": "het", "partition": "cpu", "account": "ml", "user": "bo",
   "cluster": "alpha", "het": {"job_id": 700, "job_offset": {"set": true, "number": 1}},
   "state": {"current": ["CANCELLED"]}, "allocation_nodes": 1, "nodes": "cpu0001",
   "exit_code": {"status": ["SIGNALED"], "return_code": {"set": false, "number": 0},
                 "signal": {"id": {"set": true, "number": 15}}},
   "time": {"submission": 1780272000, "start": 1780272005, "end": 1780272305, "elapsed": 300},
   "tres": {"allocated": [{"type": "cpu", "name": "", "count": 4}]}}
 ]}
"""
_SAME_JOBS_PARSABLE2 = """
JobID|JobIDRaw|Cluster|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|End|Elapsed|State|ExitCode
500_3|503|alpha|sweep|gpu|ml|bo|2|cpu=16,gres/gpu=16,gres/gpu:h100=16|gpu[0001-0002]|2026-06-01T00:00:00|2026-06-01T00:00:10|2026-06-01T00:10:10|00:10:00|NODE_FAIL|0:9
500_3.0|503.0|alpha|python||ml||2|gres/gpu=16|gpu[0001-0002]|2026-06-01T00:00:15|2026-06-01T00:00:15|2026-06-01T00:10:10|00:09:55|FAILED|1:0
500_[4-9%2]|500|alpha|sweep|gpu|ml|bo|0||None assigned|2026-06-01T00:00:00|Unknown|Unknown|00:00:00|PENDING|
700+1|701|alpha|het|cpu|ml|bo|1|cpu=4|cpu0001|2026-06-01T00:00:00|2026-06-01T00:00:05|2026-06-01T00:05:05|00:05:00|CANCELLED|0:15
"""  # noqa: E501


def test_json_gives_the_rows_of_parsable2_for_the_same_jobs() -> None:
    # The same four records written by hand both ways (1780272000 = 2026-06-01T00:00:00Z); as
    # sacct does, a step line prints the job's account and leaves partition and user empty
    from_json = _parse(_JSON_JOBS.encode())
    from_text = _parse(_SAME_JOBS_PARSABLE2)
    assert from_json.rejects.height == from_text.rejects.height == 0
    compared = [c for c in from_text.rows.columns if c not in ("line_no", "alloc_tres")]
    assert from_json.rows.select(compared).to_dicts() == from_text.rows.select(compared).to_dicts()
    assert from_json.rows.select("job_id", "job_id_raw", "n_gpus", "exit_signal").rows() == [
        ("500_3", "503", 16, 9),
        ("500_3.0", "503", 16, 0),
        ("500_[4-9%2]", "500", 0, None),
        ("700+1", "701", 0, 15),
    ]
    assert from_json.rows["line_no"].to_list() == [1, 2, 3, 4]


def test_json_that_does_not_parse_is_one_reject_with_the_reason() -> None:
    broken = _parse(b'{"jobs": [{"job_id": 1')
    not_sacct = _parse(b'{"nodes": []}')
    assert broken.rows.height == not_sacct.rows.height == 0
    assert broken.rejects["reason"][0].startswith("sacct --json document does not parse: ")
    assert reject_reasons(not_sacct) == {
        1: "sacct --json document has no 'jobs' list (expected the output of sacct --json)"
    }


def test_json_documents_are_ingested_one_by_one(tmp_path: Path) -> None:
    # sacct --json ends its document with a newline and every document opens with the same "{"
    # line: the files must not be joined like dumps that share a header
    slurm = tmp_path / "slurm"
    slurm.mkdir()
    for name in (
        "slurmweb_slurmdb_23.11_v0.0.39_completed",
        "slurmweb_slurmdb_24.11_v0.0.41_failed",
    ):
        data = (SAMPLES / f"{name}.json").read_bytes()
        (slurm / f"{name}.json").write_bytes(data.rstrip(b"\n") + b"\n")
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([slurm]))
    with warehouse.connect(db, read_only=True) as con:
        quarantined = con.execute("select count(*) from raw_quarantine").fetchone()
        staged = con.execute(
            "select cluster, job_id, step, state, exit_code from stg_slurm_jobs order by job_id"
        ).fetchall()
    assert quarantined == (0,)
    assert staged == [
        ("hpc", "58", None, "COMPLETED", 0),
        ("hpc", "58.batch", "batch", "COMPLETED", 0),
        ("hpc", "5966", None, "FAILED", 1),
        ("hpc", "5966.batch", "batch", "FAILED", 1),
    ]


def test_real_json_job_cancelled_before_start_has_no_start() -> None:
    # Slurm 25.11.0, data_parser v0.0.41: time.start is 4294967294 (NO_VAL), no steps, no nodes
    result = _parse(
        (SAMPLES / "slurmweb_slurmdb_25.11_v0.0.41_cancelled_before_start.json").read_bytes()
    )
    assert result.rejects.height == 0
    assert result.rows.select(
        "job_id", "state", "nodes", "alloc_nodes", "submit_ts", "start_ts", "end_ts", "elapsed_s"
    ).rows() == [
        (
            "5715",
            "CANCELLED",
            [],
            0,
            utc("2025-11-10T17:34:26"),
            None,
            utc("2025-11-10T17:34:26"),
            0,
        )
    ]


def test_real_sacct_json_of_slurm_21_08_with_array_tasks() -> None:
    # sacct -X --json on Compute Canada's cedar, Slurm 21.08.8-2 (openapi/dbv0.0.37): bare
    # numbers, state a word, array.task_id a bare number, het.job_offset null, TRES names null,
    # no steps (-X). Read off the document: 1680134400 = 2023-03-30T00:00:00Z; the NODE_FAIL
    # task's elapsed (20615) is not its end minus start, and is kept as printed
    result = _parse((SAMPLES / "clockwork_cedar_21.08_v0.0.37_array.json").read_bytes())
    assert result.rejects.height == 0
    columns = ["line_no", "cluster", "job_id", "job_id_raw", "step", "job_name", "partition"]
    columns += ["account", "user_name", "alloc_nodes", "n_gpus", "nodes", "submit_ts", "start_ts"]
    columns += ["end_ts", "elapsed_s", "state", "exit_code", "exit_signal"]
    assert result.rows.select(columns).rows() == [
        (1, "cedar", "63752790_7", "63768795", None, "submitit", "gpubase_bygpu_b3",
         "rrg-cerise-ad_gpu", "nobody", 1, 1, ["cdr247"], utc("2023-03-30T16:24:39"),
         utc("2023-03-30T16:25:04"), utc("2023-03-31T06:28:23"), 20615, "NODE_FAIL", 0, 0),
        (2, "cedar", "63692861_0", "63694682", None, "submitit", "gpubase_bygpu_b3",
         "rrg-cerise-ad_gpu", "nobody2", 1, 1, ["cdr2529"], utc("2023-03-29T22:13:10"),
         utc("2023-03-29T22:13:12"), utc("2023-03-30T22:39:41"), 86307, "REQUEUED", 0, 0),
    ]  # fmt: skip


def test_real_sacct_json_of_slurm_24_05_running_gpu_job() -> None:
    # sacct -j 58976578 --json on Princeton's della, Slurm 24.05.3 (data_parser v0.0.41): a job
    # still RUNNING (time.end 0, the steps' end {"set": true, "number": 0}), 8 GPUs, its batch
    # and extern steps. 1726444800 = 2024-09-16T00:00:00Z
    result = _parse((SAMPLES / "slurmise_della_24.05_v0.0.41_running_gpu.json").read_bytes())
    assert result.rejects.height == 0
    assert result.rows.select(
        "job_id", "job_id_raw", "step", "partition", "n_gpus", "nodes", "submit_ts", "start_ts",
        "end_ts", "elapsed_s", "state",
    ).rows() == [
        ("58976578", "58976578", None, "pli-c", 8, ["della-k15g1"], utc("2024-09-16T03:10:24"),
         utc("2024-09-16T11:08:17"), None, 97201, "RUNNING"),
        ("58976578.batch", "58976578", "batch", None, 8, ["della-k15g1"],
         utc("2024-09-16T11:08:17"), utc("2024-09-16T11:08:17"), None, 97201, "RUNNING"),
        ("58976578.extern", "58976578", "extern", None, 8, ["della-k15g1"],
         utc("2024-09-16T11:08:17"), utc("2024-09-16T11:08:17"), None, 97201, "RUNNING"),
    ]  # fmt: skip


def test_json_exit_codes_of_the_older_data_parser_versions() -> None:
    # Slurm's dumpers (src/plugins/openapi/dbv0.0.37/parse.c of 21.08, data_parser/v0.0.39 of
    # 23.02 and 23.11): a signal is {"signal_id", "name"}, with return_code null (v0.0.37) or
    # -127 (v0.0.39); sacct prints both as 0:<signal>. A step of v0.0.37 names its id beside
    # its job id ("id": "batch" or a number)
    document = """
{"jobs": [
 {"job_id": 41, "state": {"current": "CANCELLED"}, "nodes": "gpu01", "allocation_nodes": 1,
  "array": {"job_id": 0, "task_id": null}, "het": {"job_id": 0, "job_offset": null},
  "exit_code": {"status": "SIGNALED", "return_code": null,
                "signal": {"signal_id": 15, "name": "Terminated"}},
  "time": {"submission": 1780272000, "start": 1780272010, "end": 1780272610, "elapsed": 600},
  "steps": [{"step": {"job_id": 41, "het": {"component": null}, "id": 0, "name": "python"},
             "state": "CANCELLED", "nodes": {"count": 1, "range": "gpu01"},
             "exit_code": {"status": "SIGNALED", "return_code": null,
                           "signal": {"signal_id": 9, "name": "Killed"}},
             "time": {"start": 1780272012, "end": 1780272610, "elapsed": 598}}]},
 {"job_id": 42, "state": {"current": "OUT_OF_MEMORY"}, "nodes": "gpu02",
  "exit_code": {"status": "SIGNALED", "return_code": -127,
                "signal": {"signal_id": 125, "name": "Unknown signal 125"}},
  "time": {"submission": 1780272000, "start": 1780272010, "end": 1780272610, "elapsed": 600}}
]}
"""
    result = _parse(document.encode())
    assert result.rejects.height == 0
    columns = ["job_id", "job_id_raw", "state", "exit_code", "exit_signal"]
    assert result.rows.select(columns).rows() == [
        ("41", "41", "CANCELLED", 0, 15),
        ("41.0", "41", "CANCELLED", 0, 9),
        ("42", "42", "OUT_OF_MEMORY", 0, 125),
    ]


def test_json_jobs_entry_that_is_not_an_object_is_one_reject_naming_it() -> None:
    document = b'{"jobs": ["6117|bench", {"job_id": 7, "state": {"current": "COMPLETED"}}]}'
    result = _parse(document)
    assert result.rows["job_id"].to_list() == ["7"]
    assert reject_reasons(result) == {
        1: """malformed JobID '(jobs entry "6117|bench" is not an object)'"""
    }
