"""DCGM: dcgm-exporter scrapes and ``dcgmi dmon`` text, hostile lines, and per-interval counter
deltas in int_gpu_health (a reset never gives a negative delta; the Xid gauge is no failure)."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl
import pytest

from pipelines import warehouse
from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.ingest.sources.dcgm import SCHEMA, parse
from tests.pipelines.sources.helpers import reject_reasons

NOW = datetime(2026, 9, 1, tzinfo=UTC)
T0 = datetime(2026, 6, 1, tzinfo=UTC)
PROM_FILE = "/landing/dcgm/gpu0001.20260601.prom"
DMON_FILE = "/landing/dcgm/gpu0002.20260601.dmon"
LABELS = (
    'gpu="{g}",UUID="GPU-{uuid}",pci_bus_id="00000000:{bus}:00.0",device="nvidia{g}",'
    'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu0001.cluster.local",'
    'DCGM_FI_DRIVER_VERSION="535.129.03"'
)
GPUS = ((0, "18", "604ac76c-d9cf-fef3-62e9-d92044ab6e52"), (1, "2A", "b300aab0-d3a5-f45d-751a"))


def _ms(ts: datetime) -> int:
    return int(ts.timestamp() * 1000)


def _scrape(ts: datetime, metrics: dict[str, list[float | int | str]]) -> str:
    """One dcgm-exporter exposition with a timestamp on every sample."""
    out = []
    for name, values in metrics.items():
        kind = "gauge" if name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS") else "counter"
        out += [f"# HELP {name} {name.lower()}.", f"# TYPE {name} {kind}"]
        for (g, bus, uuid), value in zip(GPUS, values, strict=True):
            labels = LABELS.format(g=g, bus=bus, uuid=uuid)
            out.append(f"{name}{{{labels}}} {value} {_ms(ts)}")
    return "\n".join(out) + "\n"


def _parse(text: str, source_file: str = PROM_FILE) -> Parsed:
    return parse(text.encode(), source_file=source_file, now=NOW)


def test_dcgm_exporter_scrape_becomes_one_row_per_gpu() -> None:
    text = _scrape(
        T0,
        {
            "DCGM_FI_DEV_GPU_TEMP": [41, 43],
            "DCGM_FI_DEV_POWER_USAGE": [312.45, 88.125],
            "DCGM_FI_DEV_MEMORY_TEMP": ["9223372036854775794", 48],  # DCGM's "blank"
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": [3, 0],
            "DCGM_FI_DEV_XID_ERRORS": [79, 0],
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": [0.51, 0.0],  # not kept
        },
    )
    result = _parse(text)
    assert result.rejects.height == 0
    assert result.rows.schema == pl.Schema(SCHEMA)
    assert result.rows.select(
        "line_no",
        "host",
        "ts",
        "gpu_index",
        "uuid",
        "pci_bus_id",
        "gpu_temp_c",
        "power_w",
        "memory_temp_c",
        "ecc_sbe_volatile",
        "xid_last",
        "source_format",
    ).rows() == [
        (
            3,
            "gpu0001",
            T0,
            0,
            "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",
            "0000:18:00",
            41.0,
            312.45,
            None,
            3.0,
            79.0,
            "prometheus",
        ),
        (
            4,
            "gpu0001",
            T0,
            1,
            "GPU-b300aab0-d3a5-f45d-751a",
            "0000:2a:00",
            43.0,
            88.125,
            48.0,
            0.0,
            0.0,
            "prometheus",
        ),
    ]
    assert result.rows["model_name"].to_list() == ["NVIDIA H100 80GB HBM3"] * 2
    # 12 HELP/TYPE lines and the two samples of a metric the table does not keep
    assert result.n_ignored == 14


def test_dcgm_exporter_scrape_without_timestamps_takes_the_file_time() -> None:
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="3",UUID="GPU-1"} 39\n'
    result = _parse(text, "/landing/dcgm/gpu0009_20260601T003000Z.prom")
    assert result.rows.select("host", "ts", "gpu_index").row(0) == (
        "gpu0009",
        datetime(2026, 6, 1, 0, 30, tzinfo=UTC),
        3,
    )
    assert _parse(text, PROM_FILE).rejects["reason"][0].startswith("sample without a timestamp")


def test_dcgm_exporter_labels_with_braces_and_non_ascii_text() -> None:
    ms = _ms(T0)
    text = (
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-1",modelName="H100 {{SXM}} – 80GB"}} 41 {ms}\n'
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="0",UUID="GPU-1",modelName="H100 {{SXM}} – 80GB"}} '
        f"+Inf {ms}\n"
    )
    result = _parse(text)
    assert result.rejects.height == 0
    assert result.rows.select("model_name", "gpu_temp_c", "power_w").row(0) == (
        "H100 {SXM} – 80GB",
        41.0,
        None,  # +Inf is past DCGM's blank threshold
    )


def test_dcgm_exporter_hostile_lines_are_rejected_with_a_reason() -> None:
    ms = _ms(T0)
    text = textwrap.dedent(
        f"""\
        DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-1",Hostname="gpu0001"}} 41 {ms}
        DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-1
        DCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-2",UUID="GPU-3"}} 41 {ms}
        DCGM_FI_DEV_GPU_TEMP{{gpu="1"}} hot {ms}
        DCGM_FI_DEV_GPU_TEMP{{gpu="1"}} 41 17802720O0000
        DCGM_FI_DEV_GPU_TEMP{{UUID="GPU-2"}} 41 {ms}
        DCGM_FI_DEV_GPU_TEMP{{gpu="1"}} 41 {_ms(datetime(2099, 1, 1, tzinfo=UTC))}
        DCGM_FI_DEV_GPU_TEMP{{gpu="1"}} 41 {ms} extra
        """
    )
    result = _parse(text)
    assert result.rejects.schema == pl.Schema(REJECT_SCHEMA)
    reasons = reject_reasons(result)
    assert reasons[2].startswith("invalid sample line")
    assert reasons[3].startswith("invalid sample line")  # prometheus_client: duplicate label
    assert reasons[4] == "malformed value 'hot'"
    assert reasons[5] == "malformed timestamp '17802720O0000'"
    assert reasons[6].startswith("sample without a numeric gpu label")
    assert reasons[7].startswith("timestamp in the future: 2099-01-01")
    assert reasons[8].startswith("expected a value and an optional timestamp")
    assert result.rows["line_no"].to_list() == [1]


DMON = """\
2026-06-01T00:00:00Z #Entity   TMPTR   POWER     ESVTL  EDVTL  RPSBE  XIDER
2026-06-01T00:00:00Z ID        C       W
2026-06-01T00:00:00Z GPU 0     41      312.450   0      0      0      0
2026-06-01T00:00:00Z GPU 1     43      N/A       2      0      1      79
2026-06-01T00:00:30Z GPU 0     42      300.100   1      0      0      0
2026-06-01T00:00:30Z GPU-I 1   43      N/A       2      0      1      79
GPU 1     43     N/A      2      0      1      79
2026-06-01T00:00:30Z GPU 1     43      N/A       2      0
2026-06-01T00:00:30Z GPU 1     43      hot       2      0      1      79
2026-06-01T00:01:00Z Error: unable to connect to host engine
"""


def test_dmon_lines_become_rows_and_hostile_ones_rejects() -> None:
    result = _parse(DMON, DMON_FILE)
    assert result.rows.select(
        "line_no",
        "host",
        "ts",
        "gpu_index",
        "gpu_temp_c",
        "power_w",
        "ecc_sbe_volatile",
        "retired_sbe",
        "xid_last",
        "source_format",
    ).rows() == [
        (3, "gpu0002", T0, 0, 41.0, 312.45, 0.0, 0.0, 0.0, "dmon"),
        (4, "gpu0002", T0, 1, 43.0, None, 2.0, 1.0, 79.0, "dmon"),
        (5, "gpu0002", T0 + timedelta(seconds=30), 0, 42.0, 300.1, 1.0, 0.0, 0.0, "dmon"),
    ]
    reasons = reject_reasons(result)
    assert reasons == {
        7: 'dmon line without a leading timestamp (collect with "dcgmi dmon ... | ts '
        "'%Y-%m-%dT%H:%M:%SZ'\")",
        8: "expected 6 values after 'GPU <id>', found 4",
        9: "malformed value (expected a number or N/A)",
        10: "not a 'GPU <id> <values>' line",
    }
    assert result.n_ignored == 3  # header, unit line, the GPU-I entity


def test_dcgm_empty_file_is_one_reject() -> None:
    assert parse(b"", source_file=PROM_FILE).rejects["reason"].to_list() == ["empty file"]


@pytest.mark.parametrize(
    "text",
    [
        "2026-06-01T00:00:00Z #Entity   TMPTR  POWER\n2026-06-01T00:00:00Z ID        C      W\n",
        "#Entity   TMPTR  POWER\nID        C      W\n",
    ],
    ids=["timestamped", "bare"],
)
def test_dmon_file_with_only_its_header_is_no_rows_and_no_rejects(text: str) -> None:
    # dmon stopped (or was killed) before its first sample: the two header lines are all there is
    result = _parse(text, DMON_FILE)
    assert result.rows.height == 0
    assert result.rows.schema == pl.Schema(SCHEMA)
    assert result.rejects.height == 0
    assert result.rejects.schema == REJECT_SCHEMA
    assert result.n_ignored == 2


@pytest.fixture(scope="module")
def health() -> pl.DataFrame:
    """int_gpu_health over three hours of 20-minute scrapes of GPU 0 with two resets and a
    GPU swap, and GPU 1 whose Xid gauge reads 79 the whole time."""
    sbe = [5, 7, 7, 9, 2, 3, 3, 4, 1]  # reboot before 2 (+2) and before 1 (+1)
    energy = [9_000, 12_000, 15_000, 18_000, 1_000, 4_000, 7_000, 10_000, 500]
    uuid = ["GPU-a"] * 7 + ["GPU-b"] * 2  # the GPU was replaced after the 7th scrape
    text = ""
    for k in range(9):
        ts = T0 + timedelta(minutes=20 * k)
        for name, values in (
            ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", (sbe[k], 0)),
            ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", (energy[k], 100 * k)),
            ("DCGM_FI_DEV_XID_ERRORS", (0, 79)),
            ("DCGM_FI_DEV_GPU_TEMP", (40 + k, 50)),
        ):
            for g, value in enumerate(values):
                u = uuid[k] if g == 0 else "GPU-c"
                text += f'{name}{{gpu="{g}",UUID="{u}",Hostname="gpu0001"}} {value} {_ms(ts)}\n'
    rows = _parse(text).rows
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    con.register("incoming", rows.to_arrow())
    con.execute("insert into raw_dcgm_samples by name select * from incoming")
    warehouse.create_views(con)
    return con.sql("select * from int_gpu_health order by gpu_index, uuid, hour_ts").pl()


def test_dcgm_counter_resets_never_give_negative_deltas(health: pl.DataFrame) -> None:
    gpu0 = health.filter(pl.col("gpu_index") == 0)
    # GPU-a: (first) +2 +0 | +2, reset: +2 (its new value), +1 | +0; GPU-b starts a new
    # series (no delta for its first sample), then resets: +1
    assert gpu0.select("uuid", "hour_ts", "n_samples", "ecc_sbe_volatile_delta").rows() == [
        ("GPU-a", T0, 3, 2.0),
        ("GPU-a", T0 + timedelta(hours=1), 3, 5.0),
        ("GPU-a", T0 + timedelta(hours=2), 1, 0.0),
        ("GPU-b", T0 + timedelta(hours=2), 2, 1.0),
    ]
    assert gpu0["n_counter_resets"].to_list() == [0, 1, 0, 1]
    # energy: 3000 mJ per step; a reset counts its new value (1000, then 500)
    assert gpu0["energy_kwh"].to_list() == pytest.approx(
        [6_000 / 3.6e9, 7_000 / 3.6e9, 3_000 / 3.6e9, 500 / 3.6e9]
    )
    lowest = health.select(pl.col("^.*_delta$"), "energy_kwh").min().row(0)
    assert all(v is None or v >= 0 for v in lowest)


def test_dcgm_xid_gauge_is_a_feature_not_a_failure(health: pl.DataFrame) -> None:
    gpu1 = health.filter(pl.col("gpu_index") == 1)
    assert gpu1["xid_last_max"].to_list() == [79.0, 79.0, 79.0]
    assert gpu1["xid_last_changes"].to_list() == [0, 0, 0]  # the same value is no new Xid
    assert gpu1["gpu_temp_max_c"].to_list() == [50.0] * 3
