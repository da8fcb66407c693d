"""The existing Yandex Managed Kubernetes cluster: found by id, its kubeconfig built from endpoint and CA.

The kubeconfig authenticates with the ``yc k8s create-token`` exec credential, so no long-lived
token is stored anywhere.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.yandex import sdk as yandex_sdk


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
class YandexCluster:
    """What the stack needs of the existing cluster: its id, API endpoint and a kubeconfig (a secret)."""

    cluster_id: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]


def find_cluster(name: str, cluster_id: str, endpoint: str) -> YandexCluster:
    """Look the cluster up in Yandex Cloud (an invoke: nothing is created); ``endpoint`` external or internal.

    The folder is the provider's (``yandex:folderId``), the same folder the node groups are created in.
    """
    found = yandex_sdk.get_kubernetes_cluster_output(cluster_id=cluster_id)
    field = "external_v4_endpoint" if endpoint == "external" else "internal_v4_endpoint"
    api = found.masters.apply(lambda masters: _master_field(masters, field))
    ca = found.masters.apply(lambda masters: _master_field(masters, "cluster_ca_certificate"))
    text: pulumi.Output[str] = pulumi.Output.all(api, ca).apply(lambda v: yandex_kubeconfig(name, v[0], v[1]))
    kubeconfig: pulumi.Output[str] = pulumi.Output.secret(text)
    return YandexCluster(cluster_id=found.id, endpoint=api, kubeconfig=kubeconfig)
