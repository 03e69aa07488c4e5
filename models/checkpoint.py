r"""Checkpoint-interval and ETTR equations: Young (1974), Daly (2006), Kokolis et al. (2025).

The closed forms :func:`models.goodput.project` builds on.

Equations
---------
Young (1974), first-order optimum compute time between checkpoints of cost :math:`\delta` under
Poisson interrupts with mean :math:`M`:

.. math:: \tau_Y = \sqrt{2 \delta M}

Daly (2006), higher-order optimum (perturbation solution of the complete cost function):

.. math::
    \tau_D = \sqrt{2\delta M}\left[1 + \tfrac13\sqrt{\tfrac{\delta}{2M}}
              + \tfrac19 \tfrac{\delta}{2M}\right] - \delta  \quad (\delta < 2M),
    \qquad \tau_D = M \quad (\delta \ge 2M)

and expected wall time to finish :math:`T_s` of failure-free work with restart time :math:`R`:

.. math:: T_w = M e^{R/M} \left(e^{(\tau+\delta)/M} - 1\right) \frac{T_s}{\tau}

Kokolis et al. (2025), expected effective training time ratio of a job on :math:`N` nodes failing
at :math:`r_f` per node-day, with restart overhead :math:`u_0`, checkpoint interval
:math:`\Delta t_{cp}` and checkpoint write time :math:`w_{cp}`:

.. math::
    E[\mathrm{ETTR}] \approx
    \frac{1 - N r_f \left(u_0 + \Delta t_{cp}/2\right)}{1 + w_{cp} / \Delta t_{cp}}

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint interval",
   Communications of the ACM 17(9), 530-531, 1974.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", Future Generation Computer Systems 22(3), 303-312, 2006.
.. [3] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
   Clusters", HPCA 2025, arXiv:2410.21680.
.. [4] A. Grattafiori et al., "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, section 3.3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from models.scenario import SECONDS_PER_DAY

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["daly_expected_wall_time_s", "daly_interval_s", "ettr_meta", "young_interval_s"]


def _scalar_or_array(x: NDArray[np.float64]) -> Any:
    return float(x) if np.ndim(x) == 0 else x


# --------------------------------------------------------------------------- checkpoint equations


def young_interval_s(checkpoint_s: ArrayLike, mtti_s: ArrayLike) -> Any:
    r"""Young's first-order optimum compute time between checkpoints.

    .. math:: \tau_Y = \sqrt{2 \delta M}

    Parameters
    ----------
    checkpoint_s
        Blocking checkpoint write time :math:`\delta`, seconds.
    mtti_s
        Mean time to interrupt of the job :math:`M`, seconds.

    Returns
    -------
    float or numpy.ndarray
        :math:`\tau_Y`, seconds (an array when an argument is one).

    References
    ----------
    J. W. Young, CACM 17(9), 1974.
    """
    d = np.asarray(checkpoint_s, dtype=float)
    m = np.asarray(mtti_s, dtype=float)
    return _scalar_or_array(np.sqrt(2.0 * d * m))


def daly_interval_s(checkpoint_s: ArrayLike, mtti_s: ArrayLike) -> Any:
    r"""Daly's higher-order optimum compute time between checkpoints.

    .. math::
        \tau_D = \sqrt{2\delta M}\left[1 + \tfrac13\sqrt{\tfrac{\delta}{2M}}
                  + \tfrac19\tfrac{\delta}{2M}\right] - \delta \quad (\delta < 2M),
        \qquad \tau_D = M \quad (\delta \ge 2M)

    Parameters
    ----------
    checkpoint_s
        Blocking checkpoint write time :math:`\delta`, seconds.
    mtti_s
        Mean time to interrupt :math:`M`, seconds.

    Returns
    -------
    float or numpy.ndarray
        :math:`\tau_D`, seconds.

    Examples
    --------
    Daly's own figures (:math:`\delta` = 5 min): M = 24 h gives 117 min, 6 h gives 57 min,
    15 min gives 9.1 min.

    >>> round(daly_interval_s(300, 24 * 3600) / 60)
    117

    References
    ----------
    J. T. Daly, FGCS 22(3), 303-312, 2006: the higher-order perturbation solution and its
    :math:`\tau = M` branch.
    """
    d = np.asarray(checkpoint_s, dtype=float)
    m = np.asarray(mtti_s, dtype=float)
    x = d / (2.0 * m)
    tau = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d
    return _scalar_or_array(np.where(d < 2.0 * m, tau, m))


def daly_expected_wall_time_s(
    solve_s: ArrayLike,
    checkpoint_s: ArrayLike,
    mtti_s: ArrayLike,
    *,
    restart_s: ArrayLike = 0.0,
    interval_s: ArrayLike | None = None,
) -> Any:
    r"""Daly's expected wall time to finish ``solve_s`` of failure-free work.

    .. math:: T_w = M e^{R/M}\left(e^{(\tau+\delta)/M} - 1\right)\frac{T_s}{\tau}

    Exact for Poisson interrupts when failures can also strike during checkpoints and restarts
    (each segment of :math:`\tau + \delta` is redone after a fault, each restart of length
    :math:`R` is retried after a fault).

    Parameters
    ----------
    solve_s
        Failure-free compute time :math:`T_s`, seconds.
    checkpoint_s
        Blocking checkpoint write time :math:`\delta`, seconds.
    mtti_s
        Mean time to interrupt :math:`M`, seconds.
    restart_s
        Restart time :math:`R`, seconds.
    interval_s
        Compute time between checkpoints :math:`\tau`, seconds; ``None`` uses
        :func:`daly_interval_s`.

    Returns
    -------
    float or numpy.ndarray
        :math:`T_w`, seconds (``inf`` when progress is impossible).

    References
    ----------
    J. T. Daly, FGCS 22(3), 2006: expected wall time of the complete cost model.
    """
    ts = np.asarray(solve_s, dtype=float)
    d = np.asarray(checkpoint_s, dtype=float)
    m = np.asarray(mtti_s, dtype=float)
    r = np.asarray(restart_s, dtype=float)
    tau = np.asarray(daly_interval_s(d, m) if interval_s is None else interval_s, dtype=float)
    with np.errstate(over="ignore"):
        tw = m * np.exp(r / m) * np.expm1((tau + d) / m) * ts / tau
    return _scalar_or_array(tw)


def ettr_meta(
    n_nodes: ArrayLike,
    failures_per_node_day: ArrayLike,
    *,
    restart_s: ArrayLike,
    checkpoint_interval_s: ArrayLike,
    checkpoint_s: ArrayLike = 0.0,
    drains_per_node_day: ArrayLike = 0.0,
    drain_s: ArrayLike = 0.0,
    clip: bool = True,
) -> Any:
    r"""Meta's closed-form expected effective training time ratio.

    .. math::
        E[\mathrm{ETTR}] \approx
        \frac{1 - N r_f\left(u_0 + \Delta t_{cp}/2\right)}{1 + w_{cp}/\Delta t_{cp}}

    Each of the :math:`N r_f` interruptions per unit time costs the restart overhead
    :math:`u_0` plus, on average, half a checkpoint interval of lost work; each interval of
    :math:`\Delta t_{cp}` compute also pays a blocking write :math:`w_{cp}`. The paper's queue
    time is not in this expression (the job is assumed to be re-admitted at once). A first-order
    approximation: it is clipped to [0, 1] where :math:`N r_f (u_0 + \Delta t_{cp}/2) > 1`.
    With proactive drains, :math:`r_f` is the rate of the failures nobody was warned of, and
    each of the :math:`N r_d` drains per unit time costs :math:`u_d` more in the numerator.

    Parameters
    ----------
    n_nodes
        Nodes the job runs on, :math:`N`.
    failures_per_node_day
        Failure rate :math:`r_f`, failures per node per day (RSC-1: 6.50e-3).
    restart_s
        Restart overhead :math:`u_0`, seconds.
    checkpoint_interval_s
        Compute time between checkpoints :math:`\Delta t_{cp}`, seconds.
    checkpoint_s
        Blocking checkpoint write time :math:`w_{cp}`, seconds.
    drains_per_node_day
        Proactive drains :math:`r_d` (true and false alarms), per node per day.
    drain_s
        Cost of one drain :math:`u_d` (a checkpoint write and a migration), seconds.

    Returns
    -------
    float or numpy.ndarray
        Expected ETTR in [0, 1].

    References
    ----------
    A. Kokolis et al., HPCA 2025, arXiv:2410.21680, section on the analytical E[ETTR]. With
    RSC-1's rate, a 16,384-GPU job, :math:`u_0` = 5 min and non-blocking checkpoints gives 0.70
    at a 60 min interval and 0.93 at 5 min, the paper's figures.
    """
    rate_s = (
        np.asarray(n_nodes, dtype=float)
        * np.asarray(failures_per_node_day, dtype=float)
        / SECONDS_PER_DAY
    )
    u0 = np.asarray(restart_s, dtype=float)
    dt = np.asarray(checkpoint_interval_s, dtype=float)
    w = np.asarray(checkpoint_s, dtype=float)
    drain_rate_s = (
        np.asarray(n_nodes, dtype=float)
        * np.asarray(drains_per_node_day, dtype=float)
        / SECONDS_PER_DAY
    )
    drain_loss = drain_rate_s * np.asarray(drain_s, dtype=float)
    ettr = (1.0 - rate_s * (u0 + dt / 2.0) - drain_loss) / (1.0 + w / dt)
    return _scalar_or_array(np.clip(ettr, 0.0, 1.0) if clip else ettr)
