"""The shape of the package, checked from its source: no import cycles, the query side never
reaches the indexing side, no module too long to read. Imports are read with ``ast`` (those
inside functions too: a lazy import is still an arrow)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "journal_index"
MAX_LINES = 600
# The folders say which side a module is on: the index side writes the index from the
# journals; the query side reads both; text holds what both share.
SIDES = ("indexing", "query")
# The data-access layer: the only modules whose strings are SQL statements (migrations aside).
SQL_MODULES = {"data.store", "data.index_sql", "data.read_sql",
               # the team hub's own database (PostgreSQL): its schema, its writes, its reads
               "hub.schema", "hub.push", "hub.search", "hub.read"}
_STATEMENT = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (TABLE|INDEX|VIRTUAL TABLE))\b")
# The hub's modules speak to PostgreSQL only: the local index's tables are data/'s business.
HUB_SQL_MODULES = {m for m in SQL_MODULES if m.startswith("hub.")}
MIGRATIONS = PACKAGE.parent / "migrations"


def side(name: str) -> set[str]:
    """The modules of one folder (the package itself included)."""
    return {m for m in _modules() if m == name or m.startswith(name + ".")}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _type_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (for the type checker; they never run)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            guarded.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return guarded


def _imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``path`` imports when it runs ("" is the package itself)."""
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            inner = node.module.removeprefix("journal_index").removeprefix(".")
            submodules = [f"{node.module}.{alias.name}" for alias in node.names
                          if f"{inner}.{alias.name}".lstrip(".") in known]
            # Names taken from a package's own namespace are an arrow to it; its submodules are not.
            names = submodules + ([node.module] if len(submodules) < len(node.names) else [])
        else:
            continue
        for name in names:
            if name == "journal_index" or name.startswith("journal_index."):
                inner = name.removeprefix("journal_index").removeprefix(".")
                if inner in known:
                    out.add(inner)
    return out


def graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    edges = {name: _imports(path, known) for name, path in modules.items()}
    for name, targets in edges.items():
        # (Importing a submodule runs its package first: that arrow is Python's and not counted;
        # a module importing names from its own package is counted.)
        targets.discard("")
        targets.discard(name)
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _reach(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles() -> None:
    assert _cycle(graph()) is None


# Run in a fresh interpreter: each module of the package, imported first, with no other of ours
# loaded before it. The graph above leaves out the arrow from a submodule to its package's
# __init__ (Python's, taken on every import), so a cycle through a package that re-exports its
# submodules shows only here.
_IMPORT_EACH = """
import sys, importlib
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "journal_index" or m.startswith("journal_index.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
"""


def test_every_module_imports_first_on_its_own() -> None:
    names = sorted("journal_index" + (f".{m}" if m else "") for m in _modules()
                   if m != "__main__" and not m.startswith("semantic.embedder"))  # (runs the CLI; needs the extra)
    done = subprocess.run([sys.executable, "-c", _IMPORT_EACH, *names], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == ""


def test_the_query_side_never_imports_the_indexing_side() -> None:
    edges = graph()
    query, indexing = side("query"), side("indexing")
    assert len(query) > 5 and len(indexing) > 5  # the folders hold the modules
    for module in sorted(query | side("text")):
        assert not (_reach(edges, module) & indexing), module


def test_only_the_service_layer_and_the_front_ends_ask_the_indexer_to_redo_a_journal() -> None:
    users = {name for name, targets in graph().items() if "indexing.indexer" in targets}
    assert users & (side("query") | side("text")) == set()
    assert "service" in users


def _literal_text(node: ast.expr) -> str | None:
    """A string literal's text; an f-string's with ``{}`` for each value put in (so a statement
    split around ``{HIT_COLUMNS}`` is still read whole)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "{}"
                       for part in node.values)
    return None


def _sql_strings(path: Path) -> list[str]:
    """The string literals of ``path`` that hold SQL statements (docstrings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}  # docstrings
    skipped |= {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    texts = [_literal_text(node) for node in ast.walk(tree) if isinstance(node, ast.expr) and id(node) not in skipped]
    return [text for text in texts if text is not None and _STATEMENT.search(text)]


def local_tables() -> set[str]:
    """The local index's tables, as its migrations create them (the hub's are in migrations/hub)."""
    made = re.compile(r"CREATE (?:VIRTUAL )?TABLE (?:IF NOT EXISTS )?(\w+)", re.IGNORECASE)
    return {name for sql in MIGRATIONS.glob("*.sql") for name in made.findall(sql.read_text(encoding="utf-8"))}


def local_tables_named(statement: str) -> set[str]:
    """The local index's tables a statement reads or writes."""
    named = re.findall(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+(\w+)", statement, re.IGNORECASE)
    return set(named) & local_tables()


def test_the_statement_finder_finds_statements() -> None:
    assert _STATEMENT.search("SELECT id FROM files") and _STATEMENT.search("UPDATE files SET x = 1")
    assert not _STATEMENT.search("select the best hits") and not _STATEMENT.search("an UPDATE to the docs")


def test_only_the_data_access_layer_holds_sql() -> None:
    holding = {name for name, path in _modules().items() if _sql_strings(path)}
    assert holding >= SQL_MODULES  # the finder sees the statements that are there
    assert holding - SQL_MODULES == set()


def test_the_local_table_finder_finds_local_tables(tmp_path: Path) -> None:
    assert {"files", "entries", "entries_fts", "meta"} <= local_tables()
    source = tmp_path / "split.py"
    source.write_text('rows = f"SELECT {COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id"\n')
    (statement,) = _sql_strings(source)  # an f-string split around a value is read whole
    assert local_tables_named(statement) == {"entries", "files"}
    assert local_tables_named("SELECT e.text FROM hub_entries e JOIN hub_journals j ON j.host = e.host") == set()


def test_the_hubs_modules_never_query_the_local_index() -> None:
    modules = _modules()
    found = {name: sorted(tables) for name in HUB_SQL_MODULES
             for tables in [set().union(*map(local_tables_named, _sql_strings(modules[name])))] if tables}
    assert found == {}


def test_no_module_is_too_long_to_read() -> None:
    root = PACKAGE.parent
    long = {str(path.relative_to(root)): n for folder in ("journal_index", "benchmarks")
            for path in (root / folder).rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
