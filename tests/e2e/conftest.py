"""Fixtures of the pi tests: one Node 22 + pi 1.6 install per run, a fresh pi HOME per test.

(The Claude Code and Codex suites make their homes themselves: :mod:`tests.e2e.mcp_hosts`.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.node_host import NodeHost, install_pi
from tests.e2e.pi_host import PiHome


@pytest.fixture(scope="session")
def node_host() -> NodeHost:
    """Installed on first use (from the npm registry); a NodeHostError fails the tests, never skips them."""
    return install_pi()


@pytest.fixture
def pi_home(tmp_path: Path, node_host: NodeHost) -> PiHome:
    return PiHome(tmp_path / "pi", node_host)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The folder pi runs in."""
    folder = tmp_path / "work" / "prjct-be"
    folder.mkdir(parents=True)
    return folder
