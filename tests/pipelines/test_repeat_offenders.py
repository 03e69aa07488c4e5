"""Repeat offenders found from telemetry alone (issue #25 §2), checked against the generator.

Small fleets (32 nodes x 8 GPUs, 60 days) where 2 % of the units are bad (every hazard x 100)
and every failure is fixed by a reboot, so a bad unit keeps failing (no replacement cures it), no
ticket is written, and the ground truth marks each failure of a bad unit. relia sees the
failures in kernel logs and node events, counts them per unit (``rpt_unit_failures``) and tests
each unit against its level's fleet rate (:func:`pipelines.analysis.offenders.repeat_offenders`,
Bonferroni at 1 %: the chance that any normal unit of a level is flagged is at most 1 %).
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import TYPE_CHECKING, Any

import polars as pl
import pytest

from pipelines import ingest, warehouse
from pipelines.analysis.offenders import read_unit_failures, repeat_offenders
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from pathlib import Path

SEEDS = (1, 2)


def _unit(failure: dict[str, str]) -> str:
    """The unit relia names for a failure of the truth: ``node/gpuN`` or the node."""
    slot = failure["slot"]
    return f"{failure['node']}/{slot}" if slot.startswith("gpu") else failure["node"]


@pytest.fixture(scope="module")
def fleets(
    tmp_path_factory: pytest.TempPathFactory,
) -> list[tuple[pl.DataFrame, dict[str, Any], Path]]:
    out = []
    for seed in SEEDS:
        root: Path = tmp_path_factory.mktemp(f"offenders{seed}")
        config = SynthConfig(
            nodes=32, gpus_per_node=8, days=60, seed=seed, bad_unit_share=0.02,
            bad_unit_factor=100.0,
        ).with_fixes({"all": {"reboot": 1.0}})  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            truth = synthesize(root / "landing", config)
        db = root / "relia.duckdb"
        ingest.ingest(db, ingest.discover([root / "landing"]))
        with warehouse.connect(db, read_only=True) as con:
            out.append((read_unit_failures(con), truth, db))
    return out


@pytest.mark.slow
def test_flagged_units_are_the_bad_units(
    fleets: list[tuple[pl.DataFrame, dict[str, Any], Path]],
) -> None:
    """Every flagged unit is a bad unit of the truth, and most bad units that failed often are
    flagged. With Bonferroni at 1 % per level and fleet, the chance of any false flag over the
    2 levels x 2 fleets is at most 4 %; a bad unit with 4 or more failures in the window has a
    Poisson tail far below the Bonferroni threshold (fleet rate x 1,440 h is about 0.1)."""
    flagged, true_flags, frequent_bad, found = 0, 0, 0, 0
    for units, truth, _ in fleets:
        offenders = repeat_offenders(units, alpha=0.01)
        bad = Counter(_unit(f) for f in truth["failures"] if f["bad_unit"] and f["in_window"])
        named = set(offenders.filter(pl.col("repeat_offender"))["unit"].to_list())
        flagged += len(named)
        true_flags += len(named & set(bad))
        frequent = {u for u, n in bad.items() if n >= 4}
        frequent_bad += len(frequent)
        found += len(named & frequent)
    assert flagged == true_flags
    assert frequent_bad >= 4
    assert found >= 0.75 * frequent_bad


@pytest.mark.slow
def test_unit_counts_add_up_to_the_failures_in_lives(
    fleets: list[tuple[pl.DataFrame, dict[str, Any], Path]],
) -> None:
    """Per unit the failures of the truth in the window match relia's count for every unit the
    truth lists (a unit's failures are seen whatever fixed them)."""
    for units, truth, _ in fleets:
        expected = Counter(_unit(f) for f in truth["failures"] if f["in_window"])
        seen = dict(zip(units["unit"], units["n_failures"], strict=True))
        missed = {u: (n, seen.get(u, 0)) for u, n in expected.items() if seen.get(u, 0) < n}
        assert sum(n - s for n, s in missed.values()) <= 0.05 * sum(expected.values()), missed


@pytest.mark.slow
def test_relia_trend_names_the_repeat_offenders(
    fleets: list[tuple[pl.DataFrame, dict[str, Any], Path]],
) -> None:
    """``relia trend --json`` lists the units the test flags, and every unit that failed twice."""
    import json

    from typer.testing import CliRunner

    from pipelines.cli import app

    units, _, db = fleets[0]
    result = CliRunner().invoke(app, ["trend", "--json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    expected = repeat_offenders(units, alpha=0.01)
    assert [r["unit"] for r in payload["repeat_offenders"]] == expected.filter(
        pl.col("repeat_offender")
    )["unit"].to_list()
    again = units.filter(pl.col("n_failures") >= 2)
    assert {r["unit"] for r in payload["units_failing_again"]} <= set(again["unit"])
    assert len(payload["units_failing_again"]) == min(10, again.height)
