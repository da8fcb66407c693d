"""Reaching a cluster with a kubeconfig kept as a Pulumi secret: what bare metal and an existing cluster share.

``cluster.kubeconfigSecret`` names the secret key (set with ``pulumi config set --secret``); ``cluster.context``
picks a context of the file. The kubeconfig text stays a Pulumi secret from the engine to the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pulumi

from components.cluster.access import ClusterAccessArgs
from components.cluster.config import KubeconfigClusterConfig
from components.stack.platforms.base import NamedSecret

if TYPE_CHECKING:
    from components.stack.config import StackConfig
    from components.stack.plan import Plan

#: The role of the kubeconfig among a platform's secrets (``StackSecrets.platform``).
KUBECONFIG = "kubeconfig"


def kubeconfig_secret(stack: StackConfig) -> NamedSecret:
    """The secret key the cluster's kubeconfig is in (``cluster.kubeconfigSecret``)."""
    cluster = stack.cluster
    if not isinstance(cluster, KubeconfigClusterConfig):  # the registry picks the platform by this kind
        raise TypeError(f"a kubeconfig platform needs a kubeconfig cluster, not {cluster.kind}")
    written = "kubeconfig_secret" in cluster.model_fields_set
    return NamedSecret("cluster.kubeconfigSecret", cluster.kubeconfig_secret, written)


def kubeconfig_access(plan: Plan, secrets: Mapping[str, pulumi.Output[str]]) -> ClusterAccessArgs:
    """The provider of a cluster reached with the kubeconfig kept as a Pulumi secret (and its context, if named)."""
    cluster = plan.config.cluster
    if not isinstance(cluster, KubeconfigClusterConfig) or KUBECONFIG not in secrets:
        raise ValueError(f"{cluster.kind} cluster access needs a kubeconfig (cluster.kubeconfigSecret)")
    return ClusterAccessArgs(cluster, secrets[KUBECONFIG], context=cluster.context)


def kubeconfig_secrets(stack: StackConfig, config: pulumi.Config) -> dict[str, pulumi.Output[str]]:
    """The kubeconfig, read as a Pulumi secret under its role."""
    return {KUBECONFIG: config.require_secret(kubeconfig_secret(stack).key or "")}
