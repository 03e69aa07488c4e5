"""Session set-up: keep Prefect and Great Expectations local and silent, on a throw-away home."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings

from pipelines.runtime.settings import apply_prefect_defaults

if TYPE_CHECKING:
    from collections.abc import Iterator

_HOME = Path(tempfile.mkdtemp(prefix="relia-prefect-"))
apply_prefect_defaults(os.environ, home=_HOME, override=True)
os.environ["MPLBACKEND"] = "Agg"
# The CLI's tables and messages are as wide as the terminal (Rich reads COLUMNS when the console is
# made, 80 when output is not a terminal): the tests see 80 columns whatever the terminal running
# them says, so no assertion depends on the width of the window `make test` was typed in. Tests of
# narrow output set their own width.
os.environ["COLUMNS"] = "80"
os.environ.pop("LINES", None)
os.environ.pop("PREFECT_API_URL", None)

# CI (HYPOTHESIS_PROFILE=ci, set by .ci/run) replays the same examples on every run: a property test
# that found a new case on one run and not the next would make main's colour a coin toss. Local runs
# stay random, which is how the cases pinned with @example were found.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO = Path(__file__).resolve().parent.parent
REAL_DATA = REPO.parent / "shared" / "real"


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One Prefect test harness (a temporary local API on loopback) for every flow run of the
    session, whichever folder its test is in."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
