"""kubeflow/manifests v1.10.2: the credentials it publishes, and the limits of the programs reading their replacements.

The example ships a static dex user (``user@example.com`` / ``12341234``), a public OIDC client
secret, a public oauth2-proxy cookie secret, Katib's MySQL root password ``test``, Pipelines' MinIO
keys ``minio``/``minio123`` and Pipelines' MySQL ``root`` with an empty password. Policies detect
them by value; the overlay replaces them (``replaced``). Sources, tag v1.10.2: ``common/dex/base/``
(``dex-passwords.yaml``, ``secret_params.env``), ``common/oauth2-proxy/base/kustomization.yaml``,
``applications/katib/upstream/components/mysql/secret.yaml``,
``applications/pipeline/upstream/third-party/minio/base/mlpipeline-minio-artifact-secret.yaml``,
``applications/pipeline/upstream/base/installs/generic/mysql-secret.yaml``; README v1.10.x "Change
Default User Password".
"""

from __future__ import annotations

from components.catalog.kubeflow.model import PublicDefault

DEFAULT_USER_EMAIL = "user@example.com"
DEFAULT_USERNAME = "user"
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
