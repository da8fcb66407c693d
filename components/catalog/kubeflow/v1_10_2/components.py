"""kubeflow/manifests v1.10.2: the named components of the example install, which are required, which are not offered.

Source: ``example/kustomization.yaml`` at v1.10.2 (the component of each resource line, the lines
commented out) and the README's install section.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from components.catalog.kubeflow.model import KubeflowComponent

CERT_MANAGER = "cert-manager"
"""Governed by ``install_cert_manager``, not by the component list: a cluster that already runs
cert-manager (``cert-manager.io/v1`` CRDs) must not get a second one."""

# Required = the login path and multi-user core: without them nobody can sign in to the dashboard
# or get a namespace (istio gateway -> oauth2-proxy -> dex; kubeflow namespace, roles and gateway;
# the central dashboard; profiles + KFAM, which also serve the Profiles the Pulumi program creates).
_COMPONENTS = (
    KubeflowComponent(CERT_MANAGER, "cert-manager 1.16.1 and the kubeflow-self-signing-issuer", required=False),
    KubeflowComponent("istio", "Istio CRDs, istio-system namespace, istiod and the ingress gateway", required=True),
    KubeflowComponent("oauth2-proxy", "oauth2-proxy in front of the gateway (m2m-dex-only)", required=True),
    KubeflowComponent("dex", "dex OIDC provider with the static user", required=True),
    KubeflowComponent("knative", "Knative Serving with Istio gateways and the cluster-local gateway", required=False),
    KubeflowComponent("kubeflow-namespace", "the kubeflow namespace", required=True),
    KubeflowComponent("network-policies", "NetworkPolicies for the kubeflow namespace", required=False),
    KubeflowComponent("kubeflow-roles", "kubeflow-admin/edit/view ClusterRoles", required=True),
    KubeflowComponent("istio-resources", "kubeflow-gateway and the Istio RBAC for Kubeflow", required=True),
    KubeflowComponent("pipelines", "Kubeflow Pipelines, multi-user, cert-manager flavour", required=False),
    KubeflowComponent("katib", "Katib hyperparameter tuning", required=False),
    KubeflowComponent("central-dashboard", "the Central Dashboard (oauth2-proxy overlay)", required=True),
    KubeflowComponent("admission-webhook", "PodDefaults admission webhook", required=False),
    KubeflowComponent(
        "jupyter", "Jupyter web app and notebook controller", required=False, requires=("admission-webhook",)
    ),
    KubeflowComponent("profiles", "Profiles controller and KFAM", required=True),
    KubeflowComponent("pvc-viewer", "PVC viewer controller", required=False),
    KubeflowComponent("volumes-web-app", "Volumes web app", required=False),
    KubeflowComponent("tensorboard", "Tensorboard controller and web app", required=False),
    KubeflowComponent("training-operator", "Training Operator (PyTorchJob, TFJob, ...)", required=False),
    KubeflowComponent(
        "user-namespace", "upstream's example Profile kubeflow-user-example-com for the dex user", required=False
    ),
    KubeflowComponent(
        "kserve", "KServe and the models web app (serverless mode)", required=False, requires=("knative",)
    ),
    KubeflowComponent("spark", "Spark operator", required=False),
)

COMPONENTS: Mapping[str, KubeflowComponent] = MappingProxyType({c.name: c for c in _COMPONENTS})
REQUIRED_COMPONENTS: tuple[str, ...] = tuple(c.name for c in _COMPONENTS if c.required)

NOT_OFFERED: Mapping[str, str] = MappingProxyType(
    {
        "model-registry": "not part of example/kustomization.yaml; upstream installs it with "
        "`kubectl apply -n kubeflow`, which a kustomization resource cannot express",
        "knative-eventing": "commented out in example/kustomization.yaml",
        "ray": "experimental in kubeflow/manifests 1.10 and commented out in the example",
    }
)
"""Names people ask for that the overlay deliberately does not offer, with the reason."""

DEFAULT_DISABLED: tuple[str, ...] = ("user-namespace",)
"""Left out unless asked for: Profiles are Pulumi resources of the Kubeflow component, so upstream's
example Profile (named after user@example.com) would only be a confusing extra namespace."""
