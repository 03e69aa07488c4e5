"""Parse training-loop progress logs into step and checkpoint rows (issue #16, first slice).

A training job's own log says how far it got and when: one line per logged step, and a line
when a checkpoint save or load starts and ends. Three formats are read (``framework``)::

    megatron    [2024-05-01 12:00:00] iteration      100/  500000 | consumed samples: ... |
                    elapsed time per iteration (ms): 1234.5 | ... | lm loss: 2.373574E+00 | ... |
                saving checkpoint at iteration    1000 to /ckpt
                  successfully saved checkpoint at iteration    1000 to /ckpt
                 loading checkpoint from /ckpt at iteration 1000
                  successfully loaded checkpoint from /ckpt [ t 0/1, p 0/1 ] at iteration 1000
    torchtitan  [rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384
                    memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%
    hf_trainer  {'loss': 2.1, 'grad_norm': 0.9, 'learning_rate': 5e-05, 'epoch': 0.5}
                {"loss": 7.152712148666382, "learning_rate": 4.8e-05, "epoch": 0.03, "step": 500}
                ... - INFO - Saving model checkpoint to out/checkpoint-500

(Megatron-LM's ``training_log`` and ``checkpointing.py``, NeMo's Megatron path included, with
or without the ``[date]`` prefix of newer versions; torchtitan's metric line, with or without
the ``[rankN]:`` prefix torchrun's ``--tee`` adds; the Hugging Face ``Trainer``'s printed log
dict, which names its step only in transformers 3.x (``"step": 500``), and its checkpoint save,
whose step is the ``checkpoint-<n>`` folder's.) Whatever precedes the marker (a rank tag,
a launcher's prefix) is allowed; the first ``YYYY-MM-DD HH:MM:SS[,fff]`` in it is the line's
time, taken as UTC. Every other line (argument dumps, warnings, worker output) is ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import polars as pl

from pipelines.sources.common import (
    UTC_TS,
    Check,
    Parsed,
    empty_file_reject,
    empty_rows,
    iso_utc,
    parsed_from,
    split_lines,
    with_reasons,
)

if TYPE_CHECKING:
    from collections.abc import Callable

SCHEMA: dict[str, pl.DataType] = {
    "event": pl.String(),
    "framework": pl.String(),
    "step": pl.Int64(),
    "ts": pl.Datetime("us", "UTC"),
    "step_time_s": pl.Float64(),
    "loss": pl.Float64(),
    "checkpoint_path": pl.String(),
    "line_no": pl.Int64(),
    "source_file": pl.String(),
}
"""Columns of the rows :func:`parse` returns, in order."""

EVENTS: tuple[str, ...] = (
    "step",
    "checkpoint_save_start",
    "checkpoint_save_end",
    "checkpoint_load_start",
    "checkpoint_load_end",
)
"""Events a row can carry (``job_start`` is kept for formats that print a start line; none of
the formats read here has one that is safe to match)."""

FRAMEWORKS: tuple[str, ...] = ("megatron", "torchtitan", "hf_trainer")
"""Frameworks whose lines are read (PyTorch Lightning: not yet)."""

_FIELDS = ("step", "path", "loss", "ms")
"""Text fields a format may extract: step, checkpoint path, loss, step time in milliseconds."""


class _Format(NamedTuple):
    """One kind of line: how it is recognised and how its fields are cut.

    ``marker`` decides that a line is in scope (looks like this kind); ``fields`` maps a field of
    :data:`_FIELDS` to a regex whose first group is its text; ``required`` names the fields
    whose absence makes the line a reject; ``end`` is a regex the line must match to count as
    complete (``None``: no such check) and ``end_hint`` says what was expected.
    """

    framework: str
    event: str
    marker: str
    fields: dict[str, str]
    required: tuple[str, ...]
    end: str | None = None
    end_hint: str = ""


_ITERATION = r"(?:^|\s)iteration\s+([^\s/|]+)\s*/"

FORMATS: tuple[_Format, ...] = (
    _Format(
        "megatron",
        "step",
        marker=r"(?:^|\s)iteration\s+[^\s/|]+\s*/",
        fields={
            "step": _ITERATION,
            "ms": r"elapsed time per iteration \(ms\):\s*([^\s|]+)",
            "loss": r"\blm loss:\s*([^\s|]+)",
        },
        required=("step", "ms"),
        end=r"\|\s*$",
        end_hint="'|' at the end",
    ),
    _Format(
        "megatron",
        "checkpoint_save_end",
        marker=r"successfully saved checkpoint (?:at|from) iteration\b",
        fields={
            "step": r"saved checkpoint (?:at|from) iteration\s+(\S+)",
            "path": r"saved checkpoint (?:at|from) iteration\s+\S+\s+to\s+(\S+)",
        },
        required=("step", "path"),
    ),
    _Format(
        "megatron",
        "checkpoint_save_start",
        marker=r"(?:^|\s)saving checkpoint at iteration\b",
        fields={
            "step": r"saving checkpoint at iteration\s+(\S+)",
            "path": r"saving checkpoint at iteration\s+\S+\s+to\s+(\S+)",
        },
        required=("step", "path"),
    ),
    _Format(
        "megatron",
        "checkpoint_load_end",
        marker=r"successfully loaded checkpoint from\s.*\sat iteration\b",
        fields={
            "step": r"\sat iteration\s+(\S+)",
            "path": r"loaded checkpoint from\s+(\S+)",
        },
        required=("step", "path"),
    ),
    _Format(
        "megatron",
        "checkpoint_load_start",
        marker=r"(?:^|\s)loading checkpoint from\s.*\sat iteration\b",
        fields={
            "step": r"\sat iteration\s+(\S+)",
            "path": r"loading checkpoint from\s+(\S+)",
        },
        required=("step", "path"),
    ),
    _Format(
        "torchtitan",
        "step",
        marker=r"\bstep:\s*\S+\s+loss:",
        fields={
            "step": r"\bstep:\s*(\S+)\s+loss:",
            "loss": r"\sloss:\s*(\S+)",
        },
        required=("step", "loss"),
        end=r"\bmfu:\s*\S+%\s*$",
        end_hint="'mfu: <n>%' at the end",
    ),
    _Format(
        "hf_trainer",
        "step",
        marker=r"\{\s*['\"]loss['\"]\s*:",
        fields={
            "step": r"['\"]step['\"]\s*:\s*([^,}\s]+)",
            "loss": r"\{\s*['\"]loss['\"]\s*:\s*([^,}\s]+)",
        },
        required=("loss",),
        end=r"\}\s*$",
        end_hint="'}' at the end",
    ),
    _Format(
        "hf_trainer",
        "checkpoint_save_start",
        marker=r"\bSaving model checkpoint to\s",
        fields={
            "step": r"Saving model checkpoint to\s+\S*checkpoint-([^/\s]+)/?\s*$",
            "path": r"Saving model checkpoint to\s+(\S+)",
        },
        required=("path",),
    ),
)
"""The kinds of line read, in order of precedence (the first whose marker matches wins)."""

_DATETIME = r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)"


def parse(data: bytes, *, source_file: str) -> Parsed:
    """Parse one training log.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject.

    Returns
    -------
    Parsed
        ``rows`` with the :data:`SCHEMA` columns: ``event`` (one of :data:`EVENTS`),
        ``framework`` (one of :data:`FRAMEWORKS`), ``step`` (the iteration or step number;
        for checkpoint lines the iteration they name), ``ts`` (null when the line prints no
        time), ``step_time_s`` (Megatron's elapsed time per iteration, in seconds; null
        elsewhere), ``loss`` (``lm loss`` / torchtitan's ``loss``; null when not printed),
        ``checkpoint_path`` (checkpoint lines), ``line_no`` and ``source_file``.

    Notes
    -----
    Every line is a row, a reject or ignored. A line is in scope when it holds the marker of
    one of :data:`FORMATS` (``iteration <n>/``, ``saving checkpoint at iteration``, ``step: <n>
    loss:``...). In-scope lines are rejects when they are not UTF-8, lack a required field
    (a Megatron iteration line without its elapsed time), are cut short (a Megatron iteration
    line not ending in ``|``, a torchtitan line not ending in ``mfu: <n>%``), print a step,
    time or loss that is not a number, or a time that is not a date. An empty file is one
    reject (``line_no`` 0).

    Examples
    --------
    >>> line = b" iteration      201/  250000 | elapsed time per iteration (ms): 1250.0 |"
    >>> parse(line, source_file="train.log").rows.select("event", "step", "step_time_s").row(0)
    ('step', 201, 1.25)
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    lines = split_lines(data)
    line = pl.col("line")
    kind = pl.coalesce(
        [
            pl.when(line.str.contains(f.marker)).then(pl.lit(i, pl.Int8))
            for i, f in enumerate(FORMATS)
        ]
    )
    scoped = lines.lazy().with_columns(kind.alias("kind")).filter(pl.col("kind").is_not_null())
    n_ignored = lines.height - scoped.select(pl.len()).collect().item()
    frame = scoped.with_columns(
        _by_kind(lambda f: pl.lit(f.framework)).alias("framework"),
        _by_kind(lambda f: pl.lit(f.event)).alias("event"),
        _by_kind(lambda f: line.str.extract(f"^(.*?){f.marker}", 1)).alias("prefix"),
        *[_field(name).alias(name) for name in _FIELDS],
    ).with_columns(
        pl.col("prefix").str.extract(_DATETIME, 1).alias("ts_text"),
    )
    frame = frame.with_columns(
        iso_utc(pl.col("ts_text").str.replace(",", ".", literal=True)).alias("ts"),
        _number(pl.col("ms")).alias("ms_value"),
        _number(pl.col("loss")).alias("loss_value"),
    )
    checked = with_reasons(frame, _checks())
    rows = checked.with_columns(
        pl.col("step").cast(pl.Int64, strict=False),
        (pl.col("ms_value") / 1000.0).alias("step_time_s"),
        pl.col("loss_value").alias("loss"),
        pl.col("path").alias("checkpoint_path"),
        pl.col("ts").cast(UTC_TS),
    )
    return parsed_from(rows, schema=SCHEMA, source_file=source_file, n_ignored=n_ignored)


def _by_kind(value: Callable[[_Format], pl.Expr]) -> pl.Expr:
    """Give each line the expression ``value`` builds for its format (:data:`FORMATS`)."""
    return pl.coalesce([pl.when(pl.col("kind") == i).then(value(f)) for i, f in enumerate(FORMATS)])


def _field(name: str) -> pl.Expr:
    """Cut the text of field ``name`` from each line (null where its format has none)."""
    line = pl.col("line")
    parts = [
        pl.when(pl.col("kind") == i).then(line.str.extract(f.fields[name], 1))
        for i, f in enumerate(FORMATS)
        if name in f.fields
    ]
    return pl.coalesce(parts) if parts else pl.lit(None, pl.String)


def _number(text: pl.Expr) -> pl.Expr:
    """Read a printed number (``2.373574E+00``, ``139113.4``, ``nan``); null otherwise."""
    return text.str.to_lowercase().cast(pl.Float64, strict=False)


def _checks() -> list[Check]:
    """Return the line checks; the first failing one gives the reason (see :func:`parse`)."""
    kind = pl.col("kind")
    checks: list[Check] = [(~pl.col("utf8_ok"), "line is not valid UTF-8")]
    for i, f in enumerate(FORMATS):
        what = f"{f.framework} {f.event.replace('_', ' ')} line"
        checks.extend(
            (
                (kind == i) & pl.col(name).is_null(),
                f"truncated or malformed {what}: no {_FIELD_NAMES[name]}",
            )
            for name in f.required
        )
        if f.end is not None:
            checks.append(
                (
                    (kind == i) & ~pl.col("line").str.contains(f.end),
                    f"truncated {what}: no {f.end_hint}",
                )
            )
    step, ms, loss, ts_text = pl.col("step"), pl.col("ms"), pl.col("loss"), pl.col("ts_text")
    checks += [
        (~step.str.contains(r"^\d+$"), pl.format("non-numeric step '{}'", step)),
        (
            ms.is_not_null() & pl.col("ms_value").is_null(),
            pl.format("non-numeric elapsed time per iteration '{}'", ms),
        ),
        (
            loss.is_not_null() & pl.col("loss_value").is_null(),
            pl.format("non-numeric loss '{}'", loss),
        ),
        (ts_text.is_not_null() & pl.col("ts").is_null(), pl.format("malformed time '{}'", ts_text)),
    ]
    return checks


_FIELD_NAMES = {
    "step": "step",
    "path": "checkpoint path",
    "loss": "loss",
    "ms": "'elapsed time per iteration (ms)'",
}
