"""DCGM files parsed together (``parse_many``, as the ingest reads a chunk) give each file the
rows, rejects and ignored lines it gets alone; expectations are read off the lines by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from polars.testing import assert_frame_equal

from pipelines.ingest.sources import dcgm
from tests.pipelines.sources.helpers import reject_reasons

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

NOW = datetime(2026, 9, 1, tzinfo=UTC)
T0 = datetime(2026, 6, 1, tzinfo=UTC)

# no newline after the last line; power 2^48 is DCGM's blank
DMON_A = (
    "2026-06-01T00:00:00Z #Entity   TMPTR   POWER     XIDER\n"
    "2026-06-01T00:00:00Z ID        C       W\n"
    "2026-06-01T00:00:00Z GPU 0     41      312.450   0\n"
    "2026-06-01T00:00:30Z GPU 1     N/A     281474976710656   79"
)
# a sample before this file's own header (file A's header must not reach it), another header
# with other tags in another order, the time in its space-and-comma form, a blank line, a line
# with one value too many
DMON_B = (
    "2026-06-01T00:00:00Z GPU 3     40      100.0\n"
    "2026-06-01T00:00:00Z #Entity   POWER   TMPTR\n"
    "2026-06-01 00:00:00,5Z GPU 2   200.5   45\n"
    "\n"
    "2026-06-01T00:01:00Z GPU 2     201     46    7\n"
)
HEADER_ONLY = "2026-06-01T00:00:00Z #Entity   TMPTR\n2026-06-01T00:00:00Z ID        C\n"
PROM = (
    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
    'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="gpu0009"} 52 1780272000000\n'
)
# the dmon text of tests/pipelines/sources/test_dcgm.py, with its hand-read rows and reasons
DMON_HOSTILE = """\
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

FILES: list[tuple[bytes, str, dict[str, object]]] = [
    (DMON_A.encode(), "/landing/dcgm/gpu0001.20260601.dmon", {"now": NOW}),
    (DMON_B.encode(), "/landing/dcgm/gpu0002.20260601.dmon", {"now": NOW, "host": "node-b"}),
    (b"", "/landing/dcgm/gpu0003.20260601.dmon", {"now": NOW}),
    (PROM.encode(), "/landing/dcgm/gpu0009.20260601.prom", {"now": NOW}),
    (HEADER_ONLY.encode(), "/landing/dcgm/gpu0004.20260601.dmon", {"now": NOW}),
    (DMON_HOSTILE.encode(), "/landing/dcgm/gpu0005.20260601.dmon", {"now": NOW}),
]


def _rows(parsed: Parsed) -> list[tuple[object, ...]]:
    return parsed.rows.select(
        "source_file", "line_no", "host", "ts", "gpu_index", "gpu_temp_c", "power_w", "xid_last"
    ).rows()


@pytest.fixture(params=[1, 1 << 30], ids=["each-file-alone", "all-joined"])
def results(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[Parsed]:
    monkeypatch.setattr(dcgm, "JOIN_BYTES", request.param)
    return dcgm.parse_many(FILES)


def test_each_file_keeps_its_own_rows_hosts_and_headers(results: list[Parsed]) -> None:
    a, b, empty, prom, header_only, hostile = results
    file_a, file_b = FILES[0][1], FILES[1][1]
    assert _rows(a) == [
        (file_a, 3, "gpu0001", T0, 0, 41.0, 312.45, 0.0),
        (file_a, 4, "gpu0001", T0 + timedelta(seconds=30), 1, None, None, 79.0),
    ]
    assert a.rejects.height == 0
    assert a.n_ignored == 2  # header, unit line
    # the header of B (POWER before TMPTR) applies from its line 2 on, in B only
    assert _rows(b) == [
        (file_b, 3, "node-b", T0 + timedelta(milliseconds=500), 2, 45.0, 200.5, None)
    ]
    assert reject_reasons(b) == {
        1: "dmon data line before any '#Entity' header",
        5: "expected 2 values after 'GPU <id>', found 3",
    }
    assert b.n_ignored == 2  # header, blank line
    assert empty.rows.height == 0
    assert empty.rejects["reason"].to_list() == ["empty file"]
    assert prom.rows.select("host", "gpu_index", "gpu_temp_c", "source_format").rows() == [
        ("gpu0009", 0, 52.0, "prometheus")
    ]
    assert (header_only.rows.height, header_only.rejects.height, header_only.n_ignored) == (0, 0, 2)
    assert hostile.rows.select(
        "line_no", "ts", "gpu_index", "gpu_temp_c", "power_w", "ecc_sbe_volatile", "xid_last"
    ).rows() == [
        (3, T0, 0, 41.0, 312.45, 0.0, 0.0),
        (4, T0, 1, 43.0, None, 2.0, 79.0),
        (5, T0 + timedelta(seconds=30), 0, 42.0, 300.1, 1.0, 0.0),
    ]
    assert reject_reasons(hostile) == {
        7: 'dmon line without a leading timestamp (collect with "dcgmi dmon ... | ts '
        "'%Y-%m-%dT%H:%M:%SZ'\")",
        8: "expected 6 values after 'GPU <id>', found 4",
        9: "malformed value (expected a number or N/A)",
        10: "not a 'GPU <id> <values>' line",
    }
    assert hostile.n_ignored == 3  # header, unit line, the GPU-I entity
    assert hostile.rejects["raw"][0] == "GPU 1     43     N/A      2      0      1      79"


def test_many_files_parse_as_each_file_alone(results: list[Parsed]) -> None:
    for (data, source_file, options), together in zip(FILES, results, strict=True):
        alone = dcgm.parse(data, source_file=source_file, **options)  # type: ignore[arg-type]
        assert_frame_equal(together.rows, alone.rows)
        assert_frame_equal(together.rejects, alone.rejects)
        assert together.n_ignored == alone.n_ignored


def test_an_option_parse_does_not_take_is_refused() -> None:
    with pytest.raises(TypeError, match="job"):
        dcgm.parse_many([(DMON_A.encode(), "gpu0001.dmon", {"job": "42"})])
