"""DCGM's SM clock (field 100) and clock event / throttle reasons (field 112) in both formats.

The exporter slices are real (samples/failslow/, provenance in its README), the expectations
read off their lines by hand. No real ``dcgmi dmon`` output with ``SMCLK`` or ``DVCCTR`` was
found: the dmon lines below are written here, with the tags of DCGM's field table
(``dcgmlib/src/dcgm_fields.cpp``: field 100 ``SMCLK``, field 112 ``DVCCTR``) and dmon's printing
of integer fields as plain decimals (``dcgmi/DeviceMonitor.cpp``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources import dcgm

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

NOW = datetime(2026, 9, 1, tzinfo=UTC)
FAILSLOW = Path(__file__).parent / "samples" / "failslow"
SCRAPE = datetime(2024, 6, 25, 10, 0, tzinfo=UTC)  # from the landing names below


def _sample(name: str, landing: str) -> Parsed:
    data = (FAILSLOW / name).read_bytes()
    return dcgm.parse(data, source_file=f"/landing/dcgm/{landing}", now=NOW)


def test_schema_has_the_clock_columns() -> None:
    assert dcgm.SCHEMA["sm_clock_mhz"] == pl.Float64()
    assert dcgm.SCHEMA["clock_event_reasons"] == pl.Int64()


def test_exporter_throttle_reasons_gauge_is_the_bitmask() -> None:
    # two MIG instances of GPU 0 (lines 3 and 4), both 1 = 0x1 GPU idle; HELP/TYPE ignored
    result = _sample("dcgm_exporter_317_clock_throttle_reasons.prom", "n_20240625T100000Z.prom")
    assert result.rejects.height == 0
    assert result.n_ignored == 2
    assert result.rows.select(
        "line_no", "host", "ts", "gpu_index", "model_name", "clock_event_reasons", "sm_clock_mhz"
    ).rows() == [(3, "hldy-data-k8s-gpu-a30-node0110", SCRAPE, 0, "NVIDIA A30", 1, None)]


def test_exporter_sm_clock_is_read_per_gpu() -> None:
    # GPU 0's instances on lines 2-5, GPU 1's on 6-7, 1440 MHz on every one
    result = _sample("dcgm_exporter_317_sm_clock_mig.prom", "n_20240625T100000Z.prom")
    assert result.rejects.height == 0
    assert result.n_ignored == 1  # the TYPE line
    assert result.rows.select("line_no", "gpu_index", "uuid", "sm_clock_mhz").rows() == [
        (2, 0, "GPU-265c9814-6156-355b-e589-ff2064894f16", 1440.0),
        (6, 1, "GPU-2d20791a-b4a6-ba59-97f1-e95b99fe5b49", 1440.0),
    ]
    assert set(result.rows["host"]) == {"yg-data-k8s-gpu-a30-node-test-test0003"}
    assert result.rows["clock_event_reasons"].null_count() == 2


def test_exporter_window_counts_per_reason_are_not_read() -> None:
    # DCGM_FI_EXP_CLOCK_THROTTLE_REASONS_COUNT{throttle_reason=...}: counts over 300 s, not a
    # sample's bitmask (samples/failslow/README.md): both lines out of scope, no row
    result = _sample("dcgm_exporter_254_throttle_reasons_count.prom", "n_20240625T100000Z.prom")
    assert result.rows.height == 0
    assert result.rejects.height == 0
    assert result.n_ignored == 2


def test_renamed_field_and_a_bad_bitmask() -> None:
    text = (
        'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="3",Hostname="n1"} 136 1780272000000\n'
        'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="4",Hostname="n1"} 1.5 1780272000000\n'
        'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="5",Hostname="n1"} -8 1780272000000\n'
    )
    result = dcgm.parse(text.encode(), source_file="/landing/dcgm/n1.prom", now=NOW)
    # 136 = 0x8 HW slowdown | 0x80 HW power brake
    assert result.rows.select("gpu_index", "clock_event_reasons").rows() == [(3, 136)]
    assert result.rejects.select("line_no", "reason").rows() == [
        (2, "'1.5' is not a bitmask (a non-negative integer)"),
        (3, "'-8' is not a bitmask (a non-negative integer)"),
    ]


def test_dmon_smclk_and_dvcctr_columns() -> None:
    text = (
        "2026-06-01T00:00:00Z #Entity   SMCLK  DVCCTR                TMPTR\n"
        "2026-06-01T00:00:00Z ID\n"
        "2026-06-01T00:00:00Z GPU 0     1410   0                     41\n"
        "2026-06-01T00:00:00Z GPU 1     382    136                   80\n"
        "2026-06-01T00:00:00Z GPU 2     N/A    N/A                   40\n"
        "2026-06-01T00:00:00Z GPU 3     1410   -4                    41\n"
    )
    result = dcgm.parse(text.encode(), source_file="/landing/dcgm/n1.dmon", now=NOW)
    assert result.rows.select("gpu_index", "sm_clock_mhz", "clock_event_reasons").rows() == [
        (0, 1410.0, 0),
        (1, 382.0, 136),
        (2, None, None),
    ]
    assert result.rejects.select("line_no", "reason").rows() == [
        (6, "clock event reasons (DVCCTR) that are not a bitmask (a non-negative integer)")
    ]
