"""The review scenario, diffed once per session with ``make diff`` in a throw-away repository."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.preview.diff.scenario import build_repo


@dataclass(frozen=True)
class Reviewed:
    """The repository, its base commit, and what ``make diff BASE=main`` printed."""

    repo: Path
    base: str
    stdout: str
    env: dict[str, str]

    def report(self, stack: str, name: str) -> str:
        """``build/diff/<stack>/<name>`` of the repository."""
        return (self.repo / "build" / "diff" / stack / name).read_text()


@pytest.fixture(scope="session")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    """``make diff BASE=main`` on the scenario (the install targets are taken as done: -o)."""
    work = tmp_path_factory.mktemp("review")
    repo, base = build_repo(work / "repo")
    env = {**os.environ, "PREVIEW_CACHE": str(work / "cache")}
    env.pop("STACK", None)
    command = ["make", "-o", ".venv/.installed", "-o", "tools", "-o", "upstream", "diff", "BASE=main"]
    result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return Reviewed(repo, base, result.stdout, env)
