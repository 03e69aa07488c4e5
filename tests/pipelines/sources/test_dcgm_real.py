"""dcgm-exporter ``/metrics`` text as NVIDIA's README and a public cluster's README show it
(samples/dcgm/, provenance in its README). Expectations are read off the lines by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources.dcgm import SCHEMA, parse

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

NOW = datetime(2026, 9, 1, tzinfo=UTC)
SAMPLES = Path(__file__).parent / "samples" / "dcgm"
LKE = "lke_rtx4000ada_exporter_gpu_operator_v25.10.prom"
README = "dcgm_exporter_readme_2.3.5.prom"
SCRAPE = datetime(2025, 11, 4, 19, 0, tzinfo=UTC)  # from the landing name, see _sample


def _sample(name: str, landing: str, **options: object) -> Parsed:
    # dcgm-exporter prints no sample timestamps: the scrape time comes from the landing name
    data = (SAMPLES / name).read_bytes()
    return parse(data, source_file=f"/landing/dcgm/{landing}", now=NOW, **options)


def test_dcgm_real_exporter_4_scrape_is_one_row_for_its_one_gpu() -> None:
    # 12 metric families of 3 lines each (HELP, TYPE, one sample of GPU 0); PROF_GR_ENGINE_ACTIVE
    # (34-36) is outside METRICS, so GPU 0's row starts at line 3 (SM_CLOCK, 2310 MHz). The file
    # name's stem is "scrape": the host can only come from Hostname=.
    result = _sample(LKE, "scrape_20251104T190000Z.prom")
    assert result.rejects.height == 0
    assert result.n_ignored == 24 + 1  # HELP/TYPE comments, the out-of-scope sample
    assert result.rows.schema == pl.Schema(SCHEMA)
    row = result.rows.row(0, named=True)
    assert result.rows.height == 1
    assert {k: v for k, v in row.items() if v is not None} == {
        "source_file": "/landing/dcgm/scrape_20251104T190000Z.prom",
        "line_no": 3,
        "host": "lke529760-766837-0a634ab30000",
        "ts": SCRAPE,
        "gpu_index": 0,
        "uuid": "GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c",
        "pci_bus_id": "0000:00:02",  # pci_bus_id="00000000:00:02.0"
        "model_name": "NVIDIA RTX 4000 Ada Generation",
        "gpu_temp_c": 48.0,
        "memory_temp_c": 0.0,  # the board reports 0, not a blank sentinel
        "power_w": 40.979,
        "energy_mj": 455497156.0,
        "gpu_util_pct": 0.0,
        "pcie_replays": 0.0,
        "remapped_rows_correctable": 0.0,
        "remapped_rows_uncorrectable": 0.0,
        "row_remap_failure": 0.0,
        "xid_last": 0.0,  # the sample with err_code="0",err_msg="No Error" labels
        "sm_clock_mhz": 2310.0,
        "source_format": "prometheus",
    }
    # ECC, retired pages and NVLink CRC are not in this exporter's default counters
    assert row["ecc_dbe_volatile"] is None
    assert row["retired_dbe"] is None
    assert row["nvlink_crc_flit_errors"] is None


def test_dcgm_real_hostname_label_wins_over_the_host_option() -> None:
    result = _sample(LKE, "gpu0001_20251104T190000Z.prom", host="gpu0009")
    assert result.rows["host"].to_list() == ["lke529760-766837-0a634ab30000"]


def test_dcgm_real_scrape_without_a_time_anywhere_rejects_every_sample() -> None:
    # no sample timestamps and no _<YYYYmmddTHHMMSSZ> in the name: the 11 in-scope samples
    # (lines 3, 6, ..., 33) are rejects, the out-of-scope one is only counted
    result = _sample(LKE, "lke529760.prom")
    assert result.rows.height == 0
    assert result.rejects["line_no"].to_list() == list(range(3, 34, 3))
    assert set(result.rejects["reason"]) == {
        "sample without a timestamp, and the file name gives no scrape time: pass "
        "--time-from-mtime (the file's modification time) or name the file "
        "<host>_<YYYYmmddTHHMMSSZ>.prom"
    }
    assert result.n_ignored == 25


def test_dcgm_real_readme_quickstart_blank_sentinel_and_spaced_labels() -> None:
    # NVIDIA's README (2.3.5-2.6.5): labels written `{gpu="0", UUID="..."}` (a blank after the
    # comma), no Hostname label, and MEMORY_TEMP = 9223372036854775794, an int64 blank sentinel
    # (DCGM_INT64_NOT_SUPPORTED); SM_CLOCK (line 7, 139 MHz) starts GPU 0's row, MEM_CLOCK
    # (line 8) is out of scope.
    result = _sample(README, "gpu0001_20251104T190000Z.prom")
    assert result.rejects.height == 0
    assert result.n_ignored == 6 + 1
    assert result.rows.select(
        "line_no", "host", "ts", "gpu_index", "uuid", "pci_bus_id", "model_name", "memory_temp_c"
    ).rows() == [
        (7, "gpu0001", SCRAPE, 0, "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", None, None, None)
    ]
    assert result.rows["sm_clock_mhz"].to_list() == [139.0]
