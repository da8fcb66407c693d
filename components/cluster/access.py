"""Cluster access: one explicit Kubernetes provider for every Kubernetes resource of the stack.

The kubeconfig comes from the stack's platform (``components.stack.platforms``): for Yandex it is built from
the existing cluster (``components.yandex.cluster``), elsewhere it is a Pulumi secret. Either way it stays a
secret, and nothing ever lands on whatever cluster the local kubeconfig happens to point at.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.catalog.names import CLUSTER_ACCESS_TYPE
from components.cluster.config import ClusterConfig


@dataclass(frozen=True)
class ClusterAccessArgs:
    """What the component needs: the cluster config, its kubeconfig, and its identity when known."""

    cluster: ClusterConfig
    kubeconfig: pulumi.Input[str]
    cluster_id: pulumi.Input[str] | None = None  # default: the cluster's name
    endpoint: pulumi.Input[str] | None = None  # default: "(from kubeconfig)"
    context: str | None = None  # the kubeconfig's context to use (default: its current context)


class ClusterAccess(pulumi.ComponentResource):
    """The Kubernetes provider of the stack, and the cluster's identity for outputs."""

    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]
    cluster_id: pulumi.Output[str]
    endpoint: pulumi.Output[str]

    def __init__(self, name: str, args: ClusterAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLUSTER_ACCESS_TYPE, name, None, opts)
        cluster = args.cluster
        self.kubeconfig = pulumi.Output.secret(args.kubeconfig)
        self.endpoint = pulumi.Output.from_input(args.endpoint if args.endpoint is not None else "(from kubeconfig)")
        self.cluster_id = pulumi.Output.from_input(args.cluster_id if args.cluster_id is not None else cluster.name)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            context=args.context,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"clusterId": self.cluster_id, "endpoint": self.endpoint})
