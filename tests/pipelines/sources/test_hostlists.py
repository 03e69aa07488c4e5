"""The shared Slurm hostlist expansion, on host lists as Slurm prints them."""

from __future__ import annotations

import pytest

from pipelines.ingest.sources.hostlists import expand_hostlist


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu0001", ("gpu0001",)),
        ("gpu[001-004,007]", ("gpu001", "gpu002", "gpu003", "gpu004", "gpu007")),
        ("gpu[9-11]", ("gpu9", "gpu10", "gpu11")),
        ("gpu[08-10]", ("gpu08", "gpu09", "gpu10")),
        ("gpu[098-101]", ("gpu098", "gpu099", "gpu100", "gpu101")),
        ("gpu[008-010],login[1,3]", ("gpu008", "gpu009", "gpu010", "login1", "login3")),
        ("rack[1-2]-gpu[01-02]", ("rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02")),
        ("gpu0001,gpu0003,cpu-01.a_b", ("gpu0001", "gpu0003", "cpu-01.a_b")),
        ("dgx-a100-[0-1]", ("dgx-a100-0", "dgx-a100-1")),
        ("gpu[5]", ("gpu5",)),
        ("", ()),
    ],
)
def test_expand_hostlist_expands_ranges_padding_brackets_and_commas(
    text: str, expected: tuple[str, ...]
) -> None:
    assert expand_hostlist(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "gpu[008-",  # unbalanced, cut mid-range
        "gpu008]",  # unbalanced, closing only
        "gpu[a-c]",  # letters in a range
        "gpu[3-1]",  # reversed range
        "gpu[]",  # empty brackets
        "gpu[1-100000000]",  # more hosts than python-hostlist will make
    ],
)
def test_expand_hostlist_malformed_is_none(text: str) -> None:
    assert expand_hostlist(text) is None


def test_expand_hostlist_returns_one_shared_immutable_tuple() -> None:
    first = expand_hostlist("gpu[001-002]")
    assert isinstance(first, tuple)
    assert expand_hostlist("gpu[001-002]") is first


def test_sacct_and_node_events_differ_only_on_empty_lists() -> None:
    from pipelines.ingest.sources import node_events, sacct

    assert sacct._expand("None assigned") == ()
    assert sacct._expand("") == ()
    assert node_events._expand("") is None
    assert sacct._expand("gpu[008-") is None
    assert node_events._expand("gpu[008-") is None
    assert sacct._expand("gpu[1-2]") == node_events._expand("gpu[1-2]") == ("gpu1", "gpu2")


@pytest.mark.parametrize(
    "text",
    [
        "gpu001",
        "node with space",
        "gpu[001-004,007]",
        "gpu[1-3,2,010]",  # a repeat, widths that differ
        "gpu[9-11]",
        "gpu[08-10]",
        "[1-3]",  # no prefix
        "gpu[1-100000]",  # the most hosts python-hostlist makes from one range
        "gpu[0-100000]",  # one more
        "gpu[1-60000,70001-130000]",  # too many over the ranges together
        "gpu[3-1]",
        "gpu[1-2]-ib",  # a suffix: the general path
        "rack[1-2]-gpu[01-02]",
        "gpu[008-010],login[1,3]",
        "gpu[1,,2]",
        "gpu[-2]",
        "gpu[1-2-3]",
        "",
    ],
)
def test_simple_lists_expand_as_python_hostlist_does(text: str) -> None:
    import hostlist

    try:
        expected: tuple[str, ...] | None = tuple(hostlist.expand_hostlist(text))
    except hostlist.BadHostlist:
        expected = None
    assert expand_hostlist.__wrapped__(text) == expected
