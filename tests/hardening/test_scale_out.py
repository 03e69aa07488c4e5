"""Scale-out on existing engines: a Parquet lake under the views, and Dask for the fan-out.

- Lake: the same landing ingested into raw tables and into a lake
  (``lake/source=<s>/date=<YYYY-MM-DD>/part-<sha8>.parquet``) gives identical raw tables and
  views; writes are idempotent; parts of a file the warehouse never recorded stay invisible; the
  two storages are never mixed in one warehouse.
- Dask: on a ``LocalCluster`` of two worker processes on 127.0.0.1, the ingest flow's parse
  fan-out and the what-if flow's grid slices give results identical to one process, and the
  work really runs on both workers.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal

from pipelines import ingest, warehouse
from pipelines.analysis import project
from pipelines.runtime import dask_runner
from pipelines.runtime.settings import Settings
from pipelines.warehouse import lake
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(__file__).resolve().parents[2]
HAND_RATES = REPO / "data_samples" / "sweeps" / "hand_rates.yaml"
TIMESTAMPS = ("loaded_at", "validated_at", "last_loaded_at")  # when, not what
PART = re.compile(
    r"^source=([a-z_]+)/date=(\d{4}-\d{2}-\d{2}|__HIVE_DEFAULT_PARTITION__)/"
    r"part-([0-9a-f]{8})\.parquet$"
)


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scale") / "landing"
    synthesize(root, SynthConfig(nodes=8, days=14, seed=3, start=datetime(2026, 5, 4, tzinfo=UTC)))
    return root


def snapshot(db_path: Path) -> dict[str, pl.DataFrame]:
    """Every raw table and every view, sorted, without load times."""
    out = {}
    with warehouse.connect(db_path, read_only=True) as con:
        names = [*lake.SOURCES, "raw_ingest_files", "raw_quarantine"]
        names += [p.stem for p in warehouse.view_files()]
        for name in names:
            frame = warehouse.query(con, f"select * from {warehouse._identifier(name)}")
            frame = frame.drop([c for c in frame.columns if c in TIMESTAMPS])
            out[name] = frame.sort(frame.columns, nulls_last=True) if frame.height else frame
    return out


def assert_same_warehouse(left: Path, right: Path) -> None:
    a, b = snapshot(left), snapshot(right)
    assert a.keys() == b.keys()
    for name in a:
        try:
            assert_frame_equal(a[name], b[name])
        except AssertionError as error:
            raise AssertionError(f"{name} differs: {error}") from error
    assert a["raw_slurm_jobs"].height > 0
    assert a["int_component_lives"].height > 0


# --- the lake ----------------------------------------------------------------------------------
def test_views_over_the_lake_match_the_views_over_tables(landing: Path, tmp_path: Path) -> None:
    files = ingest.landing_files(landing)
    tables_db, lake_db = tmp_path / "tables.duckdb", tmp_path / "lake.duckdb"
    root = tmp_path / "lake"
    ingest.ingest(tables_db, files)
    ingest.ingest(lake_db, files, lake_dir=root)
    assert_same_warehouse(tables_db, lake_db)

    parts = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet"))
    assert parts
    with warehouse.connect(lake_db, read_only=True) as con:
        shas = {
            r[0][:8]: r[1]
            for r in con.execute(
                "select file_sha256, source from raw_ingest_files union all "  # whole files
                "select read_key, source from raw_stream_reads join raw_streams using (stream_id)"
            ).fetchall()
        }
        assert con.execute(
            "select count(*) from duckdb_tables() where table_name = 'raw_slurm_jobs'"
        ).fetchone() == (0,)
        assert lake.lake_of(con) == root.resolve()
    for part in parts:
        match = PART.match(part)
        assert match, part
        assert shas[match[3]] == match[1]
    landed = {f.source for f in files}
    assert {m[1] for m in map(PART.match, parts) if m} == landed
    assert {"slurm", "kernel", "nvidia_smi", "fleet", "repairs"} <= landed

    before = {p: p.stat().st_size for p in root.rglob("*.parquet")}
    again = ingest.ingest(lake_db, files, lake_dir=root)
    assert all(c.skipped for c in again)
    assert {p: p.stat().st_size for p in root.rglob("*.parquet")} == before
    assert_same_warehouse(tables_db, lake_db)


def test_lake_writes_are_idempotent_and_unrecorded_parts_stay_invisible(
    landing: Path, tmp_path: Path
) -> None:
    files = ingest.landing_files(landing)
    db, root = tmp_path / "lake.duckdb", tmp_path / "lake"
    ingest.ingest(db, files, lake_dir=root)
    sacct = max((f for f in files if f.source == "slurm"), key=lambda f: f.path.stat().st_size)
    (parsed,) = ingest.parse_files([sacct])
    rows = parsed.parsed.rows
    assert rows.height
    first = lake.write_parts(root, table=parsed.table, sha256=parsed.sha256, rows=rows)
    again = lake.write_parts(root, table=parsed.table, sha256=parsed.sha256, rows=rows)
    assert first == again
    assert all(p.name == f"part-{parsed.sha256[:8]}.parquet" for p in first)
    # a part from an ingest that died before its commit: on disk, but not in the views
    ghost_sha = "f" * 64
    ghost = parsed.parsed.rows.with_columns(pl.lit("ghost").alias("job_name"))
    lake.write_parts(root, table="raw_slurm_jobs", sha256=ghost_sha, rows=ghost)
    with warehouse.connect(db, read_only=True) as con:
        (n_ghosts,) = con.execute(
            "select count(*) from raw_slurm_jobs where job_name = 'ghost'"
        ).fetchone()
    assert n_ghosts == 0
    with pytest.raises(ValueError, match="share the first 8 hex digits"):
        lake.write_parts(root, table="raw_slurm_jobs", sha256="f" * 8 + "0" * 56, rows=ghost)


def test_a_lake_reads_from_any_connection(landing: Path, tmp_path: Path) -> None:
    db, root = tmp_path / "lake.duckdb", tmp_path / "lake"
    ingest.ingest(db, ingest.landing_files(landing), lake_dir=root)
    con = duckdb.connect()
    try:
        warehouse.apply_schema(con)
        made = lake.attach(con, root, temporary=True)  # no lineage here: every part is read
        assert set(made) >= {
            "raw_slurm_jobs",
            "raw_xid_events",
            "raw_inventory",
            "raw_fleet",
            "raw_repairs",
        }
        counts = {
            t: con.execute(f"select count(*) from {lake._table(t)}").fetchone()[0] for t in made
        }
    finally:
        con.close()
    with warehouse.connect(db, read_only=True) as con:
        expected = dict(
            con.execute(
                "select target_table, sum(n_loaded)::bigint from raw_ingest_files group by 1"
            ).fetchall()
        )
    assert counts == {t: expected[t] for t in made}


def test_table_and_lake_storage_are_never_mixed(landing: Path, tmp_path: Path) -> None:
    files = [f for f in ingest.landing_files(landing) if f.source == "fleet"]
    tables_db, lake_db = tmp_path / "tables.duckdb", tmp_path / "lake.duckdb"
    ingest.ingest(tables_db, files)
    with pytest.raises(ValueError, match=r"holds \d+ rows in the warehouse"):
        ingest.ingest(tables_db, files, lake_dir=tmp_path / "lake")
    ingest.ingest(lake_db, files, lake_dir=tmp_path / "lake")
    with pytest.raises(ValueError, match="pass --lake"):
        ingest.ingest(lake_db, files)
    with pytest.raises(ValueError, match="reads the lake"):
        ingest.ingest(lake_db, files, lake_dir=tmp_path / "other")


def test_settings_name_the_lake_and_the_dask_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELIA_LAKE", raising=False)
    monkeypatch.delenv("RELIA_DASK_ADDRESS", raising=False)
    assert (Settings.from_env().lake_dir, Settings.from_env().dask_address) == (None, None)
    monkeypatch.setenv("RELIA_LAKE", "/data/lake")
    monkeypatch.setenv("RELIA_DASK_ADDRESS", "tcp://10.0.0.5:8786")
    settings = Settings.from_env()
    assert settings.lake_dir == Path("/data/lake")
    assert settings.dask_address == "tcp://10.0.0.5:8786"
    assert Settings.from_env(lake_dir="elsewhere").lake_dir == Path("elsewhere")


# --- fan-out helpers -----------------------------------------------------------------------------
def test_task_runner_from_the_address() -> None:
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    assert isinstance(dask_runner.task_runner(None), ThreadPoolTaskRunner)
    remote = dask_runner.task_runner("tcp://127.0.0.1:8786")
    assert isinstance(remote, DaskTaskRunner)
    assert remote.address == "tcp://127.0.0.1:8786"
    local = dask_runner.task_runner("local:3")
    assert isinstance(local, DaskTaskRunner)
    assert local.cluster_kwargs["n_workers"] == 3
    assert local.cluster_kwargs["host"] == "127.0.0.1"
    with pytest.raises(ValueError, match="local:<number"):
        dask_runner.task_runner("local:many")


def test_without_the_dask_extra_an_address_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Dask is an optional extra: threads need nothing, an address names the extra to install."""
    import sys

    from prefect.task_runners import ThreadPoolTaskRunner

    from pipelines.runtime.errors import ReliaError

    for name in ("prefect_dask", "prefect_dask.task_runners"):  # importing them -> ImportError
        monkeypatch.setitem(sys.modules, name, None)
    assert isinstance(dask_runner.task_runner(None), ThreadPoolTaskRunner)
    with pytest.raises(ReliaError, match=r"needs the dask extra: pip install -e '\.\[dask\]'"):
        dask_runner.task_runner("local:2")


