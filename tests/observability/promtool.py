"""Running the real promtool (Debian package ``prometheus``; ``.ci/run`` installs it where it is missing)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml


def promtool() -> str:
    """The promtool binary; a missing one fails the test with how to get it (never a skip)."""
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is not on PATH: `apt-get install -y prometheus` (.ci/run does)")
    return found


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """promtool with ``args`` in ``cwd``; bounded, so a hang cannot stall the suite."""
    return subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def write_yaml(path: Path, document: Any) -> Path:
    """``document`` as YAML at ``path``."""
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def check_rules(path: Path) -> subprocess.CompletedProcess[str]:
    """``promtool check rules`` on one rule file."""
    return run("check", "rules", str(path), cwd=path.parent)
