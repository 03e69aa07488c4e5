"""Warehouses that lack something (issue #25 section 5), built through the real ingest path.

- ``missing``: no file at the path yet.
- ``schema``: a DuckDB file with the schema applied and nothing else (no views, no rows).
- ``ticketless``: a small generated fleet (8 nodes x 8 GPUs, 14 days) ingested without its
  ``repairs/`` folder.
- ``lifeless``: a training log only (the Megatron-LM log of ``data_samples/training``): telemetry
  that names no host, so no unit at risk and no unit lives (any source that names hosts, even
  Slurm jobs alone, gives the fleet units since issue #25: ``int_fleet_nodes``).
- ``failureless``: a fleet register, nvidia-smi snapshots (the same serials at both ends) and
  the same jobs: units at risk, jobs, and no failure at all.
- ``jobless``: the same register and snapshots without the jobs: units at risk, no job.

The hand-written files are in the real formats (``sacct --parsable2``, ``nvidia-smi
--query-gpu=timestamp,index,pci.bus_id,serial,uuid,name --format=csv``, the fleet CSV of
docs/data_contract.md); no job ends in a state that could be a hardware failure (no
``NODE_FAIL``, no ``FAILED``), and no serial changes.
"""

from __future__ import annotations

import shutil
import textwrap
from datetime import UTC, datetime
from pathlib import Path

from pipelines import ingest, warehouse
from synth import SynthConfig, synthesize

KINDS = ("missing", "schema", "ticketless", "lifeless", "failureless", "jobless")
"""Every warehouse, in the order the matrix lists them."""

NODES = ("gpu0001", "gpu0002")
SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts"
)
TWO_NODES = "billing=128,cpu=128,gres/gpu=16,mem=2000G,node=2|gpu[0001-0002]"
ONE_NODE = "billing=64,cpu=64,gres/gpu=8,mem=1000G,node=1|gpu0002"
# Five jobs over two weeks (2026-06-01 is a Monday): a 16-GPU pre-training job that completes,
# one cancelled by its user, one that runs out of time, one out of memory (an application
# failure), and a last 16-GPU job in the second week. None ends in a hardware-like state.
SACCT = "\n".join(
    [
        SACCT_HEADER,
        f"101|101|pretrain|hero|llm|ana|2|{TWO_NODES}|2026-06-01T00:50:00|2026-06-01T01:00:00|"
        "2026-06-01T13:00:00|12:00:00|COMPLETED|0:0|0",
        f"102|102|sft|batch|llm|bo|1|{ONE_NODE}|2026-06-02T09:00:00|2026-06-02T09:05:00|"
        "2026-06-02T11:05:00|02:00:00|CANCELLED by 1000|0:15|0",
        f"103|103|eval|batch|llm|bo|1|{ONE_NODE}|2026-06-03T08:00:00|2026-06-03T08:00:30|"
        "2026-06-03T12:00:30|04:00:00|TIMEOUT|0:0|0",
        f"104|104|sft|batch|llm|cy|1|{ONE_NODE}|2026-06-05T10:00:00|2026-06-05T10:01:00|"
        "2026-06-05T10:31:00|00:30:00|OUT_OF_MEMORY|0:125|0",
        f"105|105|pretrain|hero|llm|ana|2|{TWO_NODES}|2026-06-09T00:00:00|2026-06-09T00:10:00|"
        "2026-06-13T00:10:00|4-00:00:00|COMPLETED|0:0|0",
    ]
)
FLEET = textwrap.dedent(
    """\
    node,rack,cluster,batch,installed,removed
    gpu0001,r001,alpha,b1,2025-11-03T00:00:00Z,
    gpu0002,r001,alpha,b1,2025-11-03T00:00:00Z,
    """
)
GPUS_PER_NODE = 8
TRAINING_LOG = Path(__file__).resolve().parents[2] / "data_samples" / "training" / "slurm-4242.out"


def nvidia_smi(node: int, stamp: str) -> str:
    """One nvidia-smi inventory snapshot of node ``node`` (1 or 2) at ``stamp``."""
    lines = ["timestamp, index, pci.bus_id, serial, uuid, name"]
    for gpu in range(GPUS_PER_NODE):
        lines.append(
            f"{stamp}, {gpu}, 00000000:{0x18 + 0x10 * gpu:02X}:00.0, 16502{node:02d}{gpu:06d}, "
            f"GPU-{node:08x}-0000-4000-8000-{gpu:012x}, NVIDIA H100 80GB HBM3"
        )
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _ingest(db: Path, landing: Path) -> None:
    counts = ingest.ingest(db, ingest.discover([landing]))
    assert all(not c.skipped for c in counts)


def build(kind: str, root: Path) -> Path:
    """Build the warehouse ``kind`` (:data:`KINDS`) under ``root``; return its path."""
    db = root / f"{kind}.duckdb"
    landing = root / f"{kind}_landing"
    if kind == "missing":
        return db
    if kind == "schema":
        with warehouse.connect(db) as con:
            warehouse.apply_schema(con)
        return db
    if kind == "ticketless":
        synthesize(
            landing,
            SynthConfig(
                nodes=8, gpus_per_node=8, days=14, seed=1, start=datetime(2026, 6, 1, tzinfo=UTC)
            ),
        )
        shutil.rmtree(landing / "repairs")
        _ingest(db, landing)
        return db
    if kind == "lifeless":
        (landing / "training").mkdir(parents=True)
        shutil.copy(TRAINING_LOG, landing / "training")
        _ingest(db, landing)
        return db
    if kind != "jobless":
        _write(landing / "slurm" / "sacct_20260614.txt", SACCT + "\n")
    if kind in ("failureless", "jobless"):
        _write(landing / "fleet" / "fleet.csv", FLEET)
        for node in (1, 2):
            for stamp, name in (
                ("2026/06/01 00:00:00.000", "20260601T000000Z"),
                ("2026/06/14 23:00:00.000", "20260614T230000Z"),
            ):
                _write(
                    landing / "nvidia_smi" / f"gpu000{node}__{name}.csv", nvidia_smi(node, stamp)
                )
    _ingest(db, landing)
    return db
