"""A miniature kubeflow/manifests checkout, written by the tests into tmp_path.

It has the directory layout of the real tags (v1.10.2: ``applications/`` + ``common/istio``;
v1.10.0: ``apps/`` + ``common/istio-1-24``) and, at every path that ``example/kustomization.yaml``
lists, a small kustomization with a few objects. The parts the overlay must change are shaped like
upstream's: dex's ``dex-passwords`` Secret with the published hash, the ``dex-oidc-client``
secretGenerator, the hashing ``oauth2-proxy`` secretGenerator and ``oauth2-proxy-parameters``
configMapGenerator with the Deployment that consumes them, the dex ConfigMap naming
``user@example.com`` (replaced by the oauth2-proxy overlay's patch, as upstream does), and the
user-namespace Profile filled by ``replacements`` from a generated ConfigMap.

The expected objects per component (``expected_objects``) are written here independently of the
catalog, so a wrong path or grouping in the catalog shows up as a kustomize error or a missing
object.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# Upstream's published defaults, as they appear in the real files (so the tests can look for them).
UPSTREAM_HASH = "$2y$12$4K/VkmDd1q1Orb3xAt82zu8gk7Ad6ReFR4LCP9UeYE90NLiN9Df72"
UPSTREAM_CLIENT_SECRET = "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok"
UPSTREAM_COOKIE_SECRET = "7d16fee92f8d11b8940b081b3f8b8acb"
UPSTREAM_EMAIL = "user@example.com"

Obj = tuple[str, str, str]  # (kind, namespace or "", name)


@dataclass(frozen=True)
class Layout:
    """Directory names that differ between tags."""

    apps: str
    istio: str
    profiles: str
    spark: bool


LAYOUTS = {
    "v1.10.2": Layout("applications", "common/istio", "profiles/pss", spark=True),
    "v1.10.0": Layout("apps", "common/istio-1-24", "profiles/upstream/overlays/kubeflow", spark=False),
}


def _meta(kind: str, name: str, namespace: str = "", api: str = "v1") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": metadata}


def _crd(name: str) -> dict[str, Any]:
    group = name.split(".", 1)[1]
    plural = name.split(".", 1)[0]
    crd = _meta("CustomResourceDefinition", name, api="apiextensions.k8s.io/v1")
    crd["spec"] = {
        "group": group,
        "names": {"kind": plural.capitalize().rstrip("s"), "plural": plural},
        "scope": "Namespaced",
        "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
        ],
    }
    return crd


def _deployment(namespace: str, name: str, container: dict[str, Any] | None = None) -> dict[str, Any]:
    dep = _meta("Deployment", name, namespace, api="apps/v1")
    main = {"name": name, "image": f"example.invalid/{name}:fixture"}
    main.update(container or {})
    dep["spec"] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [main]}},
    }
    return dep


def _configmap(namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    cm = _meta("ConfigMap", name, namespace)
    cm["data"] = data
    return cm


DEX_CONFIG = """\
issuer: http://dex.auth.svc.cluster.local:5556/dex
storage:
  type: kubernetes
  config:
    inCluster: true
enablePasswordDB: true
staticPasswords:
- email: user@example.com
  hashFromEnv: DEX_USER_PASSWORD
  username: user
  userID: "15841185641784"
staticClients:
- idEnv: OIDC_CLIENT_ID
  redirectURIs: ["/oauth2/callback"]
  name: 'Dex Login Application'
  secretEnv: OIDC_CLIENT_SECRET
