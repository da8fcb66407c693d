"""Labels on existing bare-metal nodes: one NodePatch per Node, one field manager.

Server-side apply gives every field of the Node to the managers that last sent it (Kubernetes docs,
"Server-Side Apply", field management). pulumi-kubernetes applies a Patch resource's whole input object
(``provider/pkg/await/await.go``: the create and ``ssaUpdate`` marshal ``c.Inputs`` as they are), so the
``pulumi.com/patchFieldManager`` annotation itself is a field of the Node. Two patches of one Node under two
managers therefore send the same annotation key with two values, and once the forced one has applied, an
unforced apply of the other that changes anything is a conflict. So every label and annotation the program
puts on a Node goes through one NodePatch under ``FIELD_MANAGER``:

- the platform labels (``bare_metal_labels``), the driver-group label, the MIG label (or the node agent's
  desired-config label) and the declared taints as annotations;
- forced only where the patch carries a label another manager may own (``CONTESTED_NODE_LABELS``: the
  operator writes ``nvidia.com/mig.config=all-disabled`` on MIG-capable nodes that carry none);
- a label dropped from config is released: server-side apply removes a field no other manager owns, and
  deleting the patch (pulumi-kubernetes ``ssa.Relinquish``: an apply of an empty object under the patch's
  manager) releases every field of it and leaves every other manager's fields alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.bare_metal.config import BareMetalNode
from components.catalog.kubernetes import taint_list_text
from components.catalog.names import (
    CONTESTED_NODE_LABELS,
    DECLARED_TAINTS_ANNOTATION,
    FIELD_MANAGER,
    NODE_LABELS_TYPE,
    PATCH_FIELD_MANAGER_ANNOTATION,
    PATCH_FORCE_ANNOTATION,
    UNTAINTED_ACCEPTED_ANNOTATION,
)
from components.catalog.pools import gpu_node_labels


def bare_metal_labels(node: BareMetalNode, owned: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every label gpu-platform owns on one bare-metal node.

    ``owned``: labels the stack decides beyond the node's own config, such as ``gpu-platform.io/driver``
    (which NVIDIADriver selects the node) and the MIG config label; they go last, so no label from
    ``labels`` can replace them.
    """
    return gpu_node_labels(node.pool, node.gpu_model, labels=node.labels, owned=owned)


def declared_taint_annotations(node: BareMetalNode) -> dict[str, str]:
    """The node's declared taints (and an accepted opt-out) as annotations the policy pack reads.

    The taints themselves are the kubelet's (``--register-with-taints``) or an administrator's: the
    program does not write ``spec.taints`` (see ``DECLARED_TAINTS_ANNOTATION``), but it records what the
    config declares so that a reviewer's policy run checks bare-metal GPU nodes as it checks node groups.
    """
    annotations = {DECLARED_TAINTS_ANNOTATION: taint_list_text(node.taints)}
    if node.allow_untainted:
        annotations[UNTAINTED_ACCEPTED_ANNOTATION] = "true"
    return annotations


def patch_annotations(labels: Mapping[str, str], annotations: Mapping[str, str]) -> dict[str, str]:
    """``annotations`` plus pulumi-kubernetes' own: the field manager, and force where a label is contested.

    Forced only then: an unforced apply fails on a conflict instead of taking a field over, which is
    what the program wants for every field nobody else should be writing.
    """
    merged = {**annotations, PATCH_FIELD_MANAGER_ANNOTATION: FIELD_MANAGER}
    if any(key in labels for key in CONTESTED_NODE_LABELS):
        merged[PATCH_FORCE_ANNOTATION] = "true"
    return dict(sorted(merged.items()))


@dataclass(frozen=True)
class NodeLabelsArgs:
    """Labels and annotations per node name, the provider, and what every patch waits for."""

    labels: dict[str, dict[str, str]]
    provider: k8s.Provider
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)  # per node name, beside the patch's own
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class BareMetalNodeLabels(pulumi.ComponentResource):
    """One NodePatch per bare-metal GPU node, ``<name>-<node>``: the name the platform labels' patch always had,
    so the engine updates the live patch in place (no alias needed, nothing recreated)."""

    patches: dict[str, k8s.core.v1.NodePatch]

    def __init__(self, name: str, args: NodeLabelsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(NODE_LABELS_TYPE, name, None, opts)
        self.patches = {}
        for node_name, labels in args.labels.items():
            self.patches[node_name] = k8s.core.v1.NodePatch(
                f"{name}-{node_name}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=node_name,
                    labels=dict(sorted(labels.items())),
                    annotations=patch_annotations(labels, args.annotations.get(node_name, {})),
                ),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on),
            )
        self.register_outputs({"nodes": sorted(self.patches)})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a dependent waits for: every node's patch (never the component, which the SDK expands)."""
        return list(self.patches.values())
