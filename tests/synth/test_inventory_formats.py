"""nvidia-smi -q text dumps and serial-less boards in the synthetic fleet's inventory."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import polars as pl
from polars.testing import assert_frame_equal

from pipelines.ingest.sources.inventory import parse
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from pathlib import Path

NOW = datetime(2030, 1, 1, tzinfo=UTC)
BASE = {"nodes": 6, "days": 20, "seed": 3, "k8s_share": 0.0, "node_events": False}


def _inventory(folder: Path) -> pl.DataFrame:
    frames = [
        parse(path.read_bytes(), source_file=str(path), now=NOW).rows
        for path in sorted((folder / "nvidia_smi").iterdir())
    ]
    return pl.concat(frames).drop("source_file", "line_no").sort("host", "snapshot_ts", "gpu_index")


def test_text_dumps_ingest_to_the_same_inventory_as_the_csv(tmp_path: Path) -> None:
    synthesize(tmp_path / "csv", SynthConfig(**BASE))
    synthesize(tmp_path / "text", SynthConfig(**BASE, smi_text_share=0.5))
    names = {p.suffix for p in (tmp_path / "text" / "nvidia_smi").iterdir()}
    truth = json.loads((tmp_path / "text" / "ground_truth.json").read_text())
    assert names == {".csv", ".txt"}
    assert 0 < len(truth["inventory"]["smi_text_hosts"]) < BASE["nodes"]
    assert truth["inventory"]["no_serial_uuids"] == []
    assert_frame_equal(_inventory(tmp_path / "text"), _inventory(tmp_path / "csv"))
    lines = sum(p.read_bytes().count(b"\n") for p in (tmp_path / "text" / "nvidia_smi").iterdir())
    assert truth["n_lines"]["nvidia_smi"] == lines
    for source in ("slurm", "kernel", "fleet", "repairs"):
        for path in sorted((tmp_path / "csv" / source).iterdir()):
            assert (tmp_path / "text" / source / path.name).read_bytes() == path.read_bytes()


def test_serial_less_boards_print_na_and_load_with_their_uuid(tmp_path: Path) -> None:
    synthesize(tmp_path / "csv", SynthConfig(**BASE))
    synthesize(tmp_path / "na", SynthConfig(**BASE, smi_text_share=0.5, smi_no_serial_share=0.3))
    truth = json.loads((tmp_path / "na" / "ground_truth.json").read_text())
    with_serial, without = _inventory(tmp_path / "csv"), _inventory(tmp_path / "na")
    absent = set(truth["inventory"]["no_serial_uuids"])
    assert absent
    assert set(without.filter(pl.col("serial").is_null())["uuid"]) <= absent
    assert without.filter(pl.col("serial").is_null()).height > 0
    expected = with_serial.with_columns(
        pl.when(pl.col("uuid").is_in(list(absent)))
        .then(None)
        .otherwise(pl.col("serial"))
        .alias("serial")
    )
    assert_frame_equal(without, expected)
    assert truth["expected_rows"]["raw_inventory"] == without.height
