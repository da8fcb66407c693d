"""Reading Kubernetes objects as the API server returns them (plain JSON dicts): the one set of readers.

Pure and standard library: the node agent's code (``components/node_agent/agent/objects.py`` re-exports these) and
the proof's judging rules (``catalog.proof``, which may import nothing of the agent) both read objects with them, so
"the controller owner of a pod" or "a Ready object" means one thing everywhere. Shipped with both programs
(``components.base.shipped_code.SHIPPED_CATALOG``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_EMPTY: dict[str, str] = {}


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    """The object's labels (the object's own mapping: read it, never change it)."""
    return (obj.get("metadata") or _EMPTY).get("labels") or _EMPTY  # type: ignore[return-value]


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """The object's annotations (the object's own mapping: read it, never change it)."""
    return (obj.get("metadata") or _EMPTY).get("annotations") or _EMPTY  # type: ignore[return-value]


def name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def uid(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"].get("uid", ""))


def controller_owner(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The owner reference that controls the object (``controller: true``), else its first; {} when it has none."""
    owners = (obj.get("metadata") or {}).get("ownerReferences") or []
    controller = [owner for owner in owners if owner.get("controller")] or owners
    return dict(controller[0]) if controller else {}


def owner_kind(obj: Mapping[str, Any]) -> str:
    return str(controller_owner(obj).get("kind", ""))


def owner_name(obj: Mapping[str, Any]) -> str:
    return str(controller_owner(obj).get("name", ""))


def terminating(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def ready(obj: Mapping[str, Any]) -> bool:
    """The object's ``Ready`` condition is True (a pod: every container's probes pass; a node: its kubelet says so)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def container_image(spec: Mapping[str, Any], container: str) -> str:
    """The image of the container called ``container`` in a pod spec ("" when there is none)."""
    for item in spec.get("containers") or []:
        if item.get("name") == container:
            return str(item.get("image", ""))
    return ""
