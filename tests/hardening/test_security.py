"""Security: bound values, identifiers from fixed sets, a fenced landing root, inert telemetry.

- Every SQL text the pipelines build with an f-string interpolates only names that pass a guard
  (``warehouse._identifier``, ``lake._table``), SQL literals escaped by ``lake._sql_string``, or
  constants; this is checked by walking the syntax tree of ``pipelines/`` and ``models/``.
- ``warehouse._identifier`` refuses anything but ``^[a-z][a-z0-9_]*$``.
- ``ingest.landing_files`` refuses, one at a time, files and source folders that resolve outside
  the root (tests/hardening/test_fence.py: every other entry point).
- Hostile strings (HTML, SQL, ANSI escapes, NUL, Rich markup) in job names and rejected lines
  land verbatim as data in the warehouse, leave every table in place, and stay inert in logs, in
  the report and on the terminal. A host name is checked against what a host name may be
  (``quality.HOST_REGEX``): a hostile one is quarantined with that rule as its reason, never
  loaded.
"""

from __future__ import annotations

import ast
import logging
import re
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest

from models.exceptions import FewFailuresWarning
from pipelines import ingest, warehouse

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("pipelines", "models")

GUARDS = {"_identifier", "_table", "_sql_string"}
"""Functions whose result may go into SQL text: they refuse or escape anything else."""
SQL_CALLS = {"execute", "executemany", "sql", "from_query"}
"""Methods whose first argument is SQL text; ``warehouse.query(con, sql)`` takes it second."""
TRUSTED = {
    ("pipelines/warehouse/schema.py", "create_views", "body"): (
        "view SQL read from the repository's sql/"
    ),
    ("pipelines/warehouse/schema.py", "apply_schema", "path.read_text()"): "DDL from sql/schema/",
    ("pipelines/warehouse/lake.py", "_create_views", "sql_type"): (
        "a column type of ADDED_COLUMNS, a literal tuple in warehouse/schema.py"
    ),
    ("pipelines/analysis/predict.py", "_features_at", "sql"): (
        "the feature view's select from sql/marts/ (check_as_of's feature_sql: a test's variant)"
    ),
}
"""(file, function, expression) that goes into SQL on purpose, with the reason."""


# --- identifiers ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        "raw_fleet; drop table raw_fleet",
        "raw_fleet--",
        "Raw_fleet",
        "1raw",
        "raw-fleet",
        "raw fleet",
        "",
        "raw.fleet",
        '"raw_fleet"',
        "raw_fleet\x00",
        "raw_fleet\n",
        "r\u00e4w",
        "raw_fleet/*x*/",
        "_raw",
    ],
)
def test_identifier_refuses_anything_but_plain_names(name: str) -> None:
    with pytest.raises(ValueError, match="refusing identifier"):
        warehouse._identifier(name)


def test_identifier_accepts_the_warehouse_names() -> None:
    for path in warehouse.view_files():
        assert warehouse._identifier(path.stem) == path.stem
    for table in (*warehouse.RAW_TABLES, *warehouse.SEEDS):
        assert warehouse._identifier(table) == table


# --- SQL text: no value is ever interpolated -----------------------------------------------------
def _functions(tree: ast.Module) -> dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]:
    """Each node -> its innermost enclosing function (None at module level)."""
    owner: dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None] = {}

    def visit(node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        owner[node] = function
        inner = node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else function
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, None)
    return owner


def _constant_names(tree: ast.Module) -> set[str]:
    """Module-level UPPER_CASE names bound once to literals (fixed sets, maps, strings)."""
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                names.add(target.id)
    return names


