"""What each view reads: the graph of ``sql/``'s views, from DuckDB's own parser.

Every view of ``sql/`` is parsed by DuckDB (``json_serialize_sql``: the statement's tree, no
binding), and each table it names in a ``from`` or a ``join`` is taken; a name that is another
view of ``sql/`` is followed down to what that one reads, a name of a common table expression (a
``with`` of the view's own) is left out. What is left are the relations under the views (raw
tables, seeds, ``cfg_params``; a raw table the lake made a view over Parquet counts as a table):
:func:`view_reads`. The map is made from the ``sql/`` text each time it is needed, so it cannot
drift from the SQL; :mod:`pipelines.warehouse.materialize` takes again only the snapshots whose
view reads a relation an ingest changed.

A read is a :data:`Read`: ``(table, None)`` for the whole table, or ``(table, value)`` for the
rows of a :data:`PARTITIONED` table whose partition column holds ``value`` (the view's ``select``
straight from the table filters ``where <column> = '<value>'``, alone or and-ed with other
conditions). Everything else is read whole, which errs towards taking a snapshot again.

A view that calls a table function that may read a relation by name (``query_table``, a table
macro, ``read_parquet``...) cannot be followed: :func:`view_reads` raises ``ValueError``. So does
a view a scalar macro with a ``select`` inside would hide, which :func:`macro_reads` reports.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pipelines.warehouse.schema import view_files

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    import duckdb

Read = tuple[str, str | None]
"""``(table, None)``: the whole table; ``(table, value)``: its rows of one partition."""

PARTITIONED = {"raw_ingest_files": "target_table"}
"""Tables read by partition: lineage rows of one raw table are keyed by ``target_table``."""

ROW_FUNCTIONS = frozenset({"unnest", "range", "generate_series"})
"""Table functions that make rows from their arguments and read no relation."""


def view_reads(
    con: duckdb.DuckDBPyConnection, views: Collection[str] | None = None
) -> dict[str, frozenset[Read]]:
    """Return, for views of ``sql/``, the relations outside ``sql/`` each reads (transitively).

    ``views`` limits the answer to those views (and the views under them, which are parsed to
    follow them); default: every view. ``con`` is any connection with the schema applied: its
    catalog tells a table from a common table expression of the same view.

    Raises
    ------
    ValueError
        When a view calls a table function that may read a relation by name.
    """
    files = {path.stem: path for path in view_files()}
    relations = _relations(con)
    reads: dict[str, frozenset[Read]] = {}

    def follow(view: str, path: tuple[str, ...]) -> frozenset[Read]:
        if view in path:
            msg = f"sql views read each other in a cycle: {' -> '.join((*path, view))}"
            raise ValueError(msg)
        if view not in reads:
            below: set[Read] = set()
            for name, part in _named_reads(con, f"sql view {view}", files[view].read_text()):
                if name == view:  # a common table expression named like its view
                    continue
                if name in files:
                    below |= follow(name, (*path, view))
                elif name in relations:
                    below.add((name, part))
            reads[view] = frozenset(below)
        return reads[view]

    for view in files if views is None else views:
        follow(view, ())
    return {view: reads[view] for view in (files if views is None else views)}


def sql_reads(con: duckdb.DuckDBPyConnection, sql: str) -> set[Read]:
    """Return the relations of ``con``'s catalog that the query ``sql`` names (views not followed).

    Raises
    ------
    ValueError
        When ``sql`` calls a table function that may read a relation by name.
    """
    relations = _relations(con)
    return {(name, part) for name, part in _named_reads(con, "query", sql) if name in relations}


def _relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Return the names of the tables and views of ``con``'s catalog."""
    rows = con.execute(
        "select table_name from duckdb_tables() where not internal "
        "union select view_name from duckdb_views() where not internal"
    ).fetchall()
    return {row[0] for row in rows}


