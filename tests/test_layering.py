"""Import layering of the project's own code: no cycles, no private names across modules.

The test parses (never imports) every module under ``models/``, ``synth/``, ``pipelines/`` and
``bench/`` and builds the graph of imports between the project's own modules. It counts imports
at module level *and* inside functions: a deferred import hides a cycle from the interpreter but
not from a reader (both cycles this test first found were hidden that way).

Rules:

* **No cycles.** A strongly connected component of more than one module, or a module importing
  itself, fails. Imports under ``if TYPE_CHECKING:`` never run, so they are left out of the cycle
  check (they still count for the other two rules).
* **``models/`` stays pure.** Nothing under ``models/`` imports ``prefect``, ``duckdb``,
  ``great_expectations`` or anything from ``pipelines`` (which is where files, DuckDB and GX live).
* **No private name crosses a module boundary.** ``from x import _y`` and ``x._y`` (``x`` a
  project module bound by an import) fail when ``x`` is another project module; what two modules
  share gets a public name. ``ALLOWED_PRIVATE`` would list justified exceptions; it is empty.

Packages: ``import models.goodput`` runs ``models/__init__.py`` first, but that implicit
submodule -> parent edge is not counted, or every package with re-exports would be one big cycle.
A package is an edge target only when an import names it (``from models import Scenario``,
``import models``). Its own edges are its imports (a package that re-exported through
``importlib.import_module`` over a literal tuple of names would be read as package -> each listed
submodule; ``models/__init__.py`` re-exports lazily, importing on first use the submodules its
literal ``_EXPORTS`` dict names, and is read as package -> each of them). So a submodule that
does ``from models import X`` closes a cycle (with an eager package, it runs while the package is
half initialised), and the test reports it.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("models", "synth", "pipelines", "bench")
FORBIDDEN_IN_MODELS = ("prefect", "duckdb", "great_expectations", "pipelines")

# (importing module, imported module, private name) -> why it cannot be public. Keep it empty.
ALLOWED_PRIVATE: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    type_checking: bool
    names: tuple[str, ...] = ()

    def where(self) -> str:
        return f"{self.source.replace('.', '/')}.py:{self.line}"


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


MODULES = _module_files()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _resolve(module: str, level: int, name: str | None) -> str:
    """Absolute dotted name of ``from <level dots><name> import ...`` written in ``module``."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _project_module(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a project module, or None."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Collector(ast.NodeVisitor):
    """Every import in one module, with whether it sits under ``if TYPE_CHECKING:``."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.edges: list[Edge] = []
        self.external: list[tuple[str, int, bool]] = []  # (top-level package, line, type_checking)
        self.aliases: dict[str, str] = {}  # local name -> project module it is bound to
        self._type_checking = 0

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._type_checking += 1
            for child in node.body:
                self.visit(child)
            self._type_checking -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _edge(self, target: str, line: int, names: tuple[str, ...] = ()) -> None:
        self.edges.append(Edge(self.module, target, line, self._type_checking > 0, names))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            target = _project_module(alias.name)
            if target is None:
                self.external.append(
                    (alias.name.split(".")[0], node.lineno, self._type_checking > 0)
                )
                continue
            self._edge(target, node.lineno)
            if alias.asname:
                self.aliases[alias.asname] = target

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolve(self.module, node.level, node.module)
        origin = _project_module(base) if base else None
        if origin is None or origin != base:
            self.external.append((base.split(".")[0], node.lineno, self._type_checking > 0))
            return
        plain: list[str] = []
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in MODULES:  # ``from package import submodule``
                self._edge(submodule, node.lineno)
                self.aliases[alias.asname or alias.name] = submodule
            else:
                plain.append(alias.name)
        if plain:
            self._edge(base, node.lineno, tuple(plain))


def _dynamic_edges(module: str, tree: ast.Module) -> list[Edge]:
    """``models/__init__.py``: import_module(f"<package>.{name}") for name in a literal tuple."""
    if not _is_package(module):
        return []
    names: dict[str, list[str]] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Tuple | ast.List)
        ):
            values = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            if values and all(isinstance(v, str) for v in values):
                names[node.targets[0].id] = [str(v) for v in values]
    edges: list[Edge] = []
    imports_lazily = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "import_module"
        for n in ast.walk(tree)
    )
    lazy = _lazy_exports(tree) if imports_lazily else None
    for name in lazy or {}:
        target = f"{module}.{name}"
        assert target in MODULES, f"{module}: _EXPORTS lists missing {target}"
        edges.append(Edge(module, target, 0, False))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Name)):
            continue
        if node.iter.id not in names:
            continue
        calls = [
            n
            for n in ast.walk(node)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "import_module"
        ]
        if calls:
            for name in names[node.iter.id]:
                target = f"{module}.{name}"
                assert target in MODULES, f"{module}: {node.iter.id} lists missing {target}"
                edges.append(Edge(module, target, calls[0].lineno, False))
    return edges


def _lazy_exports(tree: ast.Module) -> dict[str, list[str]] | None:
    """A package's literal ``_EXPORTS = {"submodule": ("name", ...), ...}``, or None."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
            value = node.value
            assert isinstance(value, ast.Dict), "_EXPORTS is not a literal dict"
            exports: dict[str, list[str]] = {}
            for key, names in zip(value.keys, value.values, strict=True):
                assert isinstance(key, ast.Constant), "_EXPORTS has a key that is not a literal"
                assert isinstance(names, ast.Tuple | ast.List), f"_EXPORTS[{key.value!r}]"
                exports[str(key.value)] = [
                    e.value for e in names.elts if isinstance(e, ast.Constant)
                ]
            return exports
    return None