class _SqlChecker:
    def __init__(self, path: Path) -> None:
        self.file = path.relative_to(REPO).as_posix()
        self.tree = ast.parse(path.read_text(), filename=str(path))
        self.owner = _functions(self.tree)
        self.constants = _constant_names(self.tree)
        self.problems: list[str] = []

    def run(self) -> list[str]:
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            callee = _callee(node)
            if callee in SQL_CALLS and isinstance(node.func, ast.Attribute) and node.args:
                self.check(node.args[0], self.owner.get(node), set())
            elif callee == "query" and len(node.args) >= 2:
                self.check(node.args[1], self.owner.get(node), set())
        return self.problems

    def check(self, expr: ast.expr, function: ast.AST | None, seen: set[str]) -> None:
        where = f"{self.file}:{expr.lineno}"
        if isinstance(expr, ast.Constant):
            return
        if (self.file, getattr(function, "name", None), ast.unparse(expr)) in TRUSTED:
            return
        if isinstance(expr, ast.JoinedStr):
            for part in expr.values:
                if isinstance(part, ast.FormattedValue):
                    self.check(part.value, function, seen)
            return
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            self.check(expr.left, function, seen)
            self.check(expr.right, function, seen)
            return
        if isinstance(expr, ast.IfExp):
            self.check(expr.body, function, seen)
            self.check(expr.orelse, function, seen)
            return
        if isinstance(expr, ast.Call) and _callee(expr) in GUARDS:
            return
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "join"
            and isinstance(expr.func.value, ast.Constant)
            and len(expr.args) == 1
            and isinstance(expr.args[0], ast.GeneratorExp | ast.ListComp)
        ):
            self.check(expr.args[0].elt, function, seen)  # ", ".join(<each part checked>)
            return
        if (
            isinstance(expr, ast.Subscript)
            and isinstance(expr.value, ast.Name)
            and expr.value.id in self.constants
        ):
            return  # a value of a fixed map
        if isinstance(expr, ast.Name):
            self.check_name(expr, function, seen)
            return
        self.problems.append(f"{where}: {ast.unparse(expr)!r} goes into SQL text unguarded")

    def check_name(self, name: ast.Name, function: ast.AST | None, seen: set[str]) -> None:
        where = f"{self.file}:{name.lineno}"
        if name.id in self.constants or name.id in seen:
            return
        function_name = getattr(function, "name", None)
        if (self.file, function_name, name.id) in TRUSTED:
            return
        if (function_name, name.id) == ("query", "sql"):
            return  # a query(con, sql, params) wrapper: every call of it is checked instead
        if function is None:
            self.problems.append(f"{where}: module-level {name.id!r} in SQL text")
            return
        seen = seen | {name.id}
        args = function.args  # type: ignore[attr-defined]
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        found = False
        for node in ast.walk(function):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name.id for t in targets):
                    found = True
                    self.check(node.value, function, seen)
            elif isinstance(node, ast.For | ast.comprehension) and name.id in {
                n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)
            }:
                found = True
                self.check_loop(node.iter, name, where)
        if name.id in params:
            found = True
            guarded = any(
                isinstance(node, ast.Call)
                and _callee(node) in GUARDS
                and any(isinstance(a, ast.Name) and a.id == name.id for a in node.args)
                for node in ast.walk(function)
            )
            if not guarded:
                self.problems.append(
                    f"{where}: parameter {name.id!r} goes into SQL text without a guard call"
                )
        if not found:
            self.problems.append(f"{where}: cannot tell where {name.id!r} comes from")

    def check_loop(self, iterable: ast.expr, name: ast.Name, where: str) -> None:
        """A loop variable is safe when it runs over a fixed set (or its keys/items)."""
        root = iterable
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
            root = root.func.value  # CONSTANT.items(), CONSTANT.keys()
        elif isinstance(root, ast.Call) and _callee(root) in {"sorted", "list", "tuple"}:
            root = root.args[0]
        if isinstance(root, ast.Name) and root.id in self.constants:
            return
        self.problems.append(f"{where}: loop variable {name.id!r} does not run over a fixed set")


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def test_sql_text_interpolates_only_guarded_names_and_constants() -> None:
    problems = []
    n_files = 0
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            n_files += 1
            problems += _SqlChecker(path).run()
    assert n_files > 10
    assert not problems, "\n".join(problems)


def test_the_sql_checker_catches_an_interpolated_value(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def load(con, host, table):\n"
        "    con.execute(f\"select * from raw_xid_events where host = '{host}'\")\n"
        "    con.execute('select 1 from ' + table)\n"
        "    name = host.strip()\n"
        "    con.sql(f'drop table {name}')\n"
        "    con.sql('select ' + ', '.join(f'{c} as x' for c in host.split()))\n"
        "    con.sql('select ' + ', '.join(f'{_identifier(c)} as x' for c in host.split()))\n"
    )
    checker = _SqlChecker.__new__(_SqlChecker)
    checker.file = "bad.py"
    checker.tree = ast.parse(bad.read_text())
    checker.owner = _functions(checker.tree)
    checker.constants = set()
    checker.problems = []
    assert len(set(checker.run())) == 4  # lines 2, 3, 5 and 6; the guarded join passes


