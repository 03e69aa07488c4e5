"""``relia synth``: a synthetic fleet with known lifetimes, written as real-format telemetry."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipelines.cli.options import FormatOption, JsonOption, exit_for
from pipelines.cli.render import (
    OutputFormat,
    console,
    output_format,
    print_csv,
    print_json,
    rows_table,
)
from pipelines.cli.root import app

if TYPE_CHECKING:
    from synth import SynthConfig

OutOption = Annotated[Path, typer.Option(help="Landing folder to write.")]
PresetOption = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="Start from a preset fleet: llama3 (2,048 nodes x 8 GPUs, 54 days, Llama 3's "
        "published interruption rate per class); the other options override it.",
    ),
]
NodesOption = Annotated[
    int | None, typer.Option(min=1, help="Nodes in the fleet (default 256, or the preset's).")
]
GpusPerNodeOption = Annotated[
    int | None, typer.Option(min=1, max=16, help="GPUs per node (default 8, or the preset's).")
]
DaysOption = Annotated[
    int | None,
    typer.Option(min=1, help="Length of the observation window (default 90, or the preset's)."),
]
K8sShareOption = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Share of jobs run under Kubernetes.")
]
ElasticShareOption = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Share of jobs run under torchrun (elastic).")
]
NodeEventsOption = Annotated[
    bool,
    typer.Option(
        "--node-events/--no-node-events",
        help="Write sacctmgr node down/drain events (what slurmctld records by itself).",
    ),
]
DcgmIntervalOption = Annotated[
    int | None,
    typer.Option(help="Write DCGM samples every this many seconds (off by default)."),
]
PrecursorShareOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Plant warning signals (ECC, row remaps, NVLink CRC, heat, warning Xids) in the "
        "hours before this share of GPU failures and none before the others; with "
        "--dcgm-interval-s. Ground truth marks which failures got them.",
    ),
]
TrainingLogsOption = Annotated[
    bool,
    typer.Option(
        "--training-logs",
        help="Write training logs (Megatron / torchtitan) for the training jobs and the "
        "per-job goodput truth (job_goodput).",
    ),
]
StepJitterOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=0.5,
        help="Sigma of a lognormal noise on every training step's time (e.g. 0.01: about 1 %; "
        "default 0, the published fail-slow preset 0.01). Needs --training-logs.",
    ),
]
SlowPresetOption = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="Fail-slow knob set: published (episodes of under a minute to about 10 h, at a "
        "rate that slows about 42 % of the default fleet's training jobs); the --slow-* "
        "options override it. Needs --training-logs.",
    ),
]
SlowRateOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        help="Fail-slow episodes per GPU-hour (default 0: none): slow steps in the training "
        "logs, truth in slow_episodes / slow_jobs. Needs --training-logs.",
    ),
]
SlowDurationOption = Annotated[
    tuple[float, float] | None,
    typer.Option(metavar="MEDIAN_S SIGMA", help="Lognormal episode duration (default 1470 1.37)."),
]
SlowFactorOption = Annotated[
    tuple[float, float] | None,
    typer.Option(
        metavar="MEDIAN SIGMA",
        help="Lognormal law of S - 1, S the slow unit's slowdown (default 0.1 1.0).",
    ),
]
SlowUnitOption = Annotated[
    str | None, typer.Option(metavar="gpu|node", help="What an episode slows (default gpu).")
]
SlowDcgmShareOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Share of episodes with a DCGM signature (clock-event reasons, SM clock / S); "
        "the rest are silent (default 0).",
    ),
]
StragglerLinesOption = Annotated[
    str | None,
    typer.Option(
        metavar="megatron|nvrx",
        help="Per-rank straggler reports in the Megatron logs: StragglerDetector lines every "
        "log interval, or NVRx reports every --straggler-report-s.",
    ),
]
StragglerReportOption = Annotated[
    int | None, typer.Option(min=1, help="Seconds between NVRx reports (default 300).")
]
FamilyOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="CLASS=FAMILY",
        help="Draw a class's lifetimes from weibull, exponential, lognormal or loglogistic "
        "at the same mean and median as its default Weibull (exponential: same mean); "
        "repeatable, all=FAMILY for every class.",
    ),
]
FixesOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="CLASS=FIX:SHARE,...",
        help="Shares of the fixes of a hardware class's failures, e.g. "
        "gpu=replace:0.3,reset:0.5,reboot:0.2 (replace, reset, reboot, reseat; only "
        "replace writes a ticket and a new serial); repeatable, all= for every class.",
    ),
]
BadUnitShareOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=0.99,
        help="Share of units installed bad (repeat offenders until replaced; default 0.03, "
        "the llama3 preset 0).",
    ),
]
BadUnitFactorOption = Annotated[
    float | None,
    typer.Option(min=1.0, help="Hazard multiple of a bad unit (default 10)."),
]
RateOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="CLASS=PER_1000_NODE_DAYS",
        help="Rate of a non-hardware interruption class (software, driver, nccl, network, "
        "maintenance) per 1000 node-days; 0 switches it off; repeatable.",
    ),
]


@app.command()
def synth(
    out: OutOption = Path("landing"),
    preset: PresetOption = None,
    nodes: NodesOption = None,
    gpus_per_node: GpusPerNodeOption = None,
    days: DaysOption = None,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    start: Annotated[str, typer.Option(help="Window start, ISO date (UTC).")] = "2026-06-01",
    k8s_share: K8sShareOption = 0.0,
    elastic_share: ElasticShareOption = 0.0,
    node_events: NodeEventsOption = True,
    dcgm_interval_s: DcgmIntervalOption = None,
    precursor_share: PrecursorShareOption = None,
    training_logs: TrainingLogsOption = False,
    step_jitter: StepJitterOption = None,
    slow_preset: SlowPresetOption = None,
    slow_rate_per_gpu_hour: SlowRateOption = None,
    slow_duration_s: SlowDurationOption = None,
    slow_factor: SlowFactorOption = None,
    slow_unit: SlowUnitOption = None,
    slow_dcgm_share: SlowDcgmShareOption = None,
    straggler_lines: StragglerLinesOption = None,
    straggler_report_s: StragglerReportOption = None,
    family: FamilyOption = None,
    fixes: FixesOption = None,
    bad_unit_share: BadUnitShareOption = None,
    bad_unit_factor: BadUnitFactorOption = None,
    rate: RateOption = None,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Simulate a fleet with known lifetimes and write real-format telemetry plus ground truth."""
    shown = output_format(fmt, as_json)
    from synth import SynthConfig, synthesize
    from synth.presets import preset as preset_config

    started = time.perf_counter()
    given = {
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        "days": days,
        "bad_unit_share": bad_unit_share,
        "bad_unit_factor": bad_unit_factor,
    }
    options: dict[str, Any] = {
        "seed": seed,
        "start": datetime.fromisoformat(start).replace(tzinfo=UTC),
        "k8s_share": k8s_share,
        "elastic_share": elastic_share,
        "node_events": node_events,
        "dcgm_interval_s": dcgm_interval_s,
        "precursor_share": precursor_share,
        "training_logs": training_logs,
        **{name: value for name, value in given.items() if value is not None},
    }
    try:
        config = SynthConfig(**options) if preset is None else preset_config(preset, **options)
        if family:
            config = config.with_families(_class_families(family))
        if fixes:
            config = config.with_fixes(_class_fixes(fixes))
        if rate:
            config = config.with_non_hardware(_class_rates(rate))
        slow = {
            "slow_rate_per_gpu_hour": slow_rate_per_gpu_hour,
            "slow_duration_s": slow_duration_s,
            "slow_factor": slow_factor,
            "slow_unit": slow_unit,
            "slow_dcgm_share": slow_dcgm_share,
            "straggler_lines": straggler_lines,
            "straggler_report_s": straggler_report_s,
            "training_step_jitter": step_jitter,  # the fail-slow preset sets it: given wins
        }
        config = _with_slow(config, slow_preset, slow)
    except ValueError as error:  # a knob value it cannot use: usage, exit 2
        exit_for(error)
    truth = synthesize(out, config)
    seconds = round(time.perf_counter() - started, 2)
    summary = _fleet_summary(truth, out=out, seconds=seconds, training_logs=training_logs)
    if shown is OutputFormat.json:
        print_json(summary)
    elif shown is OutputFormat.csv:
        print_csv([summary])
    else:
        console.print(rows_table("synthetic fleet", [summary]))


