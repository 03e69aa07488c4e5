"""GPUs without a board serial: the UUID is the unit id, the serial stays null, a note says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl

from pipelines import warehouse

W0 = datetime(2026, 6, 1, tzinfo=UTC)
W1 = W0 + timedelta(days=30)


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, object]]) -> None:
    frame = pl.DataFrame(rows).with_columns(
        source_file=pl.lit("hand.txt"), line_no=pl.int_range(1, len(rows) + 1)
    )
    con.register("incoming", frame.to_arrow())
    con.execute(f"insert into {table} by name select * from incoming")
    con.unregister("incoming")


def test_serial_less_gpu_is_named_by_its_uuid() -> None:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    _insert(
        con,
        "raw_fleet",
        [
            {
                "node": "ws1",
                "rack": "r1",
                "cluster": "c",
                "batch": "b1",
                "installed_ts": W0 - timedelta(days=10),
                "removed_ts": None,
            }
        ],
    )
    gpus = [(0, "0000:18:00", "1650124014249", "GPU-a"), (1, "0000:2a:00", None, "GPU-b")]
    _insert(
        con,
        "raw_inventory",
        [
            {
                "host": "ws1",
                "snapshot_ts": ts,
                "gpu_index": index,
                "pci_bus_id": bus,
                "serial": serial,
                "uuid": uuid,
                "gpu_name": "NVIDIA GeForce GTX 1650",
            }
            for ts in (W0, W1)
            for index, bus, serial, uuid in gpus
        ],
    )
    warehouse.create_views(con)
    staged = con.execute(
        "select distinct slot, serial, unit_id, serial_note from stg_inventory order by slot"
    ).fetchall()
    assert staged == [
        ("gpu0", "1650124014249", "1650124014249", None),
        (
            "gpu1",
            None,
            "GPU-b",
            "no board serial reported (nvidia-smi [N/A]): unit_id is the GPU UUID",
        ),
    ]
    lives = con.execute(
        "select distinct slot, serial from int_replacement_lives "
        "where unit_level = 'gpu' order by slot"
    ).fetchall()
    assert lives == [("gpu0", "1650124014249"), ("gpu1", "GPU-b")]
