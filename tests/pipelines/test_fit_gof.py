"""The fit table's Anderson-Darling column: computed per family row, stored, migrated."""

from __future__ import annotations

import json
import math
import warnings
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl

from models import goodness_of_fit
from models.exceptions import FewFailuresWarning
from pipelines import warehouse
from pipelines.analysis import fit

if TYPE_CHECKING:
    from pathlib import Path


def _lives(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for name, shape, n in (("gpu", 1.5, 800), ("psu", 0.8, 600), ("fan", 1.0, 40)):
        life = 2_000.0 * rng.weibull(shape, n)
        entry = rng.uniform(0.0, 500.0, n) * (rng.uniform(size=n) < 0.5)
        keep = life > entry
        life, entry = life[keep], entry[keep]
        end = entry + 1_500.0
        parts.append(
            pl.DataFrame(
                {
                    "component_class": name,
                    "batch": rng.choice(["a", "b"], life.size),
                    "entry_h": entry,
                    "exit_h": np.minimum(life, end),
                    "failed": life <= end,
                }
            )
        )
    lives = pl.concat(parts)
    # the fan class: one failure only, so an exponential and a Weibayes row
    fan = lives.filter(pl.col("component_class") == "fan").with_columns(
        failed=pl.int_range(pl.len()) == 0
    )
    return pl.concat([lives.filter(pl.col("component_class") != "fan"), fan])


def test_fit_table_scores_each_family_row() -> None:
    lives = _lives()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)
        table = fit.fit_table(lives)
    assert table.schema["ad_statistic"] == pl.Float64
    for row in table.filter(pl.col("component_class") != "fan").iter_rows(named=True):
        part = lives.filter(pl.col("component_class") == row["component_class"])
        expected = goodness_of_fit(part, row["family"], json.loads(row["params_json"]))
        assert row["ad_statistic"] == expected
        assert math.isfinite(row["ad_statistic"])
    gpu = table.filter(pl.col("component_class") == "gpu").sort("ad_statistic")
    assert gpu["family"][0] == "weibull"
    fan = table.filter(pl.col("component_class") == "fan")
    assert fan["family"].to_list() == ["exponential", "weibull"]  # the Weibayes row beside it
    assert fan["method"].to_list() == ["chi_square", "weibayes_lr"]
    assert fan["ad_statistic"].is_finite().all()


def test_fit_table_scores_cohorts_on_their_own_lives() -> None:
    lives = _lives(1).filter(pl.col("component_class") != "fan")
    table = fit.fit_table(lives, by=["batch"])
    row = table.filter(
        (pl.col("component_class") == "psu")
        & (pl.col("cohort") == "batch=b")
        & (pl.col("family") == "lognormal")
    ).row(0, named=True)
    part = lives.filter((pl.col("component_class") == "psu") & (pl.col("batch") == "b"))
    assert row["ad_statistic"] == goodness_of_fit(part, "lognormal", json.loads(row["params_json"]))


def test_old_warehouse_gains_the_column_and_stores_it(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute((warehouse.SQL_DIR / "schema" / "003_model_outputs.sql").read_text())
    con.execute(
        "insert into fit_results (run_id, component_class, cohort, family) "
        "values ('old-run', 'gpu', 'all', 'weibull')"
    )
    con.close()
    with warehouse.connect(db) as con:
        warehouse.apply_schema(con)
        old = con.execute("select ad_statistic from fit_results").fetchall()
        lives = _lives(2).filter(pl.col("component_class") == "gpu")
        run_id = fit.store_fit(con, fit.fit_table(lives), by=[], window=(None, None))
        stored = fit.read_fit(con, run_id)
    assert old == [(None,)]
    assert stored["ad_statistic"].is_finite().all()
    assert stored.height == 4
