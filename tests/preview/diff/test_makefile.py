"""The Makefile's review targets: `make clean` keeps the upstream trees, `make diff` needs a base."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT


def _make(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``make ARGS`` as a person runs it, also when the suite itself runs under ``make test``.

    A make inside a make inherits MAKEFLAGS and MAKELEVEL and then prints "Entering/Leaving directory"
    lines around its output (CI runs the suite through ``make test``), so the parent's settings are dropped.
    """
    env = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    command = ["make", "--no-print-directory", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=60)


def test_clean_keeps_the_upstream_trees_and_the_tools(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for folder in ("build/preview/dev", "build/diff/dev", ".cache/preview/abc", ".upstream/kubeflow", ".tools/bin"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "file").write_text("x")
    result = _make(tmp_path, "clean")
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "build").exists() and not (tmp_path / ".cache" / "preview").exists()
    assert (tmp_path / ".upstream" / "kubeflow" / "file").exists()
    assert (tmp_path / ".tools" / "bin" / "file").exists()


def test_diff_without_a_base_says_what_to_give(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    result = _make(tmp_path, "diff")
    assert result.returncode == 2
    assert "make diff needs BASE=<git ref>, for example make diff BASE=main" in result.stderr


def test_diff_runs_every_stack_unless_one_is_named(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    every = _make(tmp_path, "-n", "-o", ".venv/.installed", "-o", "tools", "-o", "upstream", "diff", "BASE=main")
    assert every.stdout.strip().splitlines()[-1] == ".venv/bin/python -m preview.diff --base main"
    one = _make(
        tmp_path, "-n", "-o", ".venv/.installed", "-o", "tools", "-o", "upstream", "diff", "BASE=main", "STACK=prod"
    )
    assert one.stdout.strip().splitlines()[-1] == ".venv/bin/python -m preview.diff --base main prod"


def test_an_unknown_base_is_refused_in_one_line(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "preview.diff.review", "--base", "no-such-branch", "--out", str(tmp_path), "dev"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert (
        result.stderr
        == "error: base 'no-such-branch' is not a commit of this repository (git rev-parse found nothing)\n"
    )
    assert not any(tmp_path.iterdir()), "nothing is previewed or written"
