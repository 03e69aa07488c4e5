"""Component classes of the synthetic fleet: lifetime laws, fixes and non-hardware processes."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

#: GPU-level classes: every GPU slot carries one competing latent lifetime per class.
GPU_CLASSES: tuple[str, ...] = ("gpu", "gpu_memory", "nvlink", "pcie", "gpu_sram", "gsp")
#: Node-level hardware classes the generator knows how to emit (no Xid; NODE_FAIL in Slurm).
NODE_CLASSES: tuple[str, ...] = ("nic", "power", "host_memory", "storage", "host_cpu", "chassis")
#: Non-hardware interruptions: per-node Poisson processes (:class:`InterruptionSpec`).
NON_HARDWARE_CLASSES: tuple[str, ...] = ("software", "driver", "nccl", "network", "maintenance")
#: Xid codes a failure of each GPU-level class prints (data contract §4). ``gpu_sram`` prints
#: Xid 95 with an L2-cache (SRAM) unit in its message; the catalog (``sql/seeds/dim_xid.csv``)
#: files code 95 under ``gpu_memory``, so only the message and the drain reason tell them apart.
FAILURE_XIDS: dict[str, tuple[int, ...]] = {
    "gpu": (62,),
    "gpu_memory": (48, 95),
    "nvlink": (74,),
    "pcie": (79,),
    "gpu_sram": (95,),
    "gsp": (119, 120),
}
#: Every Xid code that ends a unit's life, with its class in the catalog (``dim_xid``).
XID_CLASS: dict[int, str] = {
    62: "gpu",
    48: "gpu_memory",
    95: "gpu_memory",
    74: "nvlink",
    79: "pcie",
    119: "gsp",
    120: "gsp",
}
WARNING_XIDS: tuple[int, ...] = (63, 92)
APPLICATION_XIDS: tuple[int, ...] = (13, 31, 43)
#: Driver-class Xid that stops jobs in the catalog (``ROBUST_CHANNEL_SEC2_ERROR``, not a failure
#: code): printed on half of the ``driver`` interruptions.
DRIVER_XIDS: tuple[int, ...] = (60,)

#: How a hardware failure is fixed. Only ``replace`` writes a repair ticket and puts a new serial
#: in; the others return the same unit after the repair time. Every fix renews the unit.
FIX_KINDS: tuple[str, ...] = ("replace", "reset", "reboot", "reseat")
#: The fix of every non-hardware interruption: the cause is cleared and the node resumed.
RECOVER = "recover"
#: Default shares of the fix kinds per hardware class (replace, reset, reboot, reseat), see
#: :class:`SynthConfig`.
DEFAULT_FIXES: dict[str, dict[str, float]] = {
    "gpu": {"replace": 0.30, "reset": 0.40, "reboot": 0.25, "reseat": 0.05},
    "gpu_memory": {"replace": 0.25, "reset": 0.60, "reboot": 0.15},
    "nvlink": {"replace": 0.25, "reset": 0.45, "reboot": 0.15, "reseat": 0.15},
    "pcie": {"replace": 0.30, "reboot": 0.40, "reseat": 0.30},
    "gpu_sram": {"replace": 0.20, "reset": 0.60, "reboot": 0.20},
    "gsp": {"replace": 0.10, "reset": 0.50, "reboot": 0.40},
    "nic": {"replace": 0.40, "reboot": 0.30, "reseat": 0.30},
    "power": {"replace": 0.60, "reboot": 0.10, "reseat": 0.30},
    "host_memory": {"replace": 0.50, "reboot": 0.40, "reseat": 0.10},
    "storage": {"replace": 0.50, "reboot": 0.40, "reseat": 0.10},
    "host_cpu": {"replace": 0.30, "reboot": 0.70},
    "chassis": {"replace": 0.40, "reboot": 0.40, "reseat": 0.20},
}
#: Median repair time (hours) of the fixes other than ``replace`` (which takes its class's
#: ``repair_median_h``), and the shortest repair of each fix (seconds).
FIX_REPAIR_MEDIAN_H: dict[str, float] = {"reset": 0.25, "reboot": 1.0, "reseat": 4.0}
MIN_REPAIR_S: dict[str, int] = {
    "replace": 3_600,
    "reset": 120,
    "reboot": 900,
    "reseat": 3_600,
    RECOVER: 300,
}


#: Lifetime families a class can be drawn from, with lifelines' parameter names.
FAMILIES: tuple[str, ...] = ("weibull", "exponential", "lognormal", "loglogistic")


@dataclass(frozen=True)
class ClassSpec:
    """Lifetime law and repair time of one component class.

    Parameters
    ----------
    level
        ``"gpu"`` (one unit per GPU slot) or ``"node"`` (one unit per node).
    shape
        The family's shape: Weibull ``k`` (below 1: infant mortality; above 1: wear-out),
        log-normal ``sigma``, log-logistic ``beta`` (above 1, else the mean is infinite); 1 for
        the exponential, which has none.
    scale_h
        The family's scale in hours: Weibull ``lambda``, exponential mean, log-normal median
        (``mu = ln scale_h``), log-logistic ``alpha`` (also the median).
    repair_median_h
        Median of the lognormal time from failure (ticket opened) to the new unit's installation
        (ticket closed), in hours.
    family
        ``"weibull"`` (default), ``"exponential"``, ``"lognormal"`` or ``"loglogistic"``, with
        the parameters of lifelines' ``WeibullFitter`` (``lambda_, rho_``),
        ``ExponentialFitter`` (``lambda_`` = the mean), ``LogNormalFitter`` (``mu_, sigma_``)
        and ``LogLogisticFitter`` (``alpha_, beta_``); see :meth:`params`. To change a class's
        family at the same mean and median, use :meth:`as_family` or
        :meth:`SynthConfig.with_families`.
    fixes
        Shares of the fix kinds of this class's failures (``replace``, ``reset``, ``reboot``,
        ``reseat``; shares summing to 1; ``reset`` only at GPU level). ``replace`` takes
        ``repair_median_h``; the others :data:`FIX_REPAIR_MEDIAN_H`. None (default): the
        class's default shares (:data:`DEFAULT_FIXES`; ``replace`` only for a class without
        defaults). See :meth:`SynthConfig.fixes_of`.

    Raises
    ------
    ValueError
        An unknown family, an exponential with a shape other than 1, a log-logistic with
        ``shape <= 1`` (no finite mean), or fix shares that are not shares of known fixes.
    """

    level: str
    shape: float
    scale_h: float
    repair_median_h: float
    family: str = "weibull"
    fixes: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        """Refuse a family the generator cannot draw, one without a finite mean, or bad fixes."""
        if self.fixes is not None:
            check_fixes(self.level, self.fixes)
        if self.family not in FAMILIES:
            msg = f"unknown lifetime family {self.family!r}; use one of {', '.join(FAMILIES)}."
            raise ValueError(msg)
        if self.family == "exponential" and self.shape != 1.0:
            msg = f"the exponential has no shape; pass shape=1.0, got {self.shape}."
            raise ValueError(msg)
        if self.family == "loglogistic" and self.shape <= 1.0:
            msg = (
                f"a log-logistic with shape (beta) {self.shape} <= 1 has no finite mean (MTBF); "
                "pass a shape above 1."
            )
            raise ValueError(msg)

    @property
    def mtbf_h(self) -> float:
        """Mean of the lifetime, hours.

        Weibull ``scale_h * gamma(1 + 1/shape)``; exponential ``scale_h``; log-normal
        ``scale_h * exp(shape**2 / 2)``; log-logistic ``scale_h * (pi/shape) / sin(pi/shape)``.
        """
        k, scale = self.shape, self.scale_h
        if self.family == "weibull":
            return scale * math.gamma(1.0 + 1.0 / k)
        if self.family == "exponential":
            return scale
        if self.family == "lognormal":
            return scale * math.exp(k * k / 2.0)
        return scale * _loglogistic_ratio(k)

    @property
    def median_h(self) -> float:
        """Median of the lifetime, hours (``scale_h`` for log-normal and log-logistic)."""
        if self.family == "weibull":
            return float(self.scale_h * math.log(2.0) ** (1.0 / self.shape))
        if self.family == "exponential":
            return self.scale_h * math.log(2.0)
        return self.scale_h

    def params(self) -> dict[str, float]:
        """Return the law's parameters under lifelines' names (hours).

        ``weibull``: ``lambda_``, ``rho_``; ``exponential``: ``lambda_`` (the mean);
        ``lognormal``: ``mu_``, ``sigma_``; ``loglogistic``: ``alpha_``, ``beta_``.
        """
        if self.family == "weibull":
            return {"lambda_": self.scale_h, "rho_": self.shape}
        if self.family == "exponential":
            return {"lambda_": self.scale_h}
        if self.family == "lognormal":
            return {"mu_": math.log(self.scale_h), "sigma_": self.shape}
        return {"alpha_": self.scale_h, "beta_": self.shape}

    def as_family(self, family: str) -> ClassSpec:
        """Return this class drawn from ``family``, with the same mean and (but exponential) median.

        ============  ===========================================================
        family        parameters from this law's mean ``m`` and median ``q``
        ============  ===========================================================
        weibull       ``k`` solves ``gamma(1 + 1/k) / ln(2)**(1/k) = m/q``;
                      ``lambda = q / ln(2)**(1/k)``
        exponential   mean ``m`` (its median is ``m ln 2``, not ``q``)
        lognormal     ``sigma = sqrt(2 ln(m/q))``, ``mu = ln q``
        loglogistic   ``b > 1`` solves ``(pi/b) / sin(pi/b) = m/q``; ``alpha = q``
        ============  ===========================================================

        Raises
        ------
        ValueError
            An unknown family, or a target other than the exponential when this law's mean is
            not above its median (a Weibull with shape above about 3.44): the log-normal and
            the log-logistic always have ``m > q``.
        """
        if family not in FAMILIES:
            msg = f"unknown lifetime family {family!r}; use one of {', '.join(FAMILIES)}."
            raise ValueError(msg)
        if family == self.family:
            return self
        mean, median = self.mtbf_h, self.median_h
        if family == "exponential":
            return replace(self, shape=1.0, scale_h=mean, family=family)
        ratio = mean / median
        if not ratio > 1.0 + 1e-12:
            msg = (
                f"a {self.family} law with mean {mean:.6g} h not above its median {median:.6g} h "
                f"has no {family} of the same mean and median; keep it or use exponential."
            )
            raise ValueError(msg)
        if family == "lognormal":
            sigma = math.sqrt(2.0 * math.log(ratio))
            return replace(self, shape=sigma, scale_h=median, family=family)
        if family == "loglogistic":
            beta = math.pi / _solve_increasing(lambda x: x / math.sin(x), ratio, 0.0, math.pi)
            return replace(self, shape=beta, scale_h=median, family=family)
        # the ratio falls below 1 for 1/k < 0.2 (its minimum is near 0.13), then rises
        k = 1.0 / _solve_increasing(_weibull_ratio_of_inverse_shape, ratio, 0.2, 50.0)
        return replace(self, shape=k, scale_h=median / math.log(2.0) ** (1.0 / k), family=family)


def check_fixes(level: str, fixes: Mapping[str, float]) -> None:
    """Refuse unknown fixes, shares that are not shares summing to 1, or a node-level reset."""
    unknown = sorted(set(fixes) - set(FIX_KINDS))
    if unknown:
        msg = f"unknown fix {unknown[0]!r}; use shares of {', '.join(FIX_KINDS)}."
        raise ValueError(msg)
    shares = list(fixes.values())
    if not shares or min(shares) < 0 or not math.isclose(sum(shares), 1.0, abs_tol=1e-9):
        msg = f"fix shares must be non-negative and sum to 1, got {dict(fixes)}."
        raise ValueError(msg)
    if level == "node" and fixes.get("reset", 0.0) > 0:
        msg = "a node-level class has no GPU reset; give its reset share to reboot or reseat."
        raise ValueError(msg)


def _loglogistic_ratio(beta: float) -> float:
    """Mean over median of a log-logistic: ``(pi/beta) / sin(pi/beta)`` (``beta > 1``)."""
    x = math.pi / beta
    return x / math.sin(x)


def _weibull_ratio_of_inverse_shape(u: float) -> float:
    """Mean over median of a Weibull of shape ``1/u``: ``gamma(1 + u) / ln(2)**u``."""
    return float(math.gamma(1.0 + u) / math.log(2.0) ** u)


def _solve_increasing(f: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """``x`` in ``(lo, hi)`` with ``f(x) = target`` for ``f`` increasing there (bisection)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def default_classes() -> dict[str, ClassSpec]:
    """Return the default per-class lifetime laws.

    See :class:`SynthConfig` for the resulting counts.
    """
    return {
        "gpu": ClassSpec("gpu", 1.2, 75_000.0, 48.0),
        "gpu_memory": ClassSpec("gpu", 0.7, 140_000.0, 48.0),
        "nvlink": ClassSpec("gpu", 1.1, 105_000.0, 24.0),
        "pcie": ClassSpec("gpu", 1.3, 100_000.0, 12.0),
        "nic": ClassSpec("node", 1.0, 25_000.0, 6.0),
        "power": ClassSpec("node", 1.5, 30_000.0, 8.0),
        "host_memory": ClassSpec("node", 1.2, 30_000.0, 12.0),
    }