@dataclass
class _Parsed:
    edges: list[Edge]
    external: dict[str, list[tuple[str, int, bool]]]
    private_attributes: list[tuple[str, str, str, int]]  # (source, target, name, line)


def _parse_all() -> _Parsed:
    edges: list[Edge] = []
    external: dict[str, list[tuple[str, int, bool]]] = {}
    private_attributes: list[tuple[str, str, str, int]] = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        collector = _Collector(module)
        collector.visit(tree)
        edges += collector.edges + _dynamic_edges(module, tree)
        external[module] = collector.external
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in collector.aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                target = collector.aliases[node.value.id]
                if target != module:
                    private_attributes.append((module, target, node.attr, node.lineno))
    return _Parsed(edges, external, private_attributes)


PARSED = _parse_all()


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components in discovery order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _cycle_report(component: list[str], runtime: list[Edge]) -> str:
    members = set(component)
    inside = sorted(
        {
            (e.source, e.target, e.where())
            for e in runtime
            if e.source in members and e.target in members
        }
    )
    lines = [f"  {source} -> {target}  ({where})" for source, target, where in inside]
    return f"cycle among {', '.join(component)}:\n" + "\n".join(lines)


def test_no_import_cycles() -> None:
    runtime = [e for e in PARSED.edges if not e.type_checking]
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for edge in runtime:
        graph[edge.source].add(edge.target)
    problems = [
        _cycle_report(component, runtime)
        for component in _strongly_connected(graph)
        if len(component) > 1 or component[0] in graph[component[0]]
    ]
    assert not problems, "import cycles between project modules:\n" + "\n".join(problems)


def test_models_import_no_io_layer() -> None:
    problems = [
        f"{module.replace('.', '/')}.py:{line} imports {top}"
        for module, imports in PARSED.external.items()
        if module.split(".")[0] == "models"
        for top, line, _ in imports
        if top in FORBIDDEN_IN_MODELS
    ]
    problems += [
        f"{edge.where()} imports {edge.target}"
        for edge in PARSED.edges
        if edge.source.split(".")[0] == "models"
        and edge.target.split(".")[0] in FORBIDDEN_IN_MODELS
    ]
    assert not problems, (
        "models/ must stay free of prefect, duckdb, GX and pipelines:\n"
        + "\n".join(sorted(problems))
    )