@pytest.mark.parametrize(
    "grid",
    [
        {"n_gpus": [1024, 16384, 131072], "checkpoint_s": [30, 300]},
        {"strategy": ["restart", "hot_spare", "elastic"], "n_gpus": [1024, 65536]},
        {"n_gpus": [4096], "strategy": ["restart"], "checkpoint_s": [30, 120, 600, 900.5]},
        {"n_gpus": [4096]},
        {"n_gpus": [1024, 2048, 4096], "weibull_shape": [0.7, 1.5]},
    ],
)
def test_grid_slices_concatenate_to_the_whole_sweep(grid: dict[str, list[Any]]) -> None:
    from models import Scenario, sweep

    base = Scenario(node_failures_per_1000_node_days=6.5, hot_spares=8)
    whole = sweep(base, grid)
    for n_parts in (1, 2, 3, 7):
        slices = dask_runner.split_grid(grid, n_parts)
        assert 1 <= len(slices) <= n_parts
        assert_frame_equal(
            pl.concat([sweep(base, g) for g in slices], how="vertical_relaxed"), whole
        )


def test_split_grid_knows_the_sweeps_categorical_knobs() -> None:
    from models.scenario import _CATEGORICAL

    assert set(dask_runner.CATEGORICAL_KNOBS) == set(_CATEGORICAL)


