"""Warnings and errors raised by the reliability models."""

from __future__ import annotations

__all__ = ["ApproximationWarning", "ConvergenceWarning", "FewFailuresWarning", "ReliaWarning"]


class ReliaWarning(UserWarning):
    """Base class of every warning the models emit."""


class FewFailuresWarning(ReliaWarning):
    """A fit rests on so few failures that its interval is wide; read it as a bound."""


class ConvergenceWarning(ReliaWarning):
    """An optimiser stopped before converging; the estimate may be off."""


class ApproximationWarning(ReliaWarning):
    """A projection replaced a model it cannot represent exactly by a stated approximation."""
