"""Done-when of the review issue, end to end: a change that recreates a dev group as ``runc`` (it was on
``runc_drivers_cuda`` with the host-driver hand-over), re-partitions one prod node and bumps the prod
driver. ``make diff BASE=main`` must name the replacement and its reason, every deleted resource, the
re-partitioned GPUs and the driver change, and the Markdown and HTML reports must say the same."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html import escape
from pathlib import Path

from preview.diff.changes import DELETE, REPLACE
from preview.diff.report_markdown import MARKER
from tests.preview.diff.conftest import Reviewed
from tests.preview.diff.scenario import BASE_DRIVER, NODE, git

REASON = "gpuEnvironment 'runc_drivers_cuda' -> 'runc'"
AFTER_LAYOUT = "2g.20gb@0-1 1g.10gb@2 1g.10gb@3 3g.40gb@4-7"
BEFORE_LAYOUT = "3g.40gb@0-3 3g.40gb@4-7"
DRIVER = f"{BASE_DRIVER} (host) -> 580.95.05 (host)"


def _resources(folder: Path) -> set[tuple[str, str]]:
    return {(r["type"], r["name"]) for r in json.loads((folder / "resources.json").read_text())}


def _deleted(reviewed: Reviewed, stack: str) -> set[tuple[str, str]]:
    """What the two previews' own files say is gone: in the base's resources.json, not in the head's."""
    base = Path(reviewed.env["PREVIEW_CACHE"]) / reviewed.base / stack
    return _resources(base) - _resources(reviewed.repo / "build" / "preview" / stack)


def test_the_console_names_the_replacement_and_its_reason(reviewed: Reviewed) -> None:
    line = next(line for line in reviewed.stdout.splitlines() if "REPLACE gpu-v100-group" in line)
    assert REASON in line
    assert "create-before-delete" in line


def test_every_deleted_resource_is_named_everywhere(reviewed: Reviewed) -> None:
    deleted = _deleted(reviewed, "dev")
    names = {name for _, name in deleted}
    assert "node-agent-daemonset" in names and len(deleted) >= 10, "the hand-over's resources go with the group"
    diff = json.loads(reviewed.report("dev", "diff.json"))
    assert {(r["type"], r["name"]) for r in diff["resources"] if r["action"] == DELETE} == deleted
    markdown, html = reviewed.report("dev", "diff.md"), reviewed.report("dev", "diff.html")
    for resource_type, name in sorted(deleted):
        assert f"DELETE {name} ({resource_type})" in reviewed.stdout
        assert f"`{name}`" in markdown
        assert f'<tr data-action="delete"><td class="delete">delete</td><td><code>{escape(name)}</code>' in html


def test_the_reports_name_the_replacement_and_its_reason(reviewed: Reviewed) -> None:
    markdown, html = reviewed.report("dev", "diff.md"), reviewed.report("dev", "diff.html")
    assert markdown.splitlines()[0] == MARKER.format(stack="dev")
    assert "| replaced (" in markdown and f"`gpu-v100-group`: `{REASON}`" in markdown
    assert "replaced because:</b> <code>" + escape(REASON) in html
    assert 'data-pool="v100" data-status="changed"' in html
    assert "every node is replaced: the group ml-dev-v100-b101d604 gives way to ml-dev-v100-860f3a2a" in html
    assert "| GPU nodes replaced | `v100`: every node is replaced: the group ml-dev-v100-b101d604" in markdown
    assert re.search(r'<li data-finding="now">\[advisory\] container-image-digest-pinned: \d+ resources', html)
    diff = json.loads(reviewed.report("dev", "diff.json"))
    group = next(r for r in diff["resources"] if r["name"] == "gpu-v100-group")
    assert group["action"] == REPLACE and group["reasons"] == [REASON]


def test_the_repartitioned_gpus_and_the_driver_change_are_named(reviewed: Reviewed) -> None:
    assert f"MIG {NODE} (H100-80GB): GPUs 0-7 re-partitioned ({BEFORE_LAYOUT} -> {AFTER_LAYOUT})" in reviewed.stdout
    assert "cordon and drain the node by hand" in reviewed.stdout  # prod: nodeAgent.migLayout is off
    assert f"DRIVER gpu-node-1, gpu-node-2, gpu-node-3: {DRIVER}" in reviewed.stdout
    markdown, html = reviewed.report("prod", "diff.md"), reviewed.report("prod", "diff.html")
    assert f"| GPUs re-partitioned | `{NODE}`: GPUs 0-7 |" in markdown
    assert f"| `{NODE}` | 0 | `{BEFORE_LAYOUT}` | `{AFTER_LAYOUT}` |" in markdown
    assert f"`{BASE_DRIVER} (host)` -> `580.95.05 (host)`" in markdown
    assert f"{BASE_DRIVER} (host) &rarr; 580.95.05 (host)" in html
    assert f'data-pool="{NODE}" data-status="changed"' in html
    assert "GPUs 0-7 re-partitioned" in html


def test_the_reports_are_byte_identical_when_made_again(reviewed: Reviewed) -> None:
    again = reviewed.repo / "build" / "diff-again"
    command = [sys.executable, "-m", "preview.diff.review", "--base", "main", "--out", str(again)]
    result = subprocess.run(command, cwd=reviewed.repo, env=reviewed.env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    for stack in ("dev", "prod"):
        for name in ("diff.md", "diff.json", "diff.html"):
            first = (reviewed.repo / "build" / "diff" / stack / name).read_bytes()
            assert (again / stack / name).read_bytes() == first, (stack, name)


def test_make_preview_compares_with_head_and_not_with_leftovers(reviewed: Reviewed) -> None:
    """``python -m preview`` in a checkout compares with the preview of HEAD (cached by commit), with build/ gone."""
    shutil.rmtree(reviewed.repo / "build" / "preview")
    command = [sys.executable, "-m", "preview", "dev"]
    result = subprocess.run(command, cwd=reviewed.repo, env=reviewed.env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"against HEAD ({reviewed.base[:7]})" in result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith("  REPLACE gpu-v100-group"))
    assert REASON in line
    assert sum("container-image-digest-pinned" in line for line in result.stdout.splitlines()) <= 3  # grouped


def test_a_clean_checkout_stores_its_own_preview_as_heads(reviewed: Reviewed, tmp_path: Path) -> None:
    """On a clean checkout (CI) the preview just made is HEAD's: it is cached, and every stack has no change."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(reviewed.repo), str(clone))
    for name in (".upstream", ".tools", ".venv"):
        (clone / name).symlink_to((reviewed.repo / name).resolve())
    (clone / ".git" / "info" / "exclude").write_text(".upstream\n.tools\n.venv\n")
    for stack in ("dev", "prod"):
        shutil.copy(reviewed.repo / f"Pulumi.{stack}.yaml", clone / f"Pulumi.{stack}.yaml")
    git(clone, "commit", "--quiet", "--all", "-m", "head: v100 on runc, driver bumped, gpu-node-2 re-partitioned")
    assert git(clone, "status", "--porcelain") == ""
    env = {**reviewed.env, "PREVIEW_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "preview", "--out", str(tmp_path / "out")]
    result = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    head = git(clone, "rev-parse", "HEAD")
    for stack in ("dev", "prod"):
        assert f"against HEAD ({head[:7]}): 0 to create, 0 to update, 0 to replace, 0 to delete" in result.stdout
        cached = tmp_path / "cache" / head / stack / "resources.json"
        assert cached.read_bytes() == (tmp_path / "out" / stack / "resources.json").read_bytes()
