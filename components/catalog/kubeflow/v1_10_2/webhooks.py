"""kubeflow/manifests v1.10.2: every admission webhook configuration of the example and the Deployment serving it.

Source: the render of ``example/`` at v1.10.2 (each webhook's Service selects the Deployment's pods;
the tests derive the same list from the real render).
"""

from __future__ import annotations

from components.catalog.kubeflow.model import WebhookServer
from components.catalog.kubeflow.v1_10_2.components import CERT_MANAGER

_VALIDATING = "ValidatingWebhookConfiguration"
_MUTATING = "MutatingWebhookConfiguration"
WEBHOOK_SERVERS: tuple[WebhookServer, ...] = (
    WebhookServer(_MUTATING, "cert-manager-webhook", CERT_MANAGER, "cert-manager", "cert-manager-webhook"),
    WebhookServer(_VALIDATING, "cert-manager-webhook", CERT_MANAGER, "cert-manager", "cert-manager-webhook"),
    WebhookServer(_MUTATING, "istio-sidecar-injector", "istio", "istio-system", "istiod"),
    WebhookServer(_VALIDATING, "istio-validator-istio-system", "istio", "istio-system", "istiod"),
    WebhookServer(_MUTATING, "webhook.serving.knative.dev", "knative", "knative-serving", "webhook"),
    WebhookServer(_VALIDATING, "validation.webhook.serving.knative.dev", "knative", "knative-serving", "webhook"),
    WebhookServer(_VALIDATING, "config.webhook.serving.knative.dev", "knative", "knative-serving", "webhook"),
    WebhookServer(
        _MUTATING, "webhook.istio.networking.internal.knative.dev", "knative", "knative-serving", "net-istio-webhook"
    ),
    WebhookServer(
        _VALIDATING,
        "config.webhook.istio.networking.internal.knative.dev",
        "knative",
        "knative-serving",
        "net-istio-webhook",
    ),
    WebhookServer(_MUTATING, "cache-webhook-kubeflow", "pipelines", "kubeflow", "cache-server"),
    WebhookServer(_MUTATING, "katib.kubeflow.org", "katib", "kubeflow", "katib-controller"),
    WebhookServer(_VALIDATING, "katib.kubeflow.org", "katib", "kubeflow", "katib-controller"),
    WebhookServer(
        _MUTATING,
        "admission-webhook-mutating-webhook-configuration",
        "admission-webhook",
        "kubeflow",
        "admission-webhook-deployment",
    ),
    WebhookServer(
        _MUTATING, "pvcviewer-mutating-webhook-configuration", "pvc-viewer", "kubeflow", "pvcviewer-controller-manager"
    ),
    WebhookServer(
        _VALIDATING,
        "pvcviewer-validating-webhook-configuration",
        "pvc-viewer",
        "kubeflow",
        "pvcviewer-controller-manager",
    ),
    WebhookServer(
        _VALIDATING, "validator.training-operator.kubeflow.org", "training-operator", "kubeflow", "training-operator"
    ),
    *(
        WebhookServer(kind, name, "kserve", "kubeflow", "kserve-controller-manager")
        for kind, name in (
            (_MUTATING, "inferenceservice.serving.kserve.io"),
            (_VALIDATING, "inferenceservice.serving.kserve.io"),
            (_VALIDATING, "clusterservingruntime.serving.kserve.io"),
            (_VALIDATING, "servingruntime.serving.kserve.io"),
            (_VALIDATING, "inferencegraph.serving.kserve.io"),
            (_VALIDATING, "trainedmodel.serving.kserve.io"),
            (_VALIDATING, "localmodelcache.serving.kserve.io"),
        )
    ),
    WebhookServer(_MUTATING, "spark-operator-webhook", "spark", "kubeflow", "spark-operator-webhook"),
    WebhookServer(_VALIDATING, "spark-operator-webhook", "spark", "kubeflow", "spark-operator-webhook"),
)
"""Every webhook configuration of the v1.10.2 example (the tests derive the same list from the real
render: the webhook's Service selects the Deployment's pods). Most use ``failurePolicy: Fail``, so an
object they match is refused while their server is not ready; upstream's ``sortOptions`` apply
``ValidatingWebhookConfiguration`` last for that reason, and its README retries the apply."""
