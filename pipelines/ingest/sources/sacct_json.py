"""Turn ``sacct --json`` documents into the ``--parsable2`` text of the same jobs.

``sacct --json`` (Slurm 21.08 and later) prints one document, ``{"meta": ..., "jobs": [...]}``,
each job with its ``steps``; slurmrestd's ``/slurmdb/v0.0.NN/jobs`` answers with the same job
objects (both come from Slurm's data_parser plugin). The shapes moved between data_parser
versions; each field below is read in every shape seen:

- a number is either bare or ``{"set": ..., "infinite": ..., "number": N}`` (unset: null);
- ``state.current`` is a word (v0.0.39) or a list of flags whose first is the base state;
- ``exit_code`` is ``{"status", "return_code", "signal": {"id"}}`` (v0.0.40 and later) or
  ``{"status", "return_code", "signal": {"signal_id"}}`` (v0.0.37 to v0.0.39, Slurm 21.08 to 23.11,
  where a signalled process has ``return_code`` null or -127). Those older versions print every
  normal exit as ``SUCCESS`` with ``return_code`` 0 (Slurm's dumper tests ``WIFEXITED`` only):
  a job that exited 1 reads ``0:0`` there, its ``State`` (``FAILED``) is kept;
- a step's id is ``{"job_id", "step_id"}`` (v0.0.39), the text ``"58.batch"`` (v0.0.40 and later)
  or ``"batch"`` / ``0`` beside ``"job_id"`` (v0.0.37, v0.0.38).

Each job becomes the allocation line, each step a line after it, with the columns
:data:`COLUMNS`; the ``--parsable2`` reader then applies the same checks to both inputs. The
conversion is a module of its own so the reader stays one path: it never reads a field the text
form has no column for.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

COLUMNS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "Cluster",
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
    "ElapsedRaw",
    "State",
    "ExitCode",
    "Restarts",
)
"""The ``--format`` the document is written out as."""
_NO_VAL = 0xFFFFFFFE
"""Slurm's 32-bit "no value" (``NO_VAL``); it and ``INFINITE`` (one more) mean unset."""
SEPARATOR = "\x1f"
"""The delimiter of the written text: no job field holds it (it is replaced where one does)."""


def is_json(data: bytes) -> bool:
    """Return whether ``data`` is a JSON document (its first non-blank byte opens an object)."""
    return data.lstrip()[:1] == b"{"


def to_parsable(data: bytes) -> tuple[bytes, str | None]:
    """Return the ``--parsable2`` text of a ``sacct --json`` document, or why it cannot be read.

    The text has a header line then one line per job and per step, in document order (line 2 is
    the first job); the reason is a one-line text (then the bytes are empty) for a document that
    is not JSON, or not an object with a ``jobs`` list.
    """
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return b"", f"sacct --json document does not parse: {error}"
    jobs = document.get("jobs") if isinstance(document, dict) else None
    if not isinstance(jobs, list):
        return b"", "sacct --json document has no 'jobs' list (expected the output of sacct --json)"
    lines = [SEPARATOR.join(COLUMNS)]
    for job in jobs:
        if isinstance(job, dict):
            lines.extend(_job_lines(job))
        else:  # one line whose JobID names the problem: the reader rejects it with that text
            entry = _text(json.dumps(job))[:60]
            lines.append(_line({"JobID": f"(jobs entry {entry} is not an object)"}))
    return ("\n".join(lines) + "\n").encode(), None


def _job_lines(job: dict[str, Any]) -> list[str]:
    """Return the allocation line of one job and the lines of its steps."""
    job_id = _job_id(job)
    tres = _get(job, "tres", "allocated")
    allocation = {
        "JobID": job_id,
        "JobIDRaw": _text(_number(job.get("job_id"))),
        "Cluster": _text(job.get("cluster")),
        "JobName": _text(job.get("name")),
        "Partition": _text(job.get("partition")),
        "Account": _text(job.get("account")),
        "User": _text(job.get("user")),
        "AllocNodes": _text(_number(job.get("allocation_nodes"))),
        "AllocTRES": _tres(tres),
        "NodeList": _text(job.get("nodes")),
        "Submit": _time(_get(job, "time", "submission")),
        **_run_fields(job),
        "Restarts": _text(_number(job.get("restart_cnt"))),
    }
    lines = [_line(allocation)]
    for step in job.get("steps") or []:
        if not isinstance(step, dict):
            continue
        step_id = _step_id(_get(step, "step", "id"))
        start = _time(_get(step, "time", "start"))
        fields = {
            "JobID": f"{job_id}.{step_id}",
            "JobIDRaw": f"{allocation['JobIDRaw']}.{step_id}",
            "Cluster": allocation["Cluster"],
            "JobName": _text(_get(step, "step", "name")),
            "Account": allocation["Account"],
            "AllocNodes": _text(_number(_get(step, "nodes", "count"))),
            "AllocTRES": _tres(_get(step, "tres", "allocated")),
            "NodeList": _text(_get(step, "nodes", "range")),
            "Submit": start,  # sacct prints a step's start as its submit time
            **_run_fields(step),
        }
        lines.append(_line(fields))
    return lines