#: Node-hours of Llama 3's 54-day run on 2,048 nodes x 8 GPUs (Dubey et al. 2024, Table 5).
LLAMA3_NODE_H = 2_048 * 54 * 24.0


@dataclass(frozen=True)
class InterruptionSpec:
    """A non-hardware interruption class: a Poisson process per node, and its recovery.

    Parameters
    ----------
    rate_per_node_h
        Interruptions per node-hour while the node is at risk (in service and not recovering
        from one of this class); 0 switches the class off.
    recovery_median_h
        Median of the lognormal time from the interruption to the node's resumption, hours
        (log-scale standard deviation ``SynthConfig.repair_sigma``; at least 5 minutes).
    """

    rate_per_node_h: float
    recovery_median_h: float

    def __post_init__(self) -> None:
        """Refuse a negative rate or a recovery that is not positive."""
        if self.rate_per_node_h < 0 or not self.recovery_median_h > 0:
            msg = (
                f"an interruption class needs rate_per_node_h >= 0 and recovery_median_h > 0, "
                f"got {self.rate_per_node_h} and {self.recovery_median_h}."
            )
            raise ValueError(msg)

    def as_class(self) -> ClassSpec:
        """Return the same process as a node-level exponential :class:`ClassSpec` (mean 1/rate)."""
        return ClassSpec(
            "node", 1.0, 1.0 / self.rate_per_node_h, self.recovery_median_h, family="exponential"
        )


def default_non_hardware() -> dict[str, InterruptionSpec]:
    """Return the default non-hardware interruption classes.

    Rates are Llama 3's published per-node rates (54 days on 2,048 nodes, Table 5: software bug
    and dependency 56, network switch and cable 35, unplanned host maintenance 32, NCCL watchdog
    7; :data:`LLAMA3_NODE_H` node-hours); ``driver``, which that table does not list apart, gets
    the NCCL rate. Recoveries: a software fault 30 min, a driver fault 30 min (reload or reset),
    an NCCL timeout 15 min (health check, resume), a fabric fault 2 h (cable or optic swapped),
    unplanned maintenance 4 h.
    """
    return {
        "software": InterruptionSpec(56 / LLAMA3_NODE_H, 0.5),
        "driver": InterruptionSpec(7 / LLAMA3_NODE_H, 0.5),
        "nccl": InterruptionSpec(7 / LLAMA3_NODE_H, 0.25),
        "network": InterruptionSpec(35 / LLAMA3_NODE_H, 2.0),
        "maintenance": InterruptionSpec(32 / LLAMA3_NODE_H, 4.0),
    }
