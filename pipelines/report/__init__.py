"""The weekly reliability report: marts and model outputs in, one self-contained HTML file out.

Modules: :mod:`~pipelines.report.period` (the week, constants, shared helpers),
:mod:`~pipelines.report.containers` (:class:`ReportData` and its parts),
:mod:`~pipelines.report.data` (reads ``rpt_*``/``fct_*``/``dim_*`` views and model-output tables),
:mod:`~pipelines.report.curves`, :mod:`~pipelines.report.nodes`, :mod:`~pipelines.report.format`,
:mod:`~pipelines.report.figures` and :mod:`~pipelines.report.render` (HTML, markdown and
:func:`build_report`). The inputs the report reads (its fit run and goodput projection) are
made by :func:`pipelines.report.inputs.refresh_inputs`, the fit and project stages.
"""

from __future__ import annotations

from pipelines.report.containers import (
    SECTIONS,
    ClassProbabilityPlots,
    FitInfo,
    ReportData,
    SurvivalCurve,
)
from pipelines.report.curves import probability_plots
from pipelines.report.data import read_report_data
from pipelines.report.figures import (
    plot_file_name,
    probability_figure,
    probability_figure_key,
    probability_figures,
    report_figures,
    write_fit_plots,
    write_probability_plots,
)
from pipelines.report.period import (
    DEFAULT_TARGET_GPUS,
    MIN_AT_RISK,
    MIN_PLOT_FAILURES,
    ReportPeriod,
    default_week,
    iso_week,
    read_window,
    report_period,
    week_monday,
)
from pipelines.report.render import ReportResult, build_report, render_html, render_markdown

__all__ = [
    "DEFAULT_TARGET_GPUS",
    "MIN_AT_RISK",
    "MIN_PLOT_FAILURES",
    "SECTIONS",
    "ClassProbabilityPlots",
    "FitInfo",
    "ReportData",
    "ReportPeriod",
    "ReportResult",
    "SurvivalCurve",
    "build_report",
    "default_week",
    "iso_week",
    "plot_file_name",
    "probability_figure",
    "probability_figure_key",
    "probability_figures",
    "probability_plots",
    "read_report_data",
    "read_window",
    "render_html",
    "render_markdown",
    "report_figures",
    "report_period",
    "week_monday",
    "write_fit_plots",
    "write_probability_plots",
]
