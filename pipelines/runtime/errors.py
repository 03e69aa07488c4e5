"""Expected failures a user can cause and act on: the CLI prints each as one line.

A :class:`ReliaError` is not a bug: a missing or busy warehouse, a warehouse with nothing
ingested. ``relia`` prints ``error: <message>`` and exits with :attr:`ReliaError.exit_code`
(the traceback only under ``relia --debug`` or ``RELIA_DEBUG=1``). The message says what to do
next.

A warehouse that lacks the data a step needs (no unit lives, no failure, no job) is one
:class:`MissingDataError`, built by :func:`no_lives`, :func:`no_fit_run`, :func:`empty_fit_run`,
:func:`no_failures` or :func:`no_jobs`, so every command, flow and report section names the same
lack and what would supply it in the same words.
"""

from __future__ import annotations

import sys

EXIT_OK = 0
"""``relia`` exits 0 when the command did what it was asked."""
EXIT_FAILED = 1
"""``relia`` exits 1 when the command failed on the data: no or an empty warehouse, nothing to
fit, a missing input file, a damaged warehouse."""
EXIT_USAGE = 2
"""``relia`` exits 2 on a usage error: an unknown option or value, options that contradict each
other, a setting or sweep file that cannot be used (Click's own usage errors exit 2 too)."""


class ReliaError(Exception):
    """Base class of the failures a user can fix; ``exit_code`` is what ``relia`` exits with."""

    exit_code = EXIT_FAILED


class UsageError(ReliaError, ValueError):
    """An option or value the command cannot use: ``relia`` exits 2 (:data:`EXIT_USAGE`)."""

    exit_code = EXIT_USAGE


def exit_code_of(error: BaseException) -> int | None:
    """Return ``relia``'s exit code for an expected failure, or None for a bug (a traceback).

    The one rule of every command: a :class:`ReliaError` carries its code (1: the data, e.g. a
    missing or empty warehouse, nothing to fit; 2: :class:`UsageError`); any other
    ``ValueError`` comes from validating what the user gave (an option value, a sweep file) and
    a file that is not valid YAML is one too: 2; an input file that does not exist: 1.
    """
    if isinstance(error, ReliaError):
        return error.exit_code
    yaml = sys.modules.get("yaml")
    if isinstance(error, ValueError) or (yaml is not None and isinstance(error, yaml.YAMLError)):
        return EXIT_USAGE
    if isinstance(error, FileNotFoundError):
        return EXIT_FAILED
    return None


class WarehouseMissingError(ReliaError, FileNotFoundError):
    """The warehouse file does not exist (nothing was ingested into it yet)."""

    def __init__(self, db_path: object) -> None:
        super().__init__(
            f"no warehouse at {db_path}: run `relia ingest LANDING --db {db_path}` (or the "
            "ingest-telemetry flow) first, or pass --db / set RELIA_DB"
        )


class InputMissingError(ReliaError, ValueError):
    """A path given to read (a landing folder, a file) does not exist: exit 1, as a missing file."""


class WarehouseEmptyError(ReliaError, ValueError):
    """The warehouse exists but lacks what a command reads (no views, no lives, no fit run)."""


class IngestInterruptedError(WarehouseEmptyError):
    """An ingest stopped before it finished (killed, disk full): views or snapshots are stale."""

    def __init__(self, db_path: object, started: str) -> None:
        super().__init__(
            f"{db_path}: an ingest {started} did not finish (it stopped before it rebuilt the "
            "views, so they may not show what it loaded; every file it recorded is whole): "
            f"rerun `relia ingest LANDING --db {db_path}` to finish it"
        )


class WarehouseEnvironmentError(ReliaError, RuntimeError):
    """The warehouse's file or disk failed a command; what the command was writing is undone.

    One subclass per cause, so a caller (or a test) can tell them apart:
    :class:`WarehouseFullError`, :class:`WarehouseReadOnlyError`, :class:`WarehouseCorruptError`.
    """


class WarehouseFullError(WarehouseEnvironmentError):
    """The disk (or quota) of the warehouse is full."""


class WarehouseReadOnlyError(WarehouseEnvironmentError):
    """The warehouse file or its folder cannot be written (read-only mount, immutable, denied)."""


