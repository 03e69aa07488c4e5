"""Other shapes of the sacct dumps: ``--parsable2`` without JobIDRaw, ``sacct --json``, het jobs.

With :attr:`SynthConfig.sacct_format` set, every daily dump is written in one other shape than the
reference one (:func:`synth.formats.sacct_files` builds the reference lines first; this module
rewrites them, so the same jobs, attempts, steps and values land in every shape):

``"no_jobidraw"``
    ``sacct --parsable2 --format=JobID,JobName,...`` without ``JobIDRaw``, as a site's Slurm 23
    script often asks for: an array task is known only as ``<array id>_<task>``, a later component
    of a heterogeneous job as ``<het id>+<offset>``.
``"json"``
    ``sacct --json`` documents (``sacct_<day>.json``), in the shape of the data_parser version
    :attr:`SynthConfig.sacct_json_version` names (:data:`JSON_VERSIONS`): ``v0.0.37`` (Slurm 21.08,
    22.05: bare numbers, ``state.current`` a word, ``signal.signal_id``, a step's id beside its job
    id), ``v0.0.39`` (23.02, 23.11: ``task_id`` a ``{"set", "number"}``, the step id an object,
    a signalled return code -127) or ``v0.0.41`` (24.05, 24.11: numbers and lists as printed
    since v0.0.40, ``signal.id``, the step id ``"123.batch"``). Up to v0.0.39 Slurm prints
    every normal exit as ``SUCCESS`` with return code 0, so a failed job's exit code is lost
    there (its State is not); the documents do so too. A document carries no restart count and
    no ``by <uid>`` of a cancel, and names the cluster (:data:`CLUSTER`) on every job.

The hostile line one field short becomes, in a document, a ``jobs`` entry that is not an object
(the line's text): a reject there too. Both shapes also print the tasks of an array not started by
the end of a day, in that day's dump,
as one pending record ``<array id>_[<tasks>]`` (``None assigned``, ``Unknown`` start), the way
sacct lists an array's pending remainder.

:attr:`SynthConfig.sacct_het_share` writes a share of the multi-node jobs that ran once and were
not interrupted as heterogeneous jobs of two components (``<id>+0`` on the first half of the
nodes with the batch step, ``<id>+1`` on the rest, under a job id of its own above every other
one): the warehouse keys each component as a job of its own, so the truth lists them
(``slurm_dumps.het_jobs``) and never places an interruption on one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import hostlist
import numpy as np

from synth.fleet import DAY_S
from synth.workload import ACCOUNTS, USERS

SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts"
)
"""The reference ``--format`` (:data:`synth.formats.SACCT_HEADER`)."""

if TYPE_CHECKING:
    from synth.config import SynthConfig
    from synth.workload import Attempt, Jobs

CLUSTER = "alpha"
"""The cluster a ``sacct --json`` document names on every job."""
_RELEASE = {
    "v0.0.37": ("22", "05", "9"),
    "v0.0.39": ("23", "11", "10"),
    "v0.0.41": ("24", "05", "3"),
}
_SIGNAL_NAMES = {9: "Killed", 15: "Terminated"}
_INTERRUPTED = frozenset({"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"})
_HET_STREAM = 0x4E7


@dataclass
class HetPlan:
    """Jobs written as het jobs: job index -> (id of component 1, nodes of component 0)."""

    split: dict[int, tuple[int, int]] = field(default_factory=dict)

    def truth(self, jobs: Jobs, config: SynthConfig) -> list[dict[str, Any]]:
        """Return the ``het_jobs`` entries of the truth: the job, its components and their keys."""
        out = []
        for j, (other_id, _) in sorted(self.split.items()):
            raw = str(jobs.raw_id[j])
            other_key = f"{raw}+1" if config.sacct_format == "no_jobidraw" else str(other_id)
            out.append(
                {
                    "job_id_raw": raw,
                    "components": [
                        {"job_id": f"{raw}+0", "job_id_raw": raw, "key": raw},
                        {"job_id": f"{raw}+1", "job_id_raw": str(other_id), "key": other_key},
                    ],
                }
            )
        return out


def plan_het(config: SynthConfig, jobs: Jobs, attempts: list[Attempt]) -> HetPlan:
    """Pick the jobs written as heterogeneous ones (a generator of their own: no other draw moves).

    Candidates: Slurm jobs of two nodes or more, not array tasks, that ran exactly once and
    ended in no interruption state.
    """
    plan = HetPlan()
    if not config.sacct_het_share:
        return plan
    runs: dict[int, list[Attempt]] = {}
    for a in attempts:
        runs.setdefault(a.job, []).append(a)
    first_free = max(jobs.raw_id, default=1000) + 2000
    rng = np.random.default_rng([config.seed, _HET_STREAM])
    for j in sorted(runs):
        (only, *more) = runs[j]
        if more or len(only.nodes) < 2 or "_" in jobs.label[j]:
            continue
        if only.carrier or only.state.split(" ")[0] in _INTERRUPTED:
            continue
        if rng.random() < config.sacct_het_share:
            plan.split[j] = (first_free + len(plan.split), len(only.nodes) // 2)
    return plan


def het_lines(lines: list[str], raw: str, other_id: int, n_first: int) -> list[str]:
    """Rewrite a job's reference lines (allocation, batch, extern, 0) as two het components."""
    nodes = hostlist.expand_hostlist(lines[0].split("|")[8])
    first, second = nodes[:n_first], nodes[n_first:]
    out = []
    for part, (part_nodes, job_raw) in enumerate(((first, raw), (second, str(other_id)))):
        node_list = part_nodes[0] if len(part_nodes) == 1 else hostlist.collect_hostlist(part_nodes)
        for k, line in enumerate(lines):
            fields = line.split("|")
            if part == 1 and fields[0].endswith(".batch"):
                continue  # the batch script runs in the first component
            step = fields[0][len(fields[0].split(".")[0]) :]
            fields[0] = f"{raw}+{part}{step}"
            fields[1] = f"{job_raw}{step}"
            if k == 0 or not fields[0].endswith(".batch"):
                fields[8] = node_list
                n_old = int(fields[6])
                fields[6] = str(len(part_nodes))
                fields[7] = _scale_tres(fields[7], n_old, len(part_nodes))
            out.append("|".join(fields))
    return out