def test_synth_imports_nothing_from_pipelines() -> None:
    """The generator writes what real tools write; it never borrows the parsers' code."""
    problems = [
        f"{edge.where()} imports {edge.target}"
        for edge in PARSED.edges
        if edge.source.split(".")[0] == "synth" and edge.target.split(".")[0] == "pipelines"
    ]
    assert not problems, "synth/ must not import pipelines/:\n" + "\n".join(sorted(problems))


# --- the stages, bottom up ---------------------------------------------------------------------
STAGES = (
    "pipelines.runtime",
    "pipelines.ingest.sources",
    "pipelines.warehouse",
    "pipelines.ingest",
    "pipelines.analysis",
    "pipelines.report",
    "pipelines.flows",
    "pipelines.cli",
)
"""The packages of ``pipelines/`` from the bottom up (``docs/architecture.md``). A module imports
its own stage and the stages below it, never one above. What every stage runs on
(``pipelines.runtime``: settings, errors, the sources' names) is the ground; the parsers
(``pipelines.ingest.sources``: bytes in, polars frames out) stand on it, below the warehouse that
makes their raw tables; the rest of the ingest loads through the warehouse. Imports under
``if TYPE_CHECKING:`` name a type for an annotation and never run; they are left out, as in the
cycle check."""


def _stage(module: str) -> int | None:
    """Index in :data:`STAGES` of the stage holding ``module`` (the longest match), or None."""
    best: tuple[int, int] | None = None
    for i, stage in enumerate(STAGES):
        if (module == stage or module.startswith(stage + ".")) and (
            best is None or len(stage) > best[1]
        ):
            best = (i, len(stage))
    return None if best is None else best[0]


def test_every_pipelines_module_sits_in_a_stage() -> None:
    loose = sorted(m for m in MODULES if m.startswith("pipelines.") and _stage(m) is None)
    assert not loose, f"modules of pipelines/ outside every stage package: {loose}"


def test_stages_import_downwards() -> None:
    problems = sorted(
        f"{edge.where()} imports {edge.target} ({STAGES[target]} is above {STAGES[source]})"
        for edge in PARSED.edges
        if not edge.type_checking
        and (source := _stage(edge.source)) is not None
        and (target := _stage(edge.target)) is not None
        and target > source
    )
    assert not problems, "imports that run up the stages:\n" + "\n".join(problems)


