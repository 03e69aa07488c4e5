"""Quarantine reasons as kinds: the offending value taken out of a reason's text.

Parsers write reasons that quote the value they refused (``malformed JobID '12x'``,
``timestamp in the future: 2099-06-09T14:05:34``), so one rule broken on many lines would be
as many reasons. :func:`split_reason` takes the value out: ``reason`` keeps the kind (the text
with the value replaced by :data:`VALUE`), ``reason_value`` the value, and the quarantine
groups by kind (``rpt_quarantine_reasons``).
"""

from __future__ import annotations

import re

import polars as pl

__all__ = ["VALUE", "split_reason", "split_reasons"]

VALUE = "…"
"""What stands for the value in a reason's kind: ``malformed JobID '…'``."""

_RULES = (
    # a parser that failed on a whole file: its error is the value
    re.compile(r"^the [a-z_0-9]+ parser failed on this file: (.+)$", re.DOTALL),
    # a count of fields: ``expected 17 fields separated by ';', found 16``
    re.compile(r", found (\d+)$"),
    # the first quoted value: up to the quote that a space or the end follows (a value may hold
    # quotes and punctuation: ``'it's'``, ``''; drop table x; --'``)...
    re.compile(r"'(.*?)'(?=$|\s)", re.DOTALL),
    # ...else one that a bracket or punctuation follows
    re.compile(r"'(.*?)'(?=[),;:\]])", re.DOTALL),
    # one word after a colon at the end: ``timestamp in the future: 2099-06-09T14:05:34``
    re.compile(r": (\S+)$"),
)

_CHECK = re.compile(r"^Expect[A-Za-z]+: ")
"""A Great Expectations check (``ExpectColumnValuesToNotBeNull: job_id not null``): a kind as it
is; its label quotes constants (``letters, digits, '-', '.', '_'``)."""


def split_reason(reason: str) -> tuple[str, str | None]:
    """Return a reason's kind and its offending value (None when it names none).

    Examples
    --------
    >>> split_reason("malformed JobID '12x'")
    ("malformed JobID '…'", '12x')
    >>> split_reason("timestamp in the future: 2099-06-09T14:05:34")
    ('timestamp in the future: …', '2099-06-09T14:05:34')
    >>> split_reason("line is not valid UTF-8")
    ('line is not valid UTF-8', None)
    """
    if _CHECK.match(reason):
        return reason, None
    for rule in _RULES:
        match = rule.search(reason)
        if match is None:
            continue
        start, end = match.span(1)
        return reason[:start] + VALUE + reason[end:], match.group(1)
    return reason, None


def split_reasons(reasons: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Return the kinds and values of a column of reasons (:func:`split_reason`).

    Each distinct reason is split once (a quarantine has far fewer reasons than rows).
    """
    distinct = reasons.unique().drop_nulls().to_list()
    if not distinct:
        return reasons, pl.Series(reasons.name, [None] * reasons.len(), dtype=pl.String)
    split = [split_reason(r) for r in distinct]
    kinds = reasons.replace_strict(
        distinct, [k for k, _ in split], default=None, return_dtype=pl.String
    )
    values = reasons.replace_strict(
        distinct, [v for _, v in split], default=None, return_dtype=pl.String
    )
    return kinds, values
