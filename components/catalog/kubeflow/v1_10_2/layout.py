"""kubeflow/manifests v1.10.2: the tag, its commit, the example's resources in order, its sortOptions, its namespaces.

Sources (tag v1.10.2, commit d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39): ``example/kustomization.yaml``
(``resources``, their order and ``sortOptions``; the sortOptions are identical in v1.10.0) and the
``namespace.yaml`` of each component.
"""

from __future__ import annotations

from components.catalog.kubeflow.model import ManifestsTag

TAG = "v1.10.2"
COMMIT = "d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39"

EXAMPLE_RESOURCES: tuple[tuple[str, str], ...] = (
    ("cert-manager", "common/cert-manager/base"),  # CERT_MANAGER_PATH
    ("cert-manager", "common/cert-manager/kubeflow-issuer/base"),
    ("istio", "common/istio/istio-crds/base"),
    ("istio", "common/istio/istio-namespace/base"),
    ("istio", "common/istio/istio-install/overlays/oauth2-proxy"),
    ("oauth2-proxy", "common/oauth2-proxy/overlays/m2m-dex-only"),
    ("dex", "common/dex/overlays/oauth2-proxy"),
    ("knative", "common/knative/knative-serving/overlays/gateways"),
    ("knative", "common/istio/cluster-local-gateway/base"),
    ("kubeflow-namespace", "common/kubeflow-namespace/base"),
    ("network-policies", "common/networkpolicies/base"),
    ("kubeflow-roles", "common/kubeflow-roles/base"),
    ("istio-resources", "common/istio/kubeflow-istio-resources/base"),
    ("pipelines", "applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user"),
    ("katib", "applications/katib/upstream/installs/katib-with-kubeflow"),
    ("central-dashboard", "applications/centraldashboard/overlays/oauth2-proxy"),
    ("admission-webhook", "applications/admission-webhook/upstream/overlays/cert-manager"),
    ("jupyter", "applications/jupyter/jupyter-web-app/upstream/overlays/istio"),
    ("jupyter", "applications/jupyter/notebook-controller/upstream/overlays/kubeflow"),
    ("profiles", "applications/profiles/pss"),
    ("pvc-viewer", "applications/pvcviewer-controller/upstream/base"),
    ("volumes-web-app", "applications/volumes-web-app/upstream/overlays/istio"),
    ("tensorboard", "applications/tensorboard/tensorboard-controller/upstream/overlays/kubeflow"),
    ("tensorboard", "applications/tensorboard/tensorboards-web-app/upstream/overlays/istio"),
    ("training-operator", "applications/training-operator/upstream/overlays/kubeflow"),
    ("user-namespace", "common/user-namespace/base"),
    ("kserve", "applications/kserve/kserve"),
    ("kserve", "applications/kserve/models-web-app/overlays/kubeflow"),
    ("spark", "applications/spark/spark-operator/overlays/kubeflow"),
)

CERT_MANAGER_PATH = "common/cert-manager/base"
"""cert-manager itself (1.16.1: CRDs, controller, cainjector, webhook). The example's other
cert-manager path, ``common/cert-manager/kubeflow-issuer/base``, is only the ClusterIssuer
``kubeflow-self-signing-issuer``, which cert-manager's webhook validates."""

MANIFESTS_TAG = ManifestsTag(TAG, COMMIT, "applications", "common/istio", EXAMPLE_RESOURCES)
"""The layout of this tag (applications under ``applications/``, Istio under ``common/istio/``)."""

SORT_ORDER_FIRST: tuple[str, ...] = (
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "MutatingWebhookConfiguration",
    "ServiceAccount",
    "PodSecurityPolicy",
    "NetworkPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
)
SORT_ORDER_LAST: tuple[str, ...] = ("ValidatingWebhookConfiguration",)


def upstream_sort_options() -> dict[str, object]:
    """A fresh copy of the example's ``sortOptions`` block (kustomize >= 5.0 honours it)."""
    return {
        "order": "legacy",
        "legacySortOptions": {"orderFirst": list(SORT_ORDER_FIRST), "orderLast": list(SORT_ORDER_LAST)},
    }


#: The namespaces the v1.10.2 install creates (cert-manager's only when the program installs it).
KUBEFLOW_SYSTEM_NAMESPACES: tuple[str, ...] = ("auth", "istio-system", "knative-serving", "kubeflow", "oauth2-proxy")
CERT_MANAGER_NAMESPACE = "cert-manager"