"""


class _Tree:
    def __init__(self, root: Path) -> None:
        self.root = root

    def kustomization(
        self,
        path: str,
        objects: Sequence[dict[str, Any]] = (),
        resources: Sequence[str] = (),
        files: dict[str, str] | None = None,
        **fields: Any,
    ) -> None:
        """Write ``path/kustomization.yaml`` with one file per object plus extra fields and files."""
        directory = self.root / path
        directory.mkdir(parents=True, exist_ok=True)
        names = []
        for index, obj in enumerate(objects):
            name = f"object-{index}.yaml"
            (directory / name).write_text(yaml.safe_dump(obj, sort_keys=True))
            names.append(name)
        body: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
        body.update(fields)
        body["resources"] = [*resources, *names]
        (directory / "kustomization.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
        for name, text in (files or {}).items():
            (directory / name).write_text(text)


def build_fixture_tree(root: Path, tag: str = "v1.10.2") -> Path:
    """Write the miniature checkout for ``tag`` under ``root``; return ``root``."""
    lay = LAYOUTS[tag]
    t = _Tree(root)
    apps, istio = lay.apps, lay.istio

    # cert-manager
    t.kustomization(
        "common/cert-manager/base",
        [
            _meta("Namespace", "cert-manager"),
            _crd("certificates.cert-manager.io"),
            _deployment("cert-manager", "cert-manager"),
        ],
    )
    issuer = _meta("ClusterIssuer", "kubeflow-self-signing-issuer", api="cert-manager.io/v1")
    issuer["spec"] = {"selfSigned": {}}
    t.kustomization("common/cert-manager/kubeflow-issuer/base", [issuer])

    # istio
    t.kustomization(f"{istio}/istio-crds/base", [_crd("authorizationpolicies.security.istio.io")])
    t.kustomization(f"{istio}/istio-namespace/base", [_meta("Namespace", "istio-system")])
    gateway_svc = _meta("Service", "istio-ingressgateway", "istio-system")
    gateway_svc["spec"] = {"type": "ClusterIP", "ports": [{"name": "http2", "port": 80, "targetPort": 8080}]}
    t.kustomization(f"{istio}/istio-install/base", [_deployment("istio-system", "istiod"), gateway_svc])
    t.kustomization(f"{istio}/istio-install/overlays/oauth2-proxy", resources=["../../base"])

    # oauth2-proxy: hashing secretGenerator + configMapGenerator consumed by the Deployment
    env = [
        {
            "name": f"OAUTH2_PROXY_{key.upper().replace('-', '_')}",
            "valueFrom": {"secretKeyRef": {"name": "oauth2-proxy", "key": key}},
        }
        for key in ("client-id", "client-secret", "cookie-secret")
    ]
    env.append(
        {
            "name": "OAUTH2_PROXY_COOKIE_SECURE",
            "valueFrom": {"configMapKeyRef": {"name": "oauth2-proxy-parameters", "key": "FORCE_HTTPS"}},
        }
    )
    t.kustomization(
        "common/oauth2-proxy/base",
        [_meta("Namespace", "oauth2-proxy"), _deployment("", "oauth2-proxy", {"env": env})],
        namespace="oauth2-proxy",
        secretGenerator=[
            {
                "name": "oauth2-proxy",
                "type": "Opaque",
                "literals": [
                    "client-id=kubeflow-oidc-authservice",
                    f"client-secret={UPSTREAM_CLIENT_SECRET}",
                    f"cookie-secret={UPSTREAM_COOKIE_SECRET}",
                ],
            }
        ],
        configMapGenerator=[{"name": "oauth2-proxy-parameters", "literals": ["FORCE_HTTPS=false"]}],
    )
    t.kustomization("common/oauth2-proxy/overlays/m2m-dex-only", resources=["../../base"])

    # dex: static Secret with the published hash, non-hashed secretGenerator, ConfigMap
    passwords = _meta("Secret", "dex-passwords")
    passwords["stringData"] = {"DEX_USER_PASSWORD": UPSTREAM_HASH}
    dex_env = {"envFrom": [{"secretRef": {"name": "dex-oidc-client"}}, {"secretRef": {"name": "dex-passwords"}}]}
    t.kustomization(
        "common/dex/base",
        [
            _meta("Namespace", "auth"),
            _configmap("", "dex", {"config.yaml": DEX_CONFIG.replace("enablePasswordDB", "# base\nenablePasswordDB")}),
            _crd("authcodes.dex.coreos.com"),
            _deployment("", "dex", dex_env),
            passwords,
        ],
        namespace="auth",
        generatorOptions={"disableNameSuffixHash": True},
        secretGenerator=[{"name": "dex-oidc-client", "type": "Opaque", "envs": ["secret_params.env"]}],
        files={
            "secret_params.env": f"OIDC_CLIENT_ID=kubeflow-oidc-authservice\nOIDC_CLIENT_SECRET={UPSTREAM_CLIENT_SECRET}\n"
        },
    )
    t.kustomization(
        "common/dex/overlays/istio",
        [_meta("VirtualService", "dex", "auth", "networking.istio.io/v1alpha3")],
        ["../../base"],
    )
    dex_patch = _meta("ConfigMap", "dex")
    dex_patch["data"] = {"config.yaml": DEX_CONFIG}
    t.kustomization(
        "common/dex/overlays/oauth2-proxy",
        resources=["../istio"],
        patches=[
            {
                "path": "config-map.yaml",
                "target": {"version": "v1", "kind": "ConfigMap", "name": "dex", "namespace": "auth"},
            }
        ],
        files={"config-map.yaml": yaml.safe_dump(dex_patch, sort_keys=False)},
    )

    # knative + cluster-local-gateway
    t.kustomization(
        "common/knative/knative-serving/overlays/gateways",
        [
            _meta("Namespace", "knative-serving"),
            _crd("services.serving.knative.dev"),
            _deployment("knative-serving", "activator"),
        ],
    )
    t.kustomization(f"{istio}/cluster-local-gateway/base", [_meta("Service", "cluster-local-gateway", "istio-system")])

    # kubeflow core
    t.kustomization("common/kubeflow-namespace/base", [_meta("Namespace", "kubeflow")])
    t.kustomization(
        "common/networkpolicies/base",
        [_meta("NetworkPolicy", "default-allow-same-namespace", "kubeflow", "networking.k8s.io/v1")],
    )
    t.kustomization(
        "common/kubeflow-roles/base", [_meta("ClusterRole", "kubeflow-admin", api="rbac.authorization.k8s.io/v1")]
    )
    t.kustomization(
        f"{istio}/kubeflow-istio-resources/base",
        [_meta("Gateway", "kubeflow-gateway", "kubeflow", "networking.istio.io/v1beta1")],
    )

    # applications
    vwc = _meta("ValidatingWebhookConfiguration", "katib.kubeflow.org", api="admissionregistration.k8s.io/v1")
    vwc["webhooks"] = []
    t.kustomization(
        f"{apps}/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user",
        [_crd("workflows.argoproj.io"), _deployment("kubeflow", "ml-pipeline")],
    )
    t.kustomization(
        f"{apps}/katib/upstream/installs/katib-with-kubeflow",
        [vwc, _crd("experiments.kubeflow.org"), _deployment("kubeflow", "katib-controller")],
    )
    t.kustomization(f"{apps}/centraldashboard/overlays/oauth2-proxy", [_deployment("kubeflow", "centraldashboard")])
    t.kustomization(
        f"{apps}/admission-webhook/upstream/overlays/cert-manager",
        [_crd("poddefaults.kubeflow.org"), _deployment("kubeflow", "admission-webhook-deployment")],
    )
    t.kustomization(
        f"{apps}/jupyter/jupyter-web-app/upstream/overlays/istio",
        [_deployment("kubeflow", "jupyter-web-app-deployment")],
    )
    t.kustomization(
        f"{apps}/jupyter/notebook-controller/upstream/overlays/kubeflow",
        [_crd("notebooks.kubeflow.org"), _deployment("kubeflow", "notebook-controller-deployment")],
    )
    t.kustomization(
        f"{apps}/{lay.profiles}", [_crd("profiles.kubeflow.org"), _deployment("kubeflow", "profiles-deployment")]
    )
    t.kustomization(
        f"{apps}/pvcviewer-controller/upstream/base", [_deployment("kubeflow", "pvcviewer-controller-manager")]
    )
    t.kustomization(
        f"{apps}/volumes-web-app/upstream/overlays/istio", [_deployment("kubeflow", "volumes-web-app-deployment")]
    )
    t.kustomization(
        f"{apps}/tensorboard/tensorboard-controller/upstream/overlays/kubeflow",
        [_deployment("kubeflow", "tensorboard-controller-deployment")],
    )
    t.kustomization(
        f"{apps}/tensorboard/tensorboards-web-app/upstream/overlays/istio",
        [_deployment("kubeflow", "tensorboards-web-app-deployment")],
    )
    t.kustomization(
        f"{apps}/training-operator/upstream/overlays/kubeflow",
        [_crd("pytorchjobs.kubeflow.org"), _deployment("kubeflow", "training-operator")],
    )

    # user-namespace: Profile filled from a generated ConfigMap through replacements, as upstream
    profile = _meta("Profile", "$(profile-name)", api="kubeflow.org/v1beta1")
    profile["spec"] = {"owner": {"kind": "User", "name": "$(user)"}}
    selector = {"group": "kubeflow.org", "version": "v1beta1", "kind": "Profile", "name": "$(profile-name)"}
    t.kustomization(
        "common/user-namespace/base",
        [profile],
        configMapGenerator=[{"name": "default-install-config", "envs": ["params.env"]}],
        replacements=[
            {
                "source": {
                    "kind": "ConfigMap",
                    "name": "default-install-config",
                    "version": "v1",
                    "fieldPath": "data.user",
                },
                "targets": [{"select": selector, "fieldPaths": ["spec.owner.name"]}],
            },
            {
                "source": {
                    "kind": "ConfigMap",
                    "name": "default-install-config",
                    "version": "v1",
                    "fieldPath": "data.profile-name",
                },
                "targets": [{"select": selector, "fieldPaths": ["metadata.name"]}],
            },
        ],
        files={"params.env": f"user={UPSTREAM_EMAIL}\nprofile-name=kubeflow-user-example-com\n"},
    )

    t.kustomization(
        f"{apps}/kserve/kserve",
        [_crd("inferenceservices.serving.kserve.io"), _deployment("kubeflow", "kserve-controller-manager")],
    )
    t.kustomization(
        f"{apps}/kserve/models-web-app/overlays/kubeflow", [_deployment("kubeflow", "kserve-models-web-app")]
    )
    if lay.spark:
        t.kustomization(
            f"{apps}/spark/spark-operator/overlays/kubeflow",
            [_crd("sparkapplications.sparkoperator.k8s.io"), _deployment("kubeflow", "spark-operator-controller")],
        )
    return root


def expected_objects(tag: str = "v1.10.2") -> dict[str, set[Obj]]:
    """Component name -> the (kind, namespace, name) objects the fixture gives it (hashed names omitted)."""
    objects: dict[str, set[Obj]] = {
        "cert-manager": {
            ("Namespace", "", "cert-manager"),
            ("CustomResourceDefinition", "", "certificates.cert-manager.io"),
            ("Deployment", "cert-manager", "cert-manager"),
            ("ClusterIssuer", "", "kubeflow-self-signing-issuer"),
        },
        "istio": {
            ("CustomResourceDefinition", "", "authorizationpolicies.security.istio.io"),
            ("Namespace", "", "istio-system"),
            ("Deployment", "istio-system", "istiod"),
            ("Service", "istio-system", "istio-ingressgateway"),
        },
        "oauth2-proxy": {("Namespace", "", "oauth2-proxy"), ("Deployment", "oauth2-proxy", "oauth2-proxy")},
        "dex": {
            ("Namespace", "", "auth"),
            ("ConfigMap", "auth", "dex"),
            ("CustomResourceDefinition", "", "authcodes.dex.coreos.com"),
            ("Deployment", "auth", "dex"),
            ("VirtualService", "auth", "dex"),
        },
        "knative": {
            ("Namespace", "", "knative-serving"),
            ("CustomResourceDefinition", "", "services.serving.knative.dev"),
            ("Deployment", "knative-serving", "activator"),
            ("Service", "istio-system", "cluster-local-gateway"),
        },
        "kubeflow-namespace": {("Namespace", "", "kubeflow")},
        "network-policies": {("NetworkPolicy", "kubeflow", "default-allow-same-namespace")},
        "kubeflow-roles": {("ClusterRole", "", "kubeflow-admin")},
        "istio-resources": {("Gateway", "kubeflow", "kubeflow-gateway")},
        "pipelines": {
            ("CustomResourceDefinition", "", "workflows.argoproj.io"),
            ("Deployment", "kubeflow", "ml-pipeline"),
        },
        "katib": {
            ("ValidatingWebhookConfiguration", "", "katib.kubeflow.org"),
            ("CustomResourceDefinition", "", "experiments.kubeflow.org"),
            ("Deployment", "kubeflow", "katib-controller"),
        },
        "central-dashboard": {("Deployment", "kubeflow", "centraldashboard")},
        "admission-webhook": {
            ("CustomResourceDefinition", "", "poddefaults.kubeflow.org"),
            ("Deployment", "kubeflow", "admission-webhook-deployment"),
        },
        "jupyter": {
            ("Deployment", "kubeflow", "jupyter-web-app-deployment"),
            ("CustomResourceDefinition", "", "notebooks.kubeflow.org"),
            ("Deployment", "kubeflow", "notebook-controller-deployment"),
        },
        "profiles": {
            ("CustomResourceDefinition", "", "profiles.kubeflow.org"),
            ("Deployment", "kubeflow", "profiles-deployment"),
        },
        "pvc-viewer": {("Deployment", "kubeflow", "pvcviewer-controller-manager")},
        "volumes-web-app": {("Deployment", "kubeflow", "volumes-web-app-deployment")},
        "tensorboard": {
            ("Deployment", "kubeflow", "tensorboard-controller-deployment"),
            ("Deployment", "kubeflow", "tensorboards-web-app-deployment"),
        },
        "training-operator": {
            ("CustomResourceDefinition", "", "pytorchjobs.kubeflow.org"),
            ("Deployment", "kubeflow", "training-operator"),
        },
        "user-namespace": {("Profile", "", "kubeflow-user-example-com")},
        "kserve": {
            ("CustomResourceDefinition", "", "inferenceservices.serving.kserve.io"),
            ("Deployment", "kubeflow", "kserve-controller-manager"),
            ("Deployment", "kubeflow", "kserve-models-web-app"),
        },
    }
    if LAYOUTS[tag].spark:
        objects["spark"] = {
            ("CustomResourceDefinition", "", "sparkapplications.sparkoperator.k8s.io"),
            ("Deployment", "kubeflow", "spark-operator-controller"),
        }
    return objects


# --------------------------------------------------------------------------------------------
# The real kustomize (kubectl's built-in kustomize 5.5), installed by tools/install-kustomize.sh
# --------------------------------------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]
KUBECTL = REPO_ROOT / ".tools" / "bin" / "kubectl"


def ensure_kubectl() -> Path:
    """Install kubectl into .tools/bin with the project's script if it is not there yet."""
    if not KUBECTL.is_file():
        env = {**os.environ, "PYTHON": sys.executable}
        subprocess.run(["bash", str(REPO_ROOT / "tools" / "install-kustomize.sh")], cwd=REPO_ROOT, env=env, check=True)
    return KUBECTL


def kustomize_build(directory: Path) -> str:
    """``kubectl kustomize directory``; a failure shows kustomize's own message."""
    result = subprocess.run(
        [str(ensure_kubectl()), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{result.stderr}")
    return result.stdout


def parse_objects(rendered: str) -> list[dict[str, Any]]:
    """The objects of a multi-document render, in order."""
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def object_key(obj: dict[str, Any]) -> Obj:
    """(kind, namespace, name) of a rendered object."""
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])
