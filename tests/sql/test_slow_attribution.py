"""What fail-slow episodes are blamed on (int_slow_attribution, the blamed columns of
int_slow_episodes; docs/goodput.md §7).

Hand-built warehouses first, every expectation worked out below from the lines, never read off
the views. Every job prints the same Megatron progress lines (10 iterations a line), from HH:00:00:

    iteration  10    20 ... 80 |  90   100  110  120 | 130 ... 160
    ms       3000  1000 ... 1000| 1200 1200 1200 1200| 1000 ... 1000
    time (s)   30    40 ... 100|  112  124  136  148|  158 ... 188

    warm-up: lines 10-30 (slow_warmup_lines 3); baseline over 40-80 and 130-160: 9 lines at
    1.0 s, MAD 0, theta 0.05. Lines 90-120 (1.2 s > 1.05 s) are one episode, from the time of
    line 80 (HH:01:40) to that of line 120 (HH:02:28).

Job 7001 (4 nodes n7001a-d in the node list, 32 GPUs): a StragglerDetector report after every
    line. Healthy reports: MxRtt/MnRtt 933.72/930.00 (x1.004, under 1 + theta). At 90, 100 and
    120: MxRtt 1116.00ms/21 over MnRtt 930.00ms (x1.2); at 110: MxRtt 985.80ms/3 (x1.06). Rank
    21 is named by 3 of the 4 reports in (HH:01:40, HH:02:28] (the report at 80 is the healthy
    interval before): per_rank, 'megatron MxRtt rank 21 x1.200 in 3/4 reports'; by the block
    layout rank 21 runs on node 21 // 8 = 2 (n7001c), GPU 21 mod 8 = 5.
Job 7002 (a log no scheduler record ties: the log-only job 'log:7002', no node list;
    cfg_params gpus_per_node 8): NVRx reports after lines 40 (healthy: lowest scores 0.97 and
    0.98, above 1 / 1.05 = 0.952) and 90 and 110 (rank 13, Node=gpu-x17, relative 0.83 and
    0.85, individual 0.86 and 0.88). In the window: 2 relative and 2 individual blocks, each
    naming rank 13 (4 votes); the relative score is told before the individual one when they
    name the rank equally often: 'nvrx relative score rank 13
    0.84 in 2/2 reports on gpu-x17' (the median of its relative scores). Host from Node=, GPU
    13 mod 8 = 5 (cfg_params gpus_per_node: a log-only job has no node list).
Job 7003 (2 nodes, 16 GPUs): healthy StragglerDetector reports only (x1.004 each), and DCGM
    samples every 10 s: n7003b GPU 3 at 1650 MHz with reasons 0x88 (HW slowdown | power brake)
    from HH:01:50 to HH:02:20, the other GPUs at 1980 MHz with none; n7003a GPU 0's PCIe replay
    counter goes 5 -> 7 in the window. No report names a rank: dcgm. Samples in [HH:01:40,
    HH:02:28]: 01:40, 01:50, 02:00, 02:10, 02:20 (5 per GPU); GPU 3 throttled in 4 of them, its
    median clock 1650 against the job's 1980 (median of the GPUs' medians): 'dcgm
    clock_event_reasons 0x88 in 4/5 samples, sm_clock 1650/1980 MHz on n7003b gpu3' (reason bits
    outrank a PCIe replay).
Job 7004 (1 node): no report, no DCGM: unattributed, nothing blamed.
Job 7005 (1 node): DCGM only, none of it blaming: GPU 7 idle (0x1) at 345 MHz (an idle
    GPU's clock is not compared), GPU 2 with 0x2 | 0x100 (clocks setting, display) at 1980 MHz:
    unattributed.

Then acceptance on generated fleets (the same ``synthesize`` and ``ingest`` calls as
tests/pipelines/conftest.py's fleet, with ``relia synth``'s ``--slow-preset published``
knobs), against ``ground_truth.json`` ``slow_episodes``. Matching rule: a measured episode is
matched to the true episodes of the same job and attempt whose ``[start, end)`` overlaps its
``[start_ts, end_ts]``. It is counted when one of them lasts more than 10 minutes with a factor
of at least 1.1 (for the per-rank figure: and its job's log carries straggler reports, as the
generator's Megatron logs do and its torchtitan logs do not). Its true unit is the one that is
the slowest among those active (the job runs at the pace of its slowest unit) for the longest
time inside the window.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl
import pytest

from pipelines import ingest, warehouse
from pipelines.ingest.sources.training import parse
from synth import SynthConfig, synthesize
from synth.failslow import with_slow_preset

if TYPE_CHECKING:
    from pathlib import Path

DAY = "2026-06-01"
LINES = [(10, 3000.0, 30)] + [(it, 1000.0, 30 + it - 10) for it in range(20, 90, 10)]
LINES += [(90, 1200.0, 112), (100, 1200.0, 124), (110, 1200.0, 136), (120, 1200.0, 148)]
LINES += [(it, 1000.0, 148 + it - 120) for it in range(130, 170, 10)]
"""(iteration, ms per iteration, seconds after the job's start) of every job's progress lines."""


def at(hour: int, seconds: float = 0) -> datetime:
    """``DAY`` at ``hour`` o'clock plus ``seconds`` (UTC)."""
    return datetime.fromisoformat(f"{DAY} {hour:02d}:00:00").replace(tzinfo=UTC) + timedelta(
        seconds=seconds
    )


def _stamp(hour: int, seconds: float) -> str:
    return at(hour, seconds).strftime("%Y-%m-%d %H:%M:%S")


def _iteration(hour: int, it: int, ms: float, seconds: float) -> str:
    """A Megatron-LM iteration line (the format of data_samples/training/slurm-4242.out)."""
    return (
        f" [{_stamp(hour, seconds)}] iteration {it:8d}/    1000 | consumed samples: "
        f"{it * 256:12d} | elapsed time per iteration (ms): {ms:.1f} | learning rate: "
        "1.500000E-04 | global batch size:   256 | lm loss: 5.000000E+00 | loss scale: 1.0 | "
        "grad norm: 1.000 | number of skipped iterations:   0 | number of nan iterations:   0 |"
    )


def _detector(hour: int, seconds: float, max_ms: float, max_rank: int) -> str:
    """A StragglerDetector report line (megatron_core_straggler_readme.log's format)."""
    etpt_min = 297.32 * 930.0 / max_ms
    return (
        f" 0: INFO:megatron.core.utils:[{_stamp(hour, seconds)}] | MnRtt/Rnk: 930.00ms/4 | "
        f"MxRtt/Rnk: {max_ms:.2f}ms/{max_rank} | MnPwr/Rnk: 601796W/8 | MxPwr/Rnk: 683801W/1 | "
        "MnTmp/Rnk: 52C/0 | MxTmp/Rnk: 65C/2 | MnUtl/Rnk: 97%/8 | MxUtl/Rnk: 100%/6 | "
        "MnClk/Rnk: 1950MHz/3 | MxClk/Rnk: 1980MHz/0 | MnDRtt/Rnk: 14.27ms/2 | "
        f"MxDRtt/Rnk: 34.65ms/3 | MnEtpt/Rnk: {etpt_min:.2f}TF/{max_rank} | "
        "MxEtpt/Rnk: 297.32TF/4"
    )


def _nvrx(relative: tuple[int, str, float], individual: tuple[int, str, float]) -> list[str]:
    """An NVRx report (nvrx_megatron_bridge_docs_512_ranks.log's format), 16 ranks: the worst
    rank given, then four at 0.98-0.99 and the best five."""
    out: list[str] = []
    for title, (rank, node, score) in (("relative", relative), ("individual", individual)):
        out += [f"GPU {title} performance:", " Worst performing 5/16 ranks:"]
        out.append(f"  Rank={rank} Node={node} Score={score:.2f}")
        out += [f"  Rank={r} Node=gpu-x{r:02d} Score=0.98" for r in (1, 2, 3, 4)]
        out.append(" Best performing 5/16 ranks:")
        out += [f"  Rank={r} Node=gpu-x{r:02d} Score=1.00" for r in (5, 6, 7, 8, 9)]
        out.append("")
    out.append(" Straggler report processing time: 0.042 sec.")
    return out


def _log(hour: int, after: dict[int, list[str]]) -> bytes:
    lines: list[str] = []
    for it, ms, seconds in LINES:
        lines.append(_iteration(hour, it, ms, seconds))
        lines += after.get(it, [])
    return ("\n".join(lines) + "\n").encode()


def _megatron_reports(hour: int, slow: dict[int, tuple[float, int]]) -> dict[int, list[str]]:
    return {it: [_detector(hour, seconds, *slow.get(it, (933.72, 9)))] for it, _, seconds in LINES}


def _job(job: str, hour: int, nodes: list[str]) -> dict[str, Any]:
    return {
        "job_id": job,
        "job_id_raw": job,
        "step": None,
        "job_name": "pretrain",
        "partition": "gpu",
        "account": "llm",
        "user_name": "ada",
        "alloc_nodes": len(nodes),
        "n_gpus": 8 * len(nodes),
        "node_list": ",".join(nodes),
        "nodes": nodes,
        "submit_ts": at(hour) - timedelta(minutes=1),
        "start_ts": at(hour),
        "end_ts": at(hour, 300),
        "state": "COMPLETED",
        "exit_code": 0,
        "exit_signal": 0,
        "restarts": 0,
    }


def _samples(hour: int, host: str, special: dict[int, Any]) -> list[dict[str, Any]]:
    """DCGM samples every 10 s over the job of ``hour`` for 8 GPUs of ``host``: 1980 MHz and
    no reason bit, but for ``special[gpu](seconds) -> (clock, reasons, pcie_replays)``."""
    rows = []
    for seconds in range(0, 300, 10):
        for gpu in range(8):
            clock, reasons, pcie = special.get(gpu, lambda _: (1980.0, 0, 0.0))(seconds)
            rows.append(
                {
                    "source_file": f"dcgm/{host}.prom",
                    "line_no": len(rows) + 1,
                    "host": host,
                    "ts": at(hour, seconds),
                    "gpu_index": gpu,
                    "sm_clock_mhz": clock,
                    "clock_event_reasons": reasons,
                    "pcie_replays": pcie,
                    "source_format": "prometheus",
                }
            )
    return rows


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]]) -> None:
    frame = pl.DataFrame(rows, infer_schema_length=None)
    con.register("incoming", frame.to_arrow())
    con.execute(f"insert into {table} by name select * from incoming")
    con.unregister("incoming")


