"""``host=`` / ``run=`` parser options (``relia ingest --host/--run``): files that do not follow
a naming convention take their host from the option; what a line names still wins."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import pytest

from pipelines.ingest.sources import IDENTITY_OPTIONS, PARSERS, dcgm, xid

NOW = datetime(2026, 9, 1, tzinfo=UTC)


@pytest.mark.parametrize(("source", "options"), sorted(IDENTITY_OPTIONS.items()))
def test_identity_options_are_keyword_parameters_defaulting_to_none(
    source: str, options: tuple[str, ...]
) -> None:
    parameters = inspect.signature(PARSERS[source][1].parse).parameters
    for name in options:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters[name].default is None


def test_xid_dmesg_line_takes_the_host_option_over_the_file_name() -> None:
    line = b"[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off.\n"
    named = xid.parse(line, source_file="/landing/kernel/dmesg-20260601.log", now=NOW)
    assert named.rows["host"].to_list() == ["dmesg-20260601"]  # the legacy stem fallback
    given = xid.parse(
        line, source_file="/landing/kernel/dmesg-20260601.log", now=NOW, host="gpu0042"
    )
    assert given.rows["host"].to_list() == ["gpu0042"]


def test_xid_syslog_host_in_the_line_wins_over_the_option() -> None:
    line = (
        b"2026-06-01T00:00:00+00:00 gpu0007 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, "
        b"name=x, Off.\n"
    )
    result = xid.parse(line, source_file="/landing/kernel/all.log", now=NOW, host="gpu0042")
    assert result.rows["host"].to_list() == ["gpu0007"]


def test_dcgm_scrape_without_hostname_label_takes_the_host_option() -> None:
    text = b'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 41 1780272000000\n'
    result = dcgm.parse(text, source_file="/landing/dcgm/scrape-1.prom", now=NOW, host="gpu0042")
    assert result.rows.select("host", "gpu_index", "gpu_temp_c").row(0) == ("gpu0042", 0, 41.0)
    labelled = b'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="gpu0009.cluster"} 41 1780272000000\n'
    result = dcgm.parse(
        labelled, source_file="/landing/dcgm/scrape-1.prom", now=NOW, host="gpu0042"
    )
    assert result.rows["host"].to_list() == ["gpu0009"]