# --- the landing root is a fence ------------------------------------------------------------------
def test_source_folder_linked_outside_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "gpu0001.log").write_text("not for us\n")
    root = tmp_path / "landing"
    root.mkdir()
    (root / "kernel").symlink_to(outside, target_is_directory=True)
    [refused] = ingest.landing_files(root)  # refused on its own, never walked (issue 26)
    assert (refused.path.name, refused.refused) == ("kernel", "resolves outside the landing root")


def test_relative_link_climbing_out_is_refused_and_links_inside_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "landing"
    (root / "slurm").mkdir(parents=True)
    (root / "fleet").mkdir()
    (root / "fleet" / "fleet.csv").write_text("node,rack,cluster,batch,installed,removed\n")
    (root / "slurm" / "inside.txt").symlink_to(Path("..") / "fleet" / "fleet.csv")
    assert {f.path.name for f in ingest.landing_files(root)} == {"fleet.csv", "inside.txt"}
    (tmp_path / "secret").write_text("password\n")
    (root / "slurm" / "sacct_x.txt").symlink_to(Path("..") / ".." / "secret")
    found = {f.path.name: f.refused for f in ingest.landing_files(root)}  # per file (issue 26)
    assert found == {
        "fleet.csv": "",
        "inside.txt": "",
        "sacct_x.txt": "resolves outside the landing root",
    }


# --- hostile strings stay data --------------------------------------------------------------------
HOSTILE = {
    "html": "<script>alert(1)</script>",
    "sql": "'; drop table raw_fleet; --",
    "ansi": "\x1b[31mred\x1b[0m\x1b[2J\x07",
    "nul": "nul\x00byte",
    "markup": "[/bold][link=file:///etc/passwd]x[/link]",
}
SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|"
    "End|Elapsed|State|ExitCode|Restarts"
)


def _job(job_id: int, name: str, state: str = "COMPLETED") -> str:
    return (
        f"{job_id}|{job_id}|{name}|gpu|ml|ada|1|gres/gpu=8|gpu0001|2026-06-01T00:00:00|"
        f"2026-06-01T00:01:00|2026-06-01T05:00:00|04:59:00|{state}|0:0|0"
    )


def _xid(host: str, name: str = "python") -> str:
    return (
        f"2026-06-01T00:00:00+0000 {host} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, "
        f"name={name}, GPU has fallen off the bus."
    )


@pytest.fixture
def hostile_landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    (root / "slurm").mkdir(parents=True)
    (root / "kernel").mkdir()
    (root / "fleet").mkdir()
    jobs = [_job(100 + i, text) for i, text in enumerate(HOSTILE.values())]
    jobs += [_job(200 + i, "x", state=text) for i, text in enumerate(HOSTILE.values())]
    (root / "slurm" / "sacct_20260601.txt").write_text("\n".join([SACCT_HEADER, *jobs]) + "\n")
    hosts = ["<script>alert(1)</script>", "';drop_table_raw_fleet;--", "[/bold]"]
    lines = [_xid(h) for h in hosts] + [_xid("gpu0001\x1b[2J", name="py\x00thon")]
    (root / "kernel" / "gpu0001.log").write_text("\n".join(lines) + "\n")
    (root / "fleet" / "fleet.csv").write_text(
        "node,rack,cluster,batch,installed,removed\n"
        "gpu0001,r1,alpha,b1,2025-01-01T00:00:00Z,\n"
        '"<script>alert(1)</script>",r1,alpha,"\'; drop table raw_fleet; --",'
        "2025-01-01T00:00:00Z,\n"
    )
    return root


