"""Config model of the Kubeflow 1.10 install (``kubeflow`` in the stack file), and every check of its values.

Secrets never sit in this model: ``dex.passwordHashSecret`` and ``oidcClientSecretKey`` name
secret config keys (``pulumi config set --secret``), read with ``require_secret``.

Every value that ends up in a Kubernetes object is checked here, by the rule of the system that
receives it (the API server's name rules from ``catalog.kubernetes``, Kubeflow's facts from
``catalog.kubeflow``), and the problem names the key as the stack file spells it: the overlay spec
built from a checked config never refuses anything.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping

from pydantic import Field

from components.base.config_model import ConfigModel
from components.base.problems import Problem, join_path
from components.catalog.file_paths import file_path_problem
from components.catalog.kubeflow.releases import DEFAULT_TAG, unsupported_tag_problem
from components.catalog.kubeflow.selection import component_selection_problem
from components.catalog.kubeflow.users import dex_email_problem, dex_username_problem
from components.catalog.kubeflow.v1_10_2.layout import CERT_MANAGER_NAMESPACE, KUBEFLOW_SYSTEM_NAMESPACES
from components.catalog.kubernetes import (
    INGRESS_HOST_RULE,
    NAMESPACE_NAME_RULE,
    QUANTITY_RULE,
    custom_resource_name_problem,
    dns_label_problem,
    email_problem,
    hostname_problem,
    ingress_class_name_problem,
    quantity_problem,
    quota_resource_name_problem,
    secret_name_problem,
)
from components.catalog.upstream import KUBEFLOW_MANIFESTS
from components.kubeflow.gpus import ProfileQuota, QuotaCheck
from components.kubeflow.spec import KubeflowOverlaySpec, manifests_path_problem

_SECRET_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,127}\Z")


class DexConfig(ConfigModel):
    """The static dex user that logs in first (real identity providers come later, via dex connectors)."""

    email: str = Field(
        description="the static user's login email; never user@example.com, the public default of kubeflow/manifests"
    )
    username: str | None = Field(default=None, description="1-63 letters, digits, '.', '_' or '-'; default: upstream's")
    password_hash_secret: str = Field(
        default="kubeflowDexPasswordHash",
        description="secret config key holding a bcrypt hash (python -m components.kubeflow.hash_password)",
    )

    def problems(self, path: str) -> Iterator[Problem]:
        """The email (never upstream's public default user) and the username dex is given."""
        email = dex_email_problem(self.email)
        if email:
            yield Problem(join_path(path, "email"), email)
        username = dex_username_problem(self.username) if self.username is not None else None
        if username:
            yield Problem(join_path(path, "username"), username)


class TlsConfig(ConfigModel):
    """TLS for the Ingress: an existing Secret, or one cert-manager issues from a ClusterIssuer."""

    secret_name: str = Field(
        default="kubeflow-tls",
        description="the TLS Secret in istio-system (the Ingress's spec.tls[].secretName): a DNS-1123 subdomain",
    )
    cluster_issuer: str | None = Field(
        default=None,
        description="the cert-manager ClusterIssuer that issues the Secret (annotation cert-manager.io/cluster-issuer): "
        "a DNS-1123 subdomain",
    )

    def problems(self, path: str) -> Iterator[Problem]:
        """The Secret's name (the Ingress's ``spec.tls[].secretName``) and the ClusterIssuer's, by the API server's rule."""
        secret = secret_name_problem(self.secret_name)
        if secret:
            yield Problem(join_path(path, "secretName"), secret)
        if self.cluster_issuer is not None:
            issuer = custom_resource_name_problem(self.cluster_issuer, "cert-manager ClusterIssuer")
            if issuer:
                yield Problem(join_path(path, "clusterIssuer"), issuer)


class IngressConfig(ConfigModel):
    """The public entry point: an Ingress to istio-ingressgateway, HTTPS only."""

    host: str = Field(description="the public HTTPS host: a lowercase DNS name with a dot, not an IP address")
    class_name: str = Field(
        default="nginx",
        description="the IngressClass serving the Ingress (spec.ingressClassName): a DNS-1123 subdomain",
    )
    tls: TlsConfig

    def problems(self, path: str) -> Iterator[Problem]:
        """The host (an Ingress rule's), the IngressClass's name and the TLS names."""
        host = hostname_problem(self.host)
        if host:
            yield Problem(join_path(path, "host"), f"{host} ({INGRESS_HOST_RULE})")
        class_name = ingress_class_name_problem(self.class_name)
        if class_name:
            yield Problem(join_path(path, "className"), class_name)
        yield from self.tls.problems(join_path(path, "tls"))


class ProfileConfig(ConfigModel):
    """A Kubeflow Profile (a team namespace) and its quota."""

    name: str
    owner: str
    resource_quota: dict[str, str] = Field(
        default_factory=dict,
        description="the namespace's ResourceQuota: keys as a ResourceQuota takes them (cpu, requests.memory, "
        "requests.nvidia.com/gpu...), values Kubernetes quantities",
    )


class KubeflowConfig(ConfigModel):
    """Kubeflow from the pinned kubeflow/manifests tree through a generated overlay."""

    enabled: bool = True
    manifests_path: str = Field(
        default=KUBEFLOW_MANIFESTS.path,
        description="the kubeflow/manifests tree, relative to the project (make upstream puts it there); "
        "checked against the pinned content digest",
    )
    tag: str = Field(default=DEFAULT_TAG, description="must be the pinned version")
    components: list[str] | None = None
    install_cert_manager: bool = True
    dex: DexConfig
    oidc_client_secret_key: str | None = Field(
        default=None, description="secret config key of the OIDC client secret; default: generated and kept secret"
    )
    ingress: IngressConfig
    profiles: list[ProfileConfig] = Field(default_factory=list)
    gpu_quota_check: QuotaCheck = Field(
        default="refuse",
        description="when the Profiles' quotas on a GPU resource add up to more than the fleet provides at its "
        "maximum size: refuse the stack, or warn and go on (oversubscription); a quota on a GPU resource no pool "
        "advertises is always refused",
    )
    await_timeout_seconds: int = Field(
        default=900,
        ge=60,
        description="how long pulumi up waits for each Kubeflow object to become ready (create and update)",
    )

    def overlay_spec(self) -> KubeflowOverlaySpec:
        """The overlay generator's spec (a config without ``problems()`` always makes one)."""
        return KubeflowOverlaySpec(
            manifests_path=self.manifests_path,
            tag=self.tag,
            components=tuple(self.components) if self.components is not None else None,
            install_cert_manager=self.install_cert_manager,
            dex_user_email=self.dex.email,
            dex_username=self.dex.username,
            ingress_host=self.ingress.host,
        )

    def profile_quotas(self) -> tuple[ProfileQuota, ...]:
        """Each Profile's name and quota, for the fleet check (``gpus.quota_findings``)."""
        return tuple(ProfileQuota(profile.name, dict(profile.resource_quota)) for profile in self.profiles)

    def secret_keys(self) -> set[str]:
        """Secret config keys this section names."""
        keys = {self.dex.password_hash_secret}
        if self.oidc_client_secret_key:
            keys.add(self.oidc_client_secret_key)
        return keys

    def problems(
        self, path: str, program_keys: Collection[str] = (), taken_namespaces: Mapping[str, str] | None = None
    ) -> Iterator[Problem]:
        """Every value checked by its key: the tree and the tag, the components, secret keys, dex, Ingress, Profiles.

        ``taken_namespaces``: namespace -> what of the platform lives there (a Profile may not take one).
        """
        yield from self._install_problems(path)
        yield from self._secret_key_problems(path, program_keys)
        yield from self.dex.problems(join_path(path, "dex"))
        yield from self.ingress.problems(join_path(path, "ingress"))
        yield from _profile_problems(self.profiles, join_path(path, "profiles"), taken_namespaces or {})

    def _install_problems(self, path: str) -> Iterator[Problem]:
        """What the overlay is generated from: the tree's path, the pinned tag, the component list."""
        manifests = join_path(path, "manifestsPath")
        path_problem = manifests_path_problem(self.manifests_path)
        if path_problem:
            yield Problem(manifests, path_problem)
        elif file_path_problem(self.manifests_path):
            yield Problem(manifests, f"{self.manifests_path[:80]!r} {file_path_problem(self.manifests_path)}")
        tag_problem = unsupported_tag_problem(self.tag)
        if tag_problem:
            yield Problem(join_path(path, "tag"), tag_problem)
            return
        selection = component_selection_problem(self.tag, self.components)
        if selection:
            yield Problem(join_path(path, "components"), selection)

    def _secret_key_problems(self, path: str, program_keys: Collection[str]) -> Iterator[Problem]:
        secret_keys = (
            (join_path(path, "dex", "passwordHashSecret"), self.dex.password_hash_secret),
            (join_path(path, "oidcClientSecretKey"), self.oidc_client_secret_key),
        )
        for key_path, key in secret_keys:
            if key is None:
                continue
            if not _SECRET_KEY.match(key):
                yield Problem(
                    key_path, f"secret config key name {key!r} must start with a letter (letters, digits, '_', '-')"
                )
            elif key in program_keys:
                yield Problem(key_path, f"{key!r} is a program setting of its own, not a secret key; name another key")


#: Namespaces a Profile may not take: Kubernetes' own and the ones the Kubeflow install uses.
RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        CERT_MANAGER_NAMESPACE,
        *KUBEFLOW_SYSTEM_NAMESPACES,
    }
)


