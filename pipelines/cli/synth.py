"""``relia synth``: a synthetic fleet with known lifetimes, written as real-format telemetry."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.options import FormatOption, JsonOption
from pipelines.cli.render import (
    OutputFormat,
    console,
    err,
    error_text,
    output_format,
    print_csv,
    print_json,
    rows_table,
)
from pipelines.cli.root import app


@app.command()
def synth(
    out: Annotated[Path, typer.Option(help="Landing folder to write.")] = Path("landing"),
    nodes: Annotated[int, typer.Option(min=1, help="Nodes in the fleet.")] = 256,
    gpus_per_node: Annotated[int, typer.Option(min=1, max=16, help="GPUs per node.")] = 8,
    days: Annotated[int, typer.Option(min=1, help="Length of the observation window.")] = 90,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    start: Annotated[str, typer.Option(help="Window start, ISO date (UTC).")] = "2026-06-01",
    k8s_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of jobs run under Kubernetes.")
    ] = 0.0,
    elastic_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of jobs run under torchrun (elastic).")
    ] = 0.0,
    node_events: Annotated[
        bool, typer.Option("--node-events", help="Write sacctmgr node down/drain events.")
    ] = False,
    dcgm_interval_s: Annotated[
        int | None,
        typer.Option(help="Write DCGM samples every this many seconds (off by default)."),
    ] = None,
    precursor_share: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Plant warning signals (ECC, row remaps, NVLink CRC, heat, warning Xids) in the "
            "hours before this share of GPU failures and none before the others; with "
            "--dcgm-interval-s. Ground truth marks which failures got them.",
        ),
    ] = None,
    training_logs: Annotated[
        bool,
        typer.Option(
            "--training-logs",
            help="Write training logs (Megatron / torchtitan) for the training jobs and the "
            "per-job goodput truth (job_goodput).",
        ),
    ] = False,
    family: Annotated[
        list[str] | None,
        typer.Option(
            metavar="CLASS=FAMILY",
            help="Draw a class's lifetimes from weibull, exponential, lognormal or loglogistic "
            "at the same mean and median as its default Weibull (exponential: same mean); "
            "repeatable, all=FAMILY for every class.",
        ),
    ] = None,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Simulate a fleet with known lifetimes and write real-format telemetry plus ground truth."""
    shown = output_format(fmt, as_json)
    from synth import SynthConfig, synthesize

    started = time.perf_counter()
    config = SynthConfig(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        days=days,
        seed=seed,
        start=datetime.fromisoformat(start).replace(tzinfo=UTC),
        k8s_share=k8s_share,
        elastic_share=elastic_share,
        node_events=node_events,
        dcgm_interval_s=dcgm_interval_s,
        precursor_share=precursor_share,
        training_logs=training_logs,
    )
    if family:
        try:
            config = config.with_families(_class_families(family))
        except ValueError as error:
            err.print(error_text("error", "red", error))
            raise typer.Exit(2) from error
    truth = synthesize(out, config)
    summary = {
        "out": str(out),
        "seconds": round(time.perf_counter() - started, 2),
        "nodes": truth["n_nodes"],
        "gpus": truth["n_gpus"],
        "window_start": truth["window_start"],
        "window_end": truth["window_end"],
        "failures_in_window": sum(v["n_failed"] for v in truth["lives_by_class"].values()),
        "interruptions": len(truth["interruptions"]),
    }
    if training_logs:
        summary["training_jobs"] = sum(1 for j in truth["job_goodput"] if j["has_training_log"])
    if shown is OutputFormat.json:
        print_json(summary)
    elif shown is OutputFormat.csv:
        print_csv([summary])
    else:
        console.print(rows_table("synthetic fleet", [summary]))


def _class_families(pairs: list[str]) -> dict[str, str]:
    """``--family CLASS=FAMILY`` options as ``{class: family}``; a pair without ``=`` is refused."""
    families: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            msg = f"--family takes CLASS=FAMILY (gpu=lognormal, all=exponential), got {pair!r}"
            raise ValueError(msg)
        families[name.strip()] = value.strip()
    return families
