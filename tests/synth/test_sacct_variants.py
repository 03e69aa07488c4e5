"""The sacct dumps in other shapes (``SynthConfig.sacct_format``, ``sacct_het_share``).

Each shape of the same seed must give the warehouse the same jobs, attempts and interruptions as
the reference ``--parsable2`` dumps, under the keys the truth's ``slurm_dumps`` names.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from pipelines import ingest, warehouse
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from pathlib import Path

BASE: dict[str, Any] = {"nodes": 10, "days": 8, "seed": 3, "p_array": 0.3}
VARIANTS: dict[str, dict[str, Any]] = {
    "het_jobs": {"sacct_het_share": 0.5},
    "no_jobidraw": {"sacct_format": "no_jobidraw", "sacct_het_share": 0.5},
    "json_v0.0.37": {"sacct_format": "json", "sacct_json_version": "v0.0.37"},
    "json_v0.0.39": {
        "sacct_format": "json",
        "sacct_json_version": "v0.0.39",
        "sacct_het_share": 0.5,
    },
    "json_v0.0.41": {"sacct_format": "json", "sacct_json_version": "v0.0.41"},
}
# staging columns every shape carries; job ids are compared through the truth's keys
_STAGED = (
    "job_id_raw, step, job_name, partition, account, user_name, alloc_nodes, n_gpus, nodes, "
    "submit_ts, start_ts, end_ts, elapsed_s, state, exit_code, exit_signal"
)


def _warehouse(landing: Path) -> dict[str, Any]:
    db = landing.parent / f"{landing.name}.duckdb"
    ingest.ingest(db, ingest.discover([landing / s for s in ("slurm", "kernel", "fleet")]))
    with warehouse.connect(db, read_only=True) as con:
        return {
            "staged": con.execute(
                f"select {_STAGED} from stg_slurm_jobs where start_ts is not null"
            ).fetchall(),
            "pending": con.execute(
                "select job_id, state from stg_slurm_jobs where start_ts is null"
            ).fetchall(),
            "attempts": con.execute(
                "select job_id_raw, attempt, nodes, n_gpus, start_ts, end_ts, state "
                "from int_job_attempts"
            ).fetchall(),
            "interruptions": con.execute(
                "select job_id_raw, attempt, cause_class, attribution, restart_overhead_s "
                "from int_job_interruptions"
            ).fetchall(),
            "quarantined": con.execute(
                "select count(*) from raw_quarantine where target_table = 'raw_slurm_jobs'"
            ).fetchone()[0],
            "loaded": con.execute("select count(*) from raw_slurm_jobs").fetchone()[0],
        }


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    out = tmp_path_factory.mktemp("reference") / "landing"
    truth = synthesize(out, SynthConfig(**BASE, node_events=False))
    return out, truth, _warehouse(out)


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


def _expected(
    rows: list[tuple[Any, ...]], dumps: dict[str, Any], prefix: str, *, exit_kept: bool = True
) -> set[tuple[Any, ...]]:
    """Return the reference rows (job key first) under the variant's keys, het jobs left out."""
    het = {h["job_id_raw"] for h in dumps["het_jobs"]}
    keys = dumps["job_keys"]
    return {
        _plain((prefix + keys.get(row[0], row[0]), *(row[1:] if exit_kept else row[1:-2])))
        for row in rows
        if row[0] not in het
    }