# the row (and JSON) relia synth prints, from the truth JSON synth wrote: a dict is the edge
def _fleet_summary(
    truth: dict[str, Any], *, out: Path, seconds: float, training_logs: bool
) -> dict[str, Any]:
    """Return the one row ``relia synth`` prints (and its JSON): the fleet and its failures."""
    process = truth["failure_process"]
    summary = {
        "out": str(out),
        "seconds": seconds,
        "nodes": truth["n_nodes"],
        "gpus": truth["n_gpus"],
        "window_start": truth["window_start"],
        "window_end": truth["window_end"],
        "failures_in_window": sum(v["n_failures"] for v in process.values() if v["hardware"]),
        "replacements_in_window": sum(v["n_failed"] for v in truth["lives_by_class"].values()),
        "non_hardware_in_window": sum(
            v["n_failures"] for v in process.values() if not v["hardware"]
        ),
        "interruptions": len(truth["interruptions"]),
    }
    if training_logs:
        summary["training_jobs"] = sum(1 for j in truth["job_goodput"] if j["has_training_log"])
    if "slow_jobs" in truth:  # fail-slow on: the fleet's episodes and the jobs they slowed
        summary["slow_episodes"] = truth["slow_fleet"]["n_episodes"]
        summary["straggling_jobs"] = sum(1 for s in truth["slow_jobs"].values() if s > 0)
    return summary


