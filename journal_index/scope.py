"""Which sessions a query may see: one session, one project tree, or everything.

Project root rule (DESIGN §6): the outermost ancestor of the cwd that has sessions of its own,
where a direct child of home counts only when it is the cwd itself. Home is never the root of
a deeper cwd (it would swallow every project); an agent working in home itself is scoped to
home's own sessions only, not to everything below it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from journal_index.config import SCOPES
from journal_index.store import Store

_HOME_LIKE = re.compile(r"^/(home|Users)/[^/]+$")


class ScopeError(ValueError):
    """A scope request that cannot be honoured (unknown name, missing session id)."""


@dataclass(frozen=True)
class Scope:
    kind: str  # "session" | "project" | "global"
    root: str | None = None  # project root
    session_id: str | None = None
    exact: bool = False  # the project is its root folder only (home)

    def as_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "root": self.root if self.kind == "project" else None}

    def sql(self, file_alias: str = "f") -> tuple[str, list[str]]:
        """A WHERE fragment (and its parameters) restricting rows to this scope."""
        if self.kind == "global":
            return "1", []
        if self.kind == "session":
            return f"{file_alias}.session_id = ?", [self.session_id or ""]
        assert self.root is not None
        if self.exact:
            return f"{file_alias}.cwd = ?", [self.root]
        prefix = "/" if self.root == "/" else self.root + "/"
        return (f"({file_alias}.cwd = ? OR {file_alias}.cwd LIKE ? ESCAPE '\\')",
                [self.root, like_escape(prefix) + "%"])

    def contains(self, cwd: str | None, session_id: str | None) -> bool:
        if self.kind == "global":
            return True
        if self.kind == "session":
            return session_id == self.session_id
        if cwd is None or self.root is None:
            return False
        if self.exact:
            return cwd == self.root
        return cwd == self.root or cwd.startswith(self.root.rstrip("/") + "/")


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def is_home(path: str) -> bool:
    if path == "/root" or _HOME_LIKE.match(path):
        return True
    return path == str(Path.home())


def project_root(store: Store, cwd: str) -> tuple[str, bool]:
    """(root, exact) for a cwd, by the root rule, from the cwds that have sessions."""
    cwd = os.path.normpath(cwd) if cwd != "/" else cwd
    if is_home(cwd):
        return cwd, True
    candidates = [str(p) for p in [PurePosixPath(cwd), *PurePosixPath(cwd).parents]]
    placeholders = ",".join("?" * len(candidates))
    with_sessions = {
        row[0] for row in store.rows(
            f"SELECT DISTINCT cwd FROM files WHERE cwd IN ({placeholders})", candidates)
    }
    root = cwd
    for ancestor in candidates[1:]:
        if ancestor == "/" or is_home(ancestor):
            break  # never climb to home or above
        if is_home(str(PurePosixPath(ancestor).parent)):
            continue  # a direct child of home counts only as the cwd itself
        if ancestor in with_sessions:
            root = ancestor
    return root, False


def resolve_scope(store: Store, kind: str, cwd: str | None = None, session_id: str | None = None) -> Scope:
    if kind not in SCOPES:
        raise ScopeError(f"unknown scope {kind!r}; use one of {', '.join(SCOPES)}")
    if kind == "global":
        return Scope("global")
    if kind == "session":
        if not session_id:
            raise ScopeError("scope 'session' needs a session id (--session ID)")
        return Scope("session", session_id=session_id)
    root, exact = project_root(store, cwd or os.getcwd())
    return Scope("project", root=root, exact=exact)


def has_sessions(store: Store, scope: Scope) -> bool:
    """Whether any journal lies in the scope (a project scope of a folder nobody worked in is empty)."""
    clause, params = scope.sql("f")
    return store.value(f"SELECT 1 FROM files f WHERE {clause} LIMIT 1", params) is not None


def resolve_session(store: Store, given: str) -> str:
    """A session id from the id or any unique prefix of it (people see 8 characters)."""
    if store.value("SELECT 1 FROM files WHERE session_id = ?", (given,)):
        return given
    matches = [r[0] for r in store.rows(
        "SELECT DISTINCT session_id FROM files WHERE session_id LIKE ? ESCAPE '\\' ORDER BY session_id LIMIT 6",
        (like_escape(given) + "%",))]
    if not matches:
        raise ScopeError(f"no session {given!r} is indexed; take a session id from a search hit")
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
        raise ScopeError(f"session {given!r} is ambiguous: {shown}; give more of the id")
    return str(matches[0])


def session_within(store: Store, session_id: str, project: Scope) -> bool:
    """Whether every journal of a session lies inside a project scope (a session scope may not
    reach past the project the agent is bound to)."""
    cwds = [row[0] for row in store.rows("SELECT DISTINCT cwd FROM files WHERE session_id = ? ORDER BY cwd",
                                         (session_id,))]
    return bool(cwds) and all(project.contains(cwd, session_id) for cwd in cwds)


def wider_than(kind: str, limit: str) -> bool:
    return SCOPES.index(kind) > SCOPES.index(limit)
