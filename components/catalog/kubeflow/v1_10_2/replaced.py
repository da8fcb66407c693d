"""kubeflow/manifests v1.10.2: the Secrets the overlay replaces, their Namespaces, and who reads them.

Sources (tag v1.10.2): ``common/dex/base/`` (``kustomization.yaml``, ``dex-passwords.yaml``,
``deployment.yaml`` envFrom ``dex-oidc-client`` and ``dex-passwords``, ``namespace.yaml``),
``common/oauth2-proxy/base/`` (``kustomization.yaml`` secretGenerator ``oauth2-proxy``,
``deployment.yaml``, ``namespace.yaml``), ``common/kubeflow-namespace/base/namespace.yaml``,
``applications/katib/upstream/components/`` (``mysql/secret.yaml``, ``mysql/mysql.yaml``,
``db-manager/db-manager.yaml``), ``applications/pipeline/upstream/`` (``base/installs/generic/mysql-secret.yaml``,
``third-party/mysql/base/mysql-deployment.yaml``, ``third-party/minio/base/``, ``base/pipeline/*-deployment.yaml``,
``base/cache/cache-deployment.yaml``, ``base/metadata/base/metadata-grpc-deployment.yaml``,
``third-party/argo/base/workflow-controller-configmap-patch.yaml``,
``base/installs/multi-user/pipelines-profile-controller/``).
"""

from __future__ import annotations

from types import MappingProxyType

from components.catalog.kubeflow.model import ReplacedSecret, SecretConsumer, SecretNamespace
from components.catalog.kubeflow.v1_10_2.credentials import OIDC_CLIENT_ID, PIPELINES_MYSQL_USER

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
