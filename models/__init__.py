"""Reliability models: survival fits, repairable-system trends, goodput projection, simulation.

Pure numpy / polars / lifelines / scikit-learn: nothing here touches files, DuckDB or Prefect.
Each submodule lists its public names in ``__all__``; they are re-exported here.
"""

from __future__ import annotations

import importlib
import importlib.util

_SUBMODULES = (
    "exceptions", "parametric", "lifetimes", "mle", "mtbf_summary", "fitter", "survival",
    "nonparametric", "cox", "gof", "repairable", "trend", "scenario", "checkpoint", "renewal",
    "rates", "goodput", "sweep", "ranking", "simulate_plan", "simulate", "simulate_naive",
    "projector", "mc_sweep", "predict_features", "predict",
)

__all__: list[str] = []
for _name in _SUBMODULES:
    if importlib.util.find_spec(f"models.{_name}") is None:
        continue
    _module = importlib.import_module(f"models.{_name}")
    for _symbol in _module.__all__:
        globals()[_symbol] = getattr(_module, _symbol)
        __all__.append(_symbol)
