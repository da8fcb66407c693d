"""Cluster access: one explicit Kubernetes provider for every Kubernetes resource of the stack.

For Yandex, the kubeconfig is built from the existing cluster's endpoint and CA, with the
``yc k8s create-token`` exec credential (no long-lived token is stored anywhere). For bare metal,
the kubeconfig comes from a Pulumi secret. Either way the kubeconfig stays a secret.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.yandex import sdk as yandex_sdk
from components.cluster.config import ClusterConfig


def yandex_kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig for a Yandex cluster that authenticates with ``yc k8s create-token``."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {"server": endpoint, "certificate-authority-data": _b64(ca_certificate)},
            }
        ],
        "users": [
            {
                "name": "yc",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "yc",
                        "args": ["k8s", "create-token"],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": "yc"}}],
        "current-context": cluster_name,
    }
    return json.dumps(document, sort_keys=True)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _master_field(masters: Sequence[Any] | None, field: str) -> str:
    """A field of the cluster's master; empty when the cloud did not report it."""
    if not masters:
        return ""
    return str(getattr(masters[0], field, None) or "")


@dataclass(frozen=True)
class ClusterAccessArgs:
    """What the component needs: the cluster config and, for bare metal, the kubeconfig secret."""

    cluster: ClusterConfig
    kubeconfig: pulumi.Input[str] | None = None


class ClusterAccess(pulumi.ComponentResource):
    """The Kubernetes provider of the stack, and the cluster's identity for outputs."""

    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]
    cluster_id: pulumi.Output[str]
    endpoint: pulumi.Output[str]

    def __init__(self, name: str, args: ClusterAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpu-platform:cluster:ClusterAccess", name, None, opts)
        cluster = args.cluster
        if cluster.kind == "yandex" and cluster.yandex is not None:
            found = yandex_sdk.get_kubernetes_cluster_output(
                cluster_id=cluster.yandex.cluster_id,
                folder_id=cluster.yandex.folder_id,
                opts=pulumi.InvokeOptions(parent=self),
            )
            field = "external_v4_endpoint" if cluster.yandex.endpoint == "external" else "internal_v4_endpoint"
            self.endpoint = found.masters.apply(lambda masters: _master_field(masters, field))
            ca = found.masters.apply(lambda masters: _master_field(masters, "cluster_ca_certificate"))
            self.cluster_id = found.id
            self.kubeconfig = pulumi.Output.secret(
                pulumi.Output.all(self.endpoint, ca).apply(lambda v: yandex_kubeconfig(cluster.name, v[0], v[1]))
            )
        elif args.kubeconfig is not None:
            self.kubeconfig = pulumi.Output.secret(args.kubeconfig)
            self.endpoint = pulumi.Output.from_input("(from kubeconfig)")
            self.cluster_id = pulumi.Output.from_input(cluster.name)
        else:
            raise ValueError("bare-metal cluster access needs a kubeconfig")
        context = cluster.bare_metal.context if cluster.bare_metal else None
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            context=context,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"clusterId": self.cluster_id, "endpoint": self.endpoint})
