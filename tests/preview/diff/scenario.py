"""The review scenario of docs/review.md, as a throw-away git repository built from this checkout.

The base commit has a dev group on ``runc_drivers_cuda`` with the host-driver hand-over, an older
prod driver and another MIG layout on one prod node; the working tree on top is this checkout's
stacks (the group recreated as ``runc``, the driver bumped, the node re-partitioned). Kubeflow is
kept: the previews render the real pinned tree, as ``make diff`` does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT

BASE_DRIVER = "580.82.07"
BASE_NODE2_LAYOUT = {"3g.40gb": 2}
GROUP = "v100"
NODE = "gpu-node-2"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "review",
    "GIT_AUTHOR_EMAIL": "review@example.com",
    "GIT_COMMITTER_NAME": "review",
    "GIT_COMMITTER_EMAIL": "review@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity and date (the commit ids are the same every run)."""
    env = {**os.environ, **_GIT_ENV}
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _project_files() -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"], capture_output=True, check=True
    ).stdout.decode()
    return sorted(p for p in listed.split("\0") if p and (ROOT / p).is_file())


def _edit_stack(repo: Path, stack: str, edit: Any) -> None:
    path = repo / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    edit(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def _base_dev(config: dict[str, Any]) -> None:
    group = config["gpu-platform:nodeGroups"][GROUP]
    group["gpuEnvironment"] = "runc_drivers_cuda"
    group["hostDriverRemoval"] = True


def _base_prod(config: dict[str, Any]) -> None:
    config["gpu-platform:gpuOperator"]["hostDriver"]["version"] = BASE_DRIVER
    node = next(n for n in config["gpu-platform:bareMetal"]["nodes"] if n["name"] == NODE)
    node["mig"] = {"custom": dict(BASE_NODE2_LAYOUT)}


def build_repo(target: Path) -> tuple[Path, str]:
    """A git repository at ``target``: the base commit (returned) and this checkout's tree as its work tree."""
    target.mkdir(parents=True)
    for relative in _project_files():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target / relative)
    for name in (".upstream", ".tools", ".venv"):
        if (ROOT / name).exists():
            (target / name).symlink_to((ROOT / name).resolve())
    git(target, "init", "--quiet", "--initial-branch=main")
    (target / ".git" / "info" / "exclude").write_text(".upstream\n.tools\n.venv\n")
    heads = {stack: (target / f"Pulumi.{stack}.yaml").read_text() for stack in ("dev", "prod")}
    _edit_stack(target, "dev", _base_dev)
    _edit_stack(target, "prod", _base_prod)
    git(target, "add", "--all")
    git(target, "commit", "--quiet", "-m", "base: v100 on preinstalled drivers, older prod driver")
    base = git(target, "rev-parse", "HEAD")
    for stack, text in heads.items():
        (target / f"Pulumi.{stack}.yaml").write_text(text)
    return target, base
