"""Facts about kubeflow/manifests 1.10: tags, layout, the example install and its public defaults.

Upstream installs Kubeflow with ``kustomize build example | kubectl apply``. That example ships a
static dex user (``user@example.com`` / ``12341234``), a public OIDC client secret and a public
oauth2-proxy cookie secret, and always installs cert-manager. gpu-platform generates its own
overlay over a pinned checkout instead (``components/kubeflow/overlay.py``); this module holds the
facts that overlay and the CrossGuard policies need, written once.

Sources (github.com/kubeflow/manifests, Apache-2.0; the repository now also answers as
kubeflow/community-distribution):
- ``example/kustomization.yaml`` at tag v1.10.2 (commit d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39,
  identical to the v1.10-branch head ef152a9ce) and at tag v1.10.0 (commit
  c1ae849873a36199af43c4e14d113bd60fc695d7).
- v1.10.1 (commit e636e839f, 2025-05-12) uses the v1.10.0 layout (``apps/``,
  ``common/istio-1-24/``). Its example was not compared line by line: it is taken to list the same
  resources as v1.10.0. Spark was added to the example by PR #3131 (merged 2025-05-12, on master),
  so spark is only offered for v1.10.2, where the example lists it.
- ``common/dex/base/kustomization.yaml``, ``common/dex/base/dex-passwords.yaml``,
  ``common/dex/base/secret_params.env``, ``common/dex/overlays/oauth2-proxy/config-map.yaml``,
  ``common/dex/base/deployment.yaml`` (envFrom ``dex-oidc-client`` and ``dex-passwords``).
- ``common/oauth2-proxy/base/kustomization.yaml`` (secretGenerator ``oauth2-proxy``,
  configMapGenerator ``oauth2-proxy-parameters``) and ``common/oauth2-proxy/base/deployment.yaml``
  (env from secretKeyRef ``oauth2-proxy``: client-id, client-secret, cookie-secret).
- ``common/user-namespace/base`` (Profile ``kubeflow-user-example-com`` owned by the default user,
  filled from the generated ConfigMap ``default-install-config``).
- README v1.10.x "Change Default User Password" and the dex config comment "YOU SHOULD NOT USE THE
  DEFAULT STATIC PASSWORDS and patch /common/dex/base/dex-passwords.yaml in a Kustomize overlay or
  remove it".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# --------------------------------------------------------------------------------------------
# Tags
# --------------------------------------------------------------------------------------------

DEFAULT_TAG = "v1.10.2"


@dataclass(frozen=True)
class ManifestsTag:
    """One supported tag of kubeflow/manifests and where its directories are.

    The path layout changed inside the 1.10 line: v1.10.0 and v1.10.1 keep applications under
    ``apps/`` and Istio under ``common/istio-1-24/``; v1.10.2 moved them to ``applications/`` and
    ``common/istio/``. A program that pins "1.10" must therefore know the exact tag.
    """

    tag: str
    commit: str
    applications_dir: str
    istio_dir: str
    example_resources: tuple[tuple[str, str], ...]
    """``(component name, path)`` for every line of ``example/kustomization.yaml`` ``resources``,
    in upstream order, paths relative to the repository root."""


def _example(apps: str, istio: str, profiles: str, *, spark: bool) -> tuple[tuple[str, str], ...]:
    """The resources of ``example/kustomization.yaml`` for one layout, in upstream order.

    The layouts differ only in the two directory prefixes, the profiles overlay (v1.10.2 switched
    to ``profiles/pss``) and the spark operator line (only in v1.10.2).
    """
    entries = [
        ("cert-manager", "common/cert-manager/base"),
        ("cert-manager", "common/cert-manager/kubeflow-issuer/base"),
        ("istio", f"{istio}/istio-crds/base"),
        ("istio", f"{istio}/istio-namespace/base"),
        ("istio", f"{istio}/istio-install/overlays/oauth2-proxy"),
        ("oauth2-proxy", "common/oauth2-proxy/overlays/m2m-dex-only"),
        ("dex", "common/dex/overlays/oauth2-proxy"),
        ("knative", "common/knative/knative-serving/overlays/gateways"),
        ("knative", f"{istio}/cluster-local-gateway/base"),
        ("kubeflow-namespace", "common/kubeflow-namespace/base"),
        ("network-policies", "common/networkpolicies/base"),
        ("kubeflow-roles", "common/kubeflow-roles/base"),
        ("istio-resources", f"{istio}/kubeflow-istio-resources/base"),
        ("pipelines", f"{apps}/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user"),
        ("katib", f"{apps}/katib/upstream/installs/katib-with-kubeflow"),
        ("central-dashboard", f"{apps}/centraldashboard/overlays/oauth2-proxy"),
        ("admission-webhook", f"{apps}/admission-webhook/upstream/overlays/cert-manager"),
        ("jupyter", f"{apps}/jupyter/jupyter-web-app/upstream/overlays/istio"),
        ("jupyter", f"{apps}/jupyter/notebook-controller/upstream/overlays/kubeflow"),
        ("profiles", f"{apps}/{profiles}"),
        ("pvc-viewer", f"{apps}/pvcviewer-controller/upstream/base"),
        ("volumes-web-app", f"{apps}/volumes-web-app/upstream/overlays/istio"),
        ("tensorboard", f"{apps}/tensorboard/tensorboard-controller/upstream/overlays/kubeflow"),
        ("tensorboard", f"{apps}/tensorboard/tensorboards-web-app/upstream/overlays/istio"),
        ("training-operator", f"{apps}/training-operator/upstream/overlays/kubeflow"),
        ("user-namespace", "common/user-namespace/base"),
        ("kserve", f"{apps}/kserve/kserve"),
        ("kserve", f"{apps}/kserve/models-web-app/overlays/kubeflow"),
    ]
    if spark:
        entries.append(("spark", f"{apps}/spark/spark-operator/overlays/kubeflow"))
    return tuple(entries)


_V1_10_0_EXAMPLE = _example("apps", "common/istio-1-24", "profiles/upstream/overlays/kubeflow", spark=False)

MANIFESTS_TAGS: Mapping[str, ManifestsTag] = MappingProxyType(
    {
        "v1.10.0": ManifestsTag(
            "v1.10.0", "c1ae849873a36199af43c4e14d113bd60fc695d7", "apps", "common/istio-1-24", _V1_10_0_EXAMPLE
        ),
        # Same layout as v1.10.0 (research: "v1.10.0 and v1.10.1 use apps/ ... common/istio-1-24/");
        # example resources assumed equal to v1.10.0's (see the module docstring).
        "v1.10.1": ManifestsTag("v1.10.1", "e636e839f", "apps", "common/istio-1-24", _V1_10_0_EXAMPLE),
        "v1.10.2": ManifestsTag(
            "v1.10.2",
            "d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39",
            "applications",
            "common/istio",
            _example("applications", "common/istio", "profiles/pss", spark=True),
        ),
    }
)

SUPPORTED_TAGS: tuple[str, ...] = tuple(sorted(MANIFESTS_TAGS))

# --------------------------------------------------------------------------------------------
# Named components of the example install
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KubeflowComponent:
    """A named group of example resources that is switched on or off as one piece."""

    name: str
    description: str
    required: bool
    requires: tuple[str, ...] = ()
    """Other components that must be enabled with this one (it does not work without them)."""


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


def tag_components(tag: str) -> tuple[str, ...]:
    """Component names the example of ``tag`` lists, in upstream order (cert-manager included)."""
    seen: dict[str, None] = {}
    for name, _path in MANIFESTS_TAGS[tag].example_resources:
        seen.setdefault(name, None)
    return tuple(seen)


def component_paths(tag: str, component: str) -> tuple[str, ...]:
    """Upstream paths (relative to the repository root) of one component at ``tag``."""
    return tuple(path for name, path in MANIFESTS_TAGS[tag].example_resources if name == component)


# --------------------------------------------------------------------------------------------
# sortOptions of example/kustomization.yaml (identical in v1.10.0 and v1.10.2)
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Public defaults that must never reach a cluster (policies detect them by value)
# --------------------------------------------------------------------------------------------

DEFAULT_USER_EMAIL = "user@example.com"
DEFAULT_USERNAME = "user"
DEFAULT_USER_ID = "15841185641784"
DEFAULT_PASSWORD = "12341234"
# common/dex/base/dex-passwords.yaml; bcrypt.checkpw(b"12341234", hash) is True.
DEFAULT_PASSWORD_HASH = "$2y$12$4K/VkmDd1q1Orb3xAt82zu8gk7Ad6ReFR4LCP9UeYE90NLiN9Df72"
# common/dex/base/secret_params.env and the oauth2-proxy secretGenerator (same value in both).
OIDC_CLIENT_ID = "kubeflow-oidc-authservice"
DEFAULT_OIDC_CLIENT_SECRET = "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok"
# common/oauth2-proxy/base/kustomization.yaml secretGenerator literal cookie-secret.
DEFAULT_COOKIE_SECRET = "7d16fee92f8d11b8940b081b3f8b8acb"

PUBLIC_DEFAULT_SECRET_VALUES: tuple[str, ...] = (
    DEFAULT_PASSWORD_HASH,
    DEFAULT_OIDC_CLIENT_SECRET,
    DEFAULT_COOKIE_SECRET,
)
"""Secret values published in kubeflow/manifests: a policy rejects any Secret that carries one."""


@dataclass(frozen=True)
class PublicCredential:
    """A credential kubeflow/manifests ships with a public value, at one key of one Secret.

    Too short or common to refuse anywhere by value alone (``test``, an empty password), so the
    policy refuses it where upstream puts it: a Secret of this name (kustomize may append a hash)
    whose key holds this value.
    """

    secret: str
    key: str
    value: str
    what: str
    source: str


# At tag v1.10.2 (d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39); all three Secrets land in namespace kubeflow.
PUBLIC_DEFAULT_CREDENTIALS: tuple[PublicCredential, ...] = (
    PublicCredential(
        "katib-mysql-secrets",
        "MYSQL_ROOT_PASSWORD",
        "test",
        "Katib's MySQL root password",
        "applications/katib/upstream/components/mysql/secret.yaml",
    ),
    PublicCredential(
        "mlpipeline-minio-artifact",
        "accesskey",
        "minio",
        "the Pipelines MinIO access key",
        "applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml",
    ),
    PublicCredential(
        "mlpipeline-minio-artifact",
        "secretkey",
        "minio123",
        "the Pipelines MinIO secret key",
        "applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml",
    ),
    PublicCredential(
        "mysql-secret",
        "password",
        "",
        "the Pipelines MySQL password (user root, empty password)",
        "applications/pipeline/upstream/base/installs/generic/mysql-secret.yaml",
    ),
)
"""Credentials kubeflow/manifests publishes at known keys: a policy rejects a Secret that keeps one."""


# --------------------------------------------------------------------------------------------
# Objects the overlay replaces
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplacedSecret:
    """An upstream Secret holding a public default, which the overlay deletes.

    The Pulumi program creates a Secret of the same namespace, name and keys from Pulumi secrets,
    so the consumers (dex's envFrom, oauth2-proxy's secretKeyRef) find it unchanged.
    """

    namespace: str
    name: str
    keys: Mapping[str, str]
    """key -> what the value is and how to make it."""
    source: str
    generated_with_hash: bool
    """Upstream makes it with a secretGenerator that appends a content hash. Deleting it in the
    overlay (before kustomize adds hashes at the top level) leaves the consumers pointing at the
    plain name, which is the name the program uses."""


DEX_PASSWORDS = ReplacedSecret(
    namespace="auth",
    name="dex-passwords",
    keys=MappingProxyType(
        {
            "DEX_USER_PASSWORD": "bcrypt hash ($2y$/$2b$, cost 10..16) of the dex user's password; "
            "make it with `python -m components.kubeflow.hash_password`",
        }
    ),
    source="common/dex/base/dex-passwords.yaml",
    generated_with_hash=False,
)
DEX_OIDC_CLIENT = ReplacedSecret(
    namespace="auth",
    name="dex-oidc-client",
    keys=MappingProxyType(
        {
            "OIDC_CLIENT_ID": f"the OIDC client id, {OIDC_CLIENT_ID!r} (not secret, must equal oauth2-proxy client-id)",
            "OIDC_CLIENT_SECRET": "the OIDC client secret, random; must equal oauth2-proxy client-secret",
        }
    ),
    source="common/dex/base/kustomization.yaml (secretGenerator, disableNameSuffixHash: true)",
    generated_with_hash=False,
)
OAUTH2_PROXY_SECRET = ReplacedSecret(
    namespace="oauth2-proxy",
    name="oauth2-proxy",
    keys=MappingProxyType(
        {
            "client-id": f"the OIDC client id, {OIDC_CLIENT_ID!r}",
            "client-secret": "the OIDC client secret, the same value as dex-oidc-client OIDC_CLIENT_SECRET",
            "cookie-secret": "cookie encryption key: exactly 16, 24 or 32 bytes (e.g. 32 random "
            "alphanumeric characters)",
        }
    ),
    source="common/oauth2-proxy/base/kustomization.yaml (secretGenerator, name hash suffix)",
    generated_with_hash=True,
)
REPLACED_SECRETS: tuple[ReplacedSecret, ...] = (DEX_PASSWORDS, DEX_OIDC_CLIENT, OAUTH2_PROXY_SECRET)

# The dex ConfigMap: no secret in it, the hash comes from env DEX_USER_PASSWORD (dex-passwords).
DEX_NAMESPACE = "auth"
DEX_CONFIGMAP = "dex"
DEX_CONFIG_KEY = "config.yaml"
# common/dex/overlays/oauth2-proxy/config-map.yaml data["config.yaml"] at v1.10.2 (the v1.10.0
# file differs only by one comment line). The overlay replaces the whole value (a strategic merge
# patch cannot edit inside a string), so it writes this text with the user's email/username.
# The in-cluster issuer of upstream's dex (the first line of its config).
DEX_ISSUER = "http://dex.auth.svc.cluster.local:5556/dex"
UPSTREAM_DEX_CONFIG_YAML = f"""\
issuer: {DEX_ISSUER}
storage:
  type: kubernetes
  config:
    inCluster: true
web:
  http: 0.0.0.0:5556
logger:
  level: "debug"
  format: text
oauth2:
  skipApprovalScreen: true
enablePasswordDB: true
staticPasswords:
- email: user@example.com
  hashFromEnv: DEX_USER_PASSWORD
  username: user
  userID: "15841185641784"
staticClients:
# https://github.com/dexidp/dex/pull/1664
- idEnv: OIDC_CLIENT_ID
  redirectURIs: ["/oauth2/callback"]
  name: 'Dex Login Application'
  secretEnv: OIDC_CLIENT_SECRET
"""

# oauth2-proxy parameters (configMapGenerator, hashed): FORCE_HTTPS drives --cookie-secure.
OAUTH2_PROXY_NAMESPACE = "oauth2-proxy"
OAUTH2_PROXY_PARAMETERS_CONFIGMAP = "oauth2-proxy-parameters"

# common/user-namespace/base: the example Profile and the generated ConfigMap it is filled from.
USER_PROFILE_NAME = "kubeflow-user-example-com"
USER_NAMESPACE_CONFIGMAP = "default-install-config"
