"""Checks that the kubeflow/manifests checkout exists and is at the pinned tag.

The overlay points into that checkout, so a checkout at another tag would deploy other manifests
than the ones reviewed (v1.10.0 and v1.10.2 even differ in layout).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from components.catalog import kubeflow_manifests as km

CLONE_HINT = "run `make kubeflow-manifests` (clones kubeflow/manifests at the pinned tag) or fix kubeflow.manifestsPath"


def checkout_problem(path: Path, tag: str) -> str | None:
    """Why ``path`` is not a kubeflow/manifests checkout at ``tag``, or None."""
    if not path.is_dir():
        return f"{path} does not exist; {CLONE_HINT}"
    layout = km.MANIFESTS_TAGS[tag]
    if not (path / layout.applications_dir).is_dir() or not (path / "common").is_dir():
        return f"{path} is not a kubeflow/manifests checkout at {tag} (no {layout.applications_dir}/ or common/)"
    found = _git_tag(path)
    if found is not None and found != tag:
        return f"{path} is checked out at {found}, not {tag}; check out {tag} or change kubeflow.tag"
    return None


def _git_tag(path: Path) -> str | None:
    """The exact tag of HEAD, or None where there is no git (a tarball) or no tag."""
    try:
        result = subprocess.run(
            ["git", "-C", str(path), "describe", "--tags", "--exact-match", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return "an untagged commit" if (path / ".git").exists() else None
    return result.stdout.strip()