def _with_slow(config: SynthConfig, preset: str | None, knobs: dict[str, Any]) -> SynthConfig:
    """Apply the fail-slow preset, then the ``--slow-*`` options given (None: not given)."""
    from dataclasses import replace

    from synth.failslow import with_slow_preset

    given = {name: value for name, value in knobs.items() if value is not None}
    if preset is not None:
        return with_slow_preset(config, preset, **given)
    return replace(config, **given) if given else config


def _pairs(option: str, pairs: list[str], example: str) -> dict[str, str]:
    """Read ``CLASS=VALUE`` options as ``{class: value}``; a pair without ``=`` is refused."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            msg = f"{option} takes {example}, got {pair!r}"
            raise ValueError(msg)
        out[name.strip()] = value.strip()
    return out


def _class_families(pairs: list[str]) -> dict[str, str]:
    """Read ``--family CLASS=FAMILY`` options as ``{class: family}``."""
    return _pairs("--family", pairs, "CLASS=FAMILY (gpu=lognormal, all=exponential)")


def _class_fixes(pairs: list[str]) -> dict[str, dict[str, float]]:
    """Read ``--fixes CLASS=FIX:SHARE,...`` options as ``{class: {fix: share}}``."""
    example = "CLASS=FIX:SHARE,... (gpu=replace:0.3,reset:0.7)"
    out: dict[str, dict[str, float]] = {}
    for name, value in _pairs("--fixes", pairs, example).items():
        shares: dict[str, float] = {}
        for item in value.split(","):
            fix, sep, share = item.partition(":")
            try:
                shares[fix.strip()] = float(share)
            except ValueError:
                sep = ""
            if not sep:
                msg = f"--fixes takes {example}, got {name}={value!r}"
                raise ValueError(msg) from None
        out[name] = shares
    return out


def _class_rates(pairs: list[str]) -> dict[str, float]:
    """Read ``--rate CLASS=PER_1000_NODE_DAYS`` options as ``{class: rate per node-hour}``."""
    example = "CLASS=PER_1000_NODE_DAYS (software=0.5, nccl=0)"
    out: dict[str, float] = {}
    for name, value in _pairs("--rate", pairs, example).items():
        try:
            per_1000_days = float(value)
        except ValueError:
            msg = f"--rate takes {example}, got {name}={value!r}"
            raise ValueError(msg) from None
        if per_1000_days < 0:
            msg = f"--rate {name}={value}: a rate cannot be negative; pass 0 to switch it off."
            raise ValueError(msg)
        out[name] = per_1000_days / 1000.0 / 24.0
    return out
