"""Many kernel logs in one ingest load exactly what each log loads in an ingest of its own.

The tailed ingest plans every log, then parses the new lines of many logs in one pass (a few
chunks of :data:`pipelines.ingest.plan.PARSE_TOGETHER_FILES` logs) and loads them in one batch.
Batching must not change a row, a line number, a stream's state or a count: the expectations
here are the lines the test itself wrote, and a file-by-file ingest of the same logs.
"""

from __future__ import annotations

import gzip
from typing import TYPE_CHECKING

import duckdb
import pytest

from pipelines import ingest, warehouse
from pipelines.ingest import plan as ingest_plan
from pipelines.ingest import streams

if TYPE_CHECKING:
    from pathlib import Path

N_LOGS = 6
XID = (
    "NVRM: Xid (PCI:0000:{bus:02x}:00): {code}, pid={pid}, name=python, GPU has fallen off the bus."
)


def _log_lines(i: int) -> list[tuple[str, int | None]]:
    """Return log ``i``'s lines, each with the Xid code it must load as (None: not an Xid row)."""
    host = f"gpu{i:04d}"
    lines: list[tuple[str, int | None]] = []
    for k in range(3 * i + 2):  # noise of other drivers, ignored
        lines.append((f"Jun  1 00:{k % 60:02d}:00 {host} kernel: mlx5_core link state up", None))
        if k % 4 == i % 4:  # Xid lines of known codes among them, none in some logs
            code = 40 + i + k
            text = XID.format(bus=k, code=code, pid=100 + k)
            lines.append((f"Jun  1 01:{k % 60:02d}:00 {host} kernel: {text}", code))
    if i == 3:  # a malformed Xid line: quarantined with a reason, never loaded
        lines.append((f"Jun  1 02:00:00 {host} kernel: NVRM: Xid (PCI:zz): 79, broken", None))
    return lines


def _landing(root: Path) -> dict[str, list[tuple[str, int | None]]]:
    """Write the logs; return each file's complete lines (log 5's last line has no newline)."""
    folder = root / "kernel"
    folder.mkdir(parents=True)
    written: dict[str, list[tuple[str, int | None]]] = {}
    for i in range(1, N_LOGS + 1):
        lines = _log_lines(i)
        text = "".join(f"{line}\n" for line, _ in lines)
        if i == 5:  # a live log: its last line has no newline yet and is held
            text = text[:-1]
            lines = lines[:-1]
        if i == N_LOGS:  # a compressed generation: finished, read whole
            path = folder / f"gpu{i:04d}.log.1.gz"
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path = folder / f"gpu{i:04d}.log"
            path.write_text(text)
        written[str(path.resolve())] = lines
    return written


def _tables(db: Path) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            "rows": con.execute(
                "select source_file, line_no, host, ts, pci_bus_id, xid, pid, message "
                "from raw_xid_events order by all"
            ).fetchall(),
            "streams": con.execute(
                "select stream_id, rows_path, head_len, head_sha, consumed_bytes, "
                "consumed_lines, prefix_sha, held_bytes, tail_sha from raw_streams order by all"
            ).fetchall(),
            "quarantine": con.execute(
                "select source_file, line_no, reason from raw_quarantine order by all"
            ).fetchall(),
            "files": con.execute(
                "select file_sha256, path, n_read, n_loaded, n_quarantined, n_ignored, n_held "
                "from raw_ingest_files order by all"
            ).fetchall(),
            "reads": con.execute(
                "select read_key, path, action, from_byte, to_byte, first_line, n_read, n_loaded, "
                "n_quarantined, n_held, n_ignored from raw_stream_reads order by all"
            ).fetchall(),
        }
    finally:
        con.close()


def _ingest_together(db: Path, landing: Path) -> list[warehouse.LoadCounts]:
    return ingest.ingest(db, ingest.discover([landing]))


def _ingest_one_by_one(db: Path, landing: Path) -> list[warehouse.LoadCounts]:
    counts = []
    for item in ingest.discover([landing]):
        counts += ingest.ingest(db, [item])
    return counts


def _expected_rows(written: dict[str, list[tuple[str, int | None]]]) -> set[tuple[str, int, int]]:
    return {
        (path, n, code)
        for path, lines in written.items()
        for n, (_, code) in enumerate(lines, start=1)
        if code is not None
    }


def _grow(landing: Path) -> dict[str, list[tuple[str, int | None]]]:
    """Append lines to every plain log (and end log 5's held line); return the added lines."""
    added: dict[str, list[tuple[str, int | None]]] = {}
    for path in sorted((landing / "kernel").glob("*.log")):
        i = int(path.name[3:7])
        host = f"gpu{i:04d}"
        new: list[tuple[str, int | None]] = []
        if i == 5:
            new.append(_log_lines(5)[-1])  # the held line, now complete
        new.append((f"Jun  1 03:00:00 {host} kernel: mlx5_core link state down", None))
        if i % 2:
            new.append((f"Jun  1 03:00:01 {host} kernel: " + XID.format(bus=1, code=13, pid=1), 13))
        text = "".join(f"{line}\n" for line, _ in new)
        with path.open("a") as handle:
            handle.write(text[len(_log_lines(5)[-1][0]) :] if i == 5 else text)
        added[str(path.resolve())] = new
    return added


