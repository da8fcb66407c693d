"""The changes of the "review that tells the truth about pulumi up" issue, each a real stack-file edit.

Each change is a throw-away git repository built from this checkout: its one commit (``main``) holds
the checkout's files as they are, and its work tree carries one edit of one stack file. The review is
``python -m preview.diff --base main <stack>``, the program under mocks on both revisions. Every
repository's base commit is the same commit (same files, fixed identity and date), so with one shared
``PREVIEW_CACHE`` the base of each stack is previewed once for all the changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT
from tests.preview.diff.scenario import _project_files, git

Edit = Callable[[dict[str, Any]], None]


def _v100(config: dict[str, Any]) -> dict[str, Any]:
    group: dict[str, Any] = config["gpu-platform:nodeGroups"]["v100"]
    return group


def _node(config: dict[str, Any], name: str) -> dict[str, Any]:
    node: dict[str, Any] = next(n for n in config["gpu-platform:bareMetal"]["nodes"] if n["name"] == name)
    return node


def canary_on(config: dict[str, Any]) -> None:
    """The v100 pool becomes the canary: its NVIDIADriver and smoke Job move under the canary components."""
    _v100(config)["driver"] = {"canary": True}


def driver_bump(config: dict[str, Any]) -> None:
    """The stack driver (the v100 pool's; a100 has its own) goes from 580.82.07 in the base to 580.95.05."""
    config["gpu-platform:gpuOperator"]["driver"]["version"] = "580.82.07"


def preinstalled_drivers(config: dict[str, Any]) -> None:
    """The v100 group on ``runc_drivers_cuda`` (the node image's driver) with the hand-over to the operator."""
    _v100(config)["gpuEnvironment"] = "runc_drivers_cuda"
    _v100(config)["hostDriverRemoval"] = True


def mig_layout(config: dict[str, Any]) -> None:
    """gpu-node-2 drops its 2g.20gb slice: the spawner's GPU list changes with it."""
    _node(config, "gpu-node-2")["mig"] = {"custom": {"3g.40gb": 1, "1g.10gb": 4}}


def new_node(config: dict[str, Any]) -> None:
    """A fourth bare-metal node joins, prepared over SSH as root and labelled."""
    node = dict(_node(config, "gpu-node-3"), name="gpu-node-4", address="192.0.2.14")
    config["gpu-platform:bareMetal"]["nodes"].append(node)


def new_address(config: dict[str, Any]) -> None:
    """gpu-node-2's root scripts now run on another machine."""
    _node(config, "gpu-node-2")["address"] = "192.0.2.22"


def taint_change(config: dict[str, Any]) -> None:
    """The v100 group gets another taint: a new group, and the driver pods' tolerations change on every pool."""
    _v100(config)["taints"] = [*_v100(config)["taints"], "gpu-platform.io/maintenance=planned:NoSchedule"]


def quota_change(config: dict[str, Any]) -> None:
    """team-vision may use 24 1g.10gb slices instead of 16."""
    profile = next(p for p in config["gpu-platform:kubeflow"]["profiles"] if p["name"] == "team-vision")
    profile["resourceQuota"]["requests.nvidia.com/mig-1g.10gb"] = "24"


def impossible_layout(config: dict[str, Any]) -> None:
    """Two 7g.80gb slices do not fit one H100: the config is refused."""
    _node(config, "gpu-node-1")["mig"] = {"custom": {"7g.80gb": 2}}


#: change -> (stack, edit of the working tree's stack file); the base is the checkout as it is.
CHANGES: dict[str, tuple[str, Edit]] = {
    "canary_on": ("dev", canary_on),
    "taint_change": ("dev", taint_change),
    "mig_layout": ("prod", mig_layout),
    "new_node": ("prod", new_node),
    "new_address": ("prod", new_address),
    "quota_change": ("prod", quota_change),
    "impossible_layout": ("prod", impossible_layout),
}
#: Changes whose BASE carries the edit (the head is the checkout): the edit undoes what the change does.
BASE_EDITS: dict[str, tuple[str, Edit]] = {
    "driver_bump": ("dev", driver_bump),
    "to_runc": ("dev", preinstalled_drivers),  # runc_drivers_cuda -> runc: the group is recreated driverless
    "canary_off": ("dev", canary_on),  # the v100 pool stops being the canary: back under the common steps
    "removed_node": ("prod", new_node),  # gpu-node-4 leaves the fleet
}
#: Changes that also edit the program in the work tree: (file, text, replacement).
CODE_EDITS: dict[str, tuple[str, str, str]] = {
    # The canary change made by a program that moves resources without aliases.
    "canary_on_without_aliases": (
        "components/base/aliases.py",
        "    sibling = sibling_step(component_name)\n    return [",
        "    sibling = sibling_step(component_name)\n    return [] and [",
    ),
}
CHANGES["canary_on_without_aliases"] = CHANGES["canary_on"]


@dataclass(frozen=True)
class Reviewed:
    """What ``python -m preview.diff --base main <stack>`` printed and wrote for one change."""

    change: str
    stack: str
    repo: Path
    returncode: int
    stdout: str
    stderr: str
    base_dir: Path  # the base preview (cached by commit)

    def report(self, name: str) -> str:
        """``build/diff/<stack>/<name>``."""
        return (self.repo / "build" / "diff" / self.stack / name).read_text()

    def diff(self) -> dict[str, Any]:
        """``diff.json``."""
        document: dict[str, Any] = json.loads(self.report("diff.json"))
        return document

    def inputs(self, side: str) -> dict[tuple[str, str], dict[str, Any]]:
        """``(type, name) -> inputs`` of the base (``"base"``) or the head (``"head"``) preview."""
        folder = self.base_dir if side == "base" else self.repo / "build" / "preview" / self.stack
        rows = json.loads((folder / "resources.json").read_text())
        return {(r["type"], r["name"]): r.get("inputs") or {} for r in rows}

    def resources(self, action: str) -> list[dict[str, Any]]:
        """The resource changes of one action in ``diff.json``."""
        return [r for r in self.diff()["resources"] if r["action"] == action]


def _edit(repo: Path, stack: str, edit: Edit) -> None:
    path = repo / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    edit(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def build_change_repo(target: Path, stack: str, edit: Edit, *, in_base: bool = False) -> Path:
    """The repository of one change: the checkout committed as ``main``, the edit in the work tree (or the base)."""
    target.mkdir(parents=True)
    for relative in _project_files():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_bytes((ROOT / relative).read_bytes())
    for name in (".upstream", ".tools", ".venv"):
        if (ROOT / name).exists():
            (target / name).symlink_to((ROOT / name).resolve())
    git(target, "init", "--quiet", "--initial-branch=main")
    (target / ".git" / "info" / "exclude").write_text(".upstream\n.tools\n.venv\nbuild\n")
    head_text = (target / f"Pulumi.{stack}.yaml").read_text()
    if in_base:
        _edit(target, stack, edit)
    git(target, "add", "--all")
    git(target, "commit", "--quiet", "-m", "base")
    if in_base:
        (target / f"Pulumi.{stack}.yaml").write_text(head_text)
    else:
        _edit(target, stack, edit)
    return target


def review(change: str, work: Path, cache: Path) -> Reviewed:
    """Build the change's repository under ``work`` and review it against ``main``."""
    stack, edit = CHANGES[change] if change in CHANGES else BASE_EDITS[change]
    repo = build_change_repo(work / change, stack, edit, in_base=change in BASE_EDITS)
    if change in CODE_EDITS:
        relative, text, replacement = CODE_EDITS[change]
        source = (repo / relative).read_text()
        assert text in source, f"{relative} no longer holds the text the scenario edits"
        (repo / relative).write_text(source.replace(text, replacement))
    env = {**os.environ, "PREVIEW_CACHE": str(cache)}
    result = subprocess.run(
        [sys.executable, "-m", "preview.diff.review", "--base", "main", stack],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    commit = git(repo, "rev-parse", "main")
    return Reviewed(change, stack, repo, result.returncode, result.stdout, result.stderr, cache / commit / stack)