def _observed(
    rows: list[tuple[Any, ...]], dumps: dict[str, Any], prefix: str, *, exit_kept: bool = True
) -> set[tuple[Any, ...]]:
    """Return the variant's rows, the components of het jobs left out."""
    components = {prefix + c["key"] for h in dumps["het_jobs"] for c in h["components"]}
    if dumps["format"] != "parsable2_no_jobidraw":  # staging keys a component by its JobIDRaw
        components |= {prefix + c["job_id_raw"] for h in dumps["het_jobs"] for c in h["components"]}
    return {_plain(row if exit_kept else row[:-2]) for row in rows if row[0] not in components}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_shape_gives_the_reference_jobs_attempts_and_interruptions(
    tmp_path: Path, reference: tuple[Path, dict[str, Any], dict[str, Any]], variant: str
) -> None:
    ref_out, truth_ref, ref = reference
    out = tmp_path / "landing"
    truth = synthesize(out, SynthConfig(**BASE, node_events=False, **VARIANTS[variant]))
    dumps = truth["slurm_dumps"]
    json_shape = VARIANTS[variant].get("sacct_format") == "json"
    assert sorted(p.name for p in (out / "slurm").iterdir()) == dumps["files"]
    assert all(name.endswith(".json" if json_shape else ".txt") for name in dumps["files"])
    for source in ("kernel", "fleet", "repairs", "nvidia_smi"):  # the other sources: the same
        for path in (ref_out / source).iterdir():
            assert (out / source / path.name).read_bytes() == path.read_bytes()
    got = _warehouse(out)
    exit_kept = dumps.get("exit_codes_kept", True)
    # staging: the same records of every job that started, and the arrays' pending remainders
    assert _observed(got["staged"], dumps, "", exit_kept=exit_kept) == _expected(
        ref["staged"], dumps, "", exit_kept=exit_kept
    )
    assert len(got["pending"]) == dumps["n_pending_array_rows"]
    assert (dumps["n_pending_array_rows"] > 0) == ("sacct_format" in VARIANTS[variant])
    assert all(state == "PENDING" and "_[" in job for job, state in got["pending"])
    assert got["quarantined"] == truth["expected_quarantine"]["raw_slurm_jobs"] == 4
    assert got["loaded"] == truth["expected_rows"]["raw_slurm_jobs"]
    # attempts and interruptions: the same, under the variant's keys
    prefix = f"{dumps['cluster']}/" if json_shape else ""
    assert _observed(got["attempts"], dumps, prefix) == _expected(ref["attempts"], dumps, prefix)
    assert _plain_set(got["interruptions"]) == _expected(ref["interruptions"], dumps, prefix)
    assert truth["interruptions"] == truth_ref["interruptions"]
    if not exit_kept:  # v0.0.37 / v0.0.39 print a failed job's exit as 0; signals are kept
        assert {(r[14], r[15]) for r in got["staged"]} <= {(0, 0), (0, 9), (0, 15), (0, 125)}
    assert bool(dumps["het_jobs"]) == bool(VARIANTS[variant].get("sacct_het_share"))
    _check_het_jobs(dumps, prefix, ref, got)


def _plain_set(rows: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    return {_plain(row) for row in rows}


def _check_het_jobs(
    dumps: dict[str, Any], prefix: str, ref: dict[str, Any], got: dict[str, Any]
) -> None:
    """Each het job: its components' attempts split the reference attempt's nodes and GPUs."""
    by_key = {row[0]: row for row in got["attempts"]}
    reference_of = {row[0]: row for row in ref["attempts"]}
    for het in dumps["het_jobs"]:
        job, attempt, nodes, n_gpus, start, end, state = reference_of[het["job_id_raw"]]
        assert attempt == 1
        first, second = (by_key[prefix + c["key"]] for c in het["components"])
        half = len(nodes) // 2
        assert first[2] == nodes[:half]
        assert second[2] == nodes[half:]
        assert first[3] + second[3] == n_gpus
        assert first[4:] == second[4:] == (start, end, state)
        assert job not in {i[0] for i in ref["interruptions"]}


def test_the_shapes_leave_the_reference_dumps_and_params_alone(tmp_path: Path) -> None:
    truth = synthesize(tmp_path / "a", SynthConfig(nodes=6, days=4, seed=2))
    assert "slurm_dumps" not in truth
    assert not {"sacct_format", "sacct_json_version", "sacct_het_share"} & set(truth["params"])
    shaped = synthesize(
        tmp_path / "b", SynthConfig(nodes=6, days=4, seed=2, sacct_format="no_jobidraw")
    )
    assert shaped["params"]["sacct_format"] == "no_jobidraw"
    assert "sacct_json_version" not in shaped["params"]
    header = (tmp_path / "b" / "slurm" / "sacct_20260601.txt").read_text().splitlines()[0]
    assert header == (
        "JobID|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|End|"
        "Elapsed|State|ExitCode|Restarts"
    )
    again = synthesize(tmp_path / "b", SynthConfig(nodes=6, days=4, seed=2, sacct_format="json"))
    assert sorted(p.suffix for p in (tmp_path / "b" / "slurm").iterdir()) == [".json"] * 4
    document = json.loads((tmp_path / "b" / "slurm" / "sacct_20260601.json").read_text())
    assert document["meta"]["plugin"]["data_parser"] == "data_parser/v0.0.41"
    assert again["slurm_dumps"]["cluster"] == "alpha"


@pytest.mark.parametrize(
    ("changes", "hint"),
    [
        ({"sacct_format": "xml"}, "sacct_format must be None, 'no_jobidraw' or 'json'"),
        ({"sacct_json_version": "v0.0.40"}, "sacct_json_version must be one of v0.0.37"),
        ({"sacct_het_share": 1.5}, "sacct_het_share must be in [0, 1]"),
    ],
)
def test_bad_shapes_are_refused_with_a_hint(changes: dict[str, Any], hint: str) -> None:
    with pytest.raises(ValueError, match=hint.replace("[", r"\[").replace("]", r"\]")):
        SynthConfig(**changes)