def _throttled(seconds: int) -> tuple[float, int, float]:
    return (1650.0, 0x88, 0.0) if 110 <= seconds <= 140 else (1980.0, 0, 0.0)


def _replays(seconds: int) -> tuple[float, int, float]:
    return (1980.0, 0, 7.0 if seconds >= 120 else 5.0)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    nodes_7001 = ["n7001a", "n7001b", "n7001c", "n7001d"]
    slow_7001 = {90: (1116.0, 21), 100: (1116.0, 21), 110: (985.80, 3), 120: (1116.0, 21)}
    nvrx_7002 = {
        40: _nvrx((11, "gpu-x11", 0.97), (12, "gpu-x12", 0.98)),
        90: _nvrx((13, "gpu-x17", 0.83), (13, "gpu-x17", 0.86)),
        110: _nvrx((13, "gpu-x17", 0.85), (13, "gpu-x17", 0.88)),
    }
    logs = {
        "training/slurm-7001.out": _log(1, _megatron_reports(1, slow_7001)),
        "training/slurm-7002.out": _log(2, nvrx_7002),
        "training/slurm-7003.out": _log(3, _megatron_reports(3, {})),
        "training/slurm-7004.out": _log(4, {}),
        "training/slurm-7005.out": _log(5, {}),
    }
    db = duckdb.connect()
    db.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(db)
    db.execute("insert into cfg_params (name, value) values ('gpus_per_node', 8)")
    for path, data in logs.items():
        parsed = parse(data, source_file=path)
        assert parsed.rejects.height == 0
        db.register("incoming", parsed.rows.to_arrow())
        db.execute("insert into raw_training_events by name select * from incoming")
        db.unregister("incoming")
    jobs = [
        _job("7001", 1, nodes_7001),
        _job("7003", 3, ["n7003a", "n7003b"]),
        _job("7004", 4, ["n7004a"]),
        _job("7005", 5, ["n7005a"]),
    ]
    _insert(
        db,
        "raw_slurm_jobs",
        [j | {"source_file": "sacct.txt", "line_no": i} for i, j in enumerate(jobs, 1)],
    )
    idle = {
        7: lambda _: (345.0, 0x1, 0.0),
        2: lambda _: (1980.0, 0x2 | 0x100, 0.0),
    }
    _insert(
        db,
        "raw_dcgm_samples",
        _samples(3, "n7003a", {0: _replays})
        + _samples(3, "n7003b", {3: _throttled})
        + _samples(5, "n7005a", idle),
    )
    warehouse.create_views(db)
    warehouse.materialize(db)  # as an ingest leaves it: the episodes are read by every test
    return db


