"""``python -m bench NAME`` rewrites only the sections of the benchmarks it ran in results.md."""

from __future__ import annotations

from bench.__main__ import merge_results, split_results

OLD = """# Benchmark results

2026-11-22 03:51 UTC, 2 cores, Python 3.11.7, x86_64.

## bench_fit (50 s wall; rerun after the headline MTBF)

```text
fit: 0.73 s
## not a heading: printed output
PASS
```

## bench_ingest (148 s wall; 2026-11-25)

```text
ingest 0.30x
FAIL
```

The same at 512 nodes:

```text
ingest 0.12x
```

A note on the targets.

## bench_dcgm (548 s wall)

```text
dmon 0.45x
```

## bench_retired (3 s wall)

```text
old figures
```
"""

STAMP = "2026-11-26 04:00 UTC, 2 cores, Python 3.11.7, x86_64 (the latest run)."


def test_split_finds_sections_by_heading_outside_code_blocks() -> None:
    preamble, sections = split_results(OLD)
    assert preamble == [
        "# Benchmark results",
        "",
        "2026-11-22 03:51 UTC, 2 cores, Python 3.11.7, x86_64.",
        "",
    ]
    assert list(sections) == ["bench_fit", "bench_ingest", "bench_dcgm", "bench_retired"]
    assert "## not a heading: printed output" in sections["bench_fit"]
    assert sections["bench_ingest"][-2:] == ["A note on the targets.", ""]


def test_merge_replaces_only_the_benchmarks_that_ran() -> None:
    new = merge_results(OLD, {"bench_dcgm": ("9 s wall", "dmon 1.10x\nPASS\n")}, STAMP)
    expected = """# Benchmark results

2026-11-26 04:00 UTC, 2 cores, Python 3.11.7, x86_64 (the latest run).

## bench_fit (50 s wall; rerun after the headline MTBF)

```text
fit: 0.73 s
## not a heading: printed output
PASS
```

## bench_ingest (148 s wall; 2026-11-25)

```text
ingest 0.30x
FAIL
```

The same at 512 nodes:

```text
ingest 0.12x
```

A note on the targets.

## bench_dcgm (9 s wall)

```text
dmon 1.10x
PASS
```

## bench_retired (3 s wall)

```text
old figures
```
"""
    assert new == expected


def test_a_rerun_section_keeps_its_notes_and_new_sections_take_their_place() -> None:
    ran = {"bench_ingest": ("1 s wall", "ingest 0.61x\n"), "bench_simulate": ("2 s wall", "x")}
    new = merge_results(OLD, ran, STAMP)
    _, sections = split_results(new)
    # BENCHES order: fit, simulate, sweep, ingest, dcgm, goodput; unknown names after, as found
    assert list(sections) == [
        "bench_fit",
        "bench_simulate",
        "bench_ingest",
        "bench_dcgm",
        "bench_retired",
    ]
    assert sections["bench_ingest"] == [
        "## bench_ingest (1 s wall)",
        "",
        "```text",
        "ingest 0.61x",
        "```",
        "",
        "The same at 512 nodes:",
        "",
        "```text",
        "ingest 0.12x",
        "```",
        "",
        "A note on the targets.",
        "",
    ]
    assert sections["bench_simulate"] == [
        "## bench_simulate (2 s wall)",
        "",
        "```text",
        "x",
        "```",
        "",
    ]


def test_merge_into_no_file_and_merging_twice_is_stable() -> None:
    first = merge_results("", {"bench_fit": ("1 s wall", "PASS")}, STAMP)
    assert (
        first
        == f"# Benchmark results\n\n{STAMP}\n\n## bench_fit (1 s wall)\n\n```text\nPASS\n```\n"
    )
    assert merge_results(first, {}, STAMP) == first
    assert merge_results(OLD, {}, "2026-11-22 03:51 UTC, 2 cores, Python 3.11.7, x86_64.") == OLD
