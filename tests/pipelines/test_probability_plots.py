"""Probability-plot figures: a PNG per class and paper, from the builder and `relia fit --plots`."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from models.exceptions import FewFailuresWarning
from pipelines.analysis.fit import fit_table
from pipelines.cli import app
from pipelines.report import (
    MIN_PLOT_FAILURES,
    plot_file_name,
    probability_figure,
    probability_plots,
    report_figures,
    write_probability_plots,
)

if TYPE_CHECKING:
    from pathlib import Path

PNG = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()


def _lives() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    parts = []
    classes = [
        ("gpu", 1.4, 500, None),
        ("psu", 0.9, 300, None),
        ("fan/rear", 1.0, 200, None),
        ("rare", 1.0, 50, 2),
    ]
    for name, shape, n, n_failed in classes:
        life = 3_000.0 * rng.weibull(shape, n)
        entry = np.where(rng.uniform(size=n) < 0.5, rng.uniform(0.0, 400.0, n), 0.0)
        life = np.maximum(life, entry + 1.0)
        end = entry + 2_000.0
        failed = life <= end
        if n_failed is not None:
            failed = np.arange(n) < n_failed
        parts.append(
            pl.DataFrame(
                {
                    "component_class": name,
                    "entry_h": entry,
                    "exit_h": np.where(failed, np.minimum(life, end), end),
                    "failed": failed,
                }
            )
        )
    return pl.concat(parts)


def _fit(lives: pl.DataFrame) -> pl.DataFrame:
    """The fit table; the 'rare' class (2 failures) gets a Weibayes row, and says so."""
    with pytest.warns(FewFailuresWarning, match="2 to 5 failures .{'component_class': 'rare'}"):
        return fit_table(lives)


def test_builder_writes_one_png_per_class_and_paper(tmp_path: Path) -> None:
    lives = _lives()
    items = probability_plots(lives, _fit(lives))
    assert [i.component_class for i in items] == ["gpu", "psu", "fan/rear"]  # most failures first
    for item in items:
        assert set(item.plots) == {"weibull", "lognormal"}
        assert set(item.ad_statistics) == {"exponential", "weibull", "lognormal", "loglogistic"}
        assert all(math.isfinite(v) for v in item.ad_statistics.values())
    written = write_probability_plots(items, tmp_path / "plots")
    names = sorted(p.name for p in written)
    assert names == sorted(
        f"{c}_{paper}.png" for c in ("gpu", "psu", "fan_rear") for paper in ("weibull", "lognormal")
    )
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == names
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG)
        assert len(data) > 5_000


def test_stored_runs_without_the_column_get_ad_from_params() -> None:
    lives = _lives().filter(pl.col("component_class") == "gpu")
    table = fit_table(lives)
    [fresh] = probability_plots(lives, table)
    [old] = probability_plots(lives, table.drop("ad_statistic"))
    assert old.ad_statistics == fresh.ad_statistics
    [split] = probability_plots(lives, table.filter(pl.col("cohort") != "all"))  # refits
    assert split.ad_statistics == fresh.ad_statistics


def test_figure_is_none_for_a_missing_paper_and_names_are_safe() -> None:
    lives = _lives().filter(pl.col("component_class") == "psu")
    [item] = probability_plots(lives, fit_table(lives))
    item.plots.pop("lognormal")
    assert probability_figure(item, "lognormal") is None
    assert probability_figure(item, "weibull") is not None
    assert plot_file_name("../a b", "weibull") == "_a_b_weibull.png"
    assert MIN_PLOT_FAILURES == 3


def test_report_figures_carry_the_plots_as_data_uris() -> None:
    from types import SimpleNamespace

    lives = _lives()
    items = probability_plots(lives, _fit(lives))
    empty = pl.DataFrame()
    no_classes = pl.DataFrame(
        schema={
            "component_class": pl.String,
            "failures_to_date": pl.Int64,
            "failures_week": pl.Int64,
            "failures_trailing_mean": pl.Float64,
        }
    )
    data = SimpleNamespace(
        classes=no_classes,
        weekly_failures=empty,
        survival=[],
        mcf=empty,
        goodput_curve=empty,
        period=SimpleNamespace(week="2026-W10", n_trailing_weeks=0),
        probability=items,
    )
    figures = report_figures(data)  # type: ignore[arg-type]
    keys = {k for k in figures if k.startswith("probability:")}
    assert len(keys) == 2 * len(items)
    assert all(figures[k].startswith("data:image/png;base64,") for k in keys)


def test_cli_fit_plots_writes_the_pngs(fleet: tuple[Path, Path, dict], tmp_path: Path) -> None:
    db = fleet[0]
    with duckdb.connect(str(db), read_only=True) as con:
        classes = [
            r[0]
            for r in con.execute(
                "select component_class from fct_component_lives group by 1 "
                "having count(*) filter (where failed) >= 3"
            ).fetchall()
        ]
    out = tmp_path / "plots"
    result = runner.invoke(app, ["fit", "--db", str(db), "--plots", str(out), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    expected = sorted(f"{c}_{p}.png" for c in classes for p in ("weibull", "lognormal"))
    assert sorted(p.split("/")[-1] for p in payload["plots"]) == expected
    assert sorted(p.name for p in out.iterdir()) == expected
    assert all(p.read_bytes().startswith(PNG) for p in out.iterdir())
    result = runner.invoke(app, ["fit", "--db", str(db), "--plots", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    assert f"{len(expected)} PNG file(s)" in result.output
    assert "again" in result.output.replace("\n", "")