def test_hostile_strings_land_as_inert_data(
    hostile_landing: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "relia.duckdb"
    with caplog.at_level(logging.DEBUG):
        counts = ingest.ingest(db, ingest.landing_files(hostile_landing))
    assert all(c.n_read == c.n_loaded + c.n_quarantined for c in counts)
    with warehouse.connect(db, read_only=True) as con:
        names = {r[0] for r in con.execute("select job_name from raw_slurm_jobs").fetchall()}
        hosts = {r[0] for r in con.execute("select host from raw_xid_events").fetchall()}
        raw = "\n".join(r[0] for r in con.execute("select raw from raw_quarantine").fetchall())
        host_reasons = con.execute(
            "select target_table, reason, count(*) from raw_quarantine "
            "where reason like '%is a host name%' group by all order by all"
        ).fetchall()
        fleet = con.execute("select node, batch from raw_fleet order by node").fetchall()
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        views = {r[0] for r in con.execute("select view_name from duckdb_views()").fetchall()}
        (found,) = con.execute(
            "select count(*) from stg_slurm_jobs where job_name = $name", {"name": HOSTILE["sql"]}
        ).fetchone()
    assert set(HOSTILE.values()) <= names  # free text: verbatim, NUL and escapes included
    # host names are not free text: the three hostile ones are quarantined, naming the rule
    assert hosts == set()
    rule = "ExpectColumnValuesToMatchRegex: {} is a host name (letters, digits, '-', '.', '_'; "
    assert host_reasons == [
        ("raw_fleet", rule.format("node") + "at most 253 characters)", 1),
        ("raw_xid_events", rule.format("host") + "at most 253 characters)", 3),
    ]
    for text in HOSTILE.values():  # the rejected State values, kept as the raw line
        assert text in raw
    assert "gpu0001\x1b[2J" in raw
    assert "<script>alert(1)</script>" in raw
    assert fleet == [("gpu0001", "b1")]  # the hostile node's row, batch and all, is quarantined
    assert {"raw_fleet", "raw_slurm_jobs", "raw_ingest_files", "raw_quarantine"} <= tables
    # every view is there, as a view or as the snapshot the ingest took of it
    assert {w.stem for w in warehouse.view_files()} <= views | set(warehouse.MATERIALIZED)
    assert set(warehouse.MATERIALIZED) <= tables
    assert found == 1
    for record in caplog.records:  # whatever the pipeline logs carries no control characters
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", record.getMessage())


@pytest.mark.slow
def test_report_shows_hostile_text_escaped(tmp_path: Path) -> None:
    from pipelines.analysis import fit
    from pipelines.report import build_report
    from synth import SynthConfig, synthesize

    landing = tmp_path / "landing"
    start = datetime(2026, 5, 4, tzinfo=UTC)
    synthesize(landing, SynthConfig(nodes=8, days=21, seed=4, start=start))
    bad = [_job(900 + i, "x", state=text) for i, text in enumerate(HOSTILE.values())]
    (landing / "slurm" / "sacct_hostile.txt").write_text("\n".join([SACCT_HEADER, *bad]) + "\n")
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.landing_files(landing))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewFailuresWarning)  # a small fleet: few failures
        fit.run_fit(db)
    html = build_report(db, week=None, reports_dir=tmp_path / "reports").path.read_text()
    assert "<script" not in html
    assert "unknown State &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39;" in html
    assert "unknown State &#39;&#39;; drop table raw_fleet; --&#39;" in html
    assert "[/bold][link=file:///etc/passwd]x[/link]" in html  # text, never markup
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", html)  # #12: C0/C1 stripped
    assert "unknown State &#39;red&#39;" in html


def test_cli_output_keeps_hostile_text_inert(hostile_landing: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pipelines.cli import app

    db = str(tmp_path / "relia.duckdb")
    runner = CliRunner()
    for args in (["ingest", str(hostile_landing), "--db", db], ["summary", "--db", db]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", result.output)
    # a reason is a kind (shown); the hostile States it refused are its values, kept verbatim
    # in raw_quarantine.reason_value (and shown as text in the report's samples)
    assert "unknown State '…'" in result.output
    assert "[2J" not in result.output  # #12: escape sequences stripped whole, never obeyed
    with warehouse.connect(Path(db), read_only=True) as con:
        values = con.execute(
            "select reason_value from raw_quarantine where reason = $kind",
            {"kind": "unknown State '…'"},
        ).fetchall()
    assert {v for (v,) in values} == set(HOSTILE.values())
