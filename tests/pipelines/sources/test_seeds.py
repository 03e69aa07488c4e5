"""The seed CSVs: well formed, keys unique, every class and bucket valid, the contract's codes."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.sources.common import COMPONENT_CLASSES

SEEDS = Path(__file__).resolve().parents[3] / "sql" / "seeds"
CATEGORIES = {"hardware", "software", "infrastructure", "user", "planned", "unknown"}
UNIT_LEVELS = {"gpu", "node", "none"}
XID_SCHEMA = {
    "xid": pl.Int32,
    "name": pl.String,
    "category": pl.String,
    "component_class": pl.String,
    "resolution": pl.String,
    "stops_job": pl.Boolean,
    "is_failure": pl.Boolean,
}
CLASS_SCHEMA = {
    "component_class": pl.String,
    "category": pl.String,
    "unit_level": pl.String,
    "description": pl.String,
}
# Immediate-action buckets of NVIDIA's Xid catalog, including its named workflows
BUCKETS = {
    "RESTART_APP",
    "RESET_GPU",
    "RESTART_BM",
    "RESTART_VM",
    "CONTACT_SUPPORT",
    "CHECK_MECHANICALS",
    "IGNORE",
    "UPDATE_SWFW",
    "CHECK_UVM",
    "WORKFLOW_XID_45",
    "WORKFLOW_XID_48",
    "WORKFLOW_NVLINK_ERR",
    "WORKFLOW_NVLINK5_ERR",
    "XID_154",
}
REQUIRED_XIDS = {
    8,
    13,
    31,
    32,
    38,
    43,
    45,
    48,
    56,
    57,
    58,
    61,
    62,
    63,
    64,
    68,
    69,
    74,
    79,
    92,
    94,
    95,
    109,
    110,
    119,
    120,
    121,
    136,
    140,
    143,
    144,
    145,
    146,
    147,
    148,
    149,
    150,
    154,
}


def _read(name: str, schema: dict[str, type[pl.DataType]]) -> pl.DataFrame:
    return pl.read_csv(SEEDS / name, schema=schema)


@pytest.fixture(scope="module")
def xids() -> pl.DataFrame:
    return _read("dim_xid.csv", XID_SCHEMA)


@pytest.fixture(scope="module")
def classes() -> pl.DataFrame:
    return _read("dim_component_class.csv", CLASS_SCHEMA)


@pytest.mark.parametrize(
    ("name", "columns"),
    [("dim_xid.csv", list(XID_SCHEMA)), ("dim_component_class.csv", list(CLASS_SCHEMA))],
)
def test_seeds_are_well_formed_csv(name: str, columns: list[str]) -> None:
    with (SEEDS / name).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, strict=True))
    assert rows[0] == columns
    assert all(len(row) == len(columns) for row in rows[1:])
    assert all(value == value.strip() and value for row in rows for value in row)


def test_seeds_xid_keys_are_unique_and_complete(xids: pl.DataFrame) -> None:
    assert xids["xid"].is_unique().all()
    assert xids.null_count().sum_horizontal().item() == 0
    assert set(xids["xid"]) >= REQUIRED_XIDS
    assert xids["name"].str.contains(r"^[A-Z0-9_]+$").all()


def test_seeds_xid_values_are_valid(xids: pl.DataFrame) -> None:
    assert set(xids["category"]) <= CATEGORIES
    assert set(xids["component_class"]) <= set(COMPONENT_CLASSES)
    assert set(xids["resolution"]) <= BUCKETS
    failures = xids.filter("is_failure")
    assert failures["stops_job"].all()  # a failure always stops the job
    assert set(failures["category"]) == {"hardware"}


@pytest.mark.parametrize(
    ("xid", "component_class", "stops_job", "is_failure"),
    [
        (62, "gpu", True, True),
        (48, "gpu_memory", True, True),
        (95, "gpu_memory", True, True),
        (74, "nvlink", True, True),
        (79, "pcie", True, True),
        (119, "gsp", True, True),
        (63, "gpu_memory", False, False),
        (92, "gpu_memory", False, False),
        (13, "application", True, False),
        (31, "application", True, False),
        (43, "application", True, False),
    ],
)
def test_seeds_xid_codes_used_by_the_synthetic_fleet(
    xids: pl.DataFrame, xid: int, component_class: str, stops_job: bool, is_failure: bool
) -> None:
    row = xids.filter(pl.col("xid") == xid)
    assert row.select("component_class", "stops_job", "is_failure").row(0) == (
        component_class,
        stops_job,
        is_failure,
    )


@pytest.mark.parametrize(
    ("xid", "resolution"),
    [
        (79, "RESTART_BM"),
        (62, "RESET_GPU"),
        (13, "RESTART_APP"),
        (63, "IGNORE"),
        (54, "CHECK_MECHANICALS"),
        (151, "RESTART_VM"),
        (48, "WORKFLOW_XID_48"),
    ],
)
def test_seeds_xid_resolution_is_the_catalog_bucket(
    xids: pl.DataFrame, xid: int, resolution: str
) -> None:
    assert xids.filter(pl.col("xid") == xid)["resolution"].item() == resolution


def test_seeds_component_classes_are_the_taxonomy(classes: pl.DataFrame) -> None:
    assert classes["component_class"].to_list() == list(COMPONENT_CLASSES)
    assert set(classes["category"]) <= CATEGORIES
    assert set(classes["unit_level"]) <= UNIT_LEVELS
    levels = dict(zip(classes["component_class"], classes["unit_level"], strict=True))
    for name in ("gpu", "gpu_memory", "gpu_sram", "gsp", "nvlink", "pcie"):
        assert levels[name] == "gpu"
    for name in (
        "nic",
        "network",
        "host_cpu",
        "host_memory",
        "storage",
        "power",
        "cooling",
        "chassis",
    ):
        assert levels[name] == "node"
    for name in (
        "driver",
        "nccl",
        "application",
        "maintenance",
        "software",
        "human_error",
        "facilities",
        "unknown",
    ):
        assert levels[name] == "none"


def test_seeds_every_xid_class_has_a_hardware_level_when_it_fails(
    xids: pl.DataFrame, classes: pl.DataFrame
) -> None:
    joined = xids.join(classes, on="component_class", how="left", suffix="_class")
    assert joined["unit_level"].null_count() == 0
    assert set(joined.filter("is_failure")["unit_level"]) == {"gpu"}


PLANNED_SCHEMA = {
    "pattern": pl.String,
    "work_class": pl.String,
    "is_planned": pl.Boolean,
    "description": pl.String,
}


def test_seeds_planned_reasons_are_valid_patterns() -> None:
    import duckdb

    with (SEEDS / "dim_planned_reason.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, strict=True))
    assert rows[0] == list(PLANNED_SCHEMA)
    assert all(len(row) == len(PLANNED_SCHEMA) for row in rows[1:])
    reasons = _read("dim_planned_reason.csv", PLANNED_SCHEMA)
    assert reasons["pattern"].is_unique().all()
    assert reasons["is_planned"].null_count() == 0
    con = duckdb.connect()
    for pattern in reasons["pattern"]:  # every pattern compiles as DuckDB (RE2) reads it
        con.execute("select regexp_matches('x', '(?i)' || $p)", {"p": pattern}).fetchone()
