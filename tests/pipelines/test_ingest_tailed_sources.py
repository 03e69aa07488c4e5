"""Two tailed sources in one ingest: each file is parsed by its own source's parser.

Kernel logs and training logs are both read as streams; their new lines are parsed in chunks.
A chunk that mixed a kernel log and a training log once went through the first file's parser,
so the training log's every line was "ignored" and nothing loaded.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from pipelines import ingest

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples"


def _loaded(db: Path, landing: Path) -> dict[str, int]:
    counts = ingest.ingest(db, ingest.discover([landing]))
    out: dict[str, int] = {}
    for c in counts:
        out[c.source] = out.get(c.source, 0) + c.n_loaded
    return out


def test_kernel_and_training_logs_in_one_ingest_load_like_each_alone(tmp_path: Path) -> None:
    kernel_log = sorted((SAMPLES / "landing" / "kernel").iterdir())[0]
    training_log = SAMPLES / "training" / "slurm-4242.out"
    alone: dict[str, int] = {}
    for source, path in (("kernel", kernel_log), ("training", training_log)):
        landing = tmp_path / f"only-{source}"
        (landing / source).mkdir(parents=True)
        shutil.copy(path, landing / source / path.name)
        alone |= _loaded(tmp_path / f"only-{source}.duckdb", landing)
    both = tmp_path / "both"
    for source, path in (("kernel", kernel_log), ("training", training_log)):
        (both / source).mkdir(parents=True)
        shutil.copy(path, both / source / path.name)
    together = _loaded(tmp_path / "both.duckdb", both)
    assert alone["training"] > 0
    assert alone["kernel"] > 0
    assert together == alone
    con = duckdb.connect(str(tmp_path / "both.duckdb"), read_only=True)
    try:
        (n,) = con.execute("select count(*) from raw_training_events").fetchone() or (0,)
    finally:
        con.close()
    assert n == alone["training"]
