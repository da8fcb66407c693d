"""Checks that ``kubeflow.manifestsPath`` holds the pinned kubeflow/manifests tree, by content digest.

The overlay points into that tree, so another tree (another tag, a locally edited file, a half-copied
folder) would deploy other manifests than the ones reviewed and tested. The pin is
``components.catalog.upstream.KUBEFLOW_MANIFESTS``; ``make upstream`` puts the tree in place (from
GitHub, or from a mirror folder without network). A ``.git`` folder is not part of the digest, so a
git checkout of the tag passes too.
"""

from __future__ import annotations

from pathlib import Path

from components.catalog.upstream import KUBEFLOW_MANIFESTS, tree_digest

IGNORED = frozenset({".git"})
FETCH_HINT = (
    f"run `make upstream` (fetches kubeflow/manifests {KUBEFLOW_MANIFESTS.version} into "
    f"{KUBEFLOW_MANIFESTS.path} and checks its digest), or `make upstream UPSTREAM_MIRROR=<dir>` without "
    f"network (<dir> holds {KUBEFLOW_MANIFESTS.archive}), or point kubeflow.manifestsPath at such a tree"
)


def checkout_problem(path: Path) -> str | None:
    """Why ``path`` is not the pinned kubeflow/manifests tree, or None."""
    if not path.is_dir():
        return f"{path} does not exist; {FETCH_HINT}"
    digest = tree_digest(path, ignore=IGNORED)
    if digest != KUBEFLOW_MANIFESTS.content_sha256:
        return (
            f"{path} is not kubeflow/manifests {KUBEFLOW_MANIFESTS.version} as pinned in "
            f"components/catalog/upstream.py (content digest {digest[:12]}..., pinned "
            f"{KUBEFLOW_MANIFESTS.content_sha256[:12]}...: a file differs, is missing or was added); {FETCH_HINT}"
        )
    return None
