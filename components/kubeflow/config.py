"""Config model of the Kubeflow 1.10 install (``kubeflow`` in the stack file).

Secrets never sit in this model: ``dex.passwordHashSecret`` and ``oidcClientSecretKey`` name
secret config keys (``pulumi config set --secret``), read with ``require_secret``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pydantic import Field

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path
from components.catalog import kubeflow_manifests as km
from components.catalog.kubernetes import dns_label_problem
from components.catalog.upstream import KUBEFLOW_MANIFESTS
from components.kubeflow.overlay import KubeflowOverlayError, KubeflowOverlaySpec

_SECRET_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


class DexConfig(ConfigModel):
    """The static dex user that logs in first (real identity providers come later, via dex connectors)."""

    email: str
    username: str | None = None
    password_hash_secret: str = Field(
        default="kubeflowDexPasswordHash",
        description="secret config key holding a bcrypt hash (python -m components.kubeflow.hash_password)",
    )


class TlsConfig(ConfigModel):
    """TLS for the Ingress: an existing Secret, or one cert-manager issues from a ClusterIssuer."""

    secret_name: str = "kubeflow-tls"
    cluster_issuer: str | None = None


class IngressConfig(ConfigModel):
    """The public entry point: an Ingress to istio-ingressgateway, HTTPS only."""

    host: str
    class_name: str = "nginx"
    tls: TlsConfig


class ProfileConfig(ConfigModel):
    """A Kubeflow Profile (a team namespace) and its quota."""

    name: str
    owner: str
    resource_quota: dict[str, str] = Field(default_factory=dict)


class KubeflowConfig(ConfigModel):
    """Kubeflow from the pinned kubeflow/manifests tree through a generated overlay."""

    enabled: bool = True
    manifests_path: str = Field(
        default=KUBEFLOW_MANIFESTS.path,
        description="the kubeflow/manifests tree, relative to the project (make upstream puts it there); "
        "checked against the pinned content digest",
    )
    tag: str = Field(default=km.DEFAULT_TAG, description="must be the pinned version")
    components: list[str] | None = None
    install_cert_manager: bool = True
    dex: DexConfig
    oidc_client_secret_key: str | None = Field(
        default=None, description="secret config key of the OIDC client secret; default: generated and kept secret"
    )
    ingress: IngressConfig
    profiles: list[ProfileConfig] = Field(default_factory=list)
    await_timeout_seconds: int = Field(
        default=900,
        ge=60,
        description="how long pulumi up waits for each Kubeflow object to become ready (create and update)",
    )

    def overlay_spec(self) -> KubeflowOverlaySpec:
        """The overlay generator's spec (raises KubeflowOverlayError for a bad config)."""
        return KubeflowOverlaySpec(
            manifests_path=self.manifests_path,
            tag=self.tag,
            components=tuple(self.components) if self.components is not None else None,
            install_cert_manager=self.install_cert_manager,
            dex_user_email=self.dex.email,
            dex_username=self.dex.username,
            ingress_host=self.ingress.host,
        )

    def secret_keys(self) -> set[str]:
        """Secret config keys this section names."""
        keys = {self.dex.password_hash_secret}
        if self.oidc_client_secret_key:
            keys.add(self.oidc_client_secret_key)
        return keys

    def problems(self, path: str) -> Iterator[Problem]:
        """Overlay refusals mapped to their config keys, plus names and keys."""
        try:
            self.overlay_spec()
        except KubeflowOverlayError as error:
            yield Problem(join_path(path, _key_of(str(error))), str(error))
        for key in sorted(self.secret_keys()):
            if not _SECRET_KEY.match(key):
                yield Problem(path, f"secret config key name {key!r} must start with a letter")
        seen: set[str] = set()
        for index, profile in enumerate(self.profiles):
            problem = dns_label_problem(profile.name)
            if problem:
                yield Problem(join_path(path, "profiles", index, "name"), problem)
            if profile.name in seen:
                yield Problem(join_path(path, "profiles", index, "name"), f"profile {profile.name!r} is listed twice")
            seen.add(profile.name)


_KEYS: tuple[tuple[str, str], ...] = (
    ("tag", "tag"),
    ("dex_user_email", "dex.email"),
    ("dex_username", "dex.username"),
    ("ingress_host", "ingress.host"),
    ("manifests_path", "manifestsPath"),
    ("component", "components"),
)


def _key_of(message: str) -> str:
    """The config key an overlay error is about (the generator names its own fields)."""
    for word, key in _KEYS:
        if word in message:
            return key
    return "components"