class WarehouseCorruptError(WarehouseEnvironmentError):
    """The warehouse file is damaged: a block or header fails its checksum, or DuckDB rejects it."""


class MissingDataError(WarehouseEmptyError):
    """The warehouse lacks the data a step needs: what is missing, and what would supply it.

    One type for every command, flow and report section: the CLI prints it as one line and exits
    1; a report section that cannot be made shows :attr:`missing` and :attr:`supply` in its
    place; a flow run fails with the same line. Build it with the constructors below, so the
    same lack reads the same everywhere.

    Parameters
    ----------
    missing
        What the warehouse lacks, e.g. ``"no unit lives in fct_component_lives"``.
    supply
        What would supply it, e.g. ``"ingest a fleet register (fleet/) ..."``.
    """

    def __init__(self, missing: str, supply: str) -> None:
        self.missing = missing
        self.supply = supply
        super().__init__(f"{missing}: {supply}")


SUPPLY_LIVES = (
    "ingest telemetry that names the fleet's nodes (slurm/ jobs, kernel/ logs, node_events/, "
    "nvidia_smi/ or dcgm/ samples, a fleet/ register) with `relia ingest LANDING`"
)
"""What supplies unit lives (``fct_component_lives``)."""
SUPPLY_FAULT_LIVES = (
    "ingest a fault log or lifetime table with `relia ingest --source fault_log --mapping M FILE` "
    "(or give its --dataset)"
)
"""What supplies the lives of ``int_fault_lives``."""
SUPPLY_FAILURES = (
    "ingest telemetry that shows failures (kernel/ logs with Xid lines, node_events/, "
    "k8s_events/, repairs/ tickets or a fault_log/) and refit with `relia fit`"
)
"""What supplies failures to a fit run."""
SUPPLY_JOBS = "ingest the scheduler's jobs (slurm/ sacct dumps, k8s_pods/ or elastic/ logs)"
"""What supplies finished jobs (``fct_job_goodput``)."""
HAND_RATES = (
    "or give rates by hand (--node-failures-per-1000-node-days; in a sweep file, "
    "base: node_failures_per_1000_node_days), or allow the published defaults with "
    "--default-rates-if-none"
)
"""The way around missing fitted rates, for a projection."""


def no_lives(view: str = "fct_component_lives") -> MissingDataError:
    """Say that there are no unit lives (no inventory): nothing to fit or predict from."""
    supply = SUPPLY_FAULT_LIVES if view == "int_fault_lives" else SUPPLY_LIVES
    return MissingDataError(f"no unit lives in {view}", supply)


def no_fit_run(*, has_lives: bool) -> MissingDataError:
    """Say that there is no fit run; ``has_lives``: whether ``relia fit`` could store one now."""
    if has_lives:
        return MissingDataError(
            "no fit run in the warehouse", f"run `relia fit` first, {HAND_RATES}"
        )
    return MissingDataError(
        "no fit run in the warehouse and no unit lives to fit one from",
        f"{SUPPLY_LIVES}, then run `relia fit`; {HAND_RATES}",
    )


def empty_fit_run(run_id: str, *, has_lives: bool) -> MissingDataError:
    """Say that a stored fit run has no row (stored from a warehouse without unit lives)."""
    refit = "run `relia fit`" if has_lives else f"{SUPPLY_LIVES}, then run `relia fit`"
    return MissingDataError(
        f"fit run {run_id} has no rows (it was fitted on no unit lives)", f"{refit}; {HAND_RATES}"
    )


def no_failures(run_id: str | None) -> MissingDataError:
    """Say that a fit run (None: fits made for a report) has no failure: no rate to project."""
    fits = "the fits have" if run_id is None else f"fit run {run_id} has"
    return MissingDataError(
        f"{fits} no failure in any component class, so no failure rate to project from",
        f"{SUPPLY_FAILURES}; {HAND_RATES}",
    )


def no_jobs(min_gpus: int = 1) -> MissingDataError:
    """Say that the goodput ledger has no finished job (of at least ``min_gpus`` GPUs)."""
    sized = f" of {min_gpus:,} GPUs or more" if min_gpus > 1 else ""
    return MissingDataError(f"no finished job{sized} in fct_job_goodput", SUPPLY_JOBS)