def test_waves_bound_the_bytes_in_flight(tmp_path: Path) -> None:
    paths = []
    for i, size in enumerate([5, 5, 20, 1, 1, 8]):
        paths.append(tmp_path / f"f{i}")
        paths[-1].write_bytes(b"x" * size)
    assert list(dask_runner.waves(paths, 10)) == [[0, 1], [2], [3, 4, 5]]
    assert list(dask_runner.waves([], 10)) == []


def test_chunks_keep_order_and_leave_none_empty() -> None:
    items = list(range(10))
    for n in (1, 3, 4, 10, 25):
        parts = dask_runner.chunks(items, n)
        assert [x for p in parts for x in p] == items
        assert len(parts) <= n
        assert all(parts)
    assert dask_runner.chunks([], 4) == []


# --- Dask: a LocalCluster of two worker processes on loopback -----------------------------------
@pytest.fixture(scope="module")
def prefect_api() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from distributed import LocalCluster

    with LocalCluster(**dask_runner.local_cluster_kwargs(2)) as local:
        yield local


def _workers_used(cluster: Any, run: Any) -> tuple[Any, set[str]]:
    """Run ``run()`` and name the workers that executed tasks meanwhile."""
    from distributed import Client, get_task_stream

    with Client(cluster.scheduler_address) as client, get_task_stream(client) as stream:
        result = run()
    return result, {task["worker"] for task in stream.data}


