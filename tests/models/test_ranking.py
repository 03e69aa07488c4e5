"""The knob ranking's rows: typed records that are the gains table's rows."""

from __future__ import annotations

from models import KnobGain, Scenario, knob_gains

BASE = Scenario(n_gpus=131_072, checkpoint_s=60.0, detect_s=600.0)
GRID = {"checkpoint_s": [60.0, 5.0], "detect_s": [600.0, 30.0]}


def test_gain_rows_are_the_table_rows_with_the_knob_gain_keys() -> None:
    ranking = knob_gains(BASE, GRID)
    keys = list(KnobGain.__annotations__)
    assert ranking.gains.columns == keys
    assert ranking.gain_rows() == ranking.gains.to_dicts()
    assert [list(row) for row in ranking.gain_rows()] == [keys, keys]


def test_best_knob_is_the_first_row_when_it_gains() -> None:
    ranking = knob_gains(BASE, GRID)
    assert ranking.best_knob == ranking.gain_row(0) == ranking.gains.row(0, named=True)
    assert ranking.best_knob is not None
    assert ranking.best_knob["knob"] == "detect_s"
    assert ranking.best_knob["gain"] > 0