def _scale_tres(tres: str, n_old: int, n_new: int) -> str:
    """Return a node-proportional TRES text for ``n_new`` of ``n_old`` nodes."""
    parts = []
    for entry in tres.split(","):
        key, _, value = entry.partition("=")
        unit = value[-1] if value[-1:].isalpha() else ""
        number = int(value[: len(value) - len(unit)])
        parts.append(f"{key}={number * n_new // n_old}{unit}")
    return ",".join(parts)


def pending_array_lines(
    config: SynthConfig, jobs: Jobs, attempts: list[Attempt], n_days: int
) -> dict[int, list[str]]:
    """Return, per day index, the pending record of every array with tasks not started that day.

    Reference-format lines (``<array id>_[<tasks>]|<array id>|...|PENDING|0:0|0``).
    """
    w0 = config.window_start_s
    first_start: dict[int, int] = {}
    for a in attempts:
        first_start[a.job] = min(first_start.get(a.job, a.start_s), a.start_s)
    arrays: dict[int, list[int]] = {}
    for j, label in enumerate(jobs.label):
        if "_" in label:
            arrays.setdefault(int(label.split("_")[0]), []).append(j)
    out: dict[int, list[str]] = {}
    never = np.iinfo(np.int64).max
    for array_id, tasks in sorted(arrays.items()):
        j0 = tasks[0]
        for d in range(n_days):
            day_end = w0 + (d + 1) * DAY_S
            waiting = [
                int(jobs.label[j].split("_")[1])
                for j in tasks
                if jobs.submit[j] < day_end and first_start.get(j, never) >= day_end
            ]
            if not waiting:
                continue
            fields = (
                f"{array_id}_[{_ranges(waiting)}]",
                str(array_id),
                jobs.name[j0],
                jobs.partition[j0],
                ACCOUNTS[jobs.user[j0] % len(ACCOUNTS)],
                USERS[jobs.user[j0]],
                "0",
                "",
                "None assigned",
                str(np.datetime64(int(jobs.submit[j0]), "s")),  # sacct's ISO form
                "Unknown",
                "Unknown",
                "00:00:00",
                "PENDING",
                "0:0",
                "0",
            )
            out.setdefault(d, []).append("|".join(fields))
    return out


def _ranges(tasks: list[int]) -> str:
    """Return task ids as Slurm prints them: ``0,2-5``."""
    parts: list[str] = []
    start = prev = tasks[0]
    for t in [*tasks[1:], None]:
        if t is not None and t == prev + 1:
            prev = t
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if t is not None:
            start = prev = t
    return ",".join(parts)


def without_jobidraw(line: str) -> str:
    """Return a reference-format line (or the header) without its JobIDRaw field."""
    fields = line.split("|")
    return "|".join(fields[:1] + fields[2:])


def json_document(config: SynthConfig, blocks: list[list[str]]) -> str:
    """Return a ``sacct --json`` document of the day's blocks (a job's lines, or one bad line)."""
    version = config.sacct_json_version
    records: list[list[str]] = []
    for block in blocks:  # a het job's block holds two allocations, each a job of the document
        for line in block:
            if "." in line.split("|", 1)[0] and records:
                records[-1].append(line)
            else:
                records.append([line])
    jobs = [_json_job(version, record) for record in records]
    document = {"meta": _meta(version), "errors": [], "jobs": jobs, "warnings": []}
    return json.dumps(document, indent=2) + "\n"


