"""Two sacct dumps that disagree on how an attempt ended (#12 §2): both versions are kept and
flagged in ``stg_slurm_job_conflicts``; staging keeps the version of the dump that reaches
further in time, whatever the files are called."""

from __future__ import annotations

from pathlib import Path

from pipelines import ingest, warehouse

HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts\n"
)


def _job(job_id: int, end: str, state: str, exit_code: str = "0:0") -> str:
    return (
        f"{job_id}|{job_id}|train|gpu|ml|ada|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|"
        f"2026-06-01T00:10:00|{end}|01:50:00|{state}|{exit_code}|0\n"
    )


def test_conflicting_dumps_are_flagged_and_the_later_dump_wins(tmp_path: Path) -> None:
    slurm = tmp_path / "slurm"
    slurm.mkdir()
    # the earlier dump (it reaches 2026-06-02) is named so that file-name order would pick it
    (slurm / "z_sacct_day2.txt").write_text(
        HEADER
        + _job(500, "2026-06-01T02:00:00", "NODE_FAIL", "0:0")
        + _job(501, "2026-06-02T06:00:00", "COMPLETED")
        + _job(502, "Unknown", "RUNNING")
    )
    # the later dump (reaches 2026-06-03): 500 ended the same minute as TIMEOUT, 502 has ended
    (slurm / "a_sacct_day3.txt").write_text(
        HEADER
        + _job(500, "2026-06-01T02:00:00", "TIMEOUT", "0:1")
        + _job(501, "2026-06-02T06:00:00", "COMPLETED")
        + _job(502, "2026-06-03T01:00:00", "COMPLETED")
    )
    db = tmp_path / "w.duckdb"
    ingest.ingest(db, ingest.discover([slurm]))
    with warehouse.connect(db, read_only=True) as con:
        staged = dict(con.execute("select job_id, state from stg_slurm_jobs").fetchall())
        conflicts = con.execute(
            "select job_id, state, chosen, n_versions, source_file from stg_slurm_job_conflicts "
            "order by state"
        ).fetchall()
    assert staged == {"500": "TIMEOUT", "501": "COMPLETED", "502": "COMPLETED"}
    # only 500 is disputed: 501 agrees, and 502 was RUNNING and then ended (no conflict)
    assert [(j, s, c, n, Path(f).name) for j, s, c, n, f in conflicts] == [
        ("500", "NODE_FAIL", False, 2, "z_sacct_day2.txt"),
        ("500", "TIMEOUT", True, 2, "a_sacct_day3.txt"),
    ]