@pytest.mark.slow
@pytest.mark.prefect
def test_parse_fan_out_on_a_local_cluster_matches_one_process(
    prefect_api: None, cluster: Any, landing: Path, tmp_path: Path
) -> None:
    from pipelines.flows.ingest_telemetry import ingest_telemetry

    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    fanned, single = tmp_path / "dask.duckdb", tmp_path / "single.duckdb"
    counts, workers = _workers_used(
        cluster,
        lambda: ingest_telemetry(
            landing_dir=landing,
            db_path=fanned,
            dask_address=cluster.scheduler_address,
            parse_tasks=4,
        ),
    )
    assert len(workers) == 2
    reference = ingest.ingest(single, ingest.landing_files(landing))
    key = ("path", "n_read", "n_loaded", "n_quarantined", "n_ignored")
    assert sorted(tuple(c[k] for k in key) for c in counts) == sorted(
        tuple(getattr(c, k) for k in key) for c in reference
    )
    assert_same_warehouse(fanned, single)


@pytest.mark.slow
@pytest.mark.prefect
def test_what_if_sweep_on_a_local_cluster_matches_one_process(
    prefect_api: None, cluster: Any, tmp_path: Path
) -> None:
    from pipelines.flows.what_if import what_if

    spec = yaml.safe_load(HAND_RATES.read_text())
    spec["grid"] = {"strategy": ["restart", "hot_spare"], **spec["grid"]}
    spec["base"]["hot_spares"] = 8
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump(spec))
    result, workers = _workers_used(
        cluster,
        lambda: what_if(
            sweep_file=sweep_file,
            out_dir=tmp_path / "dask",
            db_path=None,
            dask_address=cluster.scheduler_address,
            parts=2,
        ),
    )
    assert len(workers) == 2
    reference = project.run_sweep(
        project.load_sweep(sweep_file), db_path=None, out_dir=tmp_path / "single"
    )
    assert_frame_equal(pl.read_parquet(result["table"]), pl.read_parquet(reference["table"]))
    assert result["gains"] == reference["gains"]
    assert result["n_points"] == reference["n_points"] == 2 * 3 * 2 * 2


@pytest.mark.slow
@pytest.mark.prefect
def test_monte_carlo_sweep_on_a_local_cluster_matches_one_process(
    prefect_api: None, cluster: Any, tmp_path: Path
) -> None:
    """Issue #13 part 3: simulated points seeded by the point give the same table on Dask."""
    from pipelines.flows.what_if import what_if

    spec = yaml.safe_load(HAND_RATES.read_text())
    spec |= {"simulate": 20, "seed": 11}
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump(spec))
    result, workers = _workers_used(
        cluster,
        lambda: what_if(
            sweep_file=sweep_file,
            out_dir=tmp_path / "dask",
            db_path=None,
            dask_address=cluster.scheduler_address,
            parts=3,
        ),
    )
    assert len(workers) == 2
    reference = project.run_sweep(
        project.load_sweep(sweep_file), db_path=None, out_dir=tmp_path / "single"
    )
    table = pl.read_parquet(result["table"])
    assert_frame_equal(table, pl.read_parquet(reference["table"]))
    assert set(table["method"]) == {"monte_carlo"}
    assert result["n_monte_carlo"] == reference["n_monte_carlo"] == table.height == 12


def test_parts_written_before_a_column_was_added_read_it_as_null(
    landing: Path, tmp_path: Path
) -> None:
    """A lake written by an older relia lacks the columns raw tables gained since
    (``ADDED_COLUMNS``): its views still give them, null, so the staging views bind."""
    db, root = tmp_path / "lake.duckdb", tmp_path / "lake"
    ingest.ingest(db, ingest.landing_files(landing), lake_dir=root)
    parts = sorted((root / "source=slurm").rglob("*.parquet"))
    assert parts
    for part in parts:  # as an older relia wrote them: no cluster column
        pl.read_parquet(part).drop("cluster").write_parquet(part)
    con = duckdb.connect()
    try:
        warehouse.apply_schema(con)
        made = lake.attach(con, root, temporary=True)
        assert "raw_slurm_jobs" in made
        n_rows, n_clusters = con.execute(
            "select count(*), count(cluster) from raw_slurm_jobs"
        ).fetchone()
        kind = con.execute(
            "select column_type from (describe raw_slurm_jobs) where column_name = 'cluster'"
        ).fetchone()
    finally:
        con.close()
    assert n_rows > 0
    assert (n_clusters, kind) == (0, ("VARCHAR",))