def test_no_import_runs_a_higher_stage_through_a_parent_package() -> None:
    """Importing ``pipelines.ingest.sources.x`` first runs ``pipelines/ingest/__init__.py``, which
    loads the whole ingest stage: from a stage below the ingest that is an import up the stages
    (and a cycle at run time), though the module named sits below."""
    problems = sorted(
        f"{edge.where()} imports {edge.target}, which runs {package} ({STAGES[above]}) first"
        for edge in PARSED.edges
        if not edge.type_checking and (source := _stage(edge.source)) is not None
        for package in _parents(edge.target)
        if not edge.source.startswith(package + ".")
        and (above := _stage(package)) is not None
        and above > source
    )
    assert not problems, "imports that run a higher stage first:\n" + "\n".join(problems)


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_imports_first_in_a_fresh_interpreter(stage: str) -> None:
    """A stage's package, then each of its modules, import in a process where nothing of the
    project was imported before: an import cycle shows only in the order that meets it, which
    the test suite may never take (``from pipelines import warehouse`` as a command's first
    import)."""
    modules = sorted(m for m in MODULES if m.startswith(stage + "."))
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    done = subprocess.run(
        [sys.executable, "-c", code, stage, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"import {stage} first:\n{done.stderr[-2000:]}"


def test_no_private_names_across_modules() -> None:
    found = [
        (edge.source, edge.target, name, edge.where())
        for edge in PARSED.edges
        if edge.source != edge.target
        for name in edge.names
        if name.startswith("_") and not name.startswith("__")
    ]
    found += [
        (source, target, name, f"{source.replace('.', '/')}.py:{line}")
        for source, target, name, line in PARSED.private_attributes
    ]
    problems = sorted(
        f"{where}: {name} from {target}"
        for source, target, name, where in found
        if (source, target, name) not in ALLOWED_PRIVATE
    )
    assert not problems, "private names used across project modules:\n" + "\n".join(problems)


def test_allow_list_is_current() -> None:
    used = {(e.source, e.target, n) for e in PARSED.edges for n in e.names}
    used |= {(s, t, n) for s, t, n, _ in PARSED.private_attributes}
    stale = sorted(set(ALLOWED_PRIVATE) - used)
    assert not stale, f"ALLOWED_PRIVATE entries no longer needed: {stale}"


def test_the_walker_sees_the_tree() -> None:
    """Guards against a walker that silently finds nothing."""
    assert {"models.goodput", "pipelines.warehouse", "pipelines.cli", "synth.core"} <= set(MODULES)
    targets = {(e.source, e.target) for e in PARSED.edges}
    assert ("models", "models.goodput") in targets  # models/__init__.py re-exports it
    assert any(source == "pipelines.cli" for source, _ in targets)


# --- the report reads marts ---------------------------------------------------------------------
BELOW_MARTS = re.compile(r"\b(?:raw|stg|int)_[a-z0-9_]+\b")
"""A relation of a layer below the marts: raw tables, staging and intermediate views."""
SQL_TEXT = re.compile(r"\bselect\b[\s\S]*\bfrom\b", re.IGNORECASE)


def _docstrings(tree: ast.Module) -> set[int]:
    """Ids of the docstring nodes of a module and of its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _sql_strings(path: Path, *, functions: str | None = None) -> list[tuple[int, str]]:
    """``(line, text)`` of every string literal in ``path`` that reads like a query.

    F-strings count by their literal parts; docstrings do not count. With ``functions``, only
    strings inside functions whose name contains it.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _docstrings(tree)
    scopes: list[ast.AST] = [tree]
    if functions is not None:
        scopes = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and functions in node.name
        ]
    out = []
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.JoinedStr):
                parts = [v for v in node.values if isinstance(v, ast.Constant)]
                skip.update(id(v) for v in parts)
                text = "".join(str(v.value) for v in parts)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in skip:
                    continue
                text = node.value
            else:
                continue
            if SQL_TEXT.search(text):
                out.append((node.lineno, text))
    return out


def _below_marts(paths: list[Path], *, functions: str | None = None) -> tuple[int, list[str]]:
    n_queries, problems = 0, []
    for path in paths:
        for line, text in _sql_strings(path, functions=functions):
            n_queries += 1
            for name in sorted(set(BELOW_MARTS.findall(text))):
                problems.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    return n_queries, problems


def test_report_queries_read_marts_only() -> None:
    """Every query of ``pipelines/report/`` reads ``rpt_``/``fct_``/``dim_`` views or model
    outputs, never a ``raw_`` table or a ``stg_``/``int_`` view (those get a mart first)."""
    paths = sorted((ROOT / "pipelines" / "report").glob("*.py"))
    n_queries, problems = _below_marts(paths)
    assert n_queries >= 20, f"the walker found only {n_queries} queries in pipelines/report/"
    assert not problems, "report queries below the marts:\n" + "\n".join(problems)


def test_cli_report_summary_reads_marts_only() -> None:
    """The fleet summary ``relia summary`` and ``relia demo`` print
    (``pipelines/analysis/summary.py``) reads marts only, like the report; the CLI itself holds no
    query below the marts."""
    n_queries, problems = _below_marts([ROOT / "pipelines" / "analysis" / "summary.py"])
    assert n_queries >= 3, f"the walker found only {n_queries} summary queries"
    _, cli_problems = _below_marts(sorted((ROOT / "pipelines" / "cli").rglob("*.py")))
    assert not problems + cli_problems, "summary queries below the marts:\n" + "\n".join(
        problems + cli_problems
    )


