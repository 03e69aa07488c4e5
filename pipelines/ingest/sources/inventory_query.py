"""Read the GPUs of an ``nvidia-smi -q`` (text) or ``nvidia-smi -q -x`` (XML) dump.

Operators keep these full dumps per node beside (or instead of) the ``--query-gpu`` CSV. Both list
every attached GPU in the order of ``nvidia-smi``'s index (PCI bus order), under a header with the
dump's ``Timestamp`` and ``Attached GPUs``; neither prints the host or the index itself. This
module cuts a dump into one :class:`GpuRecord` per GPU, as text: :mod:`~pipelines.ingest.sources.
inventory` checks and types them like the CSV's fields.

The text dump::

    ==============NVSMI LOG==============

    Timestamp                           : Sat Dec  1 23:45:21 2018
    Driver Version                      : 410.72
    Attached GPUs                       : 1
    GPU 00000000:01:00.0
        Product Name                    : GeForce GTX 960M
        Serial Number                   : N/A
        GPU UUID                        : GPU-101b1cf0-fdf7-b374-a62c-76b25134fcf2
        VBIOS Version                   : 82.07.73.00.06

The XML dump is ``<nvidia_smi_log>`` with ``<timestamp>``, ``<attached_gpus>`` and one
``<gpu id="...">`` per GPU holding ``<product_name>``, ``<serial>``, ``<uuid>``,
``<vbios_version>`` and ``<pci><pci_bus_id>``. It is read with :mod:`xml.parsers.expat` and its
declarations are refused before anything is expanded: the ``<!DOCTYPE nvidia_smi_log SYSTEM
"nvsmi_device_vN.dtd">`` line nvidia-smi writes is allowed (expat never fetches it), a DOCTYPE
with an internal subset, an ``<!ENTITY>`` declaration or a reference to an undeclared entity
makes the whole file one reject (the rule of ``defusedxml``'s defaults, which is not installed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal
from xml.parsers import expat

Format = Literal["csv", "text", "xml"]

TEXT_BANNER = "==============NVSMI LOG=============="
"""The first non-blank line of ``nvidia-smi -q``."""

_SNIFF_BYTES = 4096
_GPU_LINE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_FIELD = re.compile(r"^(?P<indent> *)(?P<key>[^:]*?\S)\s*: ?(?P<value>.*?)\s*$")
_TEXT_KEYS = {
    "Product Name": "name",
    "Serial Number": "serial",
    "GPU UUID": "uuid",
    "VBIOS Version": "vbios",
}
_XML_KEYS = {
    ("product_name",): "name",
    ("serial",): "serial",
    ("uuid",): "uuid",
    ("vbios_version",): "vbios",
    ("pci", "pci_bus_id"): "bus_id",
}


@dataclass
class GpuRecord:
    """One GPU of a dump, as printed: the line it starts on and its fields as text."""

    line_no: int
    line: str
    bus_id: str | None = None
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class Dump:
    """A dump's header fields, its GPUs, and a reason when the whole file cannot be read.

    ``problem`` and ``problem_line`` (with the text of that line) describe a file that is refused
    as a whole (malformed or declaring entities); its GPUs are then not used.
    """

    timestamp: str | None = None
    driver: str | None = None
    n_attached: str | None = None
    gpus: list[GpuRecord] = field(default_factory=list)
    problem: str | None = None
    problem_line: int = 0


def sniff(data: bytes) -> Format:
    """Tell the dump's format from its first bytes: ``xml``, ``text`` (``-q``) or ``csv``."""
    head = data[:_SNIFF_BYTES].lstrip(b"\xef\xbb\xbf").lstrip()
    if head.startswith((b"<?xml", b"<!DOCTYPE nvidia_smi_log", b"<nvidia_smi_log")):
        return "xml"
    if head.startswith(TEXT_BANNER.encode()):
        return "text"
    return "csv"


