"""nvidia-smi -q (text) and -q -x (XML) dumps: real public samples, [N/A] serials, hostile XML.

Expectations are read off the sample lines by hand (samples/inventory/README.md).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.ingest.sources import batch
from pipelines.ingest.sources import inventory as inventory_module
from pipelines.ingest.sources.inventory import NO_UNIT_ID, SCHEMA, joinable, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons

SAMPLES = Path(__file__).parent / "samples" / "inventory"
NOW = datetime(2026, 9, 1, tzinfo=UTC)


def _sample(name: str, host: str = "gpu0001") -> tuple[str, bytes]:
    source_file = f"/landing/nvidia_smi/{host}__20260601T000000Z.{name.rsplit('.', 1)[1]}"
    return source_file, (SAMPLES / name).read_bytes()


def test_xml_dump_of_two_p100s_gives_a_row_per_gpu() -> None:
    source_file, data = _sample("hadoop_nvidia_smi_sample_output_p100_qx.xml")
    result = parse(data, source_file=source_file, now=NOW)
    assert result.rows.select(
        "line_no", "host", "gpu_index", "pci_bus_id", "serial", "uuid", "gpu_name"
    ).rows() == [
        (
            25,
            "gpu0001",
            0,
            "0000:04:00",
            "0320717030197",
            "GPU-28604e81-21ec-cc48-6759-bf2648b22e16",
            "Tesla P100-PCIE-12GB",
        ),
        (
            84,
            "gpu0001",
            1,
            "0000:82:00",
            "0320717031755",
            "GPU-46915a82-3fd2-8e11-ae26-a80b607c04f3",
            "Tesla P100-PCIE-12GB_2",
        ),
    ]
    assert set(result.rows["snapshot_ts"]) == {datetime(2017, 9, 6, 21, 52, 51, tzinfo=UTC)}
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=143 - 2)


@pytest.mark.parametrize(
    ("name", "line_no", "bus", "uuid", "gpu_name", "ts", "n_lines"),
    [
        (
            "netdata_issue4892_gtx960m_q.txt",
            8,
            "0000:01:00",
            "GPU-101b1cf0-fdf7-b374-a62c-76b25134fcf2",
            "GeForce GTX 960M",
            datetime(2018, 12, 1, 23, 45, 21, tzinfo=UTC),
            30,
        ),
        (
            "nvidia_container_toolkit_issue169_gtx1650_q.txt",
            9,
            "0000:82:00",
            "GPU-7878ba12-9b30-8f49-3da8-7930824af120",
            "NVIDIA GeForce GTX 1650",
            datetime(2022, 5, 4, 10, 57, 14, tzinfo=UTC),
            29,
        ),
    ],
)
def test_text_dump_of_a_consumer_gpu_loads_without_a_serial(
    name: str, line_no: int, bus: str, uuid: str, gpu_name: str, ts: datetime, n_lines: int
) -> None:
    source_file, data = _sample(name, host="ws-07")
    result = parse(data, source_file=source_file, now=NOW)
    assert result.rows.select(
        "line_no", "host", "snapshot_ts", "gpu_index", "pci_bus_id", "serial", "uuid", "gpu_name"
    ).rows() == [(line_no, "ws-07", ts, 0, bus, None, uuid, gpu_name)]
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=n_lines - 1)


TEXT_DUMP = """
    ==============NVSMI LOG==============

    Timestamp                                 : Mon Jun  1 00:00:00 2026
    Driver Version                            : 550.54.15
    CUDA Version                              : 12.4

    Attached GPUs                             : 2
    GPU 00000000:18:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        Serial Number                         : 1650124014249
        GPU UUID                              : GPU-509665ad-b600-ac93-3616-d754b23d636d
        PCI
            Bus Id                            : 00000000:18:00.0
    GPU 00000000:2A:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        Serial Number                         : [N/A]
        GPU UUID                              : [N/A]
    """


def test_text_dump_gpu_without_serial_and_uuid_is_a_reject() -> None:
    result = parse(raw_bytes(TEXT_DUMP), source_file="gpu0001__x.txt", now=NOW)
    assert result.rows["serial"].to_list() == ["1650124014249"]
    assert reject_reasons(result) == {14: NO_UNIT_ID}
    assert_accounted(result, SCHEMA, n_in_scope=2, n_ignored=17 - 2)


def test_csv_gpu_without_serial_and_uuid_is_a_reject() -> None:
    text = """
        timestamp, index, pci.bus_id, serial, uuid, name
        2026/06/01 00:00:00.000, 0, 00000000:18:00.0, [N/A], GPU-a, NVIDIA H100 80GB HBM3
        2026/06/01 00:00:00.000, 1, 00000000:2A:00.0, [N/A], [N/A], NVIDIA H100 80GB HBM3
        """
    result = parse(raw_bytes(text), source_file="gpu0001__x.csv", now=NOW)
    assert result.rows.select("serial", "uuid").rows() == [(None, "GPU-a")]
    assert reject_reasons(result) == {3: NO_UNIT_ID}


def test_partial_dump_rejects_its_gpus() -> None:
    text = TEXT_DUMP.replace("Attached GPUs                             : 2", "Attached GPUs : 8")
    result = parse(raw_bytes(text), source_file="gpu0001__x.txt", now=NOW)
    assert result.rows.height == 0
    assert set(reject_reasons(result)) == {8, 14}
    assert reject_reasons(result)[8].startswith("the dump lists 2 GPUs but says Attached GPUs: 8")


def test_dump_without_timestamp_rejects_its_gpus() -> None:
    text = TEXT_DUMP.replace("Timestamp", "Zeitstempel")
    result = parse(raw_bytes(text), source_file="gpu0001__x.txt", now=NOW)
    assert reject_reasons(result)[8] == "the dump has no Timestamp"


XML_HEAD = '<?xml version="1.0" ?>\n'


@pytest.mark.parametrize(
    ("body", "line_no", "reason"),
    [
        (
            '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>\n'
            "<nvidia_smi_log><timestamp>&lol2;</timestamp></nvidia_smi_log>\n",
            2,
            "XML DOCTYPE lolz declares an internal subset: refused, not expanded",
        ),
        (
            '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
            "<nvidia_smi_log><timestamp>&xxe;</timestamp></nvidia_smi_log>\n",
            3,
            "XML refers to the undeclared entity 'xxe': refused",
        ),
        (
            "<nvidia_smi_log><gpu id='0000:18:00.0'>\n",
            3,
            "malformed XML: no element found",
        ),
        (
            "<html><body>nvidia</body></html>\n",
            2,
            "not an nvidia-smi -q -x document: its root is <html>, not <nvidia_smi_log>",
        ),
    ],
)
def test_hostile_or_broken_xml_is_one_reject(body: str, line_no: int, reason: str) -> None:
    result = parse((XML_HEAD + body).encode(), source_file="gpu0001__x.xml", now=NOW)
    assert result.rows.height == 0
    assert reject_reasons(result) == {line_no: reason}


def test_only_query_csv_files_are_parsed_joined() -> None:
    _, xml = _sample("hadoop_nvidia_smi_sample_output_p100_qx.xml")
    _, text = _sample("nvidia_container_toolkit_issue169_gtx1650_q.txt")
    csv = b"timestamp, index, pci.bus_id, serial, uuid, name\n"
    assert (joinable(xml), joinable(text), joinable(csv)) == (False, False, True)
    assert batch.groupable(xml, inventory_module) is None
    assert batch.groupable(csv, inventory_module) == csv.rstrip(b"\n")


def test_text_dump_with_windows_line_ends_and_a_byte_order_mark() -> None:
    source_file, data = _sample("netdata_issue4892_gtx960m_q.txt")
    windows = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    result = parse(windows, source_file=source_file, now=NOW)
    assert result.rows.select("line_no", "pci_bus_id", "serial", "uuid").rows() == [
        (8, "0000:01:00", None, "GPU-101b1cf0-fdf7-b374-a62c-76b25134fcf2")
    ]
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=29)


def test_xml_dump_without_a_serial_loads_the_gpu_with_its_uuid() -> None:
    text = f"""{XML_HEAD}<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
    <timestamp>Mon Jun  1 00:00:00 2026</timestamp>
    <attached_gpus>1</attached_gpus>
    <gpu id="00000000:65:00.0">
        <product_name>NVIDIA GeForce RTX 4090</product_name>
        <serial>N/A</serial>
        <uuid>GPU-4090</uuid>
        <pci><pci_bus_id>00000000:65:00.0</pci_bus_id></pci>
    </gpu>
</nvidia_smi_log>
"""
    result = parse(text.encode(), source_file="ws2__x.xml", now=NOW)
    assert result.rows.select("line_no", "host", "gpu_index", "serial", "uuid").rows() == [
        (6, "ws2", 0, None, "GPU-4090")
    ]
    assert_accounted(result, SCHEMA, n_in_scope=1, n_ignored=11)


def test_host_option_names_a_dump_kept_under_a_generic_name() -> None:
    _, data = _sample("nvidia_container_toolkit_issue169_gtx1650_q.txt")
    source_file = "/landing/nvidia_smi/ws-07/nvidia-smi-q.txt"
    assert parse(data, source_file=source_file, now=NOW).rows["host"].to_list() == ["nvidia-smi-q"]
    given = parse(data, source_file=source_file, now=NOW, host="ws-07")
    assert given.rows["host"].to_list() == ["ws-07"]
