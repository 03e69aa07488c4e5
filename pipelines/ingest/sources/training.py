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
    straggler   [2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | ...
                  Rank=76 Node=h100-001-253-012 Score=0.94

(Megatron-LM's ``training_log``, ``checkpointing.py`` and ``megatron/core/timers.py``, NeMo's
Megatron path and Megatron-DeepSpeed included, with or without the ``[date]`` prefix of newer
versions, the elapsed time in ``(ms)`` or, BigScience's Megatron-DeepSpeed, ``(s)``, and the
``global batch size`` as ``global_batch``; per-rank straggler reports of Megatron-Core and of
NVIDIA's resiliency extension, one row per rank and figure
(:mod:`pipelines.ingest.sources.training_straggler`); torchtitan's metric line, with or without
the ``[rankN]:`` prefix torchrun's ``--tee`` adds (``rank``), and its
``components/checkpoint.py`` messages; the Hugging Face ``Trainer``'s printed log dict, which
names its step only in transformers 3.x (``"step": 500``), and its checkpoint save, whose step is
the ``checkpoint-<n>`` folder's.) Whatever precedes the marker (a rank tag, a
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
    in an earlier read has a null ``ts``, and a timer whose start came earlier has no ``ts`` (its
    step comes from ``successfully saved`` when that line is in its read; its ``duration_s``
    stays). ``stg_training_events`` repairs both from the earlier rows of the file (the nearest
    earlier row's printed time; the latest earlier save start of the same step plus the
    duration). A read that ends between ``successfully saved`` and its timer (printed within
    milliseconds of each other) leaves two save ends for that save: not repaired.

Many logs at once
    :func:`parse_many` reads a chunk of logs (the ingest's reads of one source) in one polars
    plan and gives each file what :func:`parse` gives it alone: nothing carries from one file to
    the next.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import polars as pl

from pipelines.ingest.sources.common import (
    UTC_TS,
    Check,
    Parsed,
    empty_file_reject,
    empty_rows,
    iso_utc,
    parsed_from,
    with_reasons,
)
from pipelines.ingest.sources.training_many import pair_saves, split_many
from pipelines.ingest.sources.training_straggler import expand, with_block

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
    "job_named": pl.String(),
    "detail": pl.String(),
    "global_batch": pl.Int64(),
    "rank": pl.Int32(),
    "metric": pl.String(),
    "value": pl.Float64(),
}
"""Columns of the rows :func:`parse` returns, in order (docs/goodput.md §1)."""

EVENTS: tuple[str, ...] = (
    "step",
    "checkpoint_save_start",
    "checkpoint_save_end",
    "checkpoint_load_start",
    "checkpoint_load_end",
    "train_start",
    "launch",
    "train_end",
    "job_banner",
    "job_cancelled",
    "task_exit",
    "straggler",
)
"""Events a row can carry. ``train_start`` is the training loop starting, after set-up and any
checkpoint load: Megatron's ``[before the start of training step] datetime: <date>`` banner
(``print_datetime`` in ``megatron/training/training.py``; no step) and torchtitan's ``Training
starts at step N`` (``train.py``; the step about to run, so the resume step is ``N - 1``).

The other five mark runs, so that a log without a scheduler record (and an appended Slurm output
holding several jobs) can be cut into its attempts (docs/goodput.md §1, "Runs"): ``launch`` a
run's start banner (Megatron's ``using world size:`` and its ``[after megatron is initialized]
datetime: <date>``, torchtitan's ``Starting job:``, the
``Trainer``'s ``***** Running training *****``), ``train_end`` the training loop finishing
(Megatron's ``[after training is done] datetime:``, torchtitan's ``Training completed``, the
``Trainer``'s ``Training completed. Do not forget ...``), and three Slurm lines (``framework``
``slurm``): ``job_banner`` a job id the job script prints (``SLURM_JOB_ID=1234``,
``SLURM_JOBID: 1234``), ``job_cancelled`` slurmstepd's ``*** JOB 1234 ON host CANCELLED AT <date>
[DUE TO ...] ***`` (or ``STEP 1234.0``), ``task_exit`` srun's ``srun: error: host: task 0: Exited
with exit code 1`` (or ``Terminated``, ``Killed``). ``job_named`` is the job id such a line names;
``detail`` what it says of the end (``DUE TO TIME LIMIT``, ``Exited with exit code 1``).

``straggler`` rows are per-rank figures of a straggler report (Megatron-Core's
``StragglerDetector``, NVRx's reports): ``metric``, ``value`` and ``rank`` say what each is
about, and one report line may give several (:mod:`pipelines.ingest.sources.training_straggler`)."""

FRAMEWORKS: tuple[str, ...] = ("megatron", "torchtitan", "hf_trainer", "slurm", "nvrx")
"""Frameworks whose lines are read (PyTorch Lightning: not yet); ``slurm`` is the scheduler's own
lines in a job's output (job id banners, cancels, task exits), ``nvrx`` the NVIDIA resiliency
extension's straggler reports (printed through NeMo or Megatron-Bridge)."""

_FIELDS = (
    "step",
    "path",
    "loss",
    "ms",
    "unit",
    "dur_ms",
    "dur_s",
    "job",
    "detail",
    "gbs",
    "rank",
    "node",
    "score",
)
"""Text fields a format may extract: step, checkpoint path, loss, step time (``ms``, in the unit
``unit`` says: ``ms``, or ``s`` for Megatron-DeepSpeed's ``elapsed time per iteration (s)``), a
save's duration in milliseconds (Megatron's timer) or seconds (torchtitan), the job id a Slurm
line names and what it says of the end, Megatron's global batch size, the rank a line is about
(torchtitan's ``[rankN]:`` tag, NVRx's ``Rank=``), NVRx's ``Node=`` and ``Score=``."""


class _Format(NamedTuple):
    """One kind of line: how it is recognised and how its fields are cut.

    ``marker`` decides that a line is in scope (looks like this kind); ``fields`` maps a field of
    :data:`_FIELDS` to a regex whose first group is its text; ``required`` names the fields
    whose absence makes the line a reject; ``end`` is a regex the line must match to count as
    complete (``None``: no such check) and ``end_hint`` says what was expected. ``role`` tells
    how the line takes part in a save or load (:func:`pair_saves`): ``start``, ``saved``
    (Megatron's ``successfully saved``), ``timer``, ``end`` (a save end with its own time),
    ``load_start``, ``load_end``; ``carry`` whether an unprinted time is carried forward;
    ``date_after`` whether the line's time is the first date after its marker (a banner that
    prints ``datetime: <date>``) rather than before it.
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
    date_after: bool = False


_ITERATION = r"(?:^|\s)iteration\s+([^\s/|]+)\s*/"
_SECONDS = r"\bin\s*([^\s]+?)\s+seconds\b"
_RANK_TAG = r"\[rank(\d+)\]:"

_SLURM_JOB = r"(\d+(?:_\d+)?)"

_OWN_FORMATS: tuple[_Format, ...] = (
    _Format(
        "megatron",
        "step",
        marker=r"(?:^|\s)iteration\s+[^\s/|]+\s*/",
        fields={
            "step": _ITERATION,
            "ms": r"elapsed time per iteration \((?:ms|s)\):\s*([^\s|]+)",
            "unit": r"elapsed time per iteration \((ms|s)\):",
            "loss": r"\blm loss:\s*([^\s|]+)",
            "gbs": r"\bglobal batch size:\s*([^\s|]+)",
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
        "megatron",
        "train_start",
        marker=r"\[before the start of training step\] datetime:",
        fields={},
        required=(),
        date_after=True,
    ),
    _Format(
        "torchtitan",
        "train_start",
        marker=r"\bTraining starts at step\b",
        fields={"step": r"\bTraining starts at step\s+([^\s.,]+)"},
        required=("step",),
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
    # the lines that mark runs (EVENTS): no earlier marker can match them
    _Format(
        "slurm",
        "job_cancelled",
        marker=r"\berror: \*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT\b",
        fields={
            "job": r"\*\*\* (?:JOB|STEP) " + _SLURM_JOB,
            "detail": r"CANCELLED AT \S+\s+(DUE TO [^*]*?)\s*\*\*\*",
        },
        required=("job",),
        date_after=True,
    ),
    _Format(
        "slurm",
        "task_exit",
        marker=r"\bsrun: error: \S+: tasks? [\d,\-]+: (?:Exited with exit code|Terminated|Killed)",
        fields={"detail": r"\bsrun: error: \S+: tasks? [\d,\-]+: (.*?)\s*$"},
        required=(),
    ),
    _Format(
        "slurm",
        "job_banner",
        marker=r"\bSLURM_JOB_?ID\s*[=:]\s*\d",
        fields={"job": r"\bSLURM_JOB_?ID\s*[=:]\s*" + _SLURM_JOB},
        required=("job",),
    ),
    _Format("megatron", "launch", marker=r"(?:^|\s)using world size:\s*\d", fields={}, required=()),
    _Format(
        "megatron",
        "launch",
        marker=r"\[after megatron is initialized\] datetime:",
        fields={},
        required=(),
        date_after=True,
    ),
    _Format(
        "megatron",
        "train_end",
        marker=r"\[after training is done\] datetime:",
        fields={},
        required=(),
        date_after=True,
    ),
    _Format("torchtitan", "launch", marker=r"\bINFO - Starting job:", fields={}, required=()),
    _Format(
        "hf_trainer",
        "train_end",
        marker=r"\bTraining completed\. Do not forget to share your model",
        fields={},
        required=(),
    ),
    _Format(
        "torchtitan", "train_end", marker=r"\bINFO - Training completed\s*$", fields={}, required=()
    ),
    _Format(
        "hf_trainer",
        "launch",
        marker=r"\*\*\*\*\* Running training \*\*\*\*\*",
        fields={},
        required=(),
    ),
    _Format(
        "hf_trainer",
        "checkpoint_load_end",
        marker=r"\bContinuing training from global step\s",
        fields={"step": r"\bContinuing training from global step\s+(\S+)"},
        required=("step",),
    ),
)

_STRAGGLER_FORMATS: tuple[_Format, ...] = (
    _Format(
        "megatron",
        "straggler",
        marker=r"\|\s*MnRtt/Rnk:",
        fields={},
        required=(),
        end=r"\bMxEtpt/Rnk:\s*\S+\s*$",
        end_hint="'MxEtpt/Rnk: <value>TF/<rank>' at the end",
        role="minmax",
        carry=True,
    ),
    _Format(
        "megatron",
        "straggler",
        marker=r"\^\^\^\^\s*(?:Bottom|Top)\s+\d+\s+Ranks with (?:lowest|highest)\s+Etpt\(TF\):",
        fields={},
        required=(),
        end=r",\s*$",
        end_hint="',' after the last '<value>/<rank>'",
        role="ranklist",
        carry=True,
    ),
    _Format(
        "nvrx",
        "straggler",
        marker=r"(?:^|\s)Rank=\S+\s+Node=\S+\s+Score=",
        fields={
            "rank": r"(?:^|\s)Rank=(\S+)\s+Node=",
            "node": r"\sNode=(\S+)\s+Score=",
            "score": r"\sScore=(\S+)",
        },
        required=("rank", "node", "score"),
        end=r"\sScore=\S+\s*$",
        end_hint="'Score=<score>' at the end",
        role="score",
        carry=True,
    ),
    _Format(
        "nvrx",
        "straggler",
        marker=r"\bSTRAGGLER DETECTION WARNING:.*\bAffected ranks:",
        fields={"detail": r"STRAGGLER DETECTION WARNING:\s*(.*?)\s*Affected ranks:"},
        required=(),
        end=r"Affected ranks:\s*\[[^\]]*\]\s*$",
        end_hint="'[<ranks>]' at the end",
        role="warning",
        carry=True,
    ),
)
"""Straggler report lines (:mod:`pipelines.ingest.sources.training_straggler`): Megatron-Core's
``StragglerDetector`` min/max line and its Bottom/Top ranks, NVRx's score lines and warning."""

FORMATS: tuple[_Format, ...] = tuple(
    f._replace(fields={**f.fields, "rank": _RANK_TAG}) if f.framework == "torchtitan" else f
    for f in (*_OWN_FORMATS, *_STRAGGLER_FORMATS)
)
"""The kinds of line read, in order of precedence (the first whose marker matches wins). Every
torchtitan line takes ``rank`` from torchrun's ``[rankN]:`` tag when it has one."""

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
    (``line_no`` 0). This is :func:`parse_many` of one file.

    Examples
    --------
    >>> line = b" iteration      201/  250000 | elapsed time per iteration (ms): 1250.0 |"
    >>> parse(line, source_file="train.log").rows.select("event", "step", "step_time_s").row(0)
    ('step', 201, 1.25)
    """
    return parse_many([(data, source_file, {"job": job, "host": host})])[0]


OPTIONS: frozenset[str] = frozenset({"job", "host"})
"""The keyword options of :func:`parse` (what ``parse_many`` accepts in a file's options)."""


def parse_many(files: list[tuple[bytes, str, dict[str, Any]]]) -> list[Parsed]:
    """Parse several training logs in one pass: one polars plan over all their lines.

    Parameters
    ----------
    files
        ``(data, source_file, options)`` per log, ``options`` holding the keyword options of
        :func:`parse` (:data:`OPTIONS`: ``job``, ``host``).

    Returns
    -------
    list[Parsed]
        One result per file, in order, equal to :func:`parse` of that file alone.

    Raises
    ------
    TypeError
        When a file's options name one :func:`parse` does not take (as calling it would).

    Notes
    -----
    A plan costs milliseconds whatever a file's size, so a fleet's logs are parsed together:
    their lines are one frame with the index of their file, and what a file carries from line to
    line (the time of the nearest earlier line that prints one, a save's group of lines) stops
    at the file's first line.
    """
    out: list[Parsed | None] = [None] * len(files)
    kept: list[int] = []
    for i, (data, source_file, options) in enumerate(files):
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise TypeError(f"parse() got unexpected keyword arguments: {', '.join(unknown)}")
        if data:
            kept.append(i)
        else:
            out[i] = Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    if kept:
        lines = split_many([files[i][0] for i in kept])
        n_lines = np.bincount(lines["_file"].to_numpy(), minlength=len(kept))
        checked = expand(_checked(lines))
        per_file: dict[str, list[Any]] = {
            "source_file": [files[i][1] for i in kept],
            "job_id": [
                files[i][2].get("job")
                if files[i][2].get("job") is not None
                else job_from_name(files[i][1])
                for i in kept
            ],
            "host": [files[i][2].get("host") for i in kept],
        }
        index = checked["_file"]
        rows = checked.with_columns(
            pl.col("step").cast(pl.Int64, strict=False),
            pl.when(pl.col("unit") == "s")
            .then(pl.col("ms_value"))
            .otherwise(pl.col("ms_value") / 1000.0)
            .alias("step_time_s"),
            pl.col("loss_value").alias("loss"),
            pl.col("path").alias("checkpoint_path"),
            pl.col("job").alias("job_named"),
            pl.col("ts").cast(UTC_TS),
            pl.col("gbs").cast(pl.Int64, strict=False).alias("global_batch"),
            pl.col("rank").cast(pl.Int32, strict=False),
            *[
                pl.Series(name, values, dtype=pl.String, strict=False).gather(index)
                for name, values in per_file.items()
            ],
        ).with_columns(pl.coalesce(pl.col("node"), pl.col("host")).alias("host"))
        whole = parsed_from(rows, schema=SCHEMA, source_file=pl.col("source_file"), n_ignored=0)
        good = rows["reason"].is_null().to_numpy()
        files_of = index.to_numpy()
        # a straggler line may give several rows: lines are counted by their first row
        first = rows.select(
            (pl.col("line_no") != pl.col("line_no").shift(1))
            | (pl.col("_file") != pl.col("_file").shift(1))
        ).to_series()
        first_of_line = first.fill_null(value=True).to_numpy()
        n_rows = np.bincount(files_of[good], minlength=len(kept))
        n_good_lines = np.bincount(files_of[good & first_of_line], minlength=len(kept))
        n_rejects = np.bincount(files_of[~good], minlength=len(kept))
        row_at = np.concatenate(([0], np.cumsum(n_rows)))
        reject_at = np.concatenate(([0], np.cumsum(n_rejects)))
        for k, i in enumerate(kept):
            out[i] = Parsed(
                whole.rows.slice(int(row_at[k]), int(n_rows[k])),
                whole.rejects.slice(int(reject_at[k]), int(n_rejects[k])),
                int(n_lines[k] - n_good_lines[k] - n_rejects[k]),
            )
    return [p for p in out if p is not None]


def _checked(lines: pl.DataFrame) -> pl.DataFrame:
    """Return the in-scope lines of ``lines`` (of one file or several) with their fields.

    ``lines`` holds ``_file``, ``line_no``, ``line`` and ``utf8_ok``, a file's lines together
    and in order. The result keeps ``_file``, ``line_no``, ``line`` and ``reason`` (null for a
    good line) with the fields and the carried and paired times (:func:`pair_saves`).
    """
    many = lines.height >= MANY_LINES
    kinds, fields, ts_text, *rest = _line_stages(many=many)
    frame = lines.lazy().with_columns(kinds).with_columns(fields).with_columns(ts_text).collect()
    frame = with_block(frame, score_kind=_kind_of_role("score"))
    if frame.select(_CROSSING.any()).item():
        frame = frame.with_columns(
            pl.when(_CROSSING).then(_prefix_date()).otherwise(pl.col("ts_text")).alias("ts_text")
        )
    lazy = frame.lazy()
    for stage in rest:
        lazy = lazy.with_columns(stage)
    checked = with_reasons(lazy.filter(pl.col("kind").is_not_null()), _checks(many=many)).lazy()
    for stage in pair_saves():
        checked = checked.with_columns(stage)
    return checked.filter(~pl.col("superseded")).collect()


def _kind_of_role(role: str) -> int:
    """Return the index in :data:`FORMATS` of the format with this ``role``."""
    return next(i for i, f in enumerate(FORMATS) if f.role == role)


MANY_LINES = 20_000
"""Lines from which each regex runs only on the lines it is for (one search for any marker first,
a format's own marker then looked for in the lines holding one, its fields cut from its own
lines); below, the extra steps cost more than they save (the results are the same)."""


@cache
def _line_stages(*, many: bool) -> tuple[list[pl.Expr], ...]:
    """Return the steps that give every line its format, fields and times (:func:`_checked`).

    A line's ``kind`` is the index in :data:`FORMATS` of the first format whose marker it holds
    (null: out of scope); ``carried`` is the time of the nearest earlier line of the same file
    that prints one (a valid date), for Megatron's checkpoint lines.
    """
    line = pl.col("line")
    candidate = line
    if many:
        candidate = pl.when(line.str.contains("|".join(f"(?:{f.marker})" for f in FORMATS))).then(
            line
        )
    kind = pl.coalesce(
        [
            pl.when(candidate.str.contains(f.marker)).then(pl.lit(i, pl.Int8))
            for i, f in enumerate(FORMATS)
        ]
    )
    fields = [
        *[
            pl.col("kind")
            .replace_strict(
                list(range(len(FORMATS))),
                [getattr(f, name) for f in FORMATS],
                default=None,
                return_dtype=dtype,
            )
            .alias(name)
            for name, dtype in (
                ("framework", pl.String),
                ("event", pl.String),
                ("role", pl.String),
                ("carry", pl.Boolean),
                ("date_after", pl.Boolean),
            )
        ],
        _by_kind(lambda f, text: text.str.find(f.marker), many=many).alias("marker_at"),
        line.str.extract(_DATETIME, 1).alias("date"),
        line.str.find(_DATETIME).alias("date_at"),
        *[_field(name, many=many).alias(name) for name in _FIELDS],
    ]
    # a row's time is the first date before its marker (the line's first date when it ends
    # before the marker: _CROSSING otherwise); any other line's, its first date
    ts_text = (
        pl.when(pl.col("kind").is_null())
        .then(pl.col("date"))
        .when(pl.col("date_at") < pl.col("marker_at"))
        .then(pl.col("date"))
        .when(pl.col("date_after"))
        .then(pl.col("date"))
    )
    values = [
        iso_utc(pl.col("ts_text").str.replace(",", ".", literal=True)).alias("ts"),
        *[
            _number(pl.col(name)).alias(f"{name}_value")
            for name in ("ms", "dur_ms", "dur_s", "loss", "score")
        ],
    ]
    ts, file = pl.col("ts"), pl.col("_file")
    same_file = pl.when(ts.is_not_null()).then(file).forward_fill().shift(1) == file
    carried = pl.when(same_file).then(ts.forward_fill().shift(1))
    return (
        [kind.alias("kind")],
        fields,
        [ts_text.alias("ts_text")],
        values,
        [carried.alias("carried")],
    )


_CROSSING = (
    pl.col("kind").is_not_null()
    & (pl.col("date_at") < pl.col("marker_at"))
    & (pl.col("date_at") + pl.col("date").str.len_bytes() > pl.col("marker_at"))
)
"""A row whose line's first date starts before its marker and runs into it (the byte offsets of
``str.find``). None of today's markers can start inside a date (each starts with a letter
other than ``T``, ``{`` or a space before a letter), so the date before the marker is then
looked for in the text before the marker (:func:`_prefix_date`) only when this is ever true."""


def _prefix_date() -> pl.Expr:
    """Return the first date in the text before each row's marker (null for other lines)."""
    prefix = _by_kind(lambda f, text: text.str.extract(f"^(.*?){f.marker}", 1))
    return prefix.str.extract(_DATETIME, 1)


def _by_kind(value: Callable[[_Format, pl.Expr], pl.Expr], *, many: bool = False) -> pl.Expr:
    """Give each line the expression ``value`` builds for its format (:data:`FORMATS`).

    ``value`` gets the format and the line (:func:`_of_kind`).
    """
    return pl.coalesce(
        [
            pl.when(pl.col("kind") == i).then(value(f, _of_kind(i, many=many)))
            for i, f in enumerate(FORMATS)
        ]
    )


def _of_kind(i: int, *, many: bool) -> pl.Expr:
    """Return the line, or with ``many`` the line where it is of format ``i`` (else null)."""
    return pl.when(pl.col("kind") == i).then(pl.col("line")) if many else pl.col("line")


def _field(name: str, *, many: bool) -> pl.Expr:
    """Cut the text of field ``name`` from each line (null where its format has none)."""
    parts = [
        pl.when(pl.col("kind") == i).then(_of_kind(i, many=many).str.extract(f.fields[name], 1))
        for i, f in enumerate(FORMATS)
        if name in f.fields
    ]
    return pl.coalesce(parts) if parts else pl.lit(None, pl.String)


def _number(text: pl.Expr) -> pl.Expr:
    """Read a printed number (``2.373574E+00``, ``139113.4``, ``nan``); null otherwise."""
    return text.str.to_lowercase().cast(pl.Float64, strict=False)


@cache
def _checks(*, many: bool) -> list[Check]:
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
                    (kind == i) & ~_of_kind(i, many=many).str.contains(f.end).fill_null(value=True),
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
        *_fail_slow_checks(),
    ]
    return checks


def _fail_slow_checks() -> list[Check]:
    """Return the checks of global batch size, rank, NVRx score and NVRx header."""
    gbs, rank, score = pl.col("gbs"), pl.col("rank"), pl.col("score")
    in_range = pl.col("score_value").is_between(0.0, 1.0).fill_null(value=False)
    return [
        (
            gbs.is_not_null() & ~gbs.str.contains(r"^\d+$"),
            pl.format("non-numeric global batch size '{}'", gbs),
        ),
        (
            rank.is_not_null() & ~rank.str.contains(r"^\d{1,9}$"),
            pl.format("non-numeric rank '{}'", rank),
        ),
        (
            score.is_not_null() & pl.col("score_value").is_null(),
            pl.format("non-numeric NVRx score '{}'", score),
        ),
        (score.is_not_null() & ~in_range, pl.format("NVRx score '{}' outside 0-1", score)),
        (
            (pl.col("kind") == _kind_of_role("score")) & pl.col("nvrx_block").is_null(),
            "NVRx score line with no 'GPU relative performance:' or 'GPU individual "
            "performance:' header before it in the file",
        ),
    ]


_FIELD_NAMES = {
    "step": "step",
    "path": "checkpoint path",
    "loss": "loss",
    "ms": "'elapsed time per iteration (ms)'",
    "dur_ms": "time after 'save-checkpoint ...:'",
    "dur_s": "'in <x> seconds'",
    "job": "job id",
    "detail": "detail",
    "rank": "'Rank='",
    "node": "'Node='",
    "score": "'Score='",
}
