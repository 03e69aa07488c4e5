"""The line-by-line Python parsers ``bench_ingest`` measures our ingest against.

What a careful engineer would write without polars or DuckDB: ``re`` on each line of the sacct
dumps and the kernel logs, tuples in a list. They read the same files as the ingest and count
what they parse, so the benchmark's ratio compares like with like.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

_SACCT = re.compile(
    r"^(?P<job_id>[^|]*)\|(?P<job_id_raw>[^|]*)\|(?P<job_name>[^|]*)\|(?P<partition>[^|]*)\|"
    r"(?P<account>[^|]*)\|(?P<user>[^|]*)\|(?P<alloc_nodes>\d*)\|(?P<alloc_tres>[^|]*)\|"
    r"(?P<node_list>[^|]*)\|(?P<submit>[^|]*)\|(?P<start>[^|]*)\|(?P<end>[^|]*)\|"
    r"(?:(?P<days>\d+)-)?(?P<clock>\d\d:\d\d:\d\d)\|(?P<state>[A-Z_]+)(?: by (?P<uid>\d+))?\|"
    r"(?P<exit_code>\d+):(?P<exit_signal>\d+)\|(?P<restarts>\d*)$"
)
_GPUS = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
_XID = re.compile(
    r"^(?P<prefix>.*?)NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})"
    r"(?:\.[0-7])?\): (?P<xid>\d+), (?:pid=(?P<pid>[^,]*), name=(?P<name>[^,]*), )?(?P<msg>.*)$"
)
_PREFIX = re.compile(
    r"^(?:\[(?P<dmesg_t>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\] "
    r"|(?:[a-z]+ *:[a-z]+ *: )?(?P<iso>\d{4}-\d\d-\d\dT[\d:.,]+(?:Z|[+-]\d\d:?\d\d))"
    r"(?: (?P<host>\S+) kernel: (?:\[ *\d+\.\d+\] )?)? ?"
    r"|(?P<syslog>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) (?P<shost>\S+) kernel: "
    r"(?:\[ *\d+\.\d+\] )?)$"
)


def _sacct_ts(text: str) -> datetime | None:
    if text in ("Unknown", "None", ""):
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def is_site_dump(path: Path) -> bool:
    """Tell whether a sacct dump is in the site format (its header starts with ``State;``)."""
    with path.open("rb") as handle:
        return handle.readline().startswith(b"State;")


def _from_site(line: str, names: list[str]) -> str:
    """Reorder a site-format line (``;``, trailing ``;``, another order) to the reference."""
    value = dict(zip(names, line.rstrip(";").split(";"), strict=False))
    seconds = int(value.get("ElapsedRaw") or 0)
    days, rest = divmod(seconds, 86_400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    value["Elapsed"] = f"{days}-{clock}" if days else clock
    value["AllocNodes"], value["AllocTRES"] = value.get("NNodes", ""), value.get("ReqTRES", "")
    return "|".join(value.get(name, "") for name in _REFERENCE)


_REFERENCE = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "Partition",
    "Account",
    "User",
    "AllocNodes",
    "AllocTRES",
    "NodeList",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "State",
    "ExitCode",
    "Restarts",
)


def python_sacct(paths: list[Path]) -> tuple[int, int]:
    """Parse sacct files line by line; return (rows, rejects).

    A site-format dump is mapped to the reference order first.
    """
    rows: list[tuple[Any, ...]] = []
    rejects = 0
    for path in paths:
        with path.open(encoding="utf-8", errors="backslashreplace") as handle:
            header = handle.readline()
            names = header.rstrip("\r\n;").split(";") if header.startswith("State;") else None
            for line in handle:
                line = line.rstrip("\r\n")
                if not line or line == header.rstrip("\r\n"):
                    continue
                if names is not None:
                    line = _from_site(line, names)
                m = _SACCT.match(line)
                if m is None:
                    rejects += 1
                    continue
                try:
                    submit, start, end = (_sacct_ts(m[k]) for k in ("submit", "start", "end"))
                except ValueError:
                    rejects += 1
                    continue
                job_id = m["job_id"]
                step = job_id.split(".", 1)[1] if "." in job_id else None
                gpus = _GPUS.search(m["alloc_tres"])
                elapsed = int(m["days"] or 0) * 86_400 + sum(
                    int(part) * scale
                    for part, scale in zip(m["clock"].split(":"), (3600, 60, 1), strict=True)
                )
                rows.append(
                    (
                        job_id,
                        m["job_id_raw"].split(".", 1)[0],
                        step,
                        m["job_name"],
                        m["partition"],
                        m["account"],
                        m["user"],
                        int(m["alloc_nodes"] or 0),
                        m["alloc_tres"],
                        int(gpus[1]) if gpus else 0,
                        m["node_list"],
                        submit,
                        start,
                        end,
                        elapsed,
                        m["state"],
                        m["uid"],
                        int(m["exit_code"]),
                        int(m["exit_signal"]),
                        int(m["restarts"] or 0),
                    )
                )
    return len(rows), rejects


def _kernel_ts(m: re.Match[str], year: int) -> datetime:
    if m["dmesg_t"]:
        return datetime.strptime(m["dmesg_t"], "%a %b %d %H:%M:%S %Y").replace(tzinfo=UTC)
    if m["iso"]:
        return datetime.fromisoformat(m["iso"].replace(",", ".")).astimezone(UTC)
    stamp = datetime.strptime(f"{year} {m['syslog']}", "%Y %b %d %H:%M:%S")
    return stamp.replace(tzinfo=UTC)


def _journal_line(record: str) -> str:
    """Turn a journald JSON record into an RFC 3339 syslog line (itself when not JSON)."""
    try:
        fields = json.loads(record)
        stamp = datetime.fromtimestamp(int(fields["__REALTIME_TIMESTAMP"]) / 1e6, tz=UTC)
    except (ValueError, KeyError, TypeError):
        return record
    return f"{stamp.isoformat()} {fields.get('_HOSTNAME', '')} kernel: {fields['MESSAGE']}"


def python_kernel(paths: list[Path]) -> tuple[int, int]:
    """Parse kernel logs line by line (a regex on every line); (rows, rejects)."""
    rows: list[tuple[Any, ...]] = []
    rejects = 0
    for path in paths:
        host_of_file = path.name.split(".", 1)[0]
        year = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).year
        with path.open(encoding="utf-8", errors="backslashreplace") as handle:
            for line in handle:
                if line.startswith("{") and "NVRM: Xid" in line:  # journalctl -o json record
                    line = _journal_line(line)
                m = _XID.match(line.rstrip("\r\n"))
                if m is None:
                    if "NVRM: Xid" in line:
                        rejects += 1
                    continue
                prefix = _PREFIX.match(m["prefix"])
                if prefix is None:
                    rejects += 1
                    continue
                try:
                    ts = _kernel_ts(prefix, year)
                except ValueError:
                    rejects += 1
                    continue
                pid = m["pid"]
                rows.append(
                    (
                        prefix["host"] or prefix["shost"] or host_of_file,
                        ts,
                        m["pci"].lower()[-10:],
                        int(m["xid"]),
                        int(pid) if pid and pid.isdigit() else None,
                        m["name"],
                        m["msg"],
                    )
                )
    return len(rows), rejects
