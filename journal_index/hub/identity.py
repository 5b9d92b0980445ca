"""One project across machines: the normalized git remote of a folder plus the path inside the
repository, so two checkouts of one repository at different paths are one project; a folder
with no remote is its own (normalized, absolute) path."""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

from journal_index.formats import normalize_cwd

# scp-like remotes: git@github.com:org/repo.git
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)(?::\d+)?(/.*)?$", re.IGNORECASE)
GIT_SECONDS = 10


def normalize_remote(remote: str) -> str:
    """``host/owner/repo``: scheme, user, password, port and ``.git`` dropped, the host lower-cased
    (``git@GitHub.com:acme/api.git`` and ``https://github.com/acme/api`` are the same)."""
    remote = remote.strip()
    url = _URL.match(remote)
    if url:
        host, path = url.group(1), url.group(2) or ""
    else:
        scp = _SCP.match(remote)
        if not scp:  # a local path used as a remote
            return normalize_cwd(os.path.abspath(remote)).rstrip("/")
        host, path = scp.group(1), scp.group(2)
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{host.lower()}/{path.rstrip('/')}"


def _git(folder: str, *args: str) -> str | None:
    import subprocess  # here: the CLI's start-up does not pay for it

    try:
        done = subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True, timeout=GIT_SECONDS,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def _remote(folder: str) -> str | None:
    """The fetch URL of ``origin``, else of the first remote."""
    url = _git(folder, "config", "--get", "remote.origin.url")
    if url:
        return url
    names = _git(folder, "remote")
    return _git(folder, "config", "--get", f"remote.{names.split()[0]}.url") if names else None


def project_identity(folder: str) -> str:
    """The identity of the project in ``folder`` (which need not exist: then its path)."""
    folder = normalize_cwd(os.path.abspath(os.path.expanduser(folder)))
    if os.path.isdir(folder):
        top = _git(folder, "rev-parse", "--show-toplevel")
        remote = _remote(folder) if top else None
        if top and remote:
            inside = PurePosixPath(os.path.relpath(os.path.realpath(folder), os.path.realpath(top)))
            base = normalize_remote(remote)
            return base if str(inside) == "." else f"{base}/{inside}"
    return folder.rstrip("/") or "/"


def related(identity: str, other: str) -> bool:
    """Whether two identities are one project tree: equal, or one inside the other."""
    return identity == other or other.startswith(identity + "/") or identity.startswith(other + "/")
