"""Parse training-loop progress logs into step and checkpoint rows (issue #16, docs/goodput.md §1).

A training job's own log says how far it got and when: one line per logged step, and lines
when a checkpoint save or load starts and ends. Three formats are read (``framework``)::

    megatron    [2024-05-01 12:00:00] iteration      100/  500000 | consumed samples: ... |
                    elapsed time per iteration (ms): 1234.5 | ... | lm loss: 2.373574E+00 | ... |
                saving checkpoint at iteration    1000 to /ckpt
                  successfully saved checkpoint at iteration    1000 to /ckpt
                (min, max) time across ranks (ms):
                    save-checkpoint ................................: (21027.08, 21027.08)
                 loading checkpoint from /ckpt at iteration 1000
                  successfully loaded checkpoint from /ckpt [ t 0/1, p 0/1 ] at iteration 1000
    torchtitan  [rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384
                    memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%
                ... - INFO - Saving a full checkpoint at last step, step 644.
                ... - INFO - Finished saving the checkpoint (or staging if async is enabled)in
                    5.53 seconds.
                ... - INFO - Loading the checkpoint at step 500.
                ... - INFO - Finished loading the checkpoint in 3.21 seconds.
    hf_trainer  {'loss': 2.1, 'grad_norm': 0.9, 'learning_rate': 5e-05, 'epoch': 0.5}
                {"loss": 7.152712148666382, "learning_rate": 4.8e-05, "epoch": 0.03, "step": 500}
                ... - INFO - Saving model checkpoint to out/checkpoint-500

(Megatron-LM's ``training_log``, ``checkpointing.py`` and ``megatron/core/timers.py``, NeMo's
Megatron path and Megatron-DeepSpeed included, with or without the ``[date]`` prefix of newer
versions; torchtitan's metric line, with or without the ``[rankN]:`` prefix torchrun's ``--tee``
adds, and its ``components/checkpoint.py`` messages; the Hugging Face ``Trainer``'s printed log
dict, which names its step only in transformers 3.x (``"step": 500``), and its checkpoint save,
whose step is the ``checkpoint-<n>`` folder's.) Whatever precedes the marker (a rank tag, a
launcher's prefix such as ``srun --label``'s ``0: ``) is allowed; the first
``YYYY-MM-DD HH:MM:SS[,fff]`` in it is the line's time, taken as UTC. Every other line (argument
dumps, warnings, worker output, other timers) is ignored. Real samples of each kind, with their
sources, are in ``tests/pipelines/sources/samples/training/`` (its README): torchtitan's
checkpoint lines from AICrossSim/NewComputeBench ``docs/01-model-training/llm-pretrain-and-eval.md``
and the message formats of pytorch/torchtitan ``torchtitan/components/checkpoint.py``; Megatron's
save lines and timers from bigscience-workshop/bigscience ``train/tr1-13B-base/chronicles.md`` and
the format strings of NVIDIA/Megatron-LM ``megatron/core/timers.py``.

Times that are not printed (``ts_inferred``)
    Megatron prints no time on its checkpoint lines. A save start (``saving checkpoint at
    iteration``) and a ``successfully saved`` line take the time of the nearest earlier line of
    the file that prints one (an iteration line's ``[date]``, a ``datetime:`` banner, a
    DeepSpeed log line); ``ts_inferred`` is then true. Its load lines come at process start,
    before any such line: their ``ts`` stays null. The ``save-checkpoint`` timer line (the
    ``(min, max) time across ranks (ms):`` block ``timers.log(['save-checkpoint'])`` prints, its
    ``max time across ranks`` form, and the old one-line ``time (ms) | save-checkpoint: X``) is
    the save's end: ``duration_s`` is the slowest rank's time (the max) and ``ts`` the save start's
    time plus it (``ts_inferred``; null when the start has no time).

One save, one end
    A save's lines are grouped from its start to the next step line or save end. When such a
    group holds both Megatron's ``successfully saved`` line and its ``save-checkpoint`` timer, the
    timer line is the ``checkpoint_save_end`` row (it carries the duration) and the
    ``successfully saved`` line is counted as ignored; without a timer, ``successfully saved`` is
    the end (no duration). A timer line or torchtitan's ``Finished saving`` takes its step (and
    checkpoint path) from the save start of its group (null without one: no step is guessed);
    ``Finished loading`` takes the step of its ``Loading the checkpoint at step N.``.

Identity
    ``job_id`` is the ``job=`` option (``relia ingest --job``, a path pattern's ``{job}``), else
    Slurm's default output name ``slurm-<id>.out`` / ``slurm-<array>_<task>.out``; ``host`` is the
    ``host=`` option. Both are null otherwise.

Streams
    Training logs are read as streams (a grown log loads only its new lines). A read that starts
    between a save's lines cannot see the earlier ones: a save start whose time-bearing line came
    in an earlier read has a null ``ts``, and a timer whose start came earlier has no step and no
    ``ts`` (its ``duration_s`` stays). Ingests of a live log rarely fall inside a save.
"""

