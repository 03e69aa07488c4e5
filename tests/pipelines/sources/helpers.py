"""What the parser tests share: raw text as a tool writes it, reject reasons and line accounting."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources.common import REJECT_SCHEMA

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pipelines.ingest.sources.common import Parsed


def raw_bytes(text: str) -> bytes:
    """Return an inline, indented test text as the bytes of a file (no leading blank line)."""
    return textwrap.dedent(text).lstrip("\n").encode()


def utc(text: str) -> datetime:
    """Return an ISO 8601 time with no offset read as UTC (an offset in ``text`` is replaced)."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def reject_reasons(result: Parsed) -> dict[int, str]:
    """Return each rejected line's number and reason."""
    return dict(zip(result.rejects["line_no"], result.rejects["reason"], strict=True))


def assert_accounted(
    result: Parsed, schema: Mapping[str, pl.DataType], *, n_in_scope: int, n_ignored: int
) -> None:
    """Every in-scope line is a row or a reject; the others are only counted.

    Both frames have their declared schemas: ``schema`` for the rows, the reject schema for the
    rejects.
    """
    assert result.rows.height + result.rejects.height == n_in_scope
    assert result.n_ignored == n_ignored
    assert result.rows.schema == pl.Schema(schema)
    assert result.rejects.schema == pl.Schema(REJECT_SCHEMA)
