"""Deleted and created resources that are one real object: the moves ``pulumi up`` gets wrong.

The engine matches resources by URN (``preview.diff.urns``). When a resource gets a new parent or name
without an ``alias`` naming its old URN, the plan is a create of the new URN and a delete of the old
one, even though both manage the same object: the same Kubernetes ``group/kind/namespace/name``, the
same Helm release, the same Yandex resource name. ``pulumi up`` then creates first (its default) and
either fails because the object already exists or, under server-side apply, takes the live object
over and deletes it moments later with the old resource. A delete-before-replace option does not help:
it applies to a replacement of one URN, not to two URNs.

``real_object`` names the object a resource manages; ``find_moves`` pairs every created resource with
the deleted one that manages the same object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.catalog.names import HELM_RELEASE_TYPE, is_cluster_object


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else "core"


def real_object(resource_type: str, inputs: Mapping[str, Any]) -> str | None:
    """``Job batch gpu-operator/gpu-smoke-v100``: the object a resource manages; None where it manages none we know."""
    if resource_type == HELM_RELEASE_TYPE:
        name, namespace = inputs.get("name"), inputs.get("namespace") or "default"
        return f"Helm release {namespace}/{name}" if name else None
    if is_cluster_object(resource_type):
        metadata = inputs.get("metadata") or {}
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        if not name:
            return None  # an auto-named object is a new object
        kind = str(inputs.get("kind") or resource_type.rsplit(":", 1)[-1])
        if resource_type.endswith("Patch"):  # a patch of an object: the object, patched by this kind of resource
            kind = f"{kind} (patched)"
        namespace = metadata.get("namespace")
        where = f"{namespace}/{name}" if namespace else str(name)
        return f"{kind} {_group(str(inputs.get('apiVersion') or ''))} {where}"
    if resource_type.startswith("yandex:") and inputs.get("name"):
        return f"{resource_type.rsplit(':', 1)[-1]} {inputs['name']}"
    return None


@dataclass(frozen=True)
class Move:
    """A deleted and a created resource that manage one object; ``aliased`` when the engine will pair them."""

    object: str
    old_urn: str
    new_urn: str
    old_name: str
    new_name: str
    type: str

    def describe(self) -> str:
        """What ``pulumi up`` does with it, and what to write instead."""
        return (
            f"{self.object}: {self.old_name} is deleted and {self.new_name} created ({self.type}), the same object "
            f"under a new URN. pulumi up creates first and fails because it already exists, or (server-side "
            f"apply) takes the live object over and then deletes it with {self.old_name}. Give {self.new_name} "
            f"aliases=[{self.old_urn!r}] (or the Alias(name=..., parent=...) that forms it)."
        )


def find_moves(
    created: list[tuple[str, str, str, Mapping[str, Any]]], deleted: list[tuple[str, str, str, Mapping[str, Any]]]
) -> list[Move]:
    """Pairs of (urn, type, name, inputs) created and deleted that manage the same object, in creation order."""
    gone: dict[str, tuple[str, str, str, Mapping[str, Any]]] = {}
    for item in deleted:
        identity = real_object(item[1], item[3])
        if identity is not None:
            gone.setdefault(identity, item)
    moves = []
    for urn, resource_type, name, inputs in created:
        identity = real_object(resource_type, inputs)
        old = gone.pop(identity, None) if identity is not None else None
        if old is not None:
            moves.append(Move(identity or "", old[0], urn, old[2], name, resource_type))
    return moves
