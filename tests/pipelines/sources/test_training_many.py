"""Training logs parsed many at once equal them parsed one by one (issue #16, ingest speed).

``parse_many`` reads a chunk of logs in one polars plan; each result must equal :func:`parse` of
that file alone, frame by frame, whatever the files around it: real samples, the committed
``data_samples`` log, synthetic fleets' logs, empty files, files that are not UTF-8, look-alike
lines, other options. What a file carries from line to line (a printed time, a save's group of
lines) must stop at its first line: the hand-written pair below would show a leak.
"""

from __future__ import annotations

import codecs
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from pipelines.ingest.sources import training
from pipelines.ingest.sources.training import parse, parse_many
from synth import SynthConfig, synthesize
from tests.pipelines.sources.helpers import raw_bytes

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = Path(__file__).parent / "samples" / "training"
REAL = [
    *sorted(p for p in SAMPLES.iterdir() if p.suffix == ".log"),
    ROOT / "data_samples" / "training" / "slurm-4242.out",
]

File = tuple[bytes, str, dict[str, Any]]


def _assert_same_as_one_by_one(
    files: list[File], many_lines: int | None = None
) -> list[training.Parsed]:
    """Compare ``parse_many`` with ``parse``; ``many_lines`` lowers the size from which the
    regexes run on their own lines only (:data:`training.MANY_LINES`) for ``parse_many``."""
    alone_all = [parse(data, source_file=f, **options) for data, f, options in files]
    with pytest.MonkeyPatch.context() as patch:
        if many_lines is not None:
            patch.setattr(training, "MANY_LINES", many_lines)
        many = parse_many(files)
    assert len(many) == len(files)
    for (_, source_file, _), alone, got in zip(files, alone_all, many, strict=True):
        assert_frame_equal(got.rows, alone.rows)
        assert_frame_equal(got.rejects, alone.rejects)
        assert got.n_ignored == alone.n_ignored, source_file
    return many


MEGATRON_END_OF_A = raw_bytes(
    """
    [2024-05-01 12:00:00] iteration      200/  500000 | elapsed time per iteration (ms): 1000.0 |
    saving checkpoint at iteration     200 to /ckpt/a
    """
)
MEGATRON_HEAD_OF_B = raw_bytes(
    """
    saving checkpoint at iteration     100 to /ckpt/b
      successfully saved checkpoint at iteration     100 to /ckpt/b
    (min, max) time across ranks (ms):
        save-checkpoint ................................: (2000.00, 2500.00)
    """
)
LOOK_ALIKES = raw_bytes(
    """
    [2024-05-01 12:00:00] iteration      abc/  500000 | elapsed time per iteration (ms): 1000.0 |
    [2024-05-01 12:00:01] iteration      201/  500000 | elapsed time per iteration (ms): 1000.0
    [2024-13-01 12:00:02] iteration      202/  500000 | elapsed time per iteration (ms): 1.0 |
    saving checkpoint at iteration
        save-checkpoint ................................: (2000.00,
    [titan] 2025-06-16 22:30:50,322 - root - INFO - step: 2  loss: n/a  memory: 1GiB  mfu: 34.29%
    [titan] 2025-06-16 22:30:51,322 - root - INFO - step: 3  loss: 6.1  memory: 1GiB  tflops: 3
    [titan] 2025-06-16 22:30:52,322 - root - INFO - Finished saving the checkpoint in x seconds.
    {'loss': 'high', 'epoch': 0.5}
    the iteration count and the loss: nothing to read here
    """
)


