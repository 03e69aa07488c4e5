"""What a what-if sweep writes besides its table: goodput-vs-scale plots and drain thresholds.

Called by :func:`pipelines.analysis.project.run_sweep`; kept apart so the sweep's logic reads on
its own.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from pathlib import Path

    import polars as pl

    from models import Scenario
    from pipelines.analysis.sweep_spec import SweepSpec


class DrainThresholds(TypedDict):
    """What :func:`drain_thresholds` returns: a sweep's ``drain`` (``relia whatif --json``).

    ``model_id`` of the predictor, ``n_thresholds`` swept, the ``table`` (parquet) and ``plot``
    written, and the ``best`` threshold's row: ``threshold``, ``precision``, ``recall``,
    ``goodput``, ``goodput_no_drain``, ``goodput_gain``, ``expected_drains``,
    ``expected_false_alarms`` (those the table has).
    """

    model_id: str | None
    n_thresholds: int
    table: str
    plot: str
    best: dict[str, float | None]


def plot_sweep(
    baseline: Scenario, spec: SweepSpec, out_dir: Path
) -> tuple[list[Path], Path | None]:
    """Goodput against scale, one line per value of each knob, the others held at the baseline.

    Each point is projected directly (the baseline with that knob and scale changed), so the
    lines at ``target_gpus`` are the goodputs :func:`models.knob_gains` ranks. The title names
    the values held; the points are written to ``whatif_lines.csv`` (``knob``, ``value``,
    ``is_baseline``, ``n_gpus``, ``goodput``). Returns the plots and that table (none when the
    grid has fewer than two ``n_gpus``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import polars as pl

    from models import knob_label, sweep

    if "n_gpus" not in spec.grid or len(spec.grid["n_gpus"]) < 2:
        return [], None
    scales = sorted({*spec.grid["n_gpus"], spec.target_gpus})
    paths, frames = [], []
    for knob, values in spec.grid.items():
        if knob == "n_gpus":
            continue
        held_value = getattr(baseline, knob)
        candidates = [held_value]
        for value in values:
            normal = getattr(dataclasses.replace(baseline, **{knob: value}), knob)
            if normal not in candidates:
                candidates.append(normal)
        if len(candidates) < 2:
            continue
        lines = sweep(baseline, {knob: candidates, "n_gpus": scales})
        lines = lines.select(
            pl.lit(knob).alias("knob"),
            pl.col(knob).cast(pl.String).alias("value"),
            (pl.col(knob).cast(pl.String) == knob_label(knob, held_value)).alias("is_baseline"),
            "n_gpus",
            "goodput",
        )
        frames.append(lines)
        held = ", ".join(
            f"{k}={knob_label(k, getattr(baseline, k))}"
            for k in spec.grid
            if k not in (knob, "n_gpus")
        )
        fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
        for value in dict.fromkeys(lines["value"].to_list()):
            line = lines.filter(pl.col("value") == value).sort("n_gpus")
            is_base = bool(line["is_baseline"][0])
            ax.plot(
                line["n_gpus"],
                line["goodput"],
                marker="o",
                lw=2.4 if is_base else 1.2,
                label=f"{knob} = {value}" + (" (baseline)" if is_base else ""),
            )
        ax.axvline(spec.target_gpus, color="grey", ls=":", lw=1.0)
        ax.set_xscale("log")
        ax.set_xlabel(f"GPUs in the job (dotted: target {spec.target_gpus:,})")
        ax.set_ylabel("goodput")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"goodput vs scale by {knob}", fontsize=11)
        fig.text(
            0.5,
            0.005,
            f"held at baseline: {held or 'nothing else swept'}",
            ha="center",
            va="bottom",
            fontsize=7,
            wrap=True,
        )
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        path = out_dir / f"goodput_vs_scale_{knob}.png"
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    if not frames:
        return paths, None
    table_path = out_dir / "whatif_lines.csv"
    pl.concat(frames, how="vertical_relaxed").write_csv(table_path)
    return paths, table_path


def drain_thresholds(
    base: Scenario, spec: SweepSpec, curve: pl.DataFrame, model_id: str | None, out_dir: Path
) -> DrainThresholds:
    """Return the goodput at every threshold of a predictor's curve, at the target scale.

    Goodput at every threshold of a predictor's curve, at the target scale (the base's other
    knobs); written to ``drain_thresholds.csv`` / ``.parquet`` with a plot of the gain.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import polars as pl

    from models import drain_sweep

    at_target = dataclasses.replace(base, n_gpus=spec.target_gpus)
    usable = curve.filter(pl.col("recall").is_not_null())
    if "alarm_precision" in usable.columns:
        # a drain is one alarm (the first hour of a run of alarming hours), so the knob's
        # precision is the share of alarms followed by a failure, not of alarming GPU-hours
        usable = usable.rename({"precision": "row_precision"}).with_columns(
            precision=pl.col("alarm_precision")
        )
        usable = usable.filter((pl.col("recall") == 0) | (pl.col("precision") > 0))
    table = drain_sweep(at_target, usable)
    table.write_parquet(out_dir / "drain_thresholds.parquet")
    table.write_csv(out_dir / "drain_thresholds.csv")
    best = table.sort("goodput", descending=True).row(0, named=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    ax.plot(table["threshold"], table["goodput_gain"], marker="o")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("alarm threshold (calibrated probability of failure within the horizon)")
    ax.set_ylabel("goodput gain vs no drains")
    ax.grid(alpha=0.3)
    ax.set_title(f"proactive drains at {spec.target_gpus:,} GPUs (model {model_id})")
    fig.tight_layout()
    plot = out_dir / "drain_gain_vs_threshold.png"
    fig.savefig(plot)
    plt.close(fig)
    keep = (
        "threshold",
        "precision",
        "recall",
        "goodput",
        "goodput_no_drain",
        "goodput_gain",
        "expected_drains",
        "expected_false_alarms",
    )
    return {
        "model_id": model_id,
        "n_thresholds": table.height,
        "table": str(out_dir / "drain_thresholds.parquet"),
        "plot": str(plot),
        "best": {k: best[k] for k in keep if k in best},
    }
