"""The analysis stages, each reading the warehouse's views and writing model tables.

- fit: :mod:`~pipelines.analysis.fit` (MTBF and lifetime fits per class), with the class
  headline (:mod:`~pipelines.analysis.headline`), the lives' coverage
  (:mod:`~pipelines.analysis.lives_coverage`) and repeat offenders
  (:mod:`~pipelines.analysis.offenders`);
- project: :mod:`~pipelines.analysis.project` (projections and sweeps from the fitted rates), its
  inputs (:mod:`~pipelines.analysis.project_inputs`), knobs (:mod:`~pipelines.analysis.knobs`) and
  sweep outputs (:mod:`~pipelines.analysis.sweep_outputs`);
- predict: :mod:`~pipelines.analysis.predict` (failure prediction from telemetry);
- backtest: :mod:`~pipelines.analysis.backtest` (the projection against the fleet's own history);
- summaries: :mod:`~pipelines.analysis.summary` (the fleet) and
  :mod:`~pipelines.analysis.goodput_summary` (measured goodput of jobs).
"""