def _meta(version: str) -> dict[str, Any]:
    major, minor, micro = _RELEASE[version]
    release = f"{major}.{minor}.{micro}"
    if version == "v0.0.37":
        return {
            "plugin": {"type": "openapi/dbv0.0.37", "name": "Slurm OpenAPI DB v0.0.37"},
            "Slurm": {
                "version": {"major": int(major), "micro": int(micro), "minor": int(minor)},
                "release": release,
            },
        }
    if version == "v0.0.39":
        return {
            "plugin": {
                "type": "openapi/dbv0.0.39",
                "name": "Slurm OpenAPI DB v0.0.39",
                "data_parser": "v0.0.39",
            },
            "Slurm": {
                "version": {"major": int(major), "micro": int(micro), "minor": int(minor)},
                "release": release,
            },
        }
    return {
        "plugin": {
            "type": "",
            "name": "",
            "data_parser": f"data_parser/{version}",
            "accounting_storage": "accounting_storage/slurmdbd",
        },
        "client": {"source": "/dev/pts/0", "user": "root", "group": "root"},
        "command": ["sacct", "--json", "--allusers", "--duplicates"],
        "slurm": {
            "version": {"major": major, "micro": micro, "minor": minor},
            "release": release,
            "cluster": CLUSTER,
        },
    }


_NAMES = SACCT_HEADER.split("|")


def _json_job(version: str, block: list[str]) -> Any:
    """Return the job object of one block; a line short of fields (a bad one) stays a string."""
    rows = [line.split("|") for line in block]
    if len(rows[0]) != len(_NAMES):
        return block[0]  # not an object: the reader rejects the entry
    job = dict(zip(_NAMES, rows[0], strict=True))
    job_id, raw = job["JobID"], int(job["JobIDRaw"])
    new = version != "v0.0.37"
    array: dict[str, Any] = {"job_id": 0, "limits": {"max": {"running": {"tasks": 0}}}}
    array |= {"task_id": _num(None, new=new), "task": "" if new else None}
    het: dict[str, Any] = {"job_id": 0, "job_offset": _num(None, new=new)}
    if "_[" in job_id:
        array |= {"job_id": int(job_id.split("_")[0]), "task": job_id.split("[")[1][:-1]}
    elif "_" in job_id:
        array |= {"job_id": int(job_id.split("_")[0])}
        array["task_id"] = _num(int(job_id.split("_")[1]), new=new)
    if "+" in job_id:
        het = {"job_id": int(job_id.split("+")[0]), "job_offset": _num(int(job_id[-1]), new=new)}
    state = job["State"].split(" ")[0]
    return {
        "account": job["Account"],
        "allocation_nodes": int(job["AllocNodes"]),
        "array": array,
        "cluster": CLUSTER,
        "exit_code": _exit_code(version, job["ExitCode"], pending=state == "PENDING"),
        "het": het,
        "job_id": raw,
        "name": job["JobName"],
        "nodes": job["NodeList"],
        "partition": job["Partition"],
        "state": {"current": [state] if version == "v0.0.41" else state, "reason": "None"},
        "steps": [_json_step(version, raw, row) for row in rows[1:]],
        "time": {
            "elapsed": _elapsed_s(job["Elapsed"]),
            "eligible": _epoch(job["Submit"]),
            "end": _epoch(job["End"]),
            "start": _epoch(job["Start"]),
            "submission": _epoch(job["Submit"]),
            "suspended": 0,
        },
        "tres": {"allocated": _tres(job["AllocTRES"], new=new)},
        "user": job["User"],
    }


def _json_step(version: str, raw: int, row: list[str]) -> dict[str, Any]:
    step = dict(zip(_NAMES, row, strict=True))
    name = step["JobID"].rsplit(".", 1)[1]
    if version == "v0.0.37":
        step_id: Any = {
            "job_id": raw,
            "het": {"component": None},
            "id": int(name) if name.isdigit() else name,
            "name": step["JobName"],
        }
    elif version == "v0.0.39":
        step_id = {"id": {"job_id": raw, "step_id": name}, "name": step["JobName"]}
    else:
        step_id = {"id": f"{raw}.{name}", "name": step["JobName"]}
    new = version == "v0.0.41"
    nodes = step["NodeList"]
    return {
        "exit_code": _exit_code(version, step["ExitCode"], pending=False),
        "nodes": {"count": int(step["AllocNodes"]), "range": nodes},
        "state": [step["State"]] if new else step["State"],
        "step": step_id,
        "time": {
            "elapsed": _elapsed_s(step["Elapsed"]),
            "end": _num(_epoch(step["End"]), new=new),
            "start": _num(_epoch(step["Start"]), new=new),
            "suspended": 0,
        },
        "tres": {"allocated": _tres(step["AllocTRES"], new=version != "v0.0.37")},
    }


