"""Labels on existing bare-metal nodes, through server-side apply with one fixed field manager.

``NodePatch`` owns exactly the labels (and annotations) it sets: deleting it (or dropping a label from
config) removes those labels and leaves every other manager's labels alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.bare_metal.config import BareMetalNode
from components.catalog.names import (
    DECLARED_TAINTS_ANNOTATION,
    FIELD_MANAGER,
    GPU_MODEL_LABEL,
    GPU_NODE_LABEL,
    NODE_GROUP_LABEL,
    PATCH_FIELD_MANAGER_ANNOTATION,
    PATCH_FORCE_ANNOTATION,
    UNTAINTED_ACCEPTED_ANNOTATION,
)


def bare_metal_labels(node: BareMetalNode, owned: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels gpu-platform owns on one bare-metal node (the MIG label is applied separately).

    ``owned``: labels the stack decides beyond the node's own config, such as ``gpu-platform.io/driver``
    (which NVIDIADriver selects the node); they go last, so no label from ``labels`` can replace them.
    """
    labels = {GPU_NODE_LABEL: "true", GPU_MODEL_LABEL: node.gpu_model, NODE_GROUP_LABEL: node.pool}
    labels.update(node.labels)
    labels.update(owned or {})
    return dict(sorted(labels.items()))


def declared_taint_annotations(node: BareMetalNode) -> dict[str, str]:
    """The node's declared taints (and an accepted opt-out) as annotations the policy pack reads.

    The taints themselves are the kubelet's (``--register-with-taints``) or an administrator's: the
    program does not write ``spec.taints`` (see ``DECLARED_TAINTS_ANNOTATION``), but it records what the
    config declares so that a reviewer's policy run checks bare-metal GPU nodes as it checks node groups.
    """
    annotations = {DECLARED_TAINTS_ANNOTATION: ",".join(node.taints)}
    if node.allow_untainted:
        annotations[UNTAINTED_ACCEPTED_ANNOTATION] = "true"
    return annotations


@dataclass(frozen=True)
class NodeLabelsArgs:
    """Labels per node name, the field manager that owns them, and the provider.

    Each field manager owns exactly its labels: the MIG label has its own manager so that it can be
    applied after the GPU Operator release (which carries the mig-parted config it names). ``force``
    takes a label over from another field manager instead of failing on the conflict: the operator
    writes ``nvidia.com/mig.config`` itself on nodes that carry none (see ``gpu_operator_chart``).
    """

    labels: dict[str, dict[str, str]]
    provider: k8s.Provider
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)  # per node name, beside the patch's own
    field_manager: str = FIELD_MANAGER
    force: bool = False
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class BareMetalNodeLabels(pulumi.ComponentResource):
    """One NodePatch per bare-metal GPU node."""

    patches: dict[str, k8s.core.v1.NodePatch]

    def __init__(self, name: str, args: NodeLabelsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpu-platform:baremetal:NodeLabels", name, None, opts)
        self.patches = {}
        patch_annotations = {PATCH_FIELD_MANAGER_ANNOTATION: args.field_manager}
        if args.force:
            patch_annotations[PATCH_FORCE_ANNOTATION] = "true"
        for node_name, labels in args.labels.items():
            annotations = dict(sorted({**args.annotations.get(node_name, {}), **patch_annotations}.items()))
            self.patches[node_name] = k8s.core.v1.NodePatch(
                f"{name}-{node_name}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=node_name,
                    labels=dict(sorted(labels.items())),
                    annotations=annotations,
                ),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on),
            )
        self.register_outputs({"nodes": sorted(self.patches)})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a dependent waits for: every node's patch (never the component, which the SDK expands)."""
        return list(self.patches.values())
