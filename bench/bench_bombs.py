"""Benchmark the peak memory of ingesting decompression bombs (issue 26, part C).

Run from the repository root::

    python -m bench.bench_bombs
    python -m bench.bench_bombs --gib 2

Each run is a fresh interpreter running ``relia ingest --json`` (``python -m pipelines.cli``) on
a small landing (two kernel logs and two sacct dumps of ``data_samples/landing``) into a new
warehouse, and prints its peak RSS (``ru_maxrss``). The baseline, measured in the same run, is
that landing alone; each other run adds one bomb to its ``slurm/`` folder: ``--gib`` GiB of zero
bytes compressed with gzip, bzip2, xz or zstd, built as members (frames) of 64 MiB of zeros
joined as ``cat`` joins them, so no GiB is ever held to build it. The archive limits are the
defaults (``RELIA_ARCHIVE_*`` unset): each bomb stops at its ratio limit (200 plain bytes per
compressed byte once past 64 MiB) and is one quarantine row. For reference, the gzip bomb is
also inflated whole by ``gzip.decompress`` alone in a fresh interpreter, as the ingest read an
archive before the limits.
"""

from __future__ import annotations

import argparse
import bz2
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "data_samples" / "landing"
MIB = 2**20
MEMBER_MIB = 64
PROBE = """\
import atexit, resource, runpy, sys
atexit.register(
    lambda: print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
)
sys.argv = ["relia", "ingest", *sys.argv[1:]]
runpy.run_module("pipelines.cli", run_name="__main__")
"""


def _member(codec: str) -> bytes:
    """Return one member (frame) of :data:`MEMBER_MIB` MiB of zeros, compressed a MiB at a time."""
    block = bytes(MIB)
    compressor: Any
    if codec == "zstd":
        import zstandard

        compressor = zstandard.ZstdCompressor().compressobj()
    else:
        makers: dict[str, Callable[[], Any]] = {
            "gzip": lambda: zlib.compressobj(wbits=31),
            "bzip2": bz2.BZ2Compressor,
            "xz": lambda: lzma.LZMACompressor(preset=0),
        }
        compressor = makers[codec]()
    parts = [compressor.compress(block) for _ in range(MEMBER_MIB)]
    return b"".join([*parts, compressor.flush()])


def _landing(folder: Path) -> Path:
    landing = folder / "landing"
    for source, names in {
        "kernel": ["gpu0001.log", "gpu0002.log"],
        "slurm": ["sacct_20260601.txt", "sacct_20260602.txt"],
    }.items():
        (landing / source).mkdir(parents=True)
        for name in names:
            shutil.copy(SAMPLES / source / name, landing / source / name)
    return landing


def _ingest(landing: Path, db: Path) -> tuple[int, float, list[dict[str, Any]]]:
    """Return the peak RSS (KiB), the wall seconds and the counts of one ``relia ingest``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELIA_ARCHIVE_")}
    env.pop("PREFECT_API_URL", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(landing), "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        msg = f"relia ingest failed ({done.returncode}): {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    peak = [line for line in done.stderr.splitlines() if line.startswith("maxrss_kib ")]
    return int(peak[-1].split()[1]), seconds, json.loads(done.stdout)


def _whole_inflate_kib(bomb: Path) -> int:
    """Return the peak RSS (KiB) of a process that inflates ``bomb`` whole, as the ingest did."""
    code = (
        "import gzip, resource, sys; gzip.decompress(open(sys.argv[1], 'rb').read()); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, check=True
    )
    return int(done.stdout.split()[-1])


def main() -> None:
    """Print each bomb's peak RSS against the baseline's."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=int, default=1, help="GiB of zeros in each bomb")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bombs-") as tmp:
        folder = Path(tmp)
        base_kib, base_s, base_counts = _ingest(_landing(folder / "base"), folder / "base.duckdb")
        n_loaded = sum(int(c["n_loaded"]) for c in base_counts)
        print(
            f"{'run':<10} {'archive':>12} {'plain':>8} {'peak RSS':>10} {'vs baseline':>12} "
            f"{'wall s':>7}  outcome"
        )
        print(
            f"{'baseline':<10} {'':>12} {'':>8} {base_kib / 1024:>7.0f} MiB {1:>11.2f}x "
            f"{base_s:>7.1f}  {n_loaded} rows loaded"
        )
        for codec, suffix in (("gzip", "gz"), ("bzip2", "bz2"), ("xz", "xz"), ("zstd", "zst")):
            landing = _landing(folder / codec)
            member = _member(codec)
            bomb = landing / "slurm" / f"sacct_20260609.txt.{suffix}"
            with bomb.open("wb") as out:
                for _ in range(args.gib * 1024 // MEMBER_MIB):
                    out.write(member)
            kib, seconds, counts = _ingest(landing, folder / f"{codec}.duckdb")
            (row,) = [c for c in counts if c["path"].endswith(bomb.name)]
            loaded = sum(int(c["n_loaded"]) for c in counts)
            outcome = (
                f"bomb quarantined ({row['n_quarantined']} row), {loaded} rows loaded"
                if row["n_quarantined"] == 1 and loaded == n_loaded
                else f"UNEXPECTED: {row}"
            )
            print(
                f"{codec:<10} {bomb.stat().st_size / 1024:>8.0f} KiB {args.gib:>4} GiB "
                f"{kib / 1024:>7.0f} MiB {kib / base_kib:>11.2f}x {seconds:>7.1f}  {outcome}"
            )
            if codec == "gzip":
                kib = _whole_inflate_kib(bomb)
                print(
                    f"{'  whole':<10} {'':>12} {'':>8} {kib / 1024:>7.0f} MiB "
                    f"{kib / base_kib:>11.2f}x {'':>7}  gzip.decompress of the whole file alone"
                )
            shutil.rmtree(landing)
    print(
        "(peak RSS = ru_maxrss of a fresh `relia ingest --json` process; baseline = the same "
        "small landing without the bomb; default archive limits: 4 GiB, 200x once past 64 MiB)"
    )


if __name__ == "__main__":
    main()
