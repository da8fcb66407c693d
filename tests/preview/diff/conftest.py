"""The review scenario, diffed once per test run with ``make diff`` in a throw-away repository."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every process of this test run shares (pytest-xdist's workers each have one below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    """``make diff BASE=main`` on the scenario (the install targets are taken as done: -o).

    Made once per test run: the first worker that needs it makes it under a lock, the other reads what
    it recorded (the review modules land on different workers, and the review costs two previews).
    """
    root = _run_root(tmp_path_factory)
    work, recorded = root / "review-scenario", root / "review-scenario.json"
    env = {**os.environ, "PREVIEW_CACHE": str(work / "cache")}
    env.pop("STACK", None)
    with _exclusive(root / "review-scenario.lock"):
        if not recorded.exists():
            shutil.rmtree(work, ignore_errors=True)  # a worker that failed half-way
            repo, base = build_repo(work / "repo")
            command = ["make", "-o", ".venv/.installed", "-o", "tools", "-o", "upstream", "diff", "BASE=main"]
            result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
            recorded.write_text(json.dumps({"repo": str(repo), "base": base, "stdout": result.stdout}))
        made = json.loads(recorded.read_text())
    return Reviewed(Path(made["repo"]), made["base"], made["stdout"], env)
