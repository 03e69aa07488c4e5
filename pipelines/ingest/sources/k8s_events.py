"""Parse ``kubectl get events -A -o json`` dumps into ``raw_k8s_events`` rows.

Each item is a core/v1 ``Event``::

    {"apiVersion": "v1", "kind": "Event", "count": 1, "type": "Normal",
     "reason": "NodeNotReady", "message": "Node gpu0003 status is now: NodeNotReady",
     "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "gpu0003", "uid": "gpu0003"},
     "source": {"component": "node-controller"}, "reportingComponent": "node-controller",
     "firstTimestamp": "2026-06-03T10:00:40Z", "lastTimestamp": "2026-06-03T10:00:40Z",
     "eventTime": null, "metadata": {"name": "gpu0003.17d8a6b3c1e2f4a5", "namespace": "default",
     "uid": "...", "creationTimestamp": "2026-06-03T10:00:40Z"}}

Events outlive the API server only for ``--event-ttl`` (an hour by default), so dumps are taken
often and overlap; staging keeps one row per event ``uid`` and count. One item is one row, its
``line_no`` the line of its opening brace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources.common import (
    Parsed,
    empty_file_reject,
    empty_rows,
    in_future,
    parsed_from,
    rejects_frame,
    utc_now,
    with_reasons,
)
from pipelines.ingest.sources.kube_json import compact, dig, kube_time, list_items, text_or_none

if TYPE_CHECKING:
    from datetime import datetime

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "namespace": pl.String(),
    "event_name": pl.String(),
    "event_uid": pl.String(),
    "involved_kind": pl.String(),
    "involved_namespace": pl.String(),
    "involved_name": pl.String(),
    "involved_uid": pl.String(),
    "field_path": pl.String(),
    "event_reason": pl.String(),
    "message": pl.String(),
    "event_type": pl.String(),
    "count": pl.Int32(),
    "first_ts": pl.Datetime("us", "UTC"),
    "last_ts": pl.Datetime("us", "UTC"),
    "event_time_ts": pl.Datetime("us", "UTC"),
    "created_ts": pl.Datetime("us", "UTC"),
    "source_component": pl.String(),
    "source_host": pl.String(),
    "node": pl.String(),
}

_FIELDS: dict[str, tuple[str, ...]] = {
    "namespace": ("metadata", "namespace"),
    "event_name": ("metadata", "name"),
    "event_uid": ("metadata", "uid"),
    "involved_kind": ("involvedObject", "kind"),
    "involved_namespace": ("involvedObject", "namespace"),
    "involved_name": ("involvedObject", "name"),
    "involved_uid": ("involvedObject", "uid"),
    "field_path": ("involvedObject", "fieldPath"),
    "event_reason": ("reason",),
    "message": ("message",),
    "event_type": ("type",),
    "count_text": ("count",),
    "series_count_text": ("series", "count"),
    "series_last_text": ("series", "lastObservedTime"),
    "first_text": ("firstTimestamp",),
    "last_text": ("lastTimestamp",),
    "event_time_text": ("eventTime",),
    "created_text": ("metadata", "creationTimestamp"),
    "component": ("source", "component"),
    "reporting_component": ("reportingComponent",),
    "host": ("source", "host"),
    "reporting_instance": ("reportingInstance",),
}
_TIMES = {
    "first_text": "first_ts",
    "last_text": "last_ts",
    "event_time_text": "event_time_ts",
    "created_text": "created_ts",
}


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    """Parse one ``kubectl get events -A -o json`` dump.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject.
    now
        Reference time for the "not in the future" check (default: current UTC time).

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_k8s_events`` columns (:data:`SCHEMA`): the event's
        ``namespace``, ``event_name``, ``event_uid``; the object it is about
        (``involved_kind``, ``involved_namespace``, ``involved_name``, ``involved_uid``,
        ``field_path``); ``event_reason`` (the event's ``reason``), ``message``,
        ``event_type`` (``Normal``/``Warning``), ``count`` (``count``, else ``series.count``);
        ``first_ts``, ``last_ts`` (``lastTimestamp``, else ``series.lastObservedTime``),
        ``event_time_ts`` (events.k8s.io micro-time) and ``created_ts`` (UTC);
        ``source_component`` (``source.component`` or ``reportingComponent``), ``source_host``
        (``source.host`` or ``reportingInstance``) and ``node`` (the node the event is about:
        the involved Node, else the kubelet's host: ``source.host``, or ``reportingInstance``
        when ``reportingComponent`` is ``kubelet``; null for events from other reporters such as
        the scheduler, whose ``reportingInstance`` is ``default-scheduler-<its own host>``).

    Notes
    -----
    Rejects: a file that is not a list of events (one reject at the offending line; items read
    before a JSON syntax error are kept), an item that is not an object, has no involved object
    kind or name or no reason, no time at all, a malformed time or count, or a time in the
    future.

    Examples
    --------
    >>> text = (
    ...     '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Event", '
    ...     '"involvedObject": {"kind": "Node", "name": "gpu0003"}, "reason": "NodeNotReady", '
    ...     '"firstTimestamp": "2026-06-03T10:00:40Z", "type": "Normal", "count": 1}]}'
    ... )
    >>> rows = parse(text.encode(), source_file="events.json").rows
    >>> rows.select("node", "event_reason").row(0)
    ('gpu0003', 'NodeNotReady')
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    found = list_items(data, kind="Event")
    columns: dict[str, list[str | None]] = {name: [] for name in _FIELDS}
    not_object: list[bool] = []
    for item in found.items:
        not_object.append(not isinstance(item, dict))
        for name, path in _FIELDS.items():
            columns[name].append(text_or_none(dig(item, *path)))
    frame = pl.DataFrame(
        {
            "line_no": pl.Series(found.line_nos, dtype=pl.Int64),
            "line": pl.Series([compact(i) for i in found.items], dtype=pl.String),
            "not_object": pl.Series(not_object, dtype=pl.Boolean),
            **{name: pl.Series(values, dtype=pl.String) for name, values in columns.items()},
        }
    ).lazy()
    # Events recorded through the events.k8s.io API (kube-scheduler since 1.19...) read through
    # core/v1 carry no count or lastTimestamp when repeated: an EventSeries holds them instead.
    frame = (
        frame.with_columns(
            pl.coalesce("count_text", "series_count_text").alias("count_text"),
            pl.coalesce("last_text", "series_last_text").alias("last_text"),
        )
        .with_columns(
            *[kube_time(pl.col(text)).alias(ts) for text, ts in _TIMES.items()],
            pl.col("count_text").cast(pl.Int32, strict=False).alias("count"),
            pl.coalesce("component", "reporting_component").alias("source_component"),
            pl.coalesce("host", "reporting_instance").alias("source_host"),
        )
        .with_columns(
            # the node the event is about: an involved Node; else the host of a kubelet
            # (source.host, or the reportingInstance of a reportingComponent "kubelet", both its
            # node name). Other reporters name themselves, not a node: the scheduler's
            # reportingInstance is "default-scheduler-<its own host>" (kubernetes#90482).
            pl.when(pl.col("involved_kind") == "Node")
            .then(pl.col("involved_name"))
            .otherwise(
                pl.coalesce(
                    "host",
                    pl.when(pl.col("reporting_component") == "kubelet").then("reporting_instance"),
                )
            )
            .alias("node"),
        )
    )
    any_time = pl.any_horizontal([pl.col(c).is_not_null() for c in _TIMES])
    checked = with_reasons(
        frame,
        [
            (pl.col("not_object"), "item is not a JSON object"),
            (
                pl.col("involved_kind").is_null() | pl.col("involved_name").is_null(),
                "event without involvedObject.kind and involvedObject.name",
            ),
            (pl.col("event_reason").is_null(), "event without a reason"),
            (~any_time, "event without firstTimestamp, lastTimestamp, eventTime or creation time"),
            *[
                (
                    pl.col(text).is_not_null() & pl.col(ts).is_null(),
                    pl.format(f"malformed {text.removesuffix('_text')} time '{{}}'", pl.col(text)),
                )
                for text, ts in _TIMES.items()
            ],
            (
                pl.col("count_text").is_not_null()
                & ~pl.col("count").is_between(0, 2**31 - 1).fill_null(value=False),
                pl.format("malformed count '{}'", pl.col("count_text")),
            ),
            *[
                (in_future(pl.col(ts), now_utc), pl.format(f"{ts} in the future: {{}}", pl.col(ts)))
                for ts in _TIMES.values()
            ],
        ],
    )
    parsed = parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=0)
    if found.problems:
        extra = rejects_frame([(source_file, n, raw, why) for n, raw, why in found.problems])
        parsed = Parsed(parsed.rows, pl.concat([parsed.rejects, extra]), parsed.n_ignored)
    return parsed
