"""Labels on existing bare-metal nodes, through server-side apply with one fixed field manager.

``NodePatch`` owns exactly the labels it sets: deleting it (or dropping a label from config)
removes those labels and leaves every other manager's labels alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.bare_metal_config import BareMetalNode
from components.labels import FIELD_MANAGER, GPU_MODEL_LABEL, GPU_NODE_LABEL, NODE_GROUP_LABEL


def bare_metal_labels(node: BareMetalNode, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The labels gpu-platform owns on one bare-metal node."""
    labels = {GPU_NODE_LABEL: "true", GPU_MODEL_LABEL: node.gpu_model, NODE_GROUP_LABEL: node.pool}
    labels.update(node.labels)
    labels.update(extra or {})
    return dict(sorted(labels.items()))


@dataclass(frozen=True)
class NodeLabelsArgs:
    """Nodes, per-node extra labels (MIG config), and the provider."""

    nodes: list[BareMetalNode]
    provider: k8s.Provider
    extra_labels: dict[str, dict[str, str]] = field(default_factory=dict)


class BareMetalNodeLabels(pulumi.ComponentResource):
    """One NodePatch per bare-metal GPU node."""

    patches: dict[str, k8s.core.v1.NodePatch]

    def __init__(self, name: str, args: NodeLabelsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpu-platform:baremetal:NodeLabels", name, None, opts)
        self.patches = {}
        for node in args.nodes:
            self.patches[node.name] = k8s.core.v1.NodePatch(
                f"{name}-{node.name}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=node.name,
                    labels=bare_metal_labels(node, args.extra_labels.get(node.name)),
                    annotations={"pulumi.com/patchFieldManager": FIELD_MANAGER},
                ),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider),
            )
        self.register_outputs({"nodes": sorted(self.patches)})