# --- the public surface of models/ ----------------------------------------------------------------
def _all_of(path: Path) -> list[str] | None:
    """The literal ``__all__`` of a module, or None when it has none."""
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            assert isinstance(value, ast.List | ast.Tuple), f"{path}: __all__ is not a literal"
            return [e.value for e in value.elts if isinstance(e, ast.Constant)]
    return None


def _type_checking_imports(tree: ast.Module) -> dict[str, list[str]]:
    """``{submodule: names}`` of the ``from models.<submodule> import ...`` under TYPE_CHECKING."""
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("models."):
                    submodule = (child.module or "").removeprefix("models.")
                    found.setdefault(submodule, []).extend(a.name for a in child.names)
    return found


def test_models_package_exports_every_public_name_of_its_modules() -> None:
    """``from models import X`` works for every name a submodule lists in ``__all__``, and the
    package's ``__all__`` lists nothing else.

    The package re-exports lazily (PEP 562): its literal ``_EXPORTS``, the package's one list of
    names, maps every submodule to exactly the names of that submodule's ``__all__`` (a name
    missing from the map, or mapped to the wrong submodule, fails); ``__all__`` is built from it;
    its ``TYPE_CHECKING`` imports, which type checkers read, star-import every submodule that
    exports a name (a star import takes that submodule's ``__all__``). The package's ``__all__``
    and its names are read by importing it, the one import in this file.
    """
    import models

    package = ROOT / "models" / "__init__.py"
    tree = ast.parse(package.read_text())
    lazy = _lazy_exports(tree)
    assert lazy is not None, "models/__init__.py has no literal _EXPORTS"
    wanted: list[str] = []
    by_module: dict[str, list[str]] = {}
    for path in sorted((ROOT / "models").glob("*.py")):
        if path.name == "__init__.py":
            continue
        names = _all_of(path)
        assert names is not None, f"{path.relative_to(ROOT)} has no __all__"
        wanted += names
        by_module[path.stem] = sorted(names)
    exported = list(models.__all__)
    assert sorted(exported) == sorted(wanted)
    assert len(set(exported)) == len(exported), "a name is exported twice"
    assert {module: sorted(names) for module, names in lazy.items()} == by_module
    typed = _type_checking_imports(tree)
    assert typed == {module: ["*"] for module, names in by_module.items() if names}
    for module, names in by_module.items():
        submodule = importlib.import_module(f"models.{module}")
        for name in names:
            assert getattr(models, name) is getattr(submodule, name), f"models.{name}"


# --- function size -------------------------------------------------------------------------------
MAX_FUNCTION_LINES = 100
"""No function of the project has more lines of code (docs/architecture.md, "How we split code":
past about 80, look for the named steps). Lines of code: from the ``def`` line to the last line of
the body, without blank lines, comment lines and the docstring."""


def _lines_of_code(source_lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    doc: set[int] = set()
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        doc = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    end = node.end_lineno or node.lineno
    return sum(
        1
        for number in range(node.lineno, end + 1)
        if number not in doc
        and (text := source_lines[number - 1].strip())
        and not text.startswith("#")
    )


def test_no_function_over_100_lines_of_code() -> None:
    too_long = {}
    for path in MODULES.values():
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _lines_of_code(lines, node)
                if n > MAX_FUNCTION_LINES:
                    too_long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = n
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines of code: {too_long}"


def test_the_line_counter_counts_code_only() -> None:
    source = '''def f(x):
    """Docstring
    over two lines."""
    # a comment

    y = x + 1
    return y
'''
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert _lines_of_code(source.splitlines(), node) == 3  # def, y = ..., return
