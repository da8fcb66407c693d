"""Facts about kubeflow/manifests v1.10.2: layout, the example install and its public defaults.

Upstream installs Kubeflow with ``kustomize build example | kubectl apply``. That example ships a
static dex user (``user@example.com`` / ``12341234``), a public OIDC client secret, a public
oauth2-proxy cookie secret, Katib's MySQL root password ``test``, Pipelines' MinIO keys
``minio``/``minio123`` and Pipelines' MySQL ``root`` with an empty password, and always installs
cert-manager. gpu-platform generates its own overlay over the pinned tree instead
(``components/kubeflow/overlay.py``); this module holds the facts that overlay, the Kubeflow component
and the CrossGuard policies need, written once.

Only the version pinned in ``components.catalog.upstream`` (``KUBEFLOW_MANIFESTS``, by content
digest) is supported: the tests render that real tree, and an unpinned tree cannot be verified.

Sources (github.com/kubeflow/manifests, Apache-2.0, tag v1.10.2, commit
d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39; paths relative to the repository root):
- ``example/kustomization.yaml``: the resources, their order and ``sortOptions``.
- ``common/dex/base/kustomization.yaml``, ``common/dex/base/dex-passwords.yaml``,
  ``common/dex/base/secret_params.env``, ``common/dex/overlays/oauth2-proxy/config-map.yaml``,
  ``common/dex/base/deployment.yaml`` (envFrom ``dex-oidc-client`` and ``dex-passwords``),
  ``common/dex/base/namespace.yaml``.
- ``common/oauth2-proxy/base/kustomization.yaml`` (secretGenerator ``oauth2-proxy``,
  configMapGenerator ``oauth2-proxy-parameters``), ``common/oauth2-proxy/base/deployment.yaml``
  (env from secretKeyRef ``oauth2-proxy``: client-id, client-secret, cookie-secret),
  ``common/oauth2-proxy/base/namespace.yaml``.
- ``common/kubeflow-namespace/base/namespace.yaml``.
- ``applications/katib/upstream/components/mysql/secret.yaml`` and ``mysql.yaml``,
  ``applications/katib/upstream/components/db-manager/db-manager.yaml``.
- ``applications/pipeline/upstream/base/installs/generic/mysql-secret.yaml``,
  ``applications/pipeline/upstream/third-party/mysql/base/mysql-deployment.yaml``,
  ``applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml`` and
  ``minio-deployment.yaml``, ``applications/pipeline/upstream/base/pipeline/*-deployment.yaml``,
  ``applications/pipeline/upstream/base/cache/cache-deployment.yaml``,
  ``applications/pipeline/upstream/base/metadata/base/metadata-grpc-deployment.yaml``,
  ``applications/pipeline/upstream/third-party/argo/base/workflow-controller-configmap-patch.yaml``,
  ``applications/pipeline/upstream/base/installs/multi-user/pipelines-profile-controller/``
  (``deployment.yaml``, ``sync.py``, ``decorator-controller.yaml``).
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

from components.catalog.upstream import KUBEFLOW_MANIFESTS

# --------------------------------------------------------------------------------------------
# The pinned tag and its layout
# --------------------------------------------------------------------------------------------

DEFAULT_TAG = KUBEFLOW_MANIFESTS.version


@dataclass(frozen=True)
class ManifestsTag:
    """The supported tag of kubeflow/manifests and where its directories are.

    The path layout changed inside the 1.10 line (v1.10.0 and v1.10.1 keep applications under
    ``apps/`` and Istio under ``common/istio-1-24/``; v1.10.2 moved them to ``applications/`` and
    ``common/istio/``), so a program that pins "1.10" must know the exact tag.
    """

    tag: str
    commit: str
    applications_dir: str
    istio_dir: str
    example_resources: tuple[tuple[str, str], ...]
    """``(component name, path)`` for every line of ``example/kustomization.yaml`` ``resources``,
    in upstream order, paths relative to the repository root."""


_V1_10_2_EXAMPLE: tuple[tuple[str, str], ...] = (
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

MANIFESTS_TAGS: Mapping[str, ManifestsTag] = MappingProxyType(
    {
        DEFAULT_TAG: ManifestsTag(
            DEFAULT_TAG,
            "d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39",
            "applications",
            "common/istio",
            _V1_10_2_EXAMPLE,
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
# applications/katib/upstream/components/mysql/secret.yaml: data MYSQL_ROOT_PASSWORD "dGVzdA==".
DEFAULT_KATIB_MYSQL_ROOT_PASSWORD = "test"
# applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml.
DEFAULT_MINIO_ACCESS_KEY = "minio"
DEFAULT_MINIO_SECRET_KEY = "minio123"
# applications/pipeline/upstream/base/installs/generic/mysql-secret.yaml; the server allows it with
# MYSQL_ALLOW_EMPTY_PASSWORD=true (applications/pipeline/upstream/third-party/mysql/base/mysql-deployment.yaml).
PIPELINES_MYSQL_USER = "root"
DEFAULT_PIPELINES_MYSQL_PASSWORD = ""

PUBLIC_DEFAULT_SECRET_VALUES: tuple[str, ...] = (
    DEFAULT_PASSWORD_HASH,
    DEFAULT_OIDC_CLIENT_SECRET,
    DEFAULT_COOKIE_SECRET,
)
"""Distinctive secret values published in kubeflow/manifests: a policy rejects any Secret that
carries one. The short ones (``test``, ``minio``, an empty password) are in
``PUBLIC_DEFAULT_CREDENTIALS`` with the Secret and key they belong to: as bare values they would also
match unrelated Secrets."""


@dataclass(frozen=True)
class PublicDefault:
    """One credential upstream ships with a value anyone can read, and where it is."""

    namespace: str
    secret: str
    key: str
    value: str
    source: str
    what: str = "a credential"  #: how a policy message names it


PUBLIC_DEFAULT_CREDENTIALS: tuple[PublicDefault, ...] = (
    PublicDefault(
        "auth",
        "dex-passwords",
        "DEX_USER_PASSWORD",
        DEFAULT_PASSWORD_HASH,
        "common/dex/base/dex-passwords.yaml",
        what="the dex user's password hash (of 12341234)",
    ),
    PublicDefault(
        "auth",
        "dex-oidc-client",
        "OIDC_CLIENT_SECRET",
        DEFAULT_OIDC_CLIENT_SECRET,
        "common/dex/base/secret_params.env",
        what="the OIDC client secret",
    ),
    PublicDefault(
        "oauth2-proxy",
        "oauth2-proxy",
        "client-secret",
        DEFAULT_OIDC_CLIENT_SECRET,
        "common/oauth2-proxy/base/kustomization.yaml",
        what="oauth2-proxy's OIDC client secret",
    ),
    PublicDefault(
        "oauth2-proxy",
        "oauth2-proxy",
        "cookie-secret",
        DEFAULT_COOKIE_SECRET,
        "common/oauth2-proxy/base/kustomization.yaml",
        what="oauth2-proxy's cookie secret",
    ),
    PublicDefault(
        "kubeflow",
        "katib-mysql-secrets",
        "MYSQL_ROOT_PASSWORD",
        DEFAULT_KATIB_MYSQL_ROOT_PASSWORD,
        "applications/katib/upstream/components/mysql/secret.yaml",
        what="Katib's MySQL root password",
    ),
    PublicDefault(
        "kubeflow",
        "mlpipeline-minio-artifact",
        "accesskey",
        DEFAULT_MINIO_ACCESS_KEY,
        "applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml",
        what="the Pipelines MinIO access key",
    ),
    PublicDefault(
        "kubeflow",
        "mlpipeline-minio-artifact",
        "secretkey",
        DEFAULT_MINIO_SECRET_KEY,
        "applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml",
        what="the Pipelines MinIO secret key",
    ),
    PublicDefault(
        "kubeflow",
        "mysql-secret",
        "password",
        DEFAULT_PIPELINES_MYSQL_PASSWORD,
        "applications/pipeline/upstream/base/installs/generic/mysql-secret.yaml",
        what="the Pipelines MySQL password (user root, empty password)",
    ),
)
"""Every credential of the v1.10.2 example with a published value (found by rendering the example
and reading every Secret, and by grepping the tree for the values)."""

# Limits of the programs that read the generated values.
OAUTH2_PROXY_COOKIE_SECRET_BYTES: tuple[int, ...] = (16, 24, 32)
"""oauth2-proxy refuses a cookie secret of another length (AES-128/192/256; oauth2-proxy docs,
"Generating a Cookie Secret")."""
MINIO_ACCESS_KEY_LENGTH = 20
MINIO_SECRET_KEY_LENGTH = 40
"""The lengths MinIO generates itself (``accessKeyMaxLen``/``secretKeyMaxLen`` in MinIO's
``pkg/auth/credentials.go``); it requires at least 3 and 8 characters. Pipelines runs
``gcr.io/ml-pipeline/minio:RELEASE.2019-08-14T20-37-41Z-license-compliance``."""


# --------------------------------------------------------------------------------------------
# Objects the overlay replaces
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplacedSecret:
    """An upstream Secret holding a public default, which the overlay deletes.

    The Pulumi program creates a Secret of the same namespace, name and keys from Pulumi secrets,
    so the consumers (envFrom, secretKeyRef, the artifact repository config) find it unchanged.
    """

    namespace: str
    name: str
    component: str
    """The example component that ships it: the Secret exists (and is replaced) only when it is enabled."""
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
    component="dex",
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
    component="dex",
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
    component="oauth2-proxy",
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
KATIB_MYSQL_SECRET = ReplacedSecret(
    namespace="kubeflow",
    name="katib-mysql-secrets",
    component="katib",
    keys=MappingProxyType(
        {"MYSQL_ROOT_PASSWORD": "root password of Katib's MySQL (katib-mysql) and Katib's DB manager's DB_PASSWORD"}
    ),
    source="applications/katib/upstream/components/mysql/secret.yaml",
    generated_with_hash=False,
)
PIPELINES_MYSQL_SECRET = ReplacedSecret(
    namespace="kubeflow",
    name="mysql-secret",
    component="pipelines",
    keys=MappingProxyType(
        {
            "username": f"the MySQL user of Pipelines, {PIPELINES_MYSQL_USER!r} (not secret)",
            "password": "root password of Pipelines' MySQL (the overlay makes the server read it as "
            "MYSQL_ROOT_PASSWORD); the API server, the cache server and the metadata server log in with it",
        }
    ),
    source="applications/pipeline/upstream/base/installs/generic/mysql-secret.yaml",
    generated_with_hash=False,
)
PIPELINES_MINIO_SECRET = ReplacedSecret(
    namespace="kubeflow",
    name="mlpipeline-minio-artifact",
    component="pipelines",
    keys=MappingProxyType(
        {
            "accesskey": "MinIO access key (the server's MINIO_ACCESS_KEY and every client's)",
            "secretkey": "MinIO secret key (the server's MINIO_SECRET_KEY and every client's)",
        }
    ),
    source="applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml",
    generated_with_hash=False,
)
REPLACED_SECRETS: tuple[ReplacedSecret, ...] = (
    DEX_PASSWORDS,
    DEX_OIDC_CLIENT,
    OAUTH2_PROXY_SECRET,
    KATIB_MYSQL_SECRET,
    PIPELINES_MYSQL_SECRET,
    PIPELINES_MINIO_SECRET,
)


@dataclass(frozen=True)
class SecretNamespace:
    """An upstream Namespace that holds a replaced Secret, with its labels as upstream writes them.

    The program creates these Namespaces itself (and the overlay deletes upstream's), so that its
    Secrets exist before the Kubeflow workloads that read them start.
    """

    name: str
    component: str
    labels: Mapping[str, str]
    source: str


SECRET_NAMESPACES: tuple[SecretNamespace, ...] = (
    SecretNamespace(
        "auth",
        "dex",
        MappingProxyType({"pod-security.kubernetes.io/enforce": "restricted"}),
        "common/dex/base/namespace.yaml",
    ),
    SecretNamespace(
        "kubeflow",
        "kubeflow-namespace",
        MappingProxyType(
            {
                "control-plane": "kubeflow",
                "istio-injection": "enabled",
                "pod-security.kubernetes.io/enforce": "baseline",
            }
        ),
        "common/kubeflow-namespace/base/namespace.yaml",
    ),
    SecretNamespace(
        "oauth2-proxy",
        "oauth2-proxy",
        MappingProxyType({"pod-security.kubernetes.io/enforce": "restricted"}),
        "common/oauth2-proxy/base/namespace.yaml",
    ),
)


@dataclass(frozen=True)
class SecretConsumer:
    """A container that reads a replaced Secret: one env variable (secretKeyRef) or all of it (envFrom)."""

    namespace: str
    deployment: str
    container: str
    variable: str | None
    """The env variable; None for ``envFrom`` (every key of the Secret)."""
    secret: str
    key: str | None
    source: str


_KFP = "applications/pipeline/upstream"
SECRET_CONSUMERS: tuple[SecretConsumer, ...] = (
    SecretConsumer("auth", "dex", "dex", None, "dex-oidc-client", None, "common/dex/base/deployment.yaml"),
    SecretConsumer("auth", "dex", "dex", None, "dex-passwords", None, "common/dex/base/deployment.yaml"),
    *(
        SecretConsumer(
            "oauth2-proxy",
            "oauth2-proxy",
            "oauth2-proxy",
            variable,
            "oauth2-proxy",
            key,
            "common/oauth2-proxy/base/deployment.yaml",
        )
        for variable, key in (
            ("OAUTH2_PROXY_CLIENT_ID", "client-id"),
            ("OAUTH2_PROXY_CLIENT_SECRET", "client-secret"),
            ("OAUTH2_PROXY_COOKIE_SECRET", "cookie-secret"),
        )
    ),
    SecretConsumer(
        "kubeflow",
        "katib-mysql",
        "katib-mysql",
        "MYSQL_ROOT_PASSWORD",
        "katib-mysql-secrets",
        "MYSQL_ROOT_PASSWORD",
        "applications/katib/upstream/components/mysql/mysql.yaml",
    ),
    SecretConsumer(
        "kubeflow",
        "katib-db-manager",
        "katib-db-manager",
        "DB_PASSWORD",
        "katib-mysql-secrets",
        "MYSQL_ROOT_PASSWORD",
        "applications/katib/upstream/components/db-manager/db-manager.yaml",
    ),
    *(
        SecretConsumer("kubeflow", deployment, container, variable, "mysql-secret", key, f"{_KFP}/{source}")
        for deployment, container, variable, key, source in (
            (
                "ml-pipeline",
                "ml-pipeline-api-server",
                "DBCONFIG_USER",
                "username",
                "base/pipeline/ml-pipeline-apiserver-deployment.yaml",
            ),
            (
                "ml-pipeline",
                "ml-pipeline-api-server",
                "DBCONFIG_PASSWORD",
                "password",
                "base/pipeline/ml-pipeline-apiserver-deployment.yaml",
            ),
            (
                "ml-pipeline",
                "ml-pipeline-api-server",
                "DBCONFIG_MYSQLCONFIG_USER",
                "username",
                "base/pipeline/ml-pipeline-apiserver-deployment.yaml",
            ),
            (
                "ml-pipeline",
                "ml-pipeline-api-server",
                "DBCONFIG_MYSQLCONFIG_PASSWORD",
                "password",
                "base/pipeline/ml-pipeline-apiserver-deployment.yaml",
            ),
            ("cache-server", "server", "DBCONFIG_USER", "username", "base/cache/cache-deployment.yaml"),
            ("cache-server", "server", "DBCONFIG_PASSWORD", "password", "base/cache/cache-deployment.yaml"),
            (
                "metadata-grpc-deployment",
                "container",
                "DBCONFIG_USER",
                "username",
                "base/metadata/base/metadata-grpc-deployment.yaml",
            ),
            (
                "metadata-grpc-deployment",
                "container",
                "DBCONFIG_PASSWORD",
                "password",
                "base/metadata/base/metadata-grpc-deployment.yaml",
            ),
        )
    ),
    *(
        SecretConsumer(
            "kubeflow", deployment, container, variable, "mlpipeline-minio-artifact", key, f"{_KFP}/{source}"
        )
        for deployment, container, variable, key, source in (
            ("minio", "minio", "MINIO_ACCESS_KEY", "accesskey", "third-party/minio/base/minio-deployment.yaml"),
            ("minio", "minio", "MINIO_SECRET_KEY", "secretkey", "third-party/minio/base/minio-deployment.yaml"),
            (
                "ml-pipeline",
                "ml-pipeline-api-server",
                "OBJECTSTORECONFIG_ACCESSKEY",
                "accesskey",
                "base/pipeline/ml-pipeline-apiserver-deployment.yaml",
            ),
            (
                "ml-pipeline",
                "ml-pipeline-api-server",
                "OBJECTSTORECONFIG_SECRETACCESSKEY",
                "secretkey",
                "base/pipeline/ml-pipeline-apiserver-deployment.yaml",
            ),
            (
                "ml-pipeline-ui",
                "ml-pipeline-ui",
                "MINIO_ACCESS_KEY",
                "accesskey",
                "base/pipeline/ml-pipeline-ui-deployment.yaml",
            ),
            (
                "ml-pipeline-ui",
                "ml-pipeline-ui",
                "MINIO_SECRET_KEY",
                "secretkey",
                "base/pipeline/ml-pipeline-ui-deployment.yaml",
            ),
            (
                "kubeflow-pipelines-profile-controller",
                "profile-controller",
                "MINIO_ACCESS_KEY",
                "accesskey",
                "base/installs/multi-user/pipelines-profile-controller/deployment.yaml",
            ),
            (
                "kubeflow-pipelines-profile-controller",
                "profile-controller",
                "MINIO_SECRET_KEY",
                "secretkey",
                "base/installs/multi-user/pipelines-profile-controller/deployment.yaml",
            ),
        )
    ),
)
"""Every container of the v1.10.2 example that reads a replaced Secret (the tests derive the same
list from the real render). Pipelines' own MySQL server is not here: upstream runs it with
``MYSQL_ALLOW_EMPTY_PASSWORD`` and no password at all; the overlay makes it read ``mysql-secret``."""

# Pipelines' MySQL server and Katib's, and the MySQL image's variables (hub.docker.com/_/mysql,
# "Environment Variables": MYSQL_ROOT_PASSWORD sets root's password when the data directory is
# initialised; MYSQL_ALLOW_EMPTY_PASSWORD=yes|true allows root without one).
PIPELINES_MYSQL = ("kubeflow", "mysql", "mysql")
KATIB_MYSQL = ("kubeflow", "katib-mysql", "katib-mysql")
MYSQL_ROOT_PASSWORD_ENV = "MYSQL_ROOT_PASSWORD"
MYSQL_ALLOW_EMPTY_PASSWORD_ENV = "MYSQL_ALLOW_EMPTY_PASSWORD"

# The Pipelines profile controller (a metacontroller DecoratorController over namespaces labelled
# pipelines.kubeflow.org/enabled=true, which the Profiles controller puts on every profile namespace,
# applications/profiles/pss/namespace-labels.yaml) writes a Secret of this name into each profile
# namespace, with the keys read from its own MINIO_ACCESS_KEY/MINIO_SECRET_KEY env (sync.py). Its
# Secret attachments use updateStrategy OnDelete (decorator-controller.yaml): a copy is rewritten
# only after it is deleted. Argo's artifactRepository (workflow-controller-configmap) names the
# Secret and keys; Argo resolves them in the workflow's (profile) namespace.
PROFILE_CONTROLLER_CONFIGMAP_PREFIX = "kubeflow-pipelines-profile-controller-code"
PROFILE_CONTROLLER_SCRIPT = "sync.py"
WORKFLOW_CONTROLLER_CONFIGMAP = "workflow-controller-configmap"

# --------------------------------------------------------------------------------------------
# Admission webhooks and the Deployments that serve them
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebhookServer:
    """A webhook configuration of the example and the Deployment behind its Service."""

    kind: str
    """``ValidatingWebhookConfiguration`` or ``MutatingWebhookConfiguration``."""
    name: str
    component: str
    namespace: str
    deployment: str


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


#: The namespaces the v1.10.2 install creates (cert-manager's only when the program installs it).
KUBEFLOW_SYSTEM_NAMESPACES: tuple[str, ...] = ("auth", "istio-system", "knative-serving", "kubeflow", "oauth2-proxy")
CERT_MANAGER_NAMESPACE = "cert-manager"


# --------------------------------------------------------------------------------------------
# The notebook spawner (jupyter-web-app) and PodDefaults
# --------------------------------------------------------------------------------------------

#: The spawner form's config in the tree. ``applications/jupyter/jupyter-web-app/upstream/base/kustomization.yaml``
#: builds it into the ConfigMap ``config`` (``configMapGenerator``, ``files: [configs/spawner_ui_config.yaml]``),
#: ``namePrefix: jupyter-web-app-``, namespace ``kubeflow``, so the rendered name is
#: ``jupyter-web-app-config-<hash>``; the Deployment mounts it at ``/etc/config``. The jupyter-web-app backend
#: reads ``/etc/config/spawner_ui_config.yaml`` (kubeflow/kubeflow v1.10
#: ``components/crud-web-apps/jupyter/backend/apps/common/utils.py`` ``CONFIGS``) and takes the GPU dropdown from
#: ``spawnerFormDefaults.gpus.value.vendors`` (``limitsKey``: the resource set as the container's limit,
#: ``uiName``: the label; ``form.py`` ``set_notebook_gpus``), the node-affinity dropdown from
#: ``affinityConfig.options`` (``configKey``, ``displayName``, ``affinity``; ``set_notebook_affinity``).
SPAWNER_COMPONENT = "jupyter"  #: the component (COMPONENTS) holding the jupyter-web-app
SPAWNER_CONFIG_PATH = "applications/jupyter/jupyter-web-app/upstream/base/configs/spawner_ui_config.yaml"
SPAWNER_CONFIGMAP = "jupyter-web-app-config"  #: the generator's name after namePrefix, before the hash
SPAWNER_NAMESPACE = "kubeflow"
SPAWNER_CONFIG_KEY = "spawner_ui_config.yaml"  #: the ConfigMap key (the generated file's name)
#: Upstream's NVIDIA entry of ``gpus.value.vendors``, exactly as the v1.10.2 file spells it (6-space indent).
SPAWNER_NVIDIA_VENDOR_TEXT = '      - limitsKey: "nvidia.com/gpu"\n        uiName: "NVIDIA"\n'
#: Upstream's empty ``affinityConfig.options`` with the comment line before it (unique in the v1.10.2 file).
SPAWNER_AFFINITY_OPTIONS_TEXT = "    # the list of available affinity configs in the dropdown\n    options: []\n"

#: The PodDefault CRD (``applications/admission-webhook/upstream/base/crd.yaml``, ``poddefaults.kubeflow.org``,
#: served and stored as v1alpha1). Its spec has ``selector`` (required), ``desc``, ``tolerations``, env,
#: volumes, labels, annotations and the like, but no ``nodeSelector`` and no ``affinity``: a PodDefault can
#: carry a pool's tolerations, not its node selection. The spawner lists a namespace's PodDefaults by
#: ``desc`` and, for each one ticked, sets the label of its ``selector.matchLabels`` to ``"true"`` on the
#: Notebook (``form.py`` ``set_notebook_configurations``), which the admission webhook matches on the pod.
PODDEFAULT_CRD_PATH = "applications/admission-webhook/upstream/base/crd.yaml"
PODDEFAULT_API_VERSION = "kubeflow.org/v1alpha1"
PODDEFAULT_KIND = "PodDefault"
