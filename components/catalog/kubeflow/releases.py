"""Which kubeflow/manifests tags gpu-platform supports, and the layout of each.

Why its own module: the tag check of the config, the overlay's stage planning and the tests ask the
same question (is this tag supported, which paths and components does its example list) and must
get one answer. Only the tag pinned by content digest in ``components.catalog.upstream`` is
supported: the tests render that real tree, and an unpinned tree cannot be verified.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from components.catalog.kubeflow.model import ManifestsTag
from components.catalog.kubeflow.v1_10_2 import layout as v1_10_2
from components.catalog.upstream import KUBEFLOW_MANIFESTS

DEFAULT_TAG = KUBEFLOW_MANIFESTS.version
"""The pinned tag (``components.catalog.upstream``); ``MANIFESTS_TAGS`` must hold it (tests/catalog checks)."""

MANIFESTS_TAGS: Mapping[str, ManifestsTag] = MappingProxyType({v1_10_2.TAG: v1_10_2.MANIFESTS_TAG})
SUPPORTED_TAGS: tuple[str, ...] = tuple(sorted(MANIFESTS_TAGS))


def unsupported_tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be installed (only the pinned tree is), or None."""
    if tag in MANIFESTS_TAGS:
        return None
    return (
        f"unknown kubeflow/manifests tag {tag!r}; supported: {', '.join(SUPPORTED_TAGS)} "
        "(the tree pinned by content digest in components/catalog/upstream.py)"
    )


def tag_components(tag: str) -> tuple[str, ...]:
    """Component names the example of ``tag`` lists, in upstream order (cert-manager included)."""
    seen: dict[str, None] = {}
    for name, _path in MANIFESTS_TAGS[tag].example_resources:
        seen.setdefault(name, None)
    return tuple(seen)


def component_paths(tag: str, component: str) -> tuple[str, ...]:
    """Upstream paths (relative to the repository root) of one component at ``tag``."""
    return tuple(path for name, path in MANIFESTS_TAGS[tag].example_resources if name == component)