def read_text(text: str) -> Dump:
    """Cut an ``nvidia-smi -q`` dump into its header fields and GPUs.

    A GPU starts at its ``GPU <bus id>`` line; its fields are the lines indented by four
    spaces below it (deeper lines belong to sections such as ``PCI`` and are skipped).
    """
    dump = Dump()
    current: GpuRecord | None = None
    for line_no, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        gpu = _GPU_LINE.match(line)
        if gpu:
            current = GpuRecord(line_no, line, gpu.group(1))
            dump.gpus.append(current)
            continue
        found = _FIELD.match(line)
        if found is None:
            continue
        indent, key, value = len(found["indent"]), found["key"], found["value"]
        if current is None and indent == 0:
            if key == "Timestamp":
                dump.timestamp = value
            elif key == "Driver Version":
                dump.driver = value
            elif key == "Attached GPUs":
                dump.n_attached = value
        elif current is not None and indent == 4 and key in _TEXT_KEYS:
            current.fields.setdefault(_TEXT_KEYS[key], value)
    return dump


class _Refused(Exception):
    """A declaration the XML reader refuses to process."""


class _XmlReader:
    """Expat handlers that collect a dump's header fields and GPUs, refusing entity declarations."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.dump = Dump()
        self.path: list[str] = []
        self.text: list[str] = []
        self.current: GpuRecord | None = None
        self.parser = expat.ParserCreate()
        self.parser.StartDoctypeDeclHandler = self.doctype
        self.parser.EntityDeclHandler = self.entity
        self.parser.SkippedEntityHandler = self.skipped
        self.parser.StartElementHandler = self.start
        self.parser.EndElementHandler = self.end
        self.parser.CharacterDataHandler = self.text.append

    def doctype(
        self, name: str, system_id: str | None, public_id: str | None, has_internal_subset: int
    ) -> None:
        if has_internal_subset:
            msg = f"XML DOCTYPE {name} declares an internal subset: refused, not expanded"
            raise _Refused(msg)

    def entity(self, name: str, *_: object) -> None:
        msg = f"XML declares the entity {name!r}: refused, not expanded"
        raise _Refused(msg)

    def skipped(self, name: str, is_parameter_entity: int) -> None:
        msg = f"XML refers to the undeclared entity {name!r}: refused"
        raise _Refused(msg)

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        if not self.path and tag != "nvidia_smi_log":
            msg = f"not an nvidia-smi -q -x document: its root is <{tag}>, not <nvidia_smi_log>"
            raise _Refused(msg)
        self.path.append(tag)
        self.text.clear()
        if self.path[1:] == ["gpu"]:
            line_no = self.parser.CurrentLineNumber
            line = self.lines[line_no - 1] if line_no <= len(self.lines) else ""
            self.current = GpuRecord(line_no, line.rstrip("\r"), attributes.get("id"))
            self.dump.gpus.append(self.current)

    def end(self, tag: str) -> None:
        value = "".join(self.text).strip()
        self.text.clear()
        inside = self.path[1:]
        if len(inside) == 1:
            if tag == "timestamp":
                self.dump.timestamp = value
            elif tag == "driver_version":
                self.dump.driver = value
            elif tag == "attached_gpus":
                self.dump.n_attached = value
            elif tag == "gpu":
                self.current = None
        elif self.current is not None and inside[0] == "gpu":
            key = _XML_KEYS.get(tuple(inside[1:]))
            if key is not None:
                self.current.fields.setdefault(key, value)
        self.path.pop()


def read_xml(data: bytes, text: str) -> Dump:
    """Read an ``nvidia-smi -q -x`` dump's header fields and GPUs (``text``: its decoded lines).

    A malformed document, an entity declaration or a DOCTYPE with an internal subset gives a
    :class:`Dump` with ``problem`` set (and the line expat stopped at).
    """
    reader = _XmlReader(text.split("\n"))
    try:
        reader.parser.Parse(data, True)
    except _Refused as refused:
        reader.dump.problem = str(refused)
        reader.dump.problem_line = reader.parser.CurrentLineNumber
    except expat.ExpatError as error:
        reader.dump.problem = f"malformed XML: {expat.errors.messages[error.code]}"
        reader.dump.problem_line = error.lineno
    return reader.dump
