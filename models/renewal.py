r"""Renewal-function and spare-wait quadratures behind :func:`models.goodput.project_arrays`.

Per-unit Weibull renewal curves give the expected faults over the job at the fleet's ages
(:func:`expected_failures_at`, on the geometric time pieces of :func:`piece_edges`);
:func:`spare_wait`, :func:`spare_wait_random` and :func:`spare_wait_random_sampled` give the mean
wait for a hot spare and its Laplace transform, for fixed and log-normal repair times.
These names are shared with :mod:`models.goodput` only; they are not re-exported by
:mod:`models`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from models.scenario import SECONDS_PER_HOUR, ClassRate, Scenario

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import ArrayLike, NDArray

__all__: list[str] = []  # shared with models.goodput only; not re-exported by models

RENEWAL_GRID = 400  # time steps for the renewal-function quadrature
_PIECES = 32  # geometric time pieces over the job where the fault rate or the spare pool varies
WAIT_NODES = 16  # hardware-rate nodes of the log-normal wait for MTBF samples
_WAIT_GRID = 256  # points of the spare-wait quadrature when repair times are random


def _weibull_scale_h(mtbf_h: ArrayLike, shape: float) -> NDArray[np.float64]:
    r"""Weibull scale with mean ``mtbf_h``: :math:`\eta = \mathrm{MTBF}/\Gamma(1+1/k)`."""
    return np.asarray(mtbf_h, dtype=float) / math.gamma(1.0 + 1.0 / shape)


def _renewal_curve(
    shape: float, scale_h: NDArray[np.float64], horizon_h: NDArray[np.float64], age_h: float
) -> NDArray[np.float64]:
    r"""Return expected failures of one unit position in [0, t], renewed at each, on a time grid.

    The first life is the residual life of a unit aged ``age_h`` (0 = new); later lives are
    fresh Weibull(``shape``, ``scale_h``). The delayed renewal function solves
    :math:`m_D(t) = G(t) + \int_0^t m_D(t-x)\,dF(x)` (:math:`G` the first life's distribution,
    :math:`F` a fresh one's) by trapezoidal Riemann-Stieltjes steps on the grid
    :math:`t_i = i\,T/n`, :math:`n` = ``RENEWAL_GRID``. Vectorised over the batch of
    (scale, horizon) pairs; returns an array of shape (pairs, n + 1), :math:`m_D(t_i)`.
    """
    n = RENEWAL_GRID
    frac = np.linspace(0.0, 1.0, n + 1)
    t = horizon_h[:, None] * frac[None, :]
    eta = scale_h[:, None]
    cdf = -np.expm1(-((t / eta) ** shape))
    if age_h > 0:
        h_age = (age_h / eta) ** shape
        first = -np.expm1(-(((age_h + t) / eta) ** shape - h_age))
    else:
        first = cdf
    d_f = np.diff(cdf, axis=1)
    m = np.zeros_like(cdf)
    half_first = d_f[:, 0] / 2.0
    for i in range(1, n + 1):
        acc = first[:, i] + half_first * m[:, i - 1]
        if i >= 2:
            acc = (
                acc + np.sum(d_f[:, 1:i] * (m[:, i - 2 :: -1] + m[:, i - 1 : 0 : -1]), axis=1) / 2.0
            )
        m[:, i] = acc / (1.0 - half_first)
    return m


def _renewal_count(
    shape: float, scale_h: NDArray[np.float64], horizon_h: NDArray[np.float64], age_h: float
) -> NDArray[np.float64]:
    """Return expected failures of one unit position over the horizon.

    See :func:`_renewal_curve`.
    """
    return _renewal_curve(shape, scale_h, horizon_h, age_h)[:, -1]


def piece_edges(fine: bool) -> NDArray[np.int64]:
    """Grid indices of the time pieces: geometric (finer where a young fleet's rate changes fast).

    ``fine=False`` keeps every other edge: the coarse answer whose distance to the fine one is the
    discretisation part of the error bound.
    """
    inner = np.unique(np.round(np.geomspace(1.0, RENEWAL_GRID, _PIECES)).astype(np.int64))
    edges = np.concatenate([[0], inner])
    if not fine:
        edges = np.unique(np.concatenate([edges[::2], [RENEWAL_GRID]]))
    return edges


def expected_failures_at(
    mtbf_h: NDArray[np.float64],
    shape: float,
    horizon_h: NDArray[np.float64],
    fleet_age: str | float | tuple[tuple[float, float], ...],
    edges: NDArray[np.int64],
) -> NDArray[np.float64]:
    r"""Return expected failures of one unit position by each piece edge.

    The shape is ``(*points, len(edges))``. Steady state (a stationary renewal process) and
    exponential lifetimes fail at exactly :math:`t/\mathrm{MTBF}`; otherwise the (delayed)
    renewal function of :func:`_renewal_curve`. An age mix is the share-weighted sum of the
    delayed renewal functions at its ages (expected counts add over the units, so this is exact).
    """
    if isinstance(fleet_age, tuple):
        return np.asarray(
            sum(
                share * expected_failures_at(mtbf_h, shape, horizon_h, age, edges)
                for age, share in fleet_age
            ),
            float,
        )
    mtbf_h, horizon_h = np.broadcast_arrays(np.asarray(mtbf_h, float), np.asarray(horizon_h, float))
    frac = edges / RENEWAL_GRID
    if fleet_age == "steady_state" or shape == 1.0:
        return (horizon_h / mtbf_h)[..., None] * frac
    age = 0.0 if fleet_age == "new" else float(fleet_age)
    pairs = np.stack([mtbf_h.ravel(), horizon_h.ravel()], axis=1)
    unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
    curve = _renewal_curve(shape, _weibull_scale_h(unique[:, 0], shape), unique[:, 1], age)
    return curve[:, edges][inverse.ravel()].reshape(*mtbf_h.shape, len(edges))


def fleet_age_assumption(
    fleet_age: str | float | tuple[tuple[float, float], ...], rates: Sequence[ClassRate]
) -> str:
    if fleet_age == "steady_state":
        text = (
            "steady state: each unit's first failure drawn from the stationary "
            "(forward-recurrence) distribution, so the fleet fails at n/MTBF whatever the "
            "Weibull shape"
        )
    elif fleet_age == "new":
        text = (
            "new fleet: every unit at age 0 when the job starts, renewed at each failure; the "
            "analytical rate is the renewal function over the job divided by its length"
        )
    elif isinstance(fleet_age, tuple):
        mix = ", ".join(f"{share:.3g} at {age:g} h" for age, share in fleet_age)
        text = (
            f"age mix: shares of the units (every class, in proportion) this old when the job "
            f"starts ({mix}), renewed at each failure; the expected failures are the "
            "share-weighted sum of the delayed renewal functions at each age, integrated piece "
            "by piece over the job"
        )
    else:
        text = (
            f"aged fleet: every unit {float(fleet_age):g} h old when the job starts, renewed at "
            "each failure; the analytical rate is the delayed renewal function over the job "
            "divided by its length"
        )
    if all(r.weibull_shape == 1.0 for r in rates):
        text += "; all lifetimes are exponential, so fleet age does not change the answer"
    return text


# --------------------------------------------------------------------------- the analytical core


def scenario_param(s: Scenario, over: Mapping[str, ArrayLike], name: str) -> NDArray[np.float64]:
    value = over.get(name, getattr(s, name))
    if value is None:
        return np.asarray(np.nan)
    arr = np.asarray(value)
    if arr.dtype == object:
        # numpy's stubs reject None as an operand; np.equal compares it elementwise here
        arr = np.where(np.equal(arr, None), np.nan, arr)  # type: ignore[call-overload]
    return arr.astype(float)


def spare_wait(
    spares: NDArray[np.float64],
    c: NDArray[np.float64],
    rate_out: NDArray[np.float64],
    rate_u: NDArray[np.float64],
    window: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Mean and Laplace transform of an unwarned fault's wait for a hot spare (fixed repairs).

    Every event that takes a domain out of the job (a fault, a drain, a false alarm: rate
    :math:`\Lambda`) takes a spare, which rejoins the pool a repair later. An unwarned fault
    waits :math:`W = (c - \Gamma_S)^+` after its detection, with :math:`\Gamma_S \sim
    \mathrm{Gamma}(S, \Lambda)` the time back to the S-th previous event; the pool starts full,
    so only events since the job began count: a fault ``window`` :math:`w` after the start
    waits only if :math:`\Gamma_S \le w`. With :math:`m = \min(c, w)`:

    .. math::
        E[W] = c\,P(S, \Lambda m) - \frac{S}{\Lambda} P(S + 1, \Lambda m), \qquad
        E[e^{-aW}] = Q(S, \Lambda m)
            + e^{-ac - (\Lambda - a)m}\frac{(\Lambda m)^S}{S!}\,M(1, S + 1, (\Lambda - a)m)

    with :math:`P`, :math:`Q` the regularised incomplete gammas, :math:`M` Kummer's function
    and :math:`a` the rate of unwarned interruptions. With no drains (:math:`a = \Lambda`,
    :math:`m = c`) the transform is :math:`P(\mathrm{Poisson}(\Lambda c) \le S)`. Where
    :math:`(\Lambda - a)m > S` the last term is evaluated as
    :math:`e^{-ac}(\Lambda/(\Lambda - a))^S P(S, (\Lambda - a)m)` in logs. ``window`` None is
    the steady state (:math:`m = c`).
    """
    if not np.any(spares > 0):  # no spare pool: every unwarned fault waits its whole repair
        shape = np.broadcast_shapes(
            *(np.shape(v) for v in (spares, c, rate_out, rate_u, window) if v is not None)
        )
        return (
            np.broadcast_to(c, shape).astype(float),
            np.broadcast_to(np.exp(-rate_u * c), shape).astype(float),
        )
    from scipy import special  # imported on use: 0.2 s a cold `relia project` need not pay

    m = c if window is None else np.minimum(c, window)
    x = rate_out * m
    y = (rate_out - rate_u) * m  # the alarms' share of x
    pos = np.maximum(spares, 1.0)  # S = 0 is handled apart
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = c * special.gammainc(pos, x) - spares / rate_out * special.gammainc(pos + 1.0, x)
        log_pmf = special.xlogy(pos, x) - rate_u * c - y - special.gammaln(pos + 1.0)
        small = np.exp(log_pmf) * special.hyp1f1(1.0, pos + 1.0, np.minimum(y, pos))
        large = np.exp(
            -rate_u * c
            + pos * (np.log(rate_out) - np.log(rate_out - rate_u))
            + np.log(special.gammainc(pos, y))
        )
        laplace = special.gammaincc(pos, x) + np.where(y > pos, large, small)
    mean = np.where(spares > 0, np.maximum(mean, 0.0), c)
    laplace = np.where(spares > 0, laplace, np.exp(-rate_u * c))
    return mean, laplace


def _lognormal_partial_integrals(
    y: NDArray[np.float64], mu: NDArray[np.float64], sigma: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r""":math:`F(y)` and :math:`J(y) = \int_0^y F(v)\,dv` of a log-normal repair time.

    :math:`J(y) = yF(y) - e^{\mu + \sigma^2/2}\,\Phi((\ln y - \mu - \sigma^2)/\sigma)`.
    """
    from scipy import special

    with np.errstate(divide="ignore"):
        log_y = np.log(np.maximum(y, 0.0))
    cdf = special.ndtr((log_y - mu) / sigma)
    partial = y * cdf - np.exp(mu + sigma**2 / 2.0) * special.ndtr((log_y - mu - sigma**2) / sigma)
    return cdf, np.maximum(partial, 0.0)


def spare_wait_random(
    spares: ArrayLike,
    detect: ArrayLike,
    repair_median_s: ArrayLike,
    sigma: ArrayLike,
    rate_out: ArrayLike,
    rate_u: ArrayLike,
    window: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Mean and Laplace transform of the wait for a spare when repair times are log-normal.

    The pool starts with :math:`S` domains; each event taking a domain out (rate
    :math:`\Lambda`, Poisson) takes one and sends a domain to repair; the first domain back
    goes to the longest-waiting request. So the :math:`i`-th request is served by the
    :math:`i`-th return, counting the :math:`S` spares as returned at the start. A fault at
    time :math:`t` (``window``) after the start, detected :math:`d` later, waits more than
    :math:`w` iff, at :math:`x = t + d + w`, fewer than :math:`i` domains are back, which is

    .. math:: N - L - B \ge S

    with :math:`N \sim \mathrm{Poisson}(\Lambda\int_{d+w}^{t+d+w} \bar F_r)` the earlier
    events still in repair, :math:`L \sim \mathrm{Poisson}(\Lambda\int_0^{d+w} F_r)` the
    later events already back and :math:`B \sim \mathrm{Bernoulli}(F_r(d + w))` the fault's own
    domain back (independent: thinned Poisson processes on disjoint intervals, an
    :math:`M/G/\infty` argument). Then :math:`E[W] = \int_0^\infty P(W > w)\,dw` and
    :math:`E[e^{-aW}] = 1 - a\int_0^\infty e^{-aw} P(W > w)\,dw`, by trapezoids on
    ``_WAIT_GRID`` points up to the repair time's 1 - 1e-6 quantile. With a fixed repair time
    this is :func:`spare_wait`.
    """
    shape = np.broadcast_shapes(
        np.shape(spares),
        np.shape(detect),
        np.shape(repair_median_s),
        np.shape(sigma),
        np.shape(rate_out),
        np.shape(rate_u),
        np.shape(window),
    )
    spares, detect, median, sigma, rate_out, rate_u, window = (
        np.broadcast_to(np.asarray(v, float), shape)[..., None]
        for v in (spares, detect, repair_median_s, sigma, rate_out, rate_u, window)
    )
    mu = np.log(median)
    # the wait changes fastest while repairs come back (between the repair time's 1e-6 and
    # 1 - 1e-6 quantiles, less detection: a dense linear grid) and e^{-aw} decays on 1/a (a
    # geometric grid from a second to the last repair resolves both)
    lo = np.maximum(median * np.exp(-4.76 * sigma) - detect, 0.0)
    hi = np.maximum(median * np.exp(4.76 * sigma) - detect, lo + 1.0)
    half = _WAIT_GRID // 2
    dense = lo + (hi - lo) * np.linspace(0.0, 1.0, half)
    wide = np.exp(np.log(hi) * np.linspace(0.0, 1.0, half - 1))  # 1 s .. hi
    lead = np.broadcast_shapes(dense.shape[:-1], wide.shape[:-1])
    w = np.sort(
        np.concatenate(
            [
                np.zeros((*lead, 1)),
                np.broadcast_to(wide, (*lead, wide.shape[-1])),
                np.broadcast_to(dense, (*lead, dense.shape[-1])),
            ],
            axis=-1,
        ),
        axis=-1,
    )
    own, j_near = _lognormal_partial_integrals(detect + w, mu, sigma)
    _, j_far = _lognormal_partial_integrals(window + detect + w, mu, sigma)
    # integral of the survival function over [d + w, t + d + w]: window - (J(far) - J(near))
    mean_n = rate_out * np.maximum(window - (j_far - j_near), 0.0)
    mean_l = rate_out * j_near
    # P(N - L >= k) = sum_n P(N = n) P(L <= n - k), N summed far into its tail
    # (only n >= k can count, so the sum starts at the fewest spares asked about)
    from scipy import special

    reach = float(np.max(mean_n + 12.0 * np.sqrt(mean_n) + 30.0 + spares, initial=30.0))
    ns = np.arange(float(np.min(spares)), np.ceil(reach) + 1.0)
    log_pn = special.xlogy(ns, mean_n[..., None]) - mean_n[..., None] - special.gammaln(ns + 1.0)
    p_n = np.exp(log_pn)

    ls = np.arange(len(ns), dtype=float)
    log_pl = special.xlogy(ls, mean_l[..., None]) - mean_l[..., None] - special.gammaln(ls + 1.0)
    cdf_l = np.cumsum(np.exp(log_pl), axis=-1)  # P(L <= l) for l = 0 .. len(ns) - 1

    def at_least(k: NDArray[np.float64]) -> NDArray[np.float64]:
        room = (ns - k[..., None]).astype(np.int64)  # L may be at most this
        below = np.take_along_axis(cdf_l, np.clip(room, 0, len(ns) - 1), axis=-1)
        total: NDArray[np.float64] = np.sum(p_n * np.where(room >= 0, below, 0.0), axis=-1)
        return total

    p_wait = own * at_least(spares + 1.0) + (1.0 - own) * at_least(spares)
    mean = np.trapezoid(p_wait, w, axis=-1)
    laplace = 1.0 - rate_u[..., 0] * np.trapezoid(np.exp(-rate_u * w) * p_wait, w, axis=-1)
    return mean, np.clip(laplace, 0.0, 1.0)


def spare_wait_random_sampled(
    q: Mapping[str, NDArray[np.float64]],
    detect: NDArray[np.float64],
    repair_s: NDArray[np.float64],
    sigma: NDArray[np.float64],
    lam_hw: NDArray[np.float64],
    t_mid: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`spare_wait_random` for MTBF samples (rows of ``lam_hw``, one scenario otherwise).

    Every knob but the hardware fault rate is the same for all samples, and the spare and
    unwarned rates are affine in it, so each piece's wait is a function of that one rate: it is
    computed on ``WAIT_NODES`` geometric nodes spanning the samples' rates and interpolated
    in the log of the rate (linear interpolation of smooth functions on nodes a few percent
    apart).
    """
    lo = np.maximum(np.min(lam_hw, axis=0), 1e-300)
    hi = np.maximum(np.max(lam_hw, axis=0), lo * (1.0 + 1e-9))
    frac = np.linspace(0.0, 1.0, WAIT_NODES)[:, None]
    nodes = np.exp(np.log(lo) + (np.log(hi) - np.log(lo)) * frac)  # (nodes, pieces)
    # the rates are affine in the hardware rate (drains and job-level rates are not sampled)
    recall, precision = float(q["drain_recall"].flat[0]), float(q["drain_precision"].flat[0])
    job_rate = float(q["job_interruptions_per_h"].flat[0]) / SECONDS_PER_HOUR
    mean, laplace = spare_wait_random(
        q["hot_spares"].flat[0],
        detect.flat[0],
        repair_s.flat[0],
        sigma.flat[0],
        (1.0 - recall + recall / precision) * nodes,
        (1.0 - recall) * nodes + job_rate,
        np.broadcast_to(t_mid, lam_hw.shape)[0],
    )
    x = np.log(np.maximum(lam_hw, 1e-300))
    log_nodes = np.log(nodes)
    out_m = np.empty_like(lam_hw)
    out_l = np.empty_like(lam_hw)
    for k in range(lam_hw.shape[1]):
        out_m[:, k] = np.interp(x[:, k], log_nodes[:, k], mean[:, k])
        out_l[:, k] = np.interp(x[:, k], log_nodes[:, k], laplace[:, k])
    return out_m, out_l
