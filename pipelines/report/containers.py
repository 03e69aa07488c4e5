"""What the weekly report holds: the fits used, curves, probability plots, :class:`ReportData`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    from datetime import datetime

    import polars as pl

    from models.gof import ProbabilityPlot
    from pipelines.analysis.headline import ReplacementRow
    from pipelines.analysis.slow_projection import MeasuredSlowFit
    from pipelines.report.period import ReportPeriod


# --------------------------------------------------------------------------------------------
# Section records: JSON-shaped (stored in report_projections, read by the template), so
# TypedDicts, plain dicts at run time. Rows read straight from a mart stay dicts of its columns.
# --------------------------------------------------------------------------------------------
class WhatIsMissing(TypedDict):
    """What a section lacks and what would supply it (a ``MissingDataError``'s two parts)."""

    missing: str
    supply: str


class ReportHeadline(TypedDict):
    """The headline section's figures (:func:`pipelines.report.data.read_report_data`).

    ``goodput`` (the steady-state projection at each target scale) is added once the goodput
    section is read.
    """

    week: str
    n_nodes: int
    n_gpus: int
    gpu_hours_week: float
    gpu_hours_to_date: float
    failures_week: int
    failures_trailing_mean: float | None
    interruptions_week: int
    interruptions_trailing_mean: float | None
    failures_vs_trailing: str
    interruptions_vs_trailing: str
    failures_to_date: int
    failure_events_to_date: int
    fleet_mtbf_h: float
    fleet_mtbf_lo_h: float
    fleet_mtbf_hi_h: float
    node_mtbf_h: float
    trailing_weeks: int
    goodput: NotRequired[list[ProjectionTarget]]


class CurvePoint(TypedDict):
    """One scale of the goodput curve: goodput with its 95 % band and the MTTI."""

    n_gpus: int
    goodput: float
    goodput_lo: float
    goodput_hi: float
    mtti_h: float
    is_target: bool


class ProjectionTarget(TypedDict):
    """The projection at one target scale and fleet age (``steady_state`` or ``new``)."""

    n_gpus: int
    fleet_age: str
    mtti_h: float
    mtti_lo_h: float | None
    mtti_hi_h: float | None
    expected_interruptions: float
    checkpoint_interval_min: float
    goodput: float
    goodput_lo: float | None
    goodput_hi: float | None
    ettr: float | None
    lost_gpu_h_total: float
    energy_lost_mwh: float
    fleet_age_assumption: str
    uncertainty: str


class ClassExpected(TypedDict):
    """Interruptions of one job expected from one class at a target scale, with its interval."""

    n_gpus: int
    component_class: str
    level: str
    units: int
    expected: float
    expected_lo: float
    expected_hi: float


class RateAssumption(TypedDict):
    """A class's interruption rate the projection used."""

    component_class: str
    level: str
    mtbf_h: float
    weibull_shape: float
    extrapolated: bool


class SweepYaml(TypedDict):
    """A sweep file's keys (``relia whatif``) that reproduce a ranking of the report."""

    target_gpus: int
    base: dict[str, Any]  # knobs by name, as a sweep YAML's base: (an input edge)
    baseline: dict[str, Any]  # knobs by name, as a sweep YAML's baseline:
    grid: dict[str, list[float | str]]


class KnobBaseline(TypedDict):
    """The baseline the what-if ranking at one scale holds, in words, and its sweep."""

    n_gpus: int
    held: str
    uncertainty: str
    sweep: SweepYaml


class ProjectionAssumptions(TypedDict, total=False):
    """The goodput projection's assumptions, in words and numbers (the stored scenario).

    Empty before a projection; only ``missing`` and ``supply`` when the fits give none (no
    lives, or no failure); every other key otherwise.
    """

    missing: str
    supply: str
    gpus_per_node: int
    failure_domain_gpus: int
    job_days: float
    checkpoint_s: float
    detect_s: float
    reschedule_s: float
    reschedule_measured: bool
    restart_gap_s: float | None
    n_restart_gaps: int
    reload_s: float
    warmup_s: float
    repair_h: float
    repair_measured: bool
    strategy: str
    fleet_age: str | float | tuple[tuple[float, float], ...]
    fleet_age_assumption: str
    rates: list[RateAssumption]
    extrapolated: list[str]
    left_out: list[str]
    expected_by_class: list[ClassExpected]
    n_samples: int
    targets: list[int]
    hot_spare_share: float
    knob_baselines: list[KnobBaseline]
    fleet_age_matters: bool


class GoodputSection(TypedDict):
    """The goodput section (:func:`pipelines.report.data.read_goodput`).

    ``headline`` (the steady-state target rows), the ``curve`` (:class:`CurvePoint` rows),
    ``targets`` (:class:`ProjectionTarget` rows) and ``knobs`` (the what-if ranking) as frames,
    the ``scenario``'s assumptions, and, read back from ``report_projections``, the ``notes``
    the models raised when it was made.
    """

    headline: list[ProjectionTarget]
    curve: pl.DataFrame
    targets: pl.DataFrame
    knobs: pl.DataFrame
    scenario: ProjectionAssumptions
    notes: NotRequired[list[str]]


class Replacements(TypedDict):
    """Replacements from repair tickets (:func:`pipelines.report.data.read_replacements`).

    ``rows`` (most replacements first) and ``n_repair_tickets``; without any ticket no row,
    and ``missing`` and ``supply`` instead.
    """

    rows: list[ReplacementRow]
    missing: NotRequired[str]
    supply: NotRequired[str]
    n_repair_tickets: NotRequired[int]


class PredictorMetrics(TypedDict):
    """Test metrics of the predictor or of a baseline it is compared with (``name``)."""

    name: str
    precision: float | None
    alarm_precision: float | None
    recall: float | None
    pr_auc: float | None
    lead_time_h: float | None
    alarms_per_day: float | None
    n_failures: int | None


class PredictorModel(TypedDict):
    """The latest failure predictor (``predict_models``) and its test metrics."""

    model_id: str
    trained_at: datetime
    horizon_h: float
    threshold: float
    test_start: datetime
    test_end: datetime
    metrics: list[PredictorMetrics]
    n_sbe_per_h: float | None
    sizes: dict[str, Any]  # predict_models.metrics' sizes, stored as JSON by the train stage


class AtRiskGpu(TypedDict):
    """A GPU the predictor's latest scores put at risk, with its evidence in words."""

    host: str
    gpu_index: int
    uuid: str | None
    prob: float
    evidence: str


class PredictionSummary(TypedDict):
    """The prediction section (:func:`pipelines.report.nodes.prediction_summary`).

    ``model`` is None when no predictor was trained; ``prediction_ts`` (the scores' time) is
    there once one was.
    """

    model: PredictorModel | None
    at_risk: list[AtRiskGpu]
    n_at_risk: int
    prediction_ts: NotRequired[datetime | None]
    scored_at: datetime | None


class RealisedGoodput(TypedDict):
    """The realised-goodput section (:func:`pipelines.report.goodput.read_realised_goodput`).

    Its rows are the goodput marts' rows (``rpt_fleet_goodput``, the back-test's), as the
    template reads them; the fields are described there.
    """

    backtest_missing: WhatIsMissing | None
    missing: list[str]
    has_ledger: bool
    has_backtest: bool
    all: dict[str, Any] | None
    buckets: list[dict[str, Any]]
    week: dict[str, Any] | None
    n_jobs: int
    n_measured: int
    n_estimated: int
    assumptions: list[dict[str, Any]]
    untied: dict[str, int]
    backtest: list[dict[str, Any]]
    backtest_classes: list[dict[str, Any]]


class FailSlow(TypedDict):
    """The fail-slow section (:func:`pipelines.report.failslow.read_fail_slow`).

    Its rows are ``rpt_fleet_goodput``'s (with the fail-slow columns), the measured slowdown per
    bucket, ``rpt_slow_units``' rows and the projection fitted on the warehouse's episodes; the
    fields are described there.
    """

    missing: str | None
    all: dict[str, Any] | None
    buckets: list[dict[str, Any]]
    weeks: list[dict[str, Any]]
    week: dict[str, Any] | None
    n_jobs: int
    n_slow_measured: int
    n_slow_jobs: int
    measured: list[dict[str, Any]]
    units: list[dict[str, Any]]
    units_missing: str | None
    fit: MeasuredSlowFit | None


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
    failslow
        Fail-slow beside fail-stop: the badput split by cause, the measured and projected
        slowdown against job size, the repeatedly slow units
        (:func:`pipelines.report.failslow.read_fail_slow`); None for a stand-in made without it.
    """

    period: ReportPeriod
    fit: FitInfo
    generated_at: datetime
    headline: ReportHeadline
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
    scenario: ProjectionAssumptions
    files: pl.DataFrame
    quarantine: pl.DataFrame
    quarantine_samples: pl.DataFrame
    checks: pl.DataFrame
    prediction: PredictionSummary
    realised: RealisedGoodput
    replacements: Replacements
    notes: list[str] = field(default_factory=list)
    probability: list[ClassProbabilityPlots] = field(default_factory=list)
    failslow: FailSlow | None = None


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
    ("failslow", "Fail-slow beside fail-stop"),
    ("quality", "Data quality"),
)
"""Section anchors and headings, in report order (the tests and the template share them)."""