def test_parse_many_keeps_carried_times_and_save_groups_inside_each_file() -> None:
    # By hand: A's save start takes the time of its iteration line (carried). B parsed alone has
    # no line printing a time: its save start has none, nor has its timer, the save end (step
    # and path of "successfully saved", which is superseded: ignored, with the "(min, max)"
    # header). Leaked from A, B's start would get A's time (carried, or as the group's latest
    # start time) and the timer that time plus 2.5 s.
    a, b = parse_many(
        [(MEGATRON_END_OF_A, "/l/a.log", {}), (MEGATRON_HEAD_OF_B, "/l/b.log", {"job": "7"})]
    )
    noon = datetime(2024, 5, 1, 12, tzinfo=UTC)
    cols = ("line_no", "event", "step", "ts", "ts_inferred", "duration_s", "checkpoint_path")
    assert a.rows.select(cols).rows() == [
        (1, "step", 200, noon, False, None, None),
        (2, "checkpoint_save_start", 200, noon, True, None, "/ckpt/a"),
    ]
    assert (a.rejects.height, a.n_ignored) == (0, 0)
    assert b.rows.select(cols).rows() == [
        (1, "checkpoint_save_start", 100, None, False, None, "/ckpt/b"),
        (4, "checkpoint_save_end", 100, None, False, 2.5, "/ckpt/b"),
    ]
    assert b.rows["job_id"].to_list() == ["7", "7"]
    assert (b.rejects.height, b.n_ignored) == (0, 2)


def test_parse_many_gives_each_file_its_own_job_and_host() -> None:
    line = b" iteration      201/  250000 | elapsed time per iteration (ms): 1250.0 |\n"
    files: list[File] = [
        (line, "/l/slurm-77.out", {}),
        (line, "/l/slurm-77.out", {"job": "j9"}),
        (line, "/l/train.log", {"host": "gpu-003"}),
        (line, "/l/train.log", {"job": "j1", "host": None}),
    ]
    many = _assert_same_as_one_by_one(files)
    assert [(p.rows["job_id"][0], p.rows["host"][0]) for p in many] == [
        ("77", None),
        ("j9", None),
        (None, "gpu-003"),
        ("j1", None),
    ]
    assert all(p.rows["step_time_s"].to_list() == [1.25] for p in many)


# the small files' plan, and the one of many lines (every regex on its own lines only)
PLANS = pytest.mark.parametrize("many_lines", [None, 0], ids=["few", "many"])


@PLANS
def test_parse_many_of_every_real_sample_equals_parse(many_lines: int | None) -> None:
    files = [(p.read_bytes(), f"/landing/training/{p.name}", {}) for p in REAL]
    many = _assert_same_as_one_by_one(files, many_lines)
    assert len(files) == 18  # 17 real slices and data_samples/training/slurm-4242.out
    assert all(p.rows.height > 0 for p in many)  # each sample has rows: the comparison is real
    # and in the reverse order, each sample now between other neighbours
    _assert_same_as_one_by_one(files[::-1], many_lines)


@PLANS
@pytest.mark.parametrize("seed", [3, 11])
def test_parse_many_of_synthetic_fleet_logs_equals_parse(
    tmp_path: Path, seed: int, many_lines: int | None
) -> None:
    synthesize(tmp_path, SynthConfig(nodes=16, days=10, training_logs=True, seed=seed))
    paths = sorted(p for p in (tmp_path / "training").rglob("*") if p.is_file())
    assert len(paths) >= 5
    files = [(p.read_bytes(), str(p), {}) for p in paths]
    many = _assert_same_as_one_by_one(files, many_lines)
    assert sum(p.rows.height for p in many) > 100
    steps = pl.concat([p.rows for p in many]).filter(pl.col("event") == "step")
    assert steps["job_id"].null_count() == 0  # slurm-<id>.out names


