"""The weekly report's stored goodput projections (``report_projections``): read back and keyed.

:func:`pipelines.report.inputs.project_for_report` writes a projection with the inputs it
depended on (:func:`projection_inputs`); :func:`read_report_projection` finds it again while
those inputs still match. Frames travel through JSON as Arrow IPC text.
"""

from __future__ import annotations

import base64
import io
import json
from typing import TYPE_CHECKING, TypedDict

import polars as pl

from pipelines.report.period import query

if TYPE_CHECKING:
    import duckdb

    from pipelines.report.containers import GoodputSection
    from pipelines.report.period import ReportPeriod


class ProjectionInputs(TypedDict):
    """What a stored projection depends on besides its fit run and targets.

    Stored as JSON (``report_projections.inputs_json``) and compared as such: the key order is
    part of the stored text.
    """

    as_of: str
    window_start: str
    window_end: str
    n_interruptions: int
    n_replace_repairs: int
    n_gpu_slots: int


def projection_inputs(con: duckdb.DuckDBPyConnection, period: ReportPeriod) -> ProjectionInputs:
    """Return what a stored projection depends on besides its fit run and targets.

    What a stored projection depends on besides its fit run and targets: the week's data
    end, the observation window and the row counts of the marts the projection reads.
    """
    counts = query(
        con,
        """
        select
            (select count(*) from rpt_job_interruptions) as n_interruptions,
            (select count(*) from rpt_replace_repairs) as n_replace_repairs,
            (select count(*) from rpt_fleet_gpus) as n_gpu_slots
        """,
    ).row(0, named=True)
    return {
        "as_of": period.as_of.isoformat(),
        "window_start": period.window_start.isoformat(),
        "window_end": period.window_end.isoformat(),
        "n_interruptions": int(counts["n_interruptions"]),
        "n_replace_repairs": int(counts["n_replace_repairs"]),
        "n_gpu_slots": int(counts["n_gpu_slots"]),
    }


def read_report_projection(
    con: duckdb.DuckDBPyConnection,
    fit_run_id: str,
    period: ReportPeriod,
    targets: tuple[int, ...],
) -> GoodputSection | None:
    """Return the newest stored projection of ``fit_run_id`` at ``targets``.

    Only one whose inputs still match.

    Returns
    -------
    GoodputSection or None
        ``headline``, ``curve``, ``targets``, ``knobs``, ``scenario`` and ``notes`` (the
        models' warnings when it was made); None when there is none (or no such table: a
        warehouse written before the project stage stored report projections).
    """
    exists = query(
        con,
        "select count(*) as n from duckdb_tables() where table_name = 'report_projections'",
    ).item()
    if not exists:
        return None
    rows = query(
        con,
        """
        select scenario_json, result_json
        from report_projections
        where fit_run_id = $fit and target_gpus = $targets and inputs_json = $inputs
        order by created_at desc
        limit 1
        """,
        {
            "fit": fit_run_id,
            "targets": ",".join(map(str, targets)),
            "inputs": json.dumps(projection_inputs(con, period)),
        },
    )
    if rows.height == 0:
        return None
    scenario_json, result_json = rows.row(0)
    result = json.loads(result_json)  # as project_for_report stored it
    return {
        "headline": result["headline"],
        "curve": frame_of(result["curve"]),
        "targets": frame_of(result["targets"]),
        "knobs": frame_of(result["knobs"]),
        "scenario": json.loads(scenario_json),
        "notes": result["notes"],
    }


def frame_text(frame: pl.DataFrame) -> str:
    """Return a frame as base64 Arrow IPC text (types kept exactly through JSON)."""
    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def frame_of(text: str) -> pl.DataFrame:
    """Return the frame :func:`frame_text` wrote."""
    return pl.read_ipc(io.BytesIO(base64.b64decode(text)))