@pytest.mark.slow
def test_many_logs_in_one_ingest_load_like_each_log_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_plan, "PARSE_TOGETHER_FILES", 2)  # several parse chunks
    together, alone = tmp_path / "together", tmp_path / "alone"
    written = _landing(together)
    _landing(alone)
    # the same bytes under two landings: compare rows by file name, not by folder
    counts = _ingest_together(tmp_path / "together.duckdb", together)
    counts_alone = _ingest_one_by_one(tmp_path / "alone.duckdb", alone)
    for c in counts + counts_alone:
        assert c.n_read == c.n_loaded + c.n_quarantined + c.n_held, c
    got = _tables(tmp_path / "together.duckdb")
    assert {(r[0], r[1], r[5]) for r in got["rows"]} == _expected_rows(written)
    assert len(got["quarantine"]) == 1
    malformed = (str((together / "kernel/gpu0003.log").resolve()), len(_log_lines(3)))
    assert got["quarantine"][0][:2] == malformed
    assert sum(c.n_held for c in counts) == 1
    assert _relative(got, together) == _relative(_tables(tmp_path / "alone.duckdb"), alone)

    # a tick: every plain log grew (log 5's held line completed); read only the new lines
    added = _grow(together)
    _grow(alone)
    counts = _ingest_together(tmp_path / "together.duckdb", together)
    counts_alone = _ingest_one_by_one(tmp_path / "alone.duckdb", alone)
    for c in counts + counts_alone:
        assert c.n_read == c.n_loaded + c.n_quarantined + c.n_held, c
    assert sum(c.n_loaded for c in counts) == sum(
        code is not None for lines in added.values() for _, code in lines
    )
    # log 5's held line comes first in what it gained: it is the line after its complete ones
    grown = {path: written[path] + added.get(path, []) for path in written}
    got = _tables(tmp_path / "together.duckdb")
    assert {(r[0], r[1], r[5]) for r in got["rows"]} == _expected_rows(grown)
    assert _relative(got, together) == _relative(_tables(tmp_path / "alone.duckdb"), alone)

    # nothing new: re-ingesting changes nothing
    counts = _ingest_together(tmp_path / "together.duckdb", together)
    assert sum(c.n_loaded + c.n_quarantined for c in counts) == 0
    assert _tables(tmp_path / "together.duckdb") == got


def _relative(tables: dict[str, list[tuple[object, ...]]], landing: Path) -> object:
    """Tables with the landing's folder cut from paths and the keys that hash a path dropped."""
    root = str(landing.resolve())

    def cut(value: object) -> object:
        return value.replace(root, "<landing>") if isinstance(value, str) else value

    keep = {  # columns that do not hash the path a stream was first met at
        "rows": slice(None),
        "streams": slice(1, None),
        "quarantine": slice(None),
        "files": slice(1, None),
        "reads": slice(1, None),
    }
    return {
        name: sorted(tuple(cut(v) for v in row[keep[name]]) for row in rows)
        for name, rows in tables.items()
    }


def test_read_file_and_read_partial_return_the_bytes_of_the_file(tmp_path: Path) -> None:
    data = b"".join(b"line %07d of a log bigger than one read\n" % k for k in range(60_000))
    path = tmp_path / "big.log"
    path.write_bytes(data)
    assert len(data) > 2 * 2**20
    assert streams.read_file(path) == data
    consumed = len(data) - 5_000
    partial = streams.read_partial(str(path), consumed)
    assert partial is not None
    assert len(partial) == len(data)
    assert partial[0 : streams.HEAD_BYTES] == data[: streams.HEAD_BYTES]
    window = consumed - streams.TAIL_BYTES
    assert partial[window : len(data)] == data[window:]
    assert streams.read_partial(str(path), len(data) + 1) is None  # shorter than consumed


def test_an_index_knows_when_every_stream_is_claimed() -> None:
    def state(n: int) -> streams.StreamState:
        return streams.StreamState(
            stream_id=f"s{n}",
            source="kernel",
            table="raw_xid_events",
            rows_path=f"/l/kernel/gpu{n}.log",
            head_len=4,
            head_sha=streams.sha256_hex(b"head%d" % n),
            consumed_bytes=10,
            consumed_lines=1,
            prefix_sha="",
        )

    assert not streams.StreamIndex().has_unclaimed()
    index = streams.StreamIndex([state(1), state(2)])
    assert index.has_unclaimed()
    index.claimed.add("s1")
    assert index.has_unclaimed()
    index.claimed.add("s2")
    assert not index.has_unclaimed()