def _exit_code(version: str, text: str, *, pending: bool) -> dict[str, Any]:
    """Return ``exit_code`` as the version's dumper writes ``<code>:<signal>``."""
    code, signal = (int(x) for x in text.split(":"))
    if version == "v0.0.41":
        unset = {"set": False, "infinite": False, "number": 0}
        if pending:
            return {
                "status": ["PENDING"],
                "return_code": unset,
                "signal": {"id": unset, "name": ""},
            }
        if signal:
            return {
                "status": ["SIGNALED"],
                "return_code": unset,
                "signal": {"id": _num(signal, new=True), "name": _signal_name(signal)},
            }
        return {
            "status": ["ERROR" if code else "SUCCESS"],
            "return_code": _num(code, new=True),
            "signal": {"id": unset, "name": ""},
        }
    if pending:
        return {"status": "PENDING", "return_code": 0}
    if signal:
        return {
            "status": "SIGNALED",
            "return_code": None if version == "v0.0.37" else -127,
            "signal": {"signal_id": signal, "name": _signal_name(signal)},
        }
    return {"status": "SUCCESS", "return_code": 0}  # WIFEXITED: the code itself is not printed


def _signal_name(signal: int) -> str:
    return _SIGNAL_NAMES.get(signal, f"Unknown signal {signal}")


def _num(value: int | None, *, new: bool) -> Any:
    """Return a number as the version prints it: bare (null if unset) or ``{"set", "number"}``."""
    if not new:
        return value
    if value is None:
        return {"set": False, "infinite": False, "number": 0}
    return {"set": True, "infinite": False, "number": value}


def _epoch(text: str) -> int:
    """Unix seconds of sacct's ISO time; 0 for ``Unknown``."""
    if text == "Unknown":
        return 0
    return int(np.datetime64(text, "s").astype(np.int64))


def _elapsed_s(text: str) -> int:
    days, _, clock = text.rpartition("-")
    hh, mm, ss = (int(x) for x in clock.split(":"))
    return int(days or 0) * DAY_S + hh * 3600 + mm * 60 + ss


def _tres(text: str, *, new: bool) -> list[dict[str, Any]]:
    """Return an AllocTRES text as the document's list (memory in MiB, as Slurm keeps it)."""
    ids = {"cpu": 1, "mem": 2, "node": 4, "billing": 5, "gres/gpu": 1001}
    out = []
    for entry in text.split(",") if text else []:
        key, _, value = entry.partition("=")
        kind, _, name = key.partition("/")
        count = int(value[:-1]) * 1024 if value.endswith("G") else int(value)
        out.append(
            {"type": kind, "name": name if name or new else None, "id": ids[key], "count": count}
        )
    return out


def truth(
    config: SynthConfig,
    jobs: Jobs,
    attempts: list[Attempt],
    files: dict[str, str],
    het: HetPlan,
) -> dict[str, Any]:
    """Return the truth's ``slurm_dumps``: the shape written and the keys the warehouse gives.

    ``format`` (``parsable2``, ``parsable2_no_jobidraw`` or ``json``), ``json_data_parser`` (json
    only), ``cluster`` (json: the documents name it, so the warehouse keys every job
    ``<cluster>/<key>``), ``exit_codes_kept`` (False for data_parser v0.0.37 and v0.0.39, which
    print every normal exit as 0), ``n_pending_array_rows``, ``job_keys`` (job id -> key where
    the dump shows another key than the job id: an array task ``<id>_<task>`` without
    JobIDRaw) and ``het_jobs``.
    """
    shape = {None: "parsable2", "no_jobidraw": "parsable2_no_jobidraw", "json": "json"}
    out: dict[str, Any] = {"format": shape[config.sacct_format], "files": sorted(files)}
    if config.sacct_format == "json":
        out["json_data_parser"] = config.sacct_json_version
        out["cluster"] = CLUSTER
        out["exit_codes_kept"] = config.sacct_json_version == "v0.0.41"
    out["n_pending_array_rows"] = 0
    if config.sacct_format is not None:
        pending = pending_array_lines(config, jobs, attempts, config.days)
        out["n_pending_array_rows"] = sum(len(lines) for lines in pending.values())
    keys = {}
    if config.sacct_format == "no_jobidraw":
        keys = {str(raw): label for raw, label in zip(jobs.raw_id, jobs.label, strict=True)}
        keys = {raw: label for raw, label in keys.items() if raw != label}
    out["job_keys"] = keys
    out["het_jobs"] = het.truth(jobs, config)
    return out