from __future__ import annotations

import re
from pathlib import PurePath
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
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "job_id": pl.String(),
    "host": pl.String(),
    "event": pl.String(),
    "framework": pl.String(),
    "step": pl.Int64(),
    "ts": pl.Datetime("us", "UTC"),
    "ts_inferred": pl.Boolean(),
    "step_time_s": pl.Float64(),
    "duration_s": pl.Float64(),
    "loss": pl.Float64(),
    "checkpoint_path": pl.String(),
}
"""Columns of the rows :func:`parse` returns, in order (docs/goodput.md §1)."""

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

_FIELDS = ("step", "path", "loss", "ms", "dur_ms", "dur_s")
"""Text fields a format may extract: step, checkpoint path, loss, step time in milliseconds, a
save's duration in milliseconds (Megatron's timer) or seconds (torchtitan)."""


class _Format(NamedTuple):
    """One kind of line: how it is recognised and how its fields are cut.

    ``marker`` decides that a line is in scope (looks like this kind); ``fields`` maps a field of
    :data:`_FIELDS` to a regex whose first group is its text; ``required`` names the fields
    whose absence makes the line a reject; ``end`` is a regex the line must match to count as
    complete (``None``: no such check) and ``end_hint`` says what was expected. ``role`` tells
    how the line takes part in a save or load (:func:`_pair_saves`): ``start``, ``saved``
    (Megatron's ``successfully saved``), ``timer``, ``end`` (a save end with its own time),
    ``load_start``, ``load_end``; ``carry`` whether an unprinted time is carried forward.
    """

    framework: str
    event: str
    marker: str
    fields: dict[str, str]
    required: tuple[str, ...]
    end: str | None = None
    end_hint: str = ""
    role: str = ""
    carry: bool = False


