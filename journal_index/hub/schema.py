"""The hub's schema: numbered SQL files under migrations/hub, the version kept in the hub.

Only the hub's owner migrates (``journal-index hub init``); members' clients check the
version and refuse a hub whose schema is newer than they know, or older than they need.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from journal_index.data.store import migrations_dir
from journal_index.hub.connection import HubError

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# Taken while migrating, so two owners' `hub init` never run one migration twice.
_LOCK = 0x6A6F_7572  # "jour"


@dataclass(frozen=True)
class HubMigration:
    version: int
    name: str
    sql: str


def hub_migrations(directory: Path | None = None) -> list[HubMigration]:
    directory = directory or migrations_dir() / "hub"
    found = []
    for path in sorted(directory.iterdir()):
        match = _NAME.match(path.name)
        if match:
            found.append(HubMigration(int(match.group(1)), path.name, path.read_text("utf-8")))
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise HubError(f"hub migrations in {directory} are not numbered 0001, 0002, … without gaps")
    return found


def known_version() -> int:
    return len(hub_migrations())


def hub_version(conn: Any) -> int | None:
    """The hub's schema version, or None when it has no journal-index schema."""
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass('hub_schema') IS NOT NULL")
        row = cur.fetchone()
        if not row or not row[0]:
            conn.rollback()
            return None
        cur.execute("SELECT max(version) FROM hub_schema")
        found = cur.fetchone()
    conn.rollback()
    return int(found[0]) if found and found[0] is not None else 0


def check_schema(conn: Any) -> int:
    """The hub's version when this client can use it, else a HubError saying what to do."""
    version = hub_version(conn)
    known = known_version()
    if version is None:
        raise HubError("the hub has no journal-index schema; its owner sets it up with "
                       "`journal-index hub init --hub URL`")
    if version > known:
        raise HubError(f"the hub's schema is version {version}, newer than this journal-index knows "
                       f"({known}); upgrade journal-index")
    if version < known:
        raise HubError(f"the hub's schema is version {version}, older than this journal-index needs ({known}); "
                       "its owner upgrades it with `journal-index hub init --hub URL`")
    return version


def migrate(conn: Any) -> tuple[int, int]:
    """Apply the hub migrations not applied yet (the owner's role): (version before, after)."""
    migrations = hub_migrations()
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        cur.execute("CREATE TABLE IF NOT EXISTS hub_schema (version integer PRIMARY KEY, "
                    "applied_at timestamptz NOT NULL DEFAULT now())")
        cur.execute("GRANT SELECT ON hub_schema TO PUBLIC")
        cur.execute("SELECT coalesce(max(version), 0) FROM hub_schema")
        row = cur.fetchone()
        before = int(row[0]) if row else 0
        if before > len(migrations):
            conn.rollback()
            raise HubError(f"the hub's schema is version {before}, newer than this journal-index knows "
                           f"({len(migrations)}); upgrade journal-index")
        for migration in migrations[before:]:
            cur.execute(migration.sql.encode())
            cur.execute("INSERT INTO hub_schema (version) VALUES (%s)", (migration.version,))
    conn.commit()
    return before, len(migrations)
