"""Installing the host: a registry that cannot be reached is a failure with a reason, never a skip."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e import node_host as nh
from tests.e2e.node_host import NodeHost, NodeHostError


@pytest.mark.parametrize("install", [nh.install_pi, nh.install_claude_code, nh.install_codex])
def test_an_unreachable_registry_raises_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      install: Callable[[], object]) -> None:
    monkeypatch.setenv(nh.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # nothing listens on port 9
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))  # nothing cached to fall back on
    with pytest.raises(NodeHostError, match="could not install Node .* from the npm registry|npm is not on PATH"):
        install()
    leftovers = sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith("."))
    assert leftovers == [], "a failed install leaves nothing that looks installed"


@pytest.mark.slow
def test_a_second_install_does_not_run_npm(node_host: NodeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_npm(*args: object) -> None:
        raise AssertionError("npm ran although the host is installed")

    monkeypatch.setattr(nh, "_npm", no_npm)
    again = nh.install_pi()
    assert again == node_host
    assert again.version() == nh.PI_VERSION


@pytest.mark.slow
@pytest.mark.parametrize(("install", "version"), [(nh.install_claude_code, f"{nh.CLAUDE_CODE_VERSION} (Claude Code)"),
                                                  (nh.install_codex, f"codex-cli {nh.CODEX_VERSION}")])
def test_claude_code_and_codex_install_once_and_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    install: Callable[[], Path], version: str) -> None:
    binary = install()

    def no_npm(*args: object) -> None:
        raise AssertionError("npm ran although the host is installed")

    monkeypatch.setattr(nh, "_npm", no_npm)
    assert install() == binary
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "CODEX_HOME": str(tmp_path)}
    shown = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env)
    assert shown.stdout.strip() == version, shown.stderr
