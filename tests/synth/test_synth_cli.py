"""``relia synth`` options of the failure process: presets, fixes, bad units, rates, node events."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()


def test_preset_with_overrides_writes_its_truth(tmp_path: Path) -> None:
    out = tmp_path / "landing"
    args = ["synth", "--out", str(out), "--preset", "llama3", "--nodes", "16", "--days", "4"]
    more = ["--fixes", "all=replace:1", "--rate", "nccl=0", "--rate", "driver=2.5"]
    more += ["--bad-unit-share", "0.1", "--no-node-events", "--format", "json"]
    result = runner.invoke(app, [*args, *more])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    truth = json.loads((out / "ground_truth.json").read_text())
    params = truth["params"]
    assert (params["nodes"], params["gpus_per_node"], params["days"]) == (16, 8, 4)
    assert params["preset"] == "llama3"
    assert params["bad_unit_share"] == 0.1
    assert "node_events" not in params  # off, with every other later source
    assert not (out / "node_events").exists()
    assert all(law["fixes"] == {"replace": 1.0} for law in params["classes"].values())
    assert params["non_hardware"]["nccl"]["rate_per_node_h"] == 0
    assert "nccl" not in truth["failure_process"]
    assert params["non_hardware"]["driver"]["rate_per_node_h"] == pytest.approx(2.5 / 24_000)
    # the preset's own classes and rates stay: gpu_sram and gsp are there, exponential
    assert truth["classes"]["gsp"]["family"] == "exponential"
    process = truth["failure_process"]
    assert summary["failures_in_window"] == sum(
        r["n_failures"] for r in process.values() if r["hardware"]
    )
    assert summary["replacements_in_window"] == summary["failures_in_window"]  # all replaced
    assert summary["non_hardware_in_window"] == sum(
        r["n_failures"] for r in process.values() if not r["hardware"]
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--preset", "llama4"], "unknown preset 'llama4'; use one of llama3"),
        (["--fixes", "gpu=replace"], "--fixes takes CLASS=FIX:SHARE"),
        (["--fixes", "gpu=replace:0.5,reset:0.2"], "fix shares must be non-negative and sum to 1"),
        (["--fixes", "nic=reset:1"], "a node-level class has no GPU reset"),
        (["--fixes", "gpux=replace:1"], "unknown hardware class 'gpux'"),
        (["--rate", "cpu=1"], "unknown non-hardware class 'cpu'; use one of software"),
        (["--rate", "nccl=-1"], "a rate cannot be negative"),
        (["--rate", "nccl"], "--rate takes CLASS=PER_1000_NODE_DAYS"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path: Path, option: list[str], message: str) -> None:
    out = tmp_path / "landing"
    result = runner.invoke(app, ["synth", "--out", str(out), "--nodes", "4", *option])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (out / "ground_truth.json").exists()