_ITERATION = r"(?:^|\s)iteration\s+([^\s/|]+)\s*/"
_SECONDS = r"\bin\s*([^\s]+?)\s+seconds\b"

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
        role="saved",
        carry=True,
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
        role="start",
        carry=True,
    ),
    _Format(
        "megatron",
        "checkpoint_save_end",
        marker=r"(?:^|[\s|])save-checkpoint[ .]*:",
        fields={"dur_ms": r"save-checkpoint[ .]*:\s*(?:\(\s*[^,()]*,\s*)?([^\s(),|]+)"},
        required=("dur_ms",),
        end=r"save-checkpoint[ .]*:\s*(?:\(\s*[^,()\s]+\s*,\s*[^,()\s]+\s*\)|[^\s(),]+)\s*$",
        end_hint="'(<min>, <max>)' or '<max>' after 'save-checkpoint ...:'",
        role="timer",
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
        marker=r"\bstep:\s*\S+(?:\s*=\s*\S+%)?\s+loss:",
        fields={
            "step": r"\bstep:\s*([^\s/]+)(?:/\S+)?(?:\s*=\s*\S+%)?\s+loss:",
            "loss": r"\sloss:\s*(\S+)",
        },
        required=("step", "loss"),
        end=r"\bmfu:\s*\S+%\s*$",
        end_hint="'mfu: <n>%' at the end",
    ),
    _Format(
        "torchtitan",
        "checkpoint_save_end",
        marker=r"\bFinished saving the checkpoint\b",
        fields={"dur_s": _SECONDS},
        required=("dur_s",),
        role="end",
    ),
    _Format(
        "torchtitan",
        "checkpoint_save_start",
        marker=r"\bSaving (?:the|a full|a model(?: weights)? only) checkpoint\b",
        fields={"step": r"\bstep\s+([^\s.,]+)\.?\s*$"},
        required=(),
        role="start",
    ),
    _Format(
        "torchtitan",
        "checkpoint_load_end",
        marker=r"\bFinished loading the checkpoint\b",
        fields={"dur_s": _SECONDS},
        required=("dur_s",),
        role="load_end",
    ),
    _Format(
        "torchtitan",
        "checkpoint_load_start",
        marker=r"\bLoading the checkpoint at step\b",
        fields={"step": r"\bLoading the checkpoint at step\s+([^\s.]+)"},
        required=("step",),
        role="load_start",
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

SLURM_OUTPUT = re.compile(r"slurm-(\d+(?:_\d+)?)\.out")
"""Slurm's default output file name (``slurm-%j.out``, ``slurm-%A_%a.out``): its job id."""


def job_from_name(source_file: str) -> str | None:
    """Return the job id Slurm's default output name gives (``slurm-1234_5.out`` → ``1234_5``).

    None for any other file name.
    """
    match = SLURM_OUTPUT.fullmatch(PurePath(source_file).name)
    return None if match is None else match.group(1)


def parse(
    data: bytes, *, source_file: str, job: str | None = None, host: str | None = None
) -> Parsed:
    """Parse one training log.

    Parameters
    ----------
    data
        The file's bytes (or a stream read's new lines).
    source_file
        Path recorded on every row and reject; its name may give the job id.
    job
        The job id of the log (``relia ingest --job``); wins over the file name.
    host
        The host the log was written on (``relia ingest --host``).

    Returns
    -------
    Parsed
        ``rows`` with the :data:`SCHEMA` columns: ``job_id`` and ``host`` (see the module
        docstring), ``event`` (one of :data:`EVENTS`), ``framework`` (one of
        :data:`FRAMEWORKS`), ``step`` (the iteration or step number; for checkpoint lines the
        iteration they name, or their save or load start's), ``ts`` (null when the line prints no
        time and none is inferred), ``ts_inferred`` (the time was carried or computed, not
        printed), ``step_time_s`` (Megatron's elapsed time per iteration, in seconds; null
        elsewhere), ``duration_s`` (a save or load end's duration, in seconds), ``loss``
        (``lm loss`` / torchtitan's ``loss``; null when not printed), ``checkpoint_path``
        (checkpoint lines), ``line_no`` and ``source_file``.

    Notes
    -----
    Every line is a row, a reject or ignored. A line is in scope when it holds the marker of
    one of :data:`FORMATS` (``iteration <n>/``, ``saving checkpoint at iteration``, ``step: <n>
    loss:``, ``save-checkpoint ...:``, ``Finished saving the checkpoint``...). In-scope lines are
    rejects when they are not UTF-8, lack a required field (a Megatron iteration line without its
    elapsed time, a ``Finished saving`` line without ``in <x> seconds``), are cut short (a
    Megatron iteration line not ending in ``|``, a torchtitan step line not ending in ``mfu:
    <n>%``, a timer line without its closing parenthesis), print a step, time, duration or loss
    that is not a number, or a time that is not a date. A ``successfully saved`` line whose save
    has a timer line is ignored (the module docstring). An empty file is one reject
    (``line_no`` 0).

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
    marked = lines.lazy().with_columns(kind.alias("kind"))
    frame = marked.with_columns(
        _by_kind(lambda f: pl.lit(f.framework)).alias("framework"),
        _by_kind(lambda f: pl.lit(f.event)).alias("event"),
        _by_kind(lambda f: pl.lit(f.role)).alias("role"),
        _by_kind(lambda f: pl.lit(f.carry)).alias("carry"),
        _by_kind(lambda f: line.str.extract(f"^(.*?){f.marker}", 1)).alias("prefix"),
        *[_field(name).alias(name) for name in _FIELDS],
    ).with_columns(
        # a row's time is the first date before its marker; any other line's, its first date
        pl.when(pl.col("kind").is_null())
        .then(line)
        .otherwise(pl.col("prefix"))
        .str.extract(_DATETIME, 1)
        .alias("ts_text"),
    )
    frame = frame.with_columns(
        iso_utc(pl.col("ts_text").str.replace(",", ".", literal=True)).alias("ts"),
        _number(pl.col("ms")).alias("ms_value"),
        _number(pl.col("dur_ms")).alias("dur_ms_value"),
        _number(pl.col("dur_s")).alias("dur_s_value"),
        _number(pl.col("loss")).alias("loss_value"),
    )
    # the time of the nearest earlier line that prints one (a valid date), for Megatron's
    # checkpoint lines
    frame = frame.with_columns(pl.col("ts").forward_fill().shift(1).alias("carried")).filter(
        pl.col("kind").is_not_null()
    )
    checked = with_reasons(frame, _checks())
    checked = _pair_saves(checked)
    n_ignored = lines.height - checked.height
    job_id = job if job is not None else job_from_name(source_file)
    rows = checked.with_columns(
        pl.col("step").cast(pl.Int64, strict=False),
        (pl.col("ms_value") / 1000.0).alias("step_time_s"),
        pl.col("loss_value").alias("loss"),
        pl.col("path").alias("checkpoint_path"),
        pl.col("ts").cast(UTC_TS),
        pl.lit(job_id, pl.String).alias("job_id"),
        pl.lit(host, pl.String).alias("host"),
    )
    return parsed_from(rows, schema=SCHEMA, source_file=source_file, n_ignored=n_ignored)


def _pair_saves(checked: pl.DataFrame) -> pl.DataFrame:
    """Give save and load ends their start's step, path and time; drop superseded lines.

    ``checked`` holds the in-scope lines in file order with their ``reason``. A group runs from
    just after a step line or a save or load end to the next one (inclusive); within it, a timer
    or ``Finished saving`` takes the step and path of the latest good save start (else of a
    ``successfully saved`` line), a ``Finished loading`` the step of its load start, and a timer
    the start's time plus its duration. A ``successfully saved`` line whose group has a timer is
    dropped (the caller counts it as ignored).
    """
    good = pl.col("reason").is_null()
    role, event = pl.col("role"), pl.col("event")
    ends_group = good & ((event == "step") | role.is_in(["timer", "end", "load_end"]))
    group = ends_group.cast(pl.Int64).cum_sum().shift(1, fill_value=0)
    start = good & (role == "start")
    anchor = good & role.is_in(["start", "saved"])

    def latest(value: pl.Expr, where: pl.Expr) -> pl.Expr:
        return pl.when(where).then(value).forward_fill().over(group)

    # carried times first: a start's own time wins, else the nearest earlier printed one
    own = pl.col("ts")
    carry = pl.col("carry") & own.is_null() & pl.col("carried").is_not_null()
    frame = checked.with_columns(
        pl.when(carry).then(pl.col("carried")).otherwise(own).alias("ts"),
        carry.alias("ts_inferred"),
    )
    # the latest save start (or "successfully saved") of the group wins for step and path;
    # the time only comes from a save start
    frame = frame.with_columns(
        latest(pl.col("step"), anchor).alias("save_step"),
        latest(pl.col("path"), anchor).alias("save_path"),
        latest(pl.col("ts"), start).alias("start_ts"),
        latest(pl.col("step"), good & (role == "load_start")).alias("load_step"),
        (good & (role == "timer")).any().over(group).alias("has_timer"),
    )
    is_timer, is_end, is_load_end = role == "timer", role == "end", role == "load_end"
    duration = (
        pl.when(is_timer)
        .then(pl.col("dur_ms_value") / 1000.0)
        .when(is_end | is_load_end)
        .then(pl.col("dur_s_value"))
    )
    frame = frame.with_columns(
        pl.when(is_timer | is_end)
        .then(pl.col("save_step"))
        .when(is_load_end)
        .then(pl.col("load_step"))
        .otherwise(pl.col("step"))
        .alias("step"),
        pl.when(is_timer).then(pl.col("save_path")).otherwise(pl.col("path")).alias("path"),
        pl.when(is_timer)
        .then(
            pl.col("start_ts") + pl.duration(microseconds=(duration * 1e6).round().cast(pl.Int64))
        )
        .otherwise(pl.col("ts"))
        .alias("ts"),
        (pl.col("ts_inferred") | (is_timer & pl.col("start_ts").is_not_null())).alias(
            "ts_inferred"
        ),
        duration.alias("duration_s"),
    )
    superseded = good & (role == "saved") & pl.col("has_timer")
    return frame.filter(~superseded)


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
        *[
            (
                pl.col(name).is_not_null()
                & ~(pl.col(f"{name}_value").is_finite() & (pl.col(f"{name}_value") >= 0)).fill_null(
                    value=False
                ),
                pl.format(f"non-numeric or negative {label} '{{}}'", pl.col(name)),
            )
            for name, label in (("dur_ms", "save-checkpoint time"), ("dur_s", "duration"))
        ],
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
    "dur_ms": "time after 'save-checkpoint ...:'",
    "dur_s": "'in <x> seconds'",
}