@PLANS
def test_parse_many_with_empty_broken_and_odd_files_equals_parse(many_lines: int | None) -> None:
    real = (SAMPLES / "megatron_lm_1570_date_prefix.log").read_bytes()
    assert real.count(b"elapsed time") >= 3
    not_utf8 = real.replace(b"elapsed time", b"\xff elapsed time", 3) + b"\xfe\xfe tail\n"
    files: list[File] = [
        (b"", "/l/empty.log", {}),
        (MEGATRON_END_OF_A, "/l/a.log", {}),
        (b"", "/l/empty2.log", {"job": "1"}),
        (not_utf8, "/l/not_utf8.log", {}),
        (LOOK_ALIKES, "/l/look.log", {}),
        (MEGATRON_HEAD_OF_B.replace(b"\n", b"\r\n"), "/l/crlf.log", {}),
        (MEGATRON_END_OF_A.rstrip(b"\n"), "/l/no_final_newline.log", {}),
        (codecs.BOM_UTF8 + MEGATRON_END_OF_A, "/l/bom.log", {}),
        (b"x^" + MEGATRON_HEAD_OF_B, "/l/zlib_like_start.log", {}),
        (b"\x1f\n" + MEGATRON_HEAD_OF_B, "/l/unit_separator.log", {}),
        (b"\n\n\n", "/l/blank.log", {}),
        (b"\n", "/l/one_blank.log", {}),
        (b"iteration 1/", "/l/one_cut_line.log", {}),
    ]
    many = _assert_same_as_one_by_one(files, many_lines)
    assert [p.rejects["reason"].to_list() for p in many[:3:2]] == [["empty file"]] * 2
    assert many[3].rejects["reason"].to_list().count("line is not valid UTF-8") == 3
    # look-alikes: every line but the last is a reject
    assert (many[4].rejects.height, many[4].rows.height, many[4].n_ignored) == (9, 0, 1)
    assert (many[10].n_ignored, many[11].n_ignored) == (3, 1)


def test_parse_many_refuses_an_option_parse_does_not_take() -> None:
    with pytest.raises(TypeError, match="run"):
        parse_many([(MEGATRON_END_OF_A, "/l/a.log", {"run": "r1"})])


def test_parse_many_of_nothing_is_nothing() -> None:
    assert parse_many([]) == []


@pytest.fixture
def crossing_format(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A format whose marker starts inside a date (none of the real ones can)."""
    step = training.FORMATS[0]._replace(
        marker=r":\d\d step\b", fields={"step": r"\bstep\s+(\d+)", "ms": r"ms=(\S+)"}, end=None
    )
    monkeypatch.setattr(training, "FORMATS", (step, *training.FORMATS))
    clear = (training._line_stages.cache_clear, training._checks.cache_clear)
    for done in clear:
        done()
    yield
    monkeypatch.undo()
    for done in clear:
        done()


@pytest.mark.usefixtures("crossing_format")
def test_a_date_running_into_the_marker_is_not_the_lines_time() -> None:
    # The marker ":00 step" starts inside "12:00:00": before it stands "2024-05-01 12:00",
    # which is no full date, so the line has no time of its own; the second line's date ends
    # before its marker (the marker is ":59 step" at the end).
    data = b"x 2024-05-01 12:00:00 step 5 ms=10\n2024-05-01 12:00:01 at 12:59 step 6 ms=20\n"
    (got,) = parse_many([(data, "/l/cross.log", {})])
    assert got.rows.select("step", "ts").rows() == [
        (5, None),
        (6, datetime(2024, 5, 1, 12, 0, 1, tzinfo=UTC)),
    ]


def _line_pool() -> list[bytes]:
    lines = [
        line
        for path in REAL
        for line in path.read_bytes().splitlines()
        if line.strip() and len(line) < 400
    ]
    random.Random(16).shuffle(lines)
    return (
        lines[:150]
        + MEGATRON_HEAD_OF_B.splitlines()
        + LOOK_ALIKES.splitlines()
        + [b"", b"\xff\xfe not utf-8", b"2024-05-01 12:00:00 a dated line with nothing else"]
    )


POOL = _line_pool()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(POOL), max_size=12),
            st.sampled_from([b"\n", b"\r\n"]),
            st.booleans(),
            st.sampled_from([{}, {"job": "j"}, {"host": "h"}]),
        ),
        max_size=6,
    ),
    st.sampled_from([None, 0]),
)
def test_parse_many_of_random_mixes_equals_parse(
    mix: list[tuple[list[bytes], bytes, bool, dict[str, Any]]], many_lines: int | None
) -> None:
    files: list[File] = [
        (end.join(lines) + (end if final else b""), f"/l/slurm-{i}.out", options)
        for i, (lines, end, final, options) in enumerate(mix)
    ]
    _assert_same_as_one_by_one(files, many_lines)
