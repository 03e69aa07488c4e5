"""Kernel-log Xid lines: the five styles, the two real captures, and hostile lines as rejects."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.ingest.sources.xid import SCHEMA, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons

REAL = Path(__file__).resolve().parents[3].parent / "shared" / "real" / "nvidia-xid-dmesg-samples"
NOW = datetime(2026, 9, 1, tzinfo=UTC)
SOURCE = "/landing/kernel/gpu0007.log"


def _parse(
    text: str | bytes, *, source_file: str = SOURCE, file_mtime: datetime | None = None
) -> Parsed:
    data = raw_bytes(text) if isinstance(text, str) else text
    return parse(data, source_file=source_file, file_mtime=file_mtime, now=NOW)


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _frame(rows: list[tuple[object, ...]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def test_xid_dmesg_t_lines_take_the_host_from_the_file_name() -> None:
    result = _parse(
        """
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.
        [Mon Jun  1 00:00:01 2026] NVRM: GPU at PCI:0000:18:00: GPU-509665ad-b600-ac93-3616-d754b23d636d
        [Wed Jun 17 13:45:09 2026] NVRM: Xid (PCI:0000:3b:00): 48, pid=2, name=pt_main_thread, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.
        """  # noqa: E501
    )
    expected = _frame(
        [
            (
                SOURCE,
                1,
                "gpu0007",
                _ts("2026-06-01T00:00:00Z"),
                "0000:18:00",
                79,
                1234,
                "python",
                "GPU has fallen off the bus.",
                "dmesg_t",
            ),
            (
                SOURCE,
                3,
                "gpu0007",
                _ts("2026-06-17T13:45:09Z"),
                "0000:3b:00",
                48,
                2,
                "pt_main_thread",
                "An uncorrectable double bit error (DBE) has been detected on GPU "
                "in the framebuffer at partition 6, subpartition 0.",
                "dmesg_t",
            ),
        ]
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_xid_journal_iso_lines_carry_host_and_offset() -> None:
    result = _parse(
        """
        2026-06-01T02:00:00+0200 gpu0001 kernel: NVRM: Xid (PCI:0000:18:00): 74, pid=77, name=nccl, NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)
        2026-06-01T00:00:05+0000 gpu0001 systemd[1]: Started Session 5 of User root.
        """  # noqa: E501
    )
    expected = _frame(
        [
            (
                SOURCE,
                1,
                "gpu0001",
                _ts("2026-06-01T00:00:00Z"),
                "0000:18:00",
                74,
                77,
                "nccl",
                "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
                "journal_iso",
            ),
        ]
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=1)


def test_xid_rfc3339_lines_keep_fractions() -> None:
    result = _parse(
        """
        2026-06-01T00:00:00.250000+00:00 gpu0002 kernel: NVRM: Xid (PCI:0000:9B:00): 62, pid='<unknown>', name=<unknown>, 0000abcd 00000000 00000000
        """  # noqa: E501
    )
    expected = _frame(
        [
            (
                SOURCE,
                1,
                "gpu0002",
                _ts("2026-06-01T00:00:00.25Z"),
                "0000:9b:00",
                62,
                None,
                None,
                "0000abcd 00000000 00000000",
                "rfc3339",
            ),
        ]
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)


def test_xid_dmesg_iso_lines_with_and_without_facility() -> None:
    result = _parse(
        """
        kern  :warn  : 2026-06-01T00:00:00,000001+00:00 NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x546fb0=0x11f000e
        2026-06-01T00:00:00,500000+00:00 NVRM: Xid (PCI:0000:18:00): 43, pid=2924364, name=pt_main_thread, Ch 00000008
        kern  :info  : 2026-06-01T00:00:01,000000+00:00 nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context
        """  # noqa: E501
    )
    expected = _frame(
        [
            (
                SOURCE,
                1,
                "gpu0007",
                _ts("2026-06-01T00:00:00.000001Z"),
                "0000:18:00",
                13,
                None,
                None,
                "Graphics Exception: ESR 0x546fb0=0x11f000e",
                "dmesg_iso",
            ),
            (
                SOURCE,
                2,
                "gpu0007",
                _ts("2026-06-01T00:00:00.5Z"),
                "0000:18:00",
                43,
                2924364,
                "pt_main_thread",
                "Ch 00000008",
                "dmesg_iso",
            ),
        ]
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=1)


def test_xid_syslog_lines_take_the_year_from_the_file_mtime() -> None:
    result = _parse(
        """
        Dec 31 23:59:00 gpu0003 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:18:00): 92, pid=1, name=x, High single-bit ECC error rate
        Jan  1 00:00:10 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.
        Jan  3 12:00:00 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
        """,  # noqa: E501
        file_mtime=datetime(2026, 1, 2, tzinfo=UTC),
    )
    expected = _frame(
        [
            (
                SOURCE,
                1,
                "gpu0003",
                _ts("2025-12-31T23:59:00Z"),
                "0000:18:00",
                92,
                1,
                "x",
                "High single-bit ECC error rate",
                "syslog",
            ),
            (
                SOURCE,
                2,
                "gpu0003",
                _ts("2026-01-01T00:00:10Z"),
                "0000:18:00",
                63,
                1896,
                None,
                "Row Remapper: New row marked for remapping, reset gpu to activate.",
                "syslog",
            ),
            # more than a day after the mtime: the year before
            (
                SOURCE,
                3,
                "gpu0003",
                _ts("2025-01-03T12:00:00Z"),
                "0000:18:00",
                79,
                None,
                None,
                "GPU has fallen off the bus.",
                "syslog",
            ),
        ]
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=3, n_ignored=0)


def test_xid_syslog_year_defaults_to_now_without_mtime() -> None:
    result = _parse(
        """
        Aug 31 10:00:00 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
        Sep  5 10:00:00 gpu0003 kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
        """
    )
    assert result.rows["ts"].to_list() == [
        _ts("2026-08-31T10:00:00Z"),
        _ts("2025-09-05T10:00:00Z"),
    ]
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=0)


def test_xid_pci_ids_are_normalised() -> None:
    result = _parse(
        """
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:3B:00): 79, GPU has fallen off the bus.
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (0000:03:00): 14, Channel 00000001
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:00000000:cb:00.0): 31, pid=9, name=a.out, Ch 0000001
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (0001:AB:01.1): 31, x
        """  # noqa: E501
    )
    assert result.rows["pci_bus_id"].to_list() == [
        "0000:3b:00",
        "0000:03:00",
        "0000:cb:00",
        "0001:ab:01",
    ]
    assert_accounted(result, SCHEMA, n_in_scope=4, n_ignored=0)


def test_xid_host_falls_back_to_the_file_stem() -> None:
    result = _parse(
        "[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n",
        source_file="/landing/kernel/gpu0042.kern.log.1",
    )
    assert result.rows["host"].to_list() == ["gpu0042"]
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)


def test_xid_hostile_lines_are_rejected_with_a_reason() -> None:
    good = "[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off the bus."
    data = (
        raw_bytes(
            f"""
        {good}
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:0
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 7x, pid=1
        [Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79
        [Mon Jun 31 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
        [Mon Jun  1 25:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
        [Mon Sep  7 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
        [ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.
        [Mon Jun  1 00:00:00 2026] some other driver: nothing to see
        """
        )
        + good.replace("name=x", "name=\xff\xfe").encode("latin-1")
        + b"\n"
    )
    result = _parse(data)
    assert result.rows["line_no"].to_list() == [1]
    assert reject_reasons(result) == {
        2: "malformed or truncated PCI bus id",
        3: "malformed or truncated Xid code",
        4: "malformed or truncated Xid code",
        5: "unparseable timestamp 'Jun 31 00:00:00 2026'",
        6: "unparseable timestamp 'Jun  1 25:00:00 2026'",
        7: "timestamp in the future: Sep  7 00:00:00 2026",
        8: "time '1234.567890' is seconds since boot and the boot time is unknown: give "
        "--boot-time (RELIA_BOOT_TIME) or collect with dmesg -T / journalctl",
        10: "line is not valid UTF-8",
    }
    assert (
        result.rejects.filter(pl.col("line_no") == 10)["raw"]
        .item()
        .endswith("name=\\xff\\xfe, Off the bus.")
    )
    assert_accounted(result, SCHEMA, n_in_scope=9, n_ignored=1)


def test_xid_mixed_styles_in_one_file_are_all_read() -> None:
    xid_line = "[Mon Jun  1 00:00:{:02d} 2026] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off."
    lines = [xid_line.format(i % 60) for i in range(300)]
    # a style the sampled lines do not show, and noise
    lines[1] = "2026-06-01T00:00:00+0000 gpu0001 kernel: NVRM: Xid (PCI:0000:18:00): 48, DBE"
    lines[2] = "Jun  1 00:00:00 gpu0001 kernel: NVRM: Xid (PCI:0000:18:00): 63, pid=1, x"
    lines[4] = "[Mon Jun  1 00:00:00 2026] eth0: link up"
    result = _parse("\n".join(lines).encode())
    formats = result.rows.group_by("log_format").len().sort("log_format")
    assert formats.rows() == [("dmesg_t", 297), ("journal_iso", 1), ("syslog", 1)]
    assert result.rows.filter(pl.col("log_format") != "dmesg_t")["host"].to_list() == [
        "gpu0001",
        "gpu0001",
    ]
    assert_accounted(result, SCHEMA, n_in_scope=299, n_ignored=1)


def test_xid_empty_file_is_one_reject() -> None:
    result = _parse(b"")
    expected = pl.DataFrame([(SOURCE, 0, "", "empty file")], schema=REJECT_SCHEMA, orient="row")
    assert_frame_equal(result.rejects, expected)
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)


def test_xid_file_without_xid_lines_is_all_ignored() -> None:
    result = _parse(b"\n[Mon Jun  1 00:00:00 2026] eth0: link up\n\n")
    assert_accounted(result, SCHEMA, n_in_scope=0, n_ignored=3)


def test_xid_real_dmesg_ctime_capture_with_gsp_dump() -> None:
    path = REAL / "dmesg-with-xid-119.log"
    result = parse(path.read_bytes(), source_file=str(path), now=NOW)
    message = "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function "
    expected = _frame(
        [
            (
                str(path),
                3,
                "dmesg-with-xid-119",
                _ts("2025-02-23T16:24:18Z"),
                "0000:9b:00",
                119,
                2024380,
                "nvidia-smi",
                message + "103 (GSP_RM_ALLOC) (0x2081 0x4).",
                "dmesg_t",
            ),
            (
                str(path),
                38,
                "dmesg-with-xid-119",
                _ts("2025-02-23T16:24:24Z"),
                "0000:9b:00",
                119,
                2024380,
                "nvidia-smi",
                message + "10 (FREE) (0xa55a0210 0x0).",
                "dmesg_t",
            ),
            (
                str(path),
                40,
                "dmesg-with-xid-119",
                _ts("2025-02-23T16:24:30Z"),
                "0000:9b:00",
                119,
                2024380,
                "nvidia-smi",
                message + "10 (FREE) (0xa55a0090 0x0).",
                "dmesg_t",
            ),
            (
                str(path),
                42,
                "dmesg-with-xid-119",
                _ts("2025-02-23T16:27:12Z"),
                "0000:9b:00",
                119,
                1263500,
                "cache_mgr_main",
                message + "76 (GSP_RM_CONTROL) (0x20801813 0x4c).",
                "dmesg_t",
            ),
            (
                str(path),
                43,
                "dmesg-with-xid-119",
                _ts("2025-02-23T16:30:13Z"),
                "0000:9b:00",
                119,
                1240590,
                "gpud",
                message + "76 (GSP_RM_CONTROL) (0x20803032 0x58c).",
                "dmesg_t",
            ),
        ]
    )
    assert_frame_equal(result.rows, expected)
    assert_accounted(result, SCHEMA, n_in_scope=5, n_ignored=38)


def test_xid_real_dmesg_decode_iso_capture() -> None:
    path = REAL / "dmesg.decode.iso.log"
    # dmesg prints no host and "dmesg.decode.iso.log" names a kind of log, not a host (#12):
    # the host comes from --host
    result = parse(path.read_bytes(), source_file=str(path), now=NOW, host="dmesg")
    rows = result.rows
    assert rows["line_no"].to_list() == list(range(1, 18))
    assert rows["xid"].to_list() == [13] * 16 + [43]
    assert set(rows["pci_bus_id"]) == {"0000:38:00"}
    assert set(rows["host"]) == {"dmesg"}
    assert set(rows["log_format"]) == {"dmesg_iso"}
    assert rows["ts"][0] == _ts("2025-01-21T04:41:44.283302Z")
    assert rows["ts"].is_sorted()
    assert rows.row(0) == (
        str(path),
        1,
        "dmesg",
        _ts("2025-01-21T04:41:44.283302Z"),
        "0000:38:00",
        13,
        None,
        None,
        "Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors",
        "dmesg_iso",
    )
    assert rows.row(16) == (
        str(path),
        17,
        "dmesg",
        _ts("2025-01-21T04:41:44.287197Z"),
        "0000:38:00",
        43,
        2924364,
        "pt_main_thread",
        "Ch 00000008",
        "dmesg_iso",
    )
    assert rows["pid"].null_count() == 16
    # the OOM-killer lines that follow are kernel noise
    assert_accounted(result, SCHEMA, n_in_scope=17, n_ignored=7)


@pytest.mark.parametrize("mtime", [None, datetime(2026, 3, 1, tzinfo=UTC)])
def test_xid_real_captures_do_not_depend_on_mtime(mtime: datetime | None) -> None:
    for name in ("dmesg-with-xid-119.log", "dmesg.decode.iso.log"):
        data = (REAL / name).read_bytes()
        with_mtime = parse(data, source_file=name, file_mtime=mtime, now=NOW)
        assert_frame_equal(with_mtime.rows, parse(data, source_file=name, now=NOW).rows)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.lists(
            st.sampled_from(
                [
                    "[Mon Jun  1 00:00:00 2026] ",
                    "Jun  1 00:00:00 h kernel: ",
                    "NVRM: Xid ",
                    "(PCI:0000:18:00): ",
                    "79, ",
                    "pid=1, ",
                    "name=x, ",
                    "text",
                    "\xe9",
                    "\x00",
                    "",
                ]
            ),
            max_size=8,
        ).map("".join),
        max_size=12,
    )
)
def test_xid_any_input_is_accounted_for_without_raising(lines: list[str]) -> None:
    data = "".join(f"{line}\n" for line in lines).encode()
    result = parse(data, source_file=SOURCE, now=NOW)
    n_marked = sum(1 for line in lines if "NVRM: Xid" in line)
    if data:
        assert_accounted(result, SCHEMA, n_in_scope=n_marked, n_ignored=len(lines) - n_marked)
    else:
        assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=0)  # the empty-file reject


_STYLE_LINES = [
    b"[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off the bus.",
    b"2026-06-01T00:00:00+0000 gpu0002 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=7, name=py, DBE",
    b"Jun  1 00:00:00 gpu0003 kernel: [ 12.5] NVRM: Xid (PCI:0000:86:00): 13, Graphics Exception",
    b"Dec 31 23:59:00 gpu0004 kernel: NVRM: Xid (PCI:0000:86:00): 31, pid=9, name=a, fault",
    b"2026-06-01T00:00:00.5+00:00 gpu0005 kernel: NVRM: Xid (PCI:0000:18:00): 94, pid=1, Contained",
    b"kern  :warn  : 2026-06-01T00:00:00,000000+00:00 NVRM: Xid (PCI:0000:af:00): 119, pid=1, GSP",
    b"2026-06-01T00:00:00+0000 gpu0002 kernel: NVRM: Xid (PCI:0000:3b:00): oops",
    b"\xff\xfe NVRM: Xid (PCI:0000:3b:00): 79, bad bytes",
    b"2026-06-01T00:00:00+0000 gpu0002 kernel: eth0: link up",
]


@settings(max_examples=60, deadline=None)
@given(
    files=st.lists(
        st.tuples(
            st.lists(st.sampled_from(_STYLE_LINES), max_size=12),
            st.sampled_from(["gpu0001.log", "kern.log.1", "gpu0009.log.2.gz", "dmesg"]),
            st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2027, 1, 1)),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_xid_parse_many_equals_file_by_file(
    files: list[tuple[list[bytes], str, datetime, bool]],
) -> None:
    """One pass over many logs (per-file syslog years and host fallbacks) equals parsing each
    file on its own: nothing leaks from one file to another (#12 §5)."""
    from pipelines.ingest.sources.xid import parse_many

    inputs = []
    for k, (lines, name, mtime, final_newline) in enumerate(files):
        data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
        inputs.append(
            (data, f"/landing/kernel/{k}/{name}", {"file_mtime": mtime.replace(tzinfo=UTC)})
        )
    together = parse_many(inputs, now=NOW)
    for (data, source_file, options), result in zip(inputs, together, strict=True):
        alone = parse(data, source_file=source_file, now=NOW, **options)
        assert_frame_equal(result.rows, alone.rows)
        assert_frame_equal(result.rejects, alone.rejects)
        assert result.n_ignored == alone.n_ignored


def test_xid_dmesg_host_comes_from_option_or_folder_never_a_generic_name() -> None:
    """#12: dmesg-style lines print no host; ``dmesg.log`` or ``kern.log.1`` name a kind of
    log, so the host is the ``host`` option, else the folder, else the line is a reject."""
    line = b"[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off.\n"
    in_source_folder = parse(line, source_file="/landing/kernel/dmesg.log", now=NOW)
    assert in_source_folder.rows.height == 0
    assert "--host" in in_source_folder.rejects["reason"][0]
    by_folder = parse(line, source_file="/landing/kernel/gpu0042/kern.log.1", now=NOW)
    assert by_folder.rows["host"].to_list() == ["gpu0042"]
    by_option = parse(line, source_file="/landing/kernel/dmesg.log", now=NOW, host="gpu0007")
    assert by_option.rows["host"].to_list() == ["gpu0007"]
    by_name = parse(line, source_file="/landing/kernel/gpu0003.log.2.gz", now=NOW)
    assert by_name.rows["host"].to_list() == ["gpu0003"]
    printed = parse(
        b"Jun  1 00:00:00 gpu0009 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off.\n",
        source_file="/landing/kernel/dmesg.log",
        now=NOW,
        host="gpu0007",
    )
    assert printed.rows["host"].to_list() == ["gpu0009"]  # the line's own host wins


JOURNAL = Path(__file__).resolve().parent / "samples" / "journald" / "ext4_errors.json"
_XID_119 = (
    "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting "
    "for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."
)  # a real driver message (shared/real/nvidia-xid-dmesg-samples/dmesg-with-xid-119.log)


def _journal_record(message: object, *, stamp_us: str, host: str | None = "gpu0042") -> str:
    """A record in the shape of the real export in samples/journald (``{ "KEY" : value, ...}``)."""
    fields = {
        "__REALTIME_TIMESTAMP": stamp_us,
        "_TRANSPORT": "kernel",
        "SYSLOG_IDENTIFIER": "kernel",
        "PRIORITY": "4",
        "MESSAGE": message,
    }
    if host is not None:
        fields["_HOSTNAME"] = host
    import json

    return "{ " + ", ".join(f"{json.dumps(k)} : {json.dumps(v)}" for k, v in fields.items()) + " }"


def test_xid_journald_json_real_export_is_recognised_and_out_of_scope() -> None:
    """The real export (two EXT4 records, no Xid): read as journald JSON, nothing rejected."""
    result = parse(JOURNAL.read_bytes(), source_file="/landing/kernel/journal.json", now=NOW)
    assert_accounted(result, SCHEMA, n_in_scope=0, n_ignored=2)


def test_xid_journald_json_records_give_host_and_time_from_their_fields() -> None:
    real = JOURNAL.read_text().splitlines()
    # 1599541804928338 us = 2020-09-08T05:10:04.928338Z; a byte-array MESSAGE (non-UTF-8 text)
    array = list(b"NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=python, GPU has fallen off the bus.")
    data = (
        "\n".join(
            [
                real[0],
                _journal_record(_XID_119, stamp_us="1599541805000001"),
                real[1],
                _journal_record(array, stamp_us="1599541806500000", host="gpu0043"),
                _journal_record(_XID_119, stamp_us="1599541807000000", host=None),
                '{ "MESSAGE" : "NVRM: Xid (PCI:0000:18:00): 79, cut',  # a record cut mid-write
            ]
        ).encode()
        + b"\n"
    )
    result = parse(data, source_file="/landing/kernel/journal.json", now=NOW, host="fallback01")
    rows = result.rows
    assert rows.select("line_no", "host", "xid", "pci_bus_id", "pid", "log_format").rows() == [
        (2, "gpu0042", 119, "0000:9b:00", 2024380, "journal_json"),
        (4, "gpu0043", 79, "0000:18:00", 1, "journal_json"),
        (5, "fallback01", 119, "0000:9b:00", 2024380, "journal_json"),  # no _HOSTNAME: --host
    ]
    assert rows["ts"].to_list() == [
        _ts("2020-09-08T05:10:05.000001+00:00"),
        _ts("2020-09-08T05:10:06.500000+00:00"),
        _ts("2020-09-08T05:10:07+00:00"),
    ]
    assert rows["message"][0] == (
        "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 "
        "(GSP_RM_ALLOC) (0x2081 0x4)."
    )
    assert result.rejects["line_no"].to_list() == [6]
    assert result.rejects["raw"][0].startswith('{ "MESSAGE" : "NVRM: Xid')
    assert result.n_ignored == 2


@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")])
def test_xid_journald_json_reserialised_keeps_byte_array_messages(
    separators: tuple[str, str],
) -> None:
    # an export re-written by a JSON library (json.dumps's default or compact spacing): a
    # byte-array MESSAGE (text that is not UTF-8) is still found
    import json

    message = list(b"NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=python, bad \xff byte")
    records = [
        {"__REALTIME_TIMESTAMP": "1599541806500000", "_HOSTNAME": "gpu0043", "MESSAGE": "boot"},
        {"__REALTIME_TIMESTAMP": "1599541807500000", "_HOSTNAME": "gpu0043", "MESSAGE": message},
    ]
    data = "".join(json.dumps(r, separators=separators) + "\n" for r in records).encode()
    result = parse(data, source_file="/landing/kernel/journal.json", now=NOW)
    assert result.rows.select("line_no", "host", "xid", "pid").rows() == [(2, "gpu0043", 79, 1)]
    assert result.rows["ts"].to_list() == [_ts("2020-09-08T05:10:07.500000+00:00")]
    assert result.n_ignored == 1