def _profile_problems(profiles: list[ProfileConfig], path: str, taken: Mapping[str, str]) -> Iterator[Problem]:
    seen: set[str] = set()
    for index, profile in enumerate(profiles):
        here = join_path(path, index)
        problem = dns_label_problem(profile.name)
        if problem:
            yield Problem(join_path(here, "name"), f"{problem}: a Profile names its namespace ({NAMESPACE_NAME_RULE})")
        elif profile.name in RESERVED_NAMESPACES:
            yield Problem(
                join_path(here, "name"),
                f"{profile.name!r} is a namespace of Kubernetes or the Kubeflow install; a team needs its own",
            )
        elif profile.name in taken:
            yield Problem(
                join_path(here, "name"),
                f"{profile.name!r} is {taken[profile.name]}; the Profile controller does not adopt a namespace that "
                "already exists (the Profile would fail), and a team's quota and roles would land in the platform's "
                "namespace: name the team's namespace otherwise",
            )
        if profile.name in seen:
            yield Problem(join_path(here, "name"), f"profile {profile.name!r} is listed twice")
        seen.add(profile.name)
        owner = email_problem(profile.owner)
        if owner:
            yield Problem(join_path(here, "owner"), f"{owner}: Kubeflow matches the owner to the dex login email")
        for resource, quantity in profile.resource_quota.items():
            key_issue = quota_resource_name_problem(resource)
            if key_issue:
                yield Problem(join_path(here, "resourceQuota", resource), key_issue)
            quantity_issue = quantity_problem(quantity)
            if quantity_issue:
                yield Problem(join_path(here, "resourceQuota", resource), f"{quantity_issue} ({QUANTITY_RULE})")