def _episodes(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    rows = warehouse.query(
        con,
        "select job_id_raw, attempt, episode_no, start_ts, end_ts, blamed_host, blamed_gpu, "
        "blamed_rank, attribution, evidence from int_slow_episodes order by job_id_raw",
    ).to_dicts()
    assert all(r["attempt"] == 1 and r["episode_no"] == 1 for r in rows)
    return {r["job_id_raw"]: r for r in rows}


def test_every_job_has_its_one_episode(con: duckdb.DuckDBPyConnection) -> None:
    episodes = _episodes(con)
    assert sorted(episodes) == ["7001", "7003", "7004", "7005", "log:7002"]
    for job, row in episodes.items():
        hour = 2 if job == "log:7002" else int(job) - 7000
        assert (row["start_ts"], row["end_ts"]) == (at(hour, 100), at(hour, 148)), job
    keys = warehouse.query(con, "select job_id_raw, attempt, episode_no from int_slow_attribution")
    assert keys.height == 5
    assert keys.unique().height == 5


def test_megatron_reports_name_a_rank_placed_by_the_layout(
    con: duckdb.DuckDBPyConnection,
) -> None:
    row = _episodes(con)["7001"]
    assert row["attribution"] == "per_rank"
    assert (row["blamed_rank"], row["blamed_host"], row["blamed_gpu"]) == (21, "n7001c", 5)
    assert row["evidence"] == "megatron MxRtt rank 21 x1.200 in 3/4 reports"


def test_nvrx_scores_place_the_rank_by_its_node(con: duckdb.DuckDBPyConnection) -> None:
    row = _episodes(con)["log:7002"]
    assert row["attribution"] == "per_rank"
    assert (row["blamed_rank"], row["blamed_host"], row["blamed_gpu"]) == (13, "gpu-x17", 5)
    assert row["evidence"] == "nvrx relative score rank 13 0.84 in 2/2 reports on gpu-x17"


def test_dcgm_reason_bits_blame_one_gpu(con: duckdb.DuckDBPyConnection) -> None:
    row = _episodes(con)["7003"]
    assert row["attribution"] == "dcgm"
    assert (row["blamed_host"], row["blamed_gpu"], row["blamed_rank"]) == ("n7003b", 3, None)
    assert row["evidence"] == (
        "dcgm clock_event_reasons 0x88 in 4/5 samples, sm_clock 1650/1980 MHz on n7003b gpu3"
    )


@pytest.mark.parametrize("job", ["7004", "7005"])
def test_no_evidence_and_idle_bits_stay_unattributed(
    con: duckdb.DuckDBPyConnection, job: str
) -> None:
    row = _episodes(con)[job]
    assert row["attribution"] == "unattributed"
    assert (row["blamed_host"], row["blamed_gpu"], row["blamed_rank"], row["evidence"]) == (
        None,
        None,
        None,
        None,
    )


def test_slow_units_stay_empty_under_two_episodes(con: duckdb.DuckDBPyConnection) -> None:
    # every blamed unit has one episode here: rpt_slow_units lists units with at least 2
    assert warehouse.query(con, "select * from rpt_slow_units").height == 0


# --- acceptance on generated fleets ------------------------------------------------------------

FLEET = {"nodes": 24, "days": 8, "seed": 5, "training_logs": True}
"""A small fleet (24 nodes x 8 GPUs, 8 days) with the published fail-slow preset."""


DCGM_FLEET = FLEET | {"nodes": 16, "days": 6, "seed": 1}
"""Smaller for the DCGM run: a scrape every 300 s of every GPU is most of its ingest."""


def _build(
    root: Path, fleet: dict[str, Any], **knobs: Any
) -> tuple[duckdb.DuckDBPyConnection, dict[str, Any]]:
    config = with_slow_preset(SynthConfig(**fleet), "published", **knobs)
    landing = root / "landing"
    truth = synthesize(landing, config)
    db = root / "relia.duckdb"
    counts = ingest.ingest(db, ingest.discover([landing]))
    assert all(not c.skipped for c in counts)
    return duckdb.connect(str(db), read_only=True), truth


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _true_unit(
    truth: dict[str, Any], job: str, attempt: int, t0: float, t1: float
) -> tuple[tuple[str, int | None] | None, bool, bool]:
    """(the true unit, counted, its episodes have a DCGM signature) of a measured window.

    The unit slowest among the overlapping true episodes for the longest time in ``[t0, t1]``;
    counted when an overlapping episode lasts over 600 s with a factor of at least 1.1.
    """
    eps = [
        (max(_ts(e["start"]), t0), min(_ts(e["end"]), t1), e)
        for e in truth["slow_episodes"]
        if e["job_id"] == job
        and e["attempt"] == attempt
        and _ts(e["start"]) <= t1
        and _ts(e["end"]) > t0
    ]
    if not eps:
        return None, False, False
    counted = any(_ts(e["end"]) - _ts(e["start"]) > 600 and e["factor"] >= 1.1 for _, _, e in eps)
    cuts = sorted({a for a, _, _ in eps} | {b for _, b, _ in eps})
    held: dict[tuple[str, int | None], float] = {}
    signed: dict[tuple[str, int | None], bool] = {}
    for lo, hi in itertools.pairwise(cuts):
        active = [e for a, b, e in eps if a <= lo and b >= hi]
        if active:
            top = max(active, key=lambda e: e["factor"])
            unit = (top["host"], top["gpu"])
            held[unit] = held.get(unit, 0.0) + hi - lo
            signed[unit] = signed.get(unit, False) or bool(top["dcgm_signature"])
    if not held:  # the window only touches the episodes at an instant
        top = max((e for _, _, e in eps), key=lambda e: e["factor"])
        unit = (top["host"], top["gpu"])
        return unit, counted, bool(top["dcgm_signature"])
    unit = max(held, key=lambda u: held[u])
    return unit, counted, signed[unit]


def _scored(con: duckdb.DuckDBPyConnection, truth: dict[str, Any]) -> list[dict[str, Any]]:
    rows = warehouse.query(
        con,
        "select job_id_raw, attempt, start_ts, end_ts, blamed_host, blamed_gpu, attribution, "
        "job_id_raw in (select ties.job_id_raw from int_training_log_ties as ties "
        "semi join stg_training_events as reports on ties.source_file = reports.source_file "
        "and reports.event = 'straggler') as has_reports "
        "from int_slow_episodes where job_id_raw not like 'log:%'",
    ).to_dicts()
    for row in rows:
        unit, counted, signed = _true_unit(
            truth,
            row["job_id_raw"],
            row["attempt"],
            row["start_ts"].timestamp(),
            row["end_ts"].timestamp(),
        )
        row["true_unit"], row["counted"], row["signed"] = unit, counted, signed
        row["right"] = unit is not None and (row["blamed_host"], row["blamed_gpu"]) == unit
    return rows


def per_rank_accuracy(rows: list[dict[str, Any]]) -> tuple[int, int]:
    """(blamed right, counted) over the counted measured episodes of jobs whose log carries
    straggler reports (the generator writes none in torchtitan logs)."""
    counted = [r for r in rows if r["counted"] and r["has_reports"]]
    return sum(r["right"] for r in counted), len(counted)


def dcgm_precision_recall(rows: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(blamed right by DCGM, attributed by DCGM, matched to a unit whose episode is signed).

    Precision = right / attributed (an attributed episode that matches no true one is wrong);
    recall = right / signed.
    """
    dcgm = [r for r in rows if r["attribution"] == "dcgm"]
    right = sum(r["right"] for r in dcgm)
    signed = sum(1 for r in rows if r["true_unit"] is not None and r["signed"])
    return right, len(dcgm), signed


@pytest.mark.slow
@pytest.mark.parametrize("lines", ["megatron", "nvrx"])
def test_per_rank_blames_the_true_gpu(tmp_path: Path, lines: str) -> None:
    con, truth = _build(tmp_path, FLEET, straggler_lines=lines)
    rows = _scored(con, truth)
    con.close()
    right, counted = per_rank_accuracy(rows)
    print(f"per-rank {lines}: {right}/{counted} counted episodes blamed on the true GPU")
    assert counted >= 10  # enough episodes for the share to mean something
    assert right >= 0.9 * counted
    assert {r["attribution"] for r in rows if r["counted"] and r["has_reports"]} == {"per_rank"}


@pytest.mark.slow
def test_dcgm_only_precision_and_recall(tmp_path: Path) -> None:
    con, truth = _build(tmp_path, DCGM_FLEET, slow_dcgm_share=1.0, dcgm_interval_s=300)
    rows = _scored(con, truth)
    con.close()
    right, attributed, signed = dcgm_precision_recall(rows)
    print(
        f"dcgm: precision {right}/{attributed} = {right / max(attributed, 1):.3f}, "
        f"recall {right}/{signed} = {right / max(signed, 1):.3f} ({len(rows)} episodes)"
    )
    assert not [r for r in rows if r["attribution"] == "per_rank"]  # no straggler lines
    assert attributed >= 10
    assert signed >= 10