def _run_fields(record: dict[str, Any]) -> dict[str, str]:
    """Return Start, End, ElapsedRaw, State and ExitCode of a job or a step."""
    state = record.get("state")
    current = state.get("current") if isinstance(state, dict) else state
    if isinstance(current, list):
        current = current[0] if current else ""
    exit_code = record.get("exit_code")
    exit_text = ""
    if isinstance(exit_code, dict):
        code = _number(exit_code.get("return_code"))
        signal = _number(_get(exit_code, "signal", "id"))
        if signal is None:  # data_parser v0.0.37 to v0.0.39 (Slurm 21.08 to 23.11)
            signal = _number(_get(exit_code, "signal", "signal_id"))
        status = exit_code.get("status")
        words = status if isinstance(status, list) else [status]
        if signal is None and words and words[0] in ("SUCCESS", "ERROR"):
            signal = 0  # an exit, not a signal: sacct prints <code>:0
        if signal and (code is None or code < 0):
            code = 0  # a signalled job has no return code (unset, or -127): sacct prints 0:<sig>
        exit_text = f"{code}:{signal}" if code is not None and signal is not None else ""
    return {
        "Start": _time(_get(record, "time", "start")),
        "End": _time(_get(record, "time", "end")),
        "ElapsedRaw": _text(_number(_get(record, "time", "elapsed"))),
        "State": _text(current),
        "ExitCode": exit_text,
    }


def _job_id(job: dict[str, Any]) -> str:
    """Return the JobID sacct prints: ``123``, ``123_4`` (array task), ``123+1`` (het part)."""
    own = _text(_number(job.get("job_id")))
    array_job = _number(_get(job, "array", "job_id"))
    task = _number(_get(job, "array", "task_id"))
    if array_job and task is not None:
        return f"{array_job}_{task}"
    if array_job and _get(job, "array", "task"):
        return f"{array_job}_[{_get(job, 'array', 'task')}]"
    het_job = _number(_get(job, "het", "job_id"))
    offset = _number(_get(job, "het", "job_offset"))
    if het_job and offset is not None:
        return f"{het_job}+{offset}"
    return own


def _step_id(value: Any) -> str:
    """Return a step's name after the job id: ``batch``, ``extern``, ``0``..."""
    if isinstance(value, dict):
        return _text(value.get("step_id"))
    text = _text(value)
    return text.split(".", 1)[1] if "." in text else text


def _tres(entries: Any) -> str:
    """Return a TRES list as sacct prints it: ``cpu=8,mem=4M,gres/gpu=2``."""
    parts = []
    for entry in entries if isinstance(entries, list) else []:
        kind, name, count = entry.get("type"), entry.get("name"), _number(entry.get("count"))
        if not kind or count is None or count < 0:  # energy is -2 when not measured
            continue
        key = f"{kind}/{name}" if name else kind
        parts.append(f"{key}={count}M" if kind == "mem" else f"{key}={count}")
    return ",".join(parts)


def _time(value: Any) -> str:
    """Return a Unix time as sacct's UTC ISO text; 0, unset or Slurm's NO_VAL is ``Unknown``.

    A job cancelled before it started has ``time.start`` 4294967294 (``NO_VAL``, 2106).
    """
    seconds = _number(value)
    if not seconds or seconds >= _NO_VAL:
        return "Unknown"
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _number(value: Any) -> int | None:
    """Return a bare number, or the ``number`` of a set ``{"set", "number"}`` (None if unset)."""
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _get(record: dict[str, Any], *keys: str) -> Any:
    """Return a nested value, None where a level is missing."""
    value: Any = record
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _text(value: Any) -> str:
    """Return a value as a field's text (empty for None), without separators or line breaks."""
    if value is None:
        return ""
    return str(value).replace(SEPARATOR, " ").replace("\n", " ").replace("\r", " ")


def _line(fields: dict[str, str]) -> str:
    """Return one line with :data:`COLUMNS`, empty where ``fields`` has none."""
    return SEPARATOR.join(fields.get(column, "") for column in COLUMNS)
