"""What the weekly report holds: the fits used, curves, probability plots, :class:`ReportData`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    import polars as pl

    from models.gof import ProbabilityPlot
    from pipelines.report.period import ReportPeriod


# --------------------------------------------------------------------------------------------
# Result containers
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FitInfo:
    """Which fits the report uses.

    Attributes
    ----------
    source
        ``"stored"`` (a fit run from ``fit_runs``), ``"computed"`` (fitted for this report) or
        ``"none"`` (no unit lives to fit).
    run_id, created_at, window_start, window_end
        The stored run's id, time and data window (``None`` when computed).
    note
        One sentence saying where the fits come from, for the report's assumptions.
    rates
        The run's interruption rates and headline per class (cohort ``all``): its
        ``rpt_class_rates`` rows (:func:`pipelines.analysis.fit.read_rates`), or, for fits computed
        for the report or a stored run that stored no rates (an older relia), the same rows
        computed from the lives (:func:`pipelines.analysis.fit.rate_table`); None with no lives.
    """

    source: str
    run_id: str | None
    created_at: datetime | None
    window_start: datetime | None
    window_end: datetime | None
    note: str
    rates: pl.DataFrame | None = None


@dataclass(frozen=True)
class SurvivalCurve:
    """Kaplan-Meier estimate and fitted parametric curve of one component class.

    Attributes
    ----------
    component_class, family
        The class and the AIC-chosen family of its fit.
    n_units, n_failures
        Lives and failures of the class.
    segments
        Age ranges ``(start_h, end_h)`` with at least ``MIN_AT_RISK`` units under observation;
        in each, both curves are conditional on surviving to its start (1 there).
    km
        ``timeline_h``, ``survival``, ``lo``, ``hi``, ``at_risk`` (Kaplan-Meier with left
        truncation) and ``segment`` (index into ``segments``).
    fitted
        ``age_h``, ``survival`` of the fitted distribution, and ``segment``.
    """

    component_class: str
    family: str
    n_units: int
    n_failures: int
    segments: list[tuple[float, float]]
    km: pl.DataFrame
    fitted: pl.DataFrame


@dataclass(frozen=True)
class ClassProbabilityPlots:
    """Probability plots of one component class and the AD statistic of every family.

    Attributes
    ----------
    component_class, n_units, n_failures
        The class, its lives and failures.
    plots
        Paper (``weibull``, ``lognormal``) -> the plot of that paper's own family
        (:func:`models.probability_plot`); a paper whose fit did not converge is left out.
    ad_statistics
        Family -> Anderson-Darling statistic (:func:`models.goodness_of_fit`), from the fit
        table's ``ad_statistic`` when it has one, else computed from its ``params_json``.
    """

    component_class: str
    n_units: int
    n_failures: int
    plots: dict[str, ProbabilityPlot]
    ad_statistics: dict[str, float]


@dataclass(frozen=True)
class ReportData:
    """Everything the weekly report shows, as frames and dicts (no HTML).

    Attributes
    ----------
    period, fit, generated_at
        The week and windows, the fits used, when the data was read.
    headline
        Scalars of the headline section (see :func:`read_report_data`).
    classes
        Per component class: failures this week, trailing weekly mean, fit results.
    weekly_failures
        ``week``, ``week_start``, ``n_failures``, ``full_week`` per ISO week of the window.
    survival
        Curves of the top classes (most failures, at least two).
    mcf, trend
        Mean cumulative failures per node since the window start, and the Laplace and
        Crow-AMSAA results with the overall verdict.
    causes, restart, interruptions
        Interruptions by root cause, restart overhead from the scheduler, the week's largest
        interruptions.
    nodes, lemon_rule
        Lemon nodes and the watch list with their evidence; the rule in words.
    goodput_curve, goodput_targets, knobs, scenario
        Goodput against scale with a 95 % band, the projection at each target scale, the
        what-if ranking and the scenario's assumptions.
    files, quarantine, quarantine_samples, checks
        Data quality: files per source, quarantine by reason, sample quarantined lines, Great
        Expectations results.
    prediction
        The latest failure predictor (``model``: id, windows, test metrics next to the two
        baselines; None when none was trained) and ``at_risk``: its latest scores at or above
        its threshold, with their evidence (:func:`~pipelines.report.nodes.prediction_summary`).
    notes
        Assumptions and model warnings, in words.
    probability
        Weibull- and log-normal-paper probability plots of every class with at least
        ``MIN_PLOT_FAILURES`` failures, most failures first (:func:`probability_plots`).
    realised
        Measured goodput and the back-test (issue #16), as
        :func:`pipelines.report.goodput.read_realised_goodput` returns them.
    replacements
        Replacements from repair tickets, apart from the failures: ``rows`` (per class
        ``component_class``, ``n_replacements``, ``unit_years``, ``replacement_afr_pct`` with
        its exact bounds), or ``missing`` and ``supply`` when the warehouse has no tickets.
    """

    period: ReportPeriod
    fit: FitInfo
    generated_at: datetime
    headline: dict[str, Any]
    classes: pl.DataFrame
    weekly_failures: pl.DataFrame
    survival: list[SurvivalCurve]
    mcf: pl.DataFrame
    trend: dict[str, Any]
    causes: pl.DataFrame
    restart: pl.DataFrame
    interruptions: pl.DataFrame
    nodes: pl.DataFrame
    lemon_rule: str
    goodput_curve: pl.DataFrame
    goodput_targets: pl.DataFrame
    knobs: pl.DataFrame
    scenario: dict[str, Any]
    files: pl.DataFrame
    quarantine: pl.DataFrame
    quarantine_samples: pl.DataFrame
    checks: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    prediction: dict[str, Any] = field(default_factory=dict)
    probability: list[ClassProbabilityPlots] = field(default_factory=list)
    realised: dict[str, Any] = field(default_factory=dict)
    replacements: dict[str, Any] = field(default_factory=dict)


SECTIONS: tuple[tuple[str, str], ...] = (
    ("headline", "Headline"),
    ("failures", "Failures by component class"),
    ("survival", "Survival curves"),
    ("trend", "Trend"),
    ("interruptions", "Job interruptions by root cause"),
    ("nodes", "Nodes to look at"),
    ("prediction", "GPUs at risk"),
    ("goodput", "Goodput projection"),
    ("realised", "Realised goodput and how well the model predicted it"),
    ("quality", "Data quality"),
)
"""Section anchors and headings, in report order (the tests and the template share them)."""
