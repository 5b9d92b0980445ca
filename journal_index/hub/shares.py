"""Which projects this machine shares with the hub: a small JSON file in the user's config folder.

Not a table of the index: the index is disposable (``rebuild`` deletes it, a broken one is
moved aside), while a share is a choice the user made — losing it silently would stop a push,
and keeping it where the index is rebuilt would risk sharing more than was chosen. So it lives
in ``$XDG_CONFIG_HOME/journal-index/hub.json`` (``~/.config/…``), next to nothing disposable.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from journal_index.formats import normalize_cwd
from journal_index.hub.connection import HubError
from journal_index.hub.identity import project_identity


@dataclass
class Share:
    folder: str  # the project's folder on this machine (normalized, absolute)
    identity: str  # the project across machines (hub.identity)
    team: str | None = None  # the hub team that may read it; None: the member's only team
    shared_at: str | None = None


@dataclass
class Registry:
    shares: list[Share] = field(default_factory=list)
    hub: str | None = None  # the hub last pushed to (a URL; put its password in ~/.pgpass)
    last_push: dict[str, Any] | None = None

    def find(self, folder: str) -> Share | None:
        folder = _folder(folder)
        return next((s for s in self.shares if s.folder == folder), None)


def registry_path() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "journal-index" / "hub.json"


def _folder(folder: str) -> str:
    return normalize_cwd(os.path.abspath(os.path.expanduser(folder)))


def load() -> Registry:
    path = registry_path()
    try:
        raw = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return Registry()
    except (OSError, orjson.JSONDecodeError) as exc:
        raise HubError(f"the share list {path} is unreadable ({exc}); fix or delete it "
                       "(it only lists the folders shared with `journal-index hub share`)") from None
    shares = [Share(**{k: v for k, v in s.items() if k in Share.__dataclass_fields__}) for s in raw.get("shares", [])]
    return Registry(shares, raw.get("hub"), raw.get("lastPush"))


def save(registry: Registry) -> None:
    """Write the list whole (a new file renamed over the old: never half written)."""
    import tempfile  # here: the CLI's start-up does not pay for it

    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"shares": [asdict(s) for s in registry.shares], "hub": registry.hub, "lastPush": registry.last_push}
    fd, tmp = tempfile.mkstemp(prefix=".hub-", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)  # the hub URL may name a user
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(data, option=orjson.OPT_INDENT_2))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def share(folder: str, team: str | None, now: str) -> tuple[Share, bool]:
    """Share ``folder`` (again: its team updated): the share, and whether it is new."""
    registry = load()
    found = registry.find(folder)
    if found is not None:
        found.team = team or found.team
        found.identity = project_identity(found.folder)
        save(registry)
        return found, False
    added = Share(_folder(folder), project_identity(folder), team, now)
    registry.shares.append(added)
    save(registry)
    return added, True


def unshare(folder: str) -> Share | None:
    registry = load()
    found = registry.find(folder)
    if found is not None:
        registry.shares.remove(found)
        save(registry)
    return found