def reads_any(reads: Collection[Read], changed: Collection[Read]) -> bool:
    """Whether ``reads`` (one view's) includes any of the ``changed`` rows.

    A whole table read meets any change of the table; a partition read meets a change of the
    whole table or of that partition.
    """
    changed_whole = {table for table, part in changed if part is None}
    changed_any = {table for table, _ in changed}
    return any(
        (table in changed_any)
        if part is None
        else (table in changed_whole or (table, part) in changed)
        for table, part in reads
    )


def macro_reads(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """Return the macros of the warehouse whose body names a table, with the names it reads.

    A view that calls such a macro reads what :func:`view_reads` cannot see; none may.
    """
    rows = con.execute(
        "select function_name, function_type, macro_definition from duckdb_functions() "
        "where not internal and function_type in ('macro', 'table_macro')"
    ).fetchall()
    out: dict[str, set[str]] = {}
    for name, kind, body in rows:
        sql = str(body) if kind == "table_macro" else f"select {body}"
        names = {table for table, _ in _named_reads(con, f"macro {name}", sql)}
        if names or kind == "table_macro":
            out[name] = names
    return out


_NAMED: dict[str, frozenset[Read]] = {}
""":func:`_named_reads` by SQL text: each ``sql/`` file is parsed once a process."""


def _named_reads(con: duckdb.DuckDBPyConnection, view: str, sql: str) -> frozenset[Read]:
    """Return the tables ``sql`` names in its ``from`` and ``join`` clauses (its CTEs included).

    DuckDB's parser (``json_serialize_sql``) gives the tree: no binding, no catalog needed.
    """
    if sql in _NAMED:
        return _NAMED[sql]
    row = con.execute("select json_serialize_sql($sql)", {"sql": sql}).fetchone()
    tree: dict[str, Any] = json.loads(str(row[0])) if row else {}
    if not tree or tree.get("error"):
        msg = f"{view}: DuckDB cannot parse it: {tree.get('error_message')}"
        raise ValueError(msg)
    partitions = {id(node["from_table"]): part for node, part in _partition_selects(tree)}
    found: set[Read] = set()
    for node in _nodes(tree):
        kind = node.get("type")
        if kind == "BASE_TABLE":
            found.add((str(node["table_name"]), partitions.get(id(node))))
        elif kind == "TABLE_FUNCTION":
            function = str(node["function"]["function_name"])
            if function not in ROW_FUNCTIONS:
                msg = (
                    f"{view} calls the table function {function}: what it reads cannot "
                    "be told from the SQL (name the table in a from or a join)"
                )
                raise ValueError(msg)
    _NAMED[sql] = frozenset(found)
    return _NAMED[sql]


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Yield every mapping in a parse tree, depth first."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _partition_selects(tree: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """Yield each ``select`` straight from a :data:`PARTITIONED` table that keeps one partition."""
    for node in _nodes(tree):
        source = node.get("from_table")
        if node.get("type") != "SELECT_NODE" or not isinstance(source, dict):
            continue
        column = PARTITIONED.get(str(source.get("table_name")))
        if source.get("type") != "BASE_TABLE" or column is None:
            continue
        part = _equals_constant(node.get("where_clause"), column)
        if part is not None:
            yield node, part


def _equals_constant(condition: Any, column: str) -> str | None:
    """Return ``value`` when ``condition`` is (or ands in) ``column = 'value'``, else None."""
    if not isinstance(condition, dict):
        return None
    if condition.get("type") == "CONJUNCTION_AND":
        for child in condition.get("children", []):
            found = _equals_constant(child, column)
            if found is not None:
                return found
        return None
    if condition.get("type") != "COMPARE_EQUAL":
        return None
    sides = (condition.get("left"), condition.get("right"))
    for named, value in (sides, sides[::-1]):
        if (
            isinstance(named, dict)
            and isinstance(value, dict)
            and named.get("type") == "COLUMN_REF"
            and named.get("column_names", [None])[-1] == column
            and value.get("type") == "VALUE_CONSTANT"
            and value.get("literal", {}).get("kind") == "STRING"
        ):
            return str(value["literal"]["text"])
    return None
