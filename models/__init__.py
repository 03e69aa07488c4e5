"""Reliability models: survival fits, repairable-system trends, goodput projection, simulation.

Pure numpy / polars / lifelines / scikit-learn: nothing here touches files, DuckDB or Prefect.
Each submodule lists its public names in ``__all__``; this package re-exports them all.

The re-exports are lazy (PEP 562): ``from models import project`` imports ``models.goodput``
and what it needs, not lifelines, scikit-learn or scipy.stats, so the interactive ``relia
project`` starts fast.  ``_EXPORTS`` is the package's one list of exported names, by submodule;
the package's ``__all__`` is built from it, and type checkers read the same names through the
``TYPE_CHECKING`` star imports, which take each submodule's ``__all__``
(``tests/test_layering.py`` checks that ``_EXPORTS`` and the submodules agree).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models.backtest import *
    from models.backtest_buckets import *
    from models.checkpoint import *
    from models.cox import *
    from models.exceptions import *
    from models.failslow import *
    from models.failslow_fit import *
    from models.failslow_laws import *
    from models.failure_rates import *
    from models.families import *
    from models.fitter import *
    from models.gof import *
    from models.goodput import *
    from models.group_summary import *
    from models.lifetimes import *
    from models.mc_sweep import *
    from models.mtbf_summary import *
    from models.nonparametric import *
    from models.parametric import *
    from models.predict import *
    from models.predict_features import *
    from models.predict_metrics import *
    from models.projector import *
    from models.ranking import *
    from models.rates import *
    from models.repairable import *
    from models.scenario import *
    from models.simulate import *
    from models.simulate_naive import *
    from models.simulate_plan import *
    from models.survival import *
    from models.sweep import *
    from models.trend import *

_EXPORTS: dict[str, tuple[str, ...]] = {
    "backtest": (
        "BACKTEST_PERIODS",
        "DEFAULT_RESTART_S",
        "GPU_BUCKETS",
        "AsofRates",
        "asof_pooled_ratio",
        "asof_rates",
        "backtest_jobs",
        "gpu_bucket",
        "poisson_ratio_interval",
        "predicted_wall_s",
        "weighted_poisson_interval",
    ),
    "backtest_buckets": (
        "CLASS_SUMMARY_COLUMNS",
        "SUMMARY_COLUMNS",
        "backtest_class_summary",
        "backtest_summary",
        "expected_variance",
        "oe_interval_with_fit",
    ),
    "checkpoint": (
        "daly_expected_wall_time_s",
        "daly_interval_s",
        "ettr_meta",
        "young_interval_s",
    ),
    "cox": ("cox_ph",),
    "exceptions": (
        "ApproximationWarning",
        "ConvergenceWarning",
        "FewFailuresWarning",
        "ReliaWarning",
    ),
    "failslow": (
        "CombinedGoodput",
        "LostGpuHours",
        "Mitigation",
        "SlowCause",
        "SlowProjection",
        "combine_goodput",
        "eviction_cost_s",
        "project_slow",
        "slow_share",
        "slowdown_curve",
    ),
    "failslow_fit": (
        "JobLevelSlow",
        "SlowFit",
        "fit_slow_laws",
    ),
    "failslow_laws": (
        "EpisodeLaw",
        "LogNormalLaw",
        "ParetoLaw",
        "SlowLaws",
    ),
    "failure_rates": (
        "FAILURE_RATE_COLUMNS",
        "UNIT_LEVELS",
        "failure_rates",
    ),
    "families": (
        "B10_SURVIVAL",
        "FAMILY_REGISTRY",
        "Exponential",
        "Family",
        "LogLogistic",
        "LogNormal",
        "ShapeFamily",
        "Weibull",
        "closed_form_family",
        "family_of",
        "renewal_family",
        "weibayes_family",
    ),
    "fitter": ("MtbfFitter",),
    "gof": (
        "PAPERS",
        "ProbabilityPlot",
        "goodness_of_fit",
        "goodness_of_fit_families",
        "paper_transform",
        "probability_plot",
    ),
    "goodput": (
        "expected_by_class",
        "project",
    ),
    "goodput_core": (),
    "goodput_slow": (),
    "group_summary": (
        "FamilyCheck",
        "FamilyFit",
        "GroupSummary",
        "LifetimeMean",
        "family_mixture",
        "summarise_group",
    ),
    "laws": (),
    "lifetimes": (
        "Lifetimes",
        "check_lifetimes",
    ),
    "mc_sweep": (
        "auto_sweep",
        "point_seed",
        "simulate_sweep",
        "switch_flagged",
    ),
    "mle": (),
    "mtbf_summary": (
        "EXTRAPOLATED_SHARE",
        "HEADLINE_COLUMNS",
        "WEIBAYES_MAX_FAILURES",
        "Headline",
        "ModelAverage",
        "Weibayes",
        "aic_weights",
        "mixture_components",
        "mixture_quantile",
        "model_average",
        "observed_headline",
        "observed_rates",
        "poisson_count_bounds",
        "sampled_mean",
        "weibayes",
    ),
    "nonparametric": (
        "kaplan_meier",
        "nelson_aalen",
    ),
    "parametric": (
        "FAMILIES",
        "HOURS_PER_YEAR",
        "exponential_mtbf",
        "restricted_mean",
        "survival_function",
    ),
    "predict": ("FailurePredictor",),
    "predict_features": (
        "EXTRA_FEATURES",
        "FEATURES",
        "HISTORY_FEATURES",
        "KEYS",
        "LABEL_COLUMNS",
        "MONOTONIC",
        "SIGNAL_FEATURES",
        "LeakageError",
        "Split",
        "assert_same_features",
        "check_leakage",
        "labels",
        "split_bounds",
        "time_split",
    ),
    "predict_metrics": (
        "RuleMetrics",
        "ScoreMetrics",
        "choose_threshold",
        "evaluate",
        "never_predict",
        "operating_curve",
        "pr_auc_null",
        "sbe_rule",
    ),
    "projector": ("GoodputProjector",),
    "ranking": (
        "KnobGain",
        "KnobInteraction",
        "KnobRanking",
        "knob_gains",
        "paired_goodput_samples",
    ),
    "rates": (
        "rates_from_failure_rates",
        "rates_from_fits",
    ),
    "renewal": (),
    "repairable": (
        "lemon_nodes",
        "mean_cumulative_function",
        "period_mtbf",
    ),
    "scenario": (
        "FAIL_SLOW_KNOBS",
        "KNOBS",
        "RSC1_NODE_FAILURES_PER_1000_NODE_DAYS",
        "ClassRate",
        "Knob",
        "Projection",
        "Scenario",
        "age_mix",
    ),
    "simulate": ("simulate_job",),
    "simulate_naive": ("simulate_job_naive",),
    "simulate_slow": (),
    "survival": ("fit_lives",),
    "simulate_plan": ("SimulationSummary",),
    "sweep": (
        "drain_sweep",
        "knob_label",
        "sweep",
    ),
    "trend": (
        "CrowAmsaaResult",
        "FleetTrend",
        "LaplaceResult",
        "MilHdbk189Result",
        "crow_amsaa",
        "crow_amsaa_fleet",
        "exposure_clock",
        "fleet_trend",
        "laplace_test",
        "mil_hdbk_189_test",
    ),
}
"""Each submodule and the names it exports (its ``__all__``), imported on first use."""

_SUBMODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

if not TYPE_CHECKING:  # type checkers take the names from the imports above
    __all__ = sorted(_SUBMODULE_OF)


def __getattr__(name: str) -> Any:
    """Import the submodule that exports ``name`` on first use; keep the name on the package.

    A submodule's own name (``models.goodput``) imports it, as the eager package did.
    """
    module = _SUBMODULE_OF.get(name)
    if module is None:
        if name in _EXPORTS:
            return importlib.import_module(f"models.{name}")
        msg = f"module 'models' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f"models.{module}"), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """The ``models`` package: a name it exports wins over a submodule of the same name."""

    def __setattr__(self, name: str, value: Any) -> None:
        """Bind ``name``; the import system's binding of a submodule yields to an export.

        Loading ``models.sweep`` binds the module on the package; ``models.sweep`` stays the
        function ``sweep``, as when the package imported every submodule eagerly.
        """
        if isinstance(value, types.ModuleType) and name in _SUBMODULE_OF:
            value = getattr(importlib.import_module(f"models.{_SUBMODULE_OF[name]}"), name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    """List the package's names, the lazy exports included."""
    return sorted({*globals(), *_SUBMODULE_OF})
