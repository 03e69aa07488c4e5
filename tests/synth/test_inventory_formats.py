"""nvidia-smi -q text dumps and serial-less boards in the synthetic fleet's inventory."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from pipelines import ingest, warehouse
from pipelines.ingest.sources.inventory import parse
from synth import SynthConfig, synthesize

SAMPLES = Path(__file__).parents[1] / "pipelines" / "sources" / "samples" / "inventory"
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


def _staged(landing: Path) -> tuple[pl.DataFrame, list[tuple[object, ...]]]:
    """Ingest the landing's nvidia_smi folder; return stg_inventory and the quarantine rows."""
    db = landing.parent / f"{landing.name}.duckdb"
    ingest.ingest(db, ingest.discover([landing / "nvidia_smi"]))
    with warehouse.connect(db) as con:
        staged = con.sql("select * from stg_inventory order by all").pl()
        quarantined = con.execute("select source_file, reason from raw_quarantine").fetchall()
    return staged, quarantined


def test_a_fleet_with_text_dumps_ingests_to_the_csv_fleets_inventory(tmp_path: Path) -> None:
    synthesize(tmp_path / "csv", SynthConfig(**BASE))
    synthesize(tmp_path / "na", SynthConfig(**BASE, smi_text_share=0.5, smi_no_serial_share=0.3))
    truth = json.loads((tmp_path / "na" / "ground_truth.json").read_text())
    absent = list(truth["inventory"]["no_serial_uuids"])
    from_csv, quarantined_csv = _staged(tmp_path / "csv")
    from_dumps, quarantined = _staged(tmp_path / "na")
    assert quarantined == quarantined_csv == []
    assert from_dumps.height == truth["expected_rows"]["raw_inventory"]
    no_serial = pl.col("uuid").is_in(absent)
    note = "no board serial reported (nvidia-smi [N/A]): unit_id is the GPU UUID"
    expected = from_csv.with_columns(
        pl.when(no_serial).then(None).otherwise(pl.col("serial")).alias("serial"),
        pl.when(no_serial).then(pl.col("uuid")).otherwise(pl.col("unit_id")).alias("unit_id"),
        pl.when(no_serial).then(pl.lit(note)).otherwise(pl.col("serial_note")).alias("serial_note"),
    ).sort(pl.all())
    assert from_dumps.filter(pl.col("serial").is_null()).height > 0
    assert_frame_equal(from_dumps.sort(pl.all()), expected)


def test_an_xml_dump_in_the_landing_loads_beside_csv_snapshots(tmp_path: Path) -> None:
    synthesize(tmp_path / "land", SynthConfig(**BASE))
    sample = SAMPLES / "hadoop_nvidia_smi_sample_output_p100_qx.xml"
    (tmp_path / "land" / "nvidia_smi" / "p100host__20170906T215251Z.xml").write_bytes(
        sample.read_bytes()
    )
    staged, quarantined = _staged(tmp_path / "land")
    assert quarantined == []
    assert staged.filter(pl.col("host") == "p100host").select(
        "gpu_index", "pci_bus_id", "unit_id"
    ).rows() == [(0, "0000:04:00", "0320717030197"), (1, "0000:82:00", "0320717031755")]
