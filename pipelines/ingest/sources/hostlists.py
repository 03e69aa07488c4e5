"""Slurm hostlist expansion, shared by the parsers that read Slurm's compressed host names.

Slurm prints a set of hosts compressed: ``gpu[001-004,007]`` is ``gpu001`` to ``gpu004`` and
``gpu007``; a list may hold several bracketed groups (``rack[1-2]-gpu[01-02]``) and several
comma-separated parts (``gpu[008-010],login[1,3]``). Each parser decides what an empty list or a
placeholder such as sacct's ``None assigned`` means; this module only expands.
"""

from __future__ import annotations

import functools
import re

import hostlist

CACHE_SIZE = 1 << 16
"""Distinct host lists kept expanded; daily exports of one cluster repeat the same lists."""


@functools.lru_cache(maxsize=CACHE_SIZE)
def expand_hostlist(text: str) -> tuple[str, ...] | None:
    """Return the host names a Slurm hostlist stands for, in Slurm's order.

    Parameters
    ----------
    text
        The hostlist as printed, such as ``gpu[001-004,007]``.

    Returns
    -------
    tuple[str, ...] | None
        The host names (zero padding kept, an empty tuple for an empty list), or None where
        python-hostlist cannot read the list (unbalanced brackets, a reversed, non-numeric or
        too large range). The tuple is shared through the cache, hence immutable.

    Examples
    --------
    >>> expand_hostlist("gpu[001-003,007]")
    ('gpu001', 'gpu002', 'gpu003', 'gpu007')
    >>> expand_hostlist("gpu[008-") is None
    True
    """
    simple = _expand_simple(text)
    if simple is not None:
        return simple
    try:
        return tuple(str(host) for host in hostlist.expand_hostlist(text))
    except hostlist.BadHostlist:
        return None


_PLAIN = re.compile(r"[^,\[\]]+")
_ONE_GROUP = re.compile(r"([^,\[\]]*)\[([0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*)\]")


def _expand_simple(text: str) -> tuple[str, ...] | None:
    """Expand the lists most exports hold (one host, or one prefix and one bracketed group).

    As python-hostlist expands them, in one pass instead of a recursive parse of each part;
    None for anything else, or anything python-hostlist refuses, which it then expands (or
    refuses) itself.
    """
    if _PLAIN.fullmatch(text):
        return (text,)
    group = _ONE_GROUP.fullmatch(text)
    if group is None:
        return None
    prefix, ranges = group.groups()
    hosts: list[str] = []
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        if not high:
            hosts.append(prefix + low)
            continue
        first, last = int(low), int(high)
        if last < first or last - first > hostlist.MAX_SIZE:
            return None
        width = len(low)
        hosts.extend(f"{prefix}{i:0{width}d}" for i in range(first, last + 1))
    if len(hosts) > hostlist.MAX_SIZE:
        return None
    return tuple(dict.fromkeys(hosts))  # duplicates dropped, first place kept
