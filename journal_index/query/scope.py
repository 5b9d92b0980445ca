"""Which sessions a query may see: one session, one project tree, or everything.

Project root rule (DESIGN §6): the outermost ancestor of the cwd that has sessions of its own,
where a direct child of home counts only when it is the cwd itself. Home is never the root of
a deeper cwd (it would swallow every project); an agent working in home itself is scoped to
home's own sessions only, not to everything below it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from journal_index.config import AGENT_SCOPES, SCOPES
from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.formats import is_absolute_cwd, normalize_cwd
from journal_index.redact import redact

_HOME_LIKE = re.compile(r"^/(home|Users)/[^/]+$")


class ScopeError(ValueError):
    """A scope request that cannot be honoured (unknown name, missing session id)."""


@dataclass(frozen=True)
class SessionRef:
    """One session: one agent's journal file (a bare session id is not enough, as two agents'
    journals, or two copies of one, may carry the same id)."""

    agent: str
    session_id: str
    file_id: int
    path: str
    cwd: str | None

    @property
    def qualified(self) -> str:
        """How a person names this session unambiguously: ``agent:id``."""
        return f"{self.agent}:{self.session_id}"


@dataclass(frozen=True)
class Scope:
    kind: str  # "session" | "project" | "global"
    root: str | None = None  # project root
    session: SessionRef | None = None
    exact: bool = False  # the project is its root folder only (home)

    @property
    def session_id(self) -> str | None:
        return self.session.session_id if self.session is not None else None

    def as_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "root": self.root if self.kind == "project" else None}

    def sql(self, file_alias: str = "f") -> tuple[str, list[Any]]:
        """A WHERE fragment (and its parameters) restricting rows to this scope."""
        if self.kind == "global":
            return "1", []
        if self.kind == "session":
            # The session's own journal, by its row: never every journal that carries its id.
            return f"{file_alias}.id = ?", [self.session.file_id if self.session is not None else -1]
        assert self.root is not None
        if self.exact:
            return f"{file_alias}.cwd = ?", [self.root]
        prefix = "/" if self.root == "/" else self.root + "/"
        return (f"({file_alias}.cwd = ? OR {file_alias}.cwd LIKE ? ESCAPE '\\')",
                [self.root, like_escape(prefix) + "%"])

    def contains(self, cwd: str | None, file_id: int | None = None) -> bool:
        if self.kind == "global":
            return True
        if self.kind == "session":
            return self.session is not None and file_id == self.session.file_id
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
    cwd = normalize_cwd(cwd if is_absolute_cwd(cwd) else os.path.abspath(cwd))
    if is_home(cwd):
        return cwd, True
    candidates = [str(p) for p in [PurePosixPath(cwd), *PurePosixPath(cwd).parents]]
    with_sessions = read_sql.cwds_with_sessions(store, candidates)
    root = cwd
    for ancestor in candidates[1:]:
        if ancestor == "/" or is_home(ancestor):
            break  # never climb to home or above
        if is_home(str(PurePosixPath(ancestor).parent)):
            continue  # a direct child of home counts only as the cwd itself
        if ancestor in with_sessions:
            root = ancestor
    return root, False


def resolve_scope(store: Store, kind: str, cwd: str | None = None,
                  session: SessionRef | str | None = None) -> Scope:
    """The scope of ``kind``: for "session", ``session`` (a resolved one, or a reference that
    :func:`resolve_session` must resolve unambiguously); for "project", the root of ``cwd``."""
    if kind not in SCOPES:
        raise ScopeError(f"unknown scope {kind!r}; use one of {', '.join(SCOPES)}")
    if kind == "global":
        return Scope("global")
    if kind == "session":
        if not session:
            raise ScopeError("scope 'session' needs a session id (--session ID)")
        ref = resolve_session(store, session) if isinstance(session, str) else session
        return Scope("session", session=ref)
    root, exact = project_root(store, cwd or os.getcwd())
    return Scope("project", root=root, exact=exact)


def has_sessions(store: Store, scope: Scope) -> bool:
    """Whether any journal lies in the scope (a project scope of a folder nobody worked in is empty)."""
    return read_sql.any_journal(store, scope.sql("f"))


SESSION_FORM = "an id or a unique prefix of it, AGENT:ID (e.g. claude:5a3ce17f), or the journal's path"
_CANDIDATES_SHOWN = 5


def _session_rows(store: Store, where: str, params: list[Any], within: Scope | None) -> list[SessionRef]:
    scoped = within.sql("f") if within is not None else ("1", [])
    return [SessionRef(r.format, r.session_id or "", r.id, r.path, r.cwd)
            for r in read_sql.journal_refs(store, (where, params), scoped)]


def find_sessions(store: Store, given: str, within: Scope | None = None,
                  agents: Sequence[str] = ()) -> list[SessionRef]:
    """The sessions (journals) a reference names: exactly, else by unique prefix; ``agent:``
    (or ``agents``, as --agent gives them) narrows it to those agents, a path (it holds a
    ``/``) names the journal itself. ``within`` limits the search to a scope, so that an id of
    another project neither matches nor makes an id ambiguous."""
    if "/" in given:
        return _session_rows(store, "f.path = ?", [os.path.abspath(os.path.expanduser(given))], within)
    agent, _, wanted = given.rpartition(":")
    named = [agent] if agent else list(agents)
    agent_clause, agent_params = ((f"f.format IN ({','.join('?' * len(named))})", named) if named
                                  else ("1", []))
    exact = _session_rows(store, f"f.session_id = ? AND {agent_clause}", [wanted, *agent_params], within)
    if exact or not wanted:
        return exact
    return _session_rows(store, f"f.session_id LIKE ? ESCAPE '\\' AND {agent_clause}",
                         [like_escape(wanted) + "%", *agent_params], within)


def resolve_session(store: Store, given: str, within: Scope | None = None,
                    agents: Sequence[str] = ()) -> SessionRef:
    """The one session a reference names (see :func:`find_sessions`), or a ScopeError saying
    how to name it: a reference matching sessions of two agents, two ids or two journals is
    refused, never widened to all of them."""
    matches = find_sessions(store, given, within, agents)
    if not matches:
        raise ScopeError(redact(f"no session {given!r} is indexed; take a session id from a search hit"))
    if len(matches) == 1:
        return matches[0]
    # The message names ids, folders and paths from journals: redacted like every answer.
    names = sorted({m.qualified for m in matches})
    if len(names) > 1:
        shown = ", ".join(f"{m.qualified} ({m.cwd or '?'})" for m in matches[:_CANDIDATES_SHOWN])
        more = ", …" if len(matches) > _CANDIDATES_SHOWN else ""
        raise ScopeError(redact(f"session {given!r} is ambiguous: {shown}{more}; give one as AGENT:ID"))
    paths = ", ".join(m.path for m in matches[:_CANDIDATES_SHOWN])
    raise ScopeError(redact(f"session {given!r} is in several journals ({paths}); give the journal's path instead"))


def session_within(session: SessionRef, project: Scope) -> bool:
    """Whether a session's journal lies inside a project scope (a session scope may not reach
    past the project the agent is bound to)."""
    return project.contains(session.cwd, session.file_id)


def wider_than(kind: str, limit: str) -> bool:
    return AGENT_SCOPES.index(kind) > AGENT_SCOPES.index(limit)


def scope_words(scope: Scope) -> str:
    """A scope as the answers name it ("project /home/dev/x", "all projects"), redacted."""
    if scope.kind == "project":
        return redact(f"project {scope.root or '?'}")
    if scope.kind == "session":
        return redact(f"session {scope.session_id}")
    return "all projects"
