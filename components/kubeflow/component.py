"""The Kubeflow ComponentResource: generated overlay, program-owned namespaces and secrets, staged deploy.

Order: the Namespaces that hold the replaced Secrets (``auth``, ``kubeflow``, ``oauth2-proxy``, with
upstream's labels) and those Secrets first; then one ``kustomize.v2.Directory`` per overlay stage
(``foundation``: cert-manager and Istio; ``platform``: the rest, after the foundation, the Namespaces
and the Secrets); then the Ingress and the Profiles (their CRD and namespace exist by then). Inside a
Directory pulumi-kubernetes applies CRDs and Namespaces before what needs them. The overlay on disk
carries no secret value: every replaced credential is a Pulumi secret (a config secret or a
``RandomPassword``) from start to end.

Await timeout: ``custom_timeouts`` on a ComponentResource reaches nobody, and pulumi-kubernetes
registers a Directory's objects with only ``parent`` set (kustomize/v2 ``directory.go``), so the
timeout is applied by a ``transforms`` entry on each Directory: the engine runs it for every child,
packaged components included (Pulumi docs, "Resource option: transforms"), and the provider waits
up to the child's create/update timeout (``metadata.TimeoutDuration``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.base.problems import Problem, StackConfigError
from components.base.runtime_mode import is_offline, notice
from components.catalog.kubeflow.v1_10_2.credentials import (
    MINIO_ACCESS_KEY_LENGTH,
    MINIO_SECRET_KEY_LENGTH,
    OAUTH2_PROXY_COOKIE_SECRET_BYTES,
    OIDC_CLIENT_ID,
    PIPELINES_MYSQL_USER,
)
from components.catalog.kubeflow.v1_10_2.layout import CERT_MANAGER_NAMESPACE, KUBEFLOW_SYSTEM_NAMESPACES
from components.catalog.kubeflow.v1_10_2.replaced import (
    DEX_OIDC_CLIENT,
    DEX_PASSWORDS,
    KATIB_MYSQL_SECRET,
    OAUTH2_PROXY_SECRET,
    PIPELINES_MINIO_SECRET,
    PIPELINES_MYSQL_SECRET,
)
from components.catalog.names import KUBEFLOW_TYPE
from components.kubeflow.checkout import checkout_problem
from components.kubeflow.config import KubeflowConfig
from components.kubeflow.gpus import GpuFleet, pod_default
from components.kubeflow.overlay import write_overlay
from components.kubeflow.spawner import read_upstream, spawner_config
from components.kubeflow.spec import KubeflowOverlaySpec, manifests_path_for, required_namespaces, required_secrets
from components.kubeflow.stages import FOUNDATION, PLATFORM, Stage

OVERLAY_ROOT = Path("build") / "kubeflow"
INGRESS_GATEWAY = ("istio-system", "istio-ingressgateway", 80)


@dataclass(frozen=True)
class KubeflowArgs:
    """Inputs: the config, the stack name (the overlay folder), the provider and the secret values."""

    config: KubeflowConfig
    stack: str
    provider: k8s.Provider
    dex_password_hash: pulumi.Input[str]
    oidc_client_secret: pulumi.Input[str] | None = None
    gpus: GpuFleet = dataclasses.field(default_factory=GpuFleet)
    """The stack's GPU pools and what they advertise (the stack plan): spawner entries and PodDefaults."""


def kubeflow_namespaces(install_cert_manager: bool) -> list[str]:
    """The namespaces the upstream install creates (cert-manager's only when we install it)."""
    names = list(KUBEFLOW_SYSTEM_NAMESPACES)
    if install_cert_manager:
        names.append(CERT_MANAGER_NAMESPACE)
    return sorted(names)


def overlay_dir(stack: str) -> Path:
    """Where the stack's generated overlay is written (relative to the project)."""
    return OVERLAY_ROOT / stack


def await_timeout(seconds: int) -> Callable[[pulumi.ResourceTransformArgs], pulumi.ResourceTransformResult | None]:
    """A transform giving every Kubernetes object under a Directory ``seconds`` to become ready."""
    timeout = f"{seconds}s"

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if not args.custom:  # the Directory itself: a component, no provider call to time out
            return None
        return pulumi.ResourceTransformResult(
            props=args.props,
            opts=pulumi.ResourceOptions.merge(
                args.opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout))
            ),
        )

    return transform


class Kubeflow(pulumi.ComponentResource):
    """Kubeflow 1.10 behind an HTTPS Ingress, with no default credentials left."""

    url: str
    overlay: Path
    directories: dict[str, k8s.kustomize.v2.Directory]
    namespaces: dict[str, k8s.core.v1.Namespace]
    secrets: dict[str, k8s.core.v1.Secret]
    ingress: k8s.networking.v1.Ingress

    def __init__(self, name: str, args: KubeflowArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(KUBEFLOW_TYPE, name, None, opts)
        config = args.config
        self._check_checkout(config)
        self.overlay = overlay_dir(args.stack)
        # The config names the tree relative to the project; kustomize reads it relative to the overlay.
        spec = dataclasses.replace(
            config.overlay_spec(),
            manifests_path=manifests_path_for(config.manifests_path, self.overlay),
            spawner_ui_config=self._spawner_config(config, args.gpus),
        )
        write_overlay(spec, self.overlay)
        self.url = f"https://{config.ingress.host}/"
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)

        self.namespaces = self._namespaces(name, spec, child)
        self.secrets = self._secrets(name, spec, args, self.namespaces, child)
        timeouts = pulumi.ResourceOptions(transforms=[await_timeout(config.await_timeout_seconds)])

        def directory(stage: Stage, depends_on: list[pulumi.Resource]) -> k8s.kustomize.v2.Directory:
            return k8s.kustomize.v2.Directory(
                f"{name}-{stage.directory}",
                directory=str(self.overlay / stage.directory),
                skip_await=False,
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions.merge(timeouts, pulumi.ResourceOptions(depends_on=depends_on))
                ),
            )

        foundation = directory(FOUNDATION, [])
        platform = directory(PLATFORM, [foundation, *self.namespaces.values(), *self.secrets.values()])
        self.directories = {FOUNDATION.directory: foundation, PLATFORM.directory: platform}
        after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[platform]))
        self.ingress = self._ingress(name, config, after)
        for profile in config.profiles:
            created = self._profile(name, profile.name, profile.owner, profile.resource_quota, after)
            self._pod_defaults(name, profile.name, args.gpus, child, created)
        self.register_outputs({"url": self.url, "version": config.tag})

    @staticmethod
    def _spawner_config(config: KubeflowConfig, gpus: GpuFleet) -> str | None:
        """Upstream's spawner config plus the fleet's MIG resources and pools; None: nothing to add, or no tree.

        Without the tree (only the offline preview goes on, with the checkout notice) there is no file to edit.
        """
        upstream = read_upstream(config.manifests_path)
        if upstream is None:
            return None
        text = spawner_config(upstream, gpus)
        return text if text != upstream else None

    @staticmethod
    def _pod_defaults(
        name: str, profile: str, gpus: GpuFleet, opts: pulumi.ResourceOptions, created: pulumi.Resource
    ) -> None:
        """One PodDefault per GPU pool in the Profile's namespace, after the Profile (its controller makes the namespace)."""
        after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[created]))
        for pool in gpus.pools:
            body = pod_default(pool, profile)
            k8s.apiextensions.CustomResource(
                f"{name}-poddefault-{profile}-{pool.name}",
                api_version=body["apiVersion"],
                kind=body["kind"],
                metadata=k8s.meta.v1.ObjectMetaArgs(**body["metadata"]),
                spec=body["spec"],
                opts=after,
            )

    @staticmethod
    def _check_checkout(config: KubeflowConfig) -> None:
        problem = checkout_problem(Path(config.manifests_path))
        if problem is None:
            return
        if is_offline():
            notice(f"kubeflow.manifestsPath: {problem} (the offline preview goes on; pulumi up would stop here)")
            return
        raise StackConfigError([Problem("kubeflow.manifestsPath", problem)])

    @staticmethod
    def _namespaces(
        name: str, spec: KubeflowOverlaySpec, opts: pulumi.ResourceOptions
    ) -> dict[str, k8s.core.v1.Namespace]:
        """The Namespaces the overlay deleted, with upstream's labels (pod security, istio injection)."""
        return {
            namespace.name: k8s.core.v1.Namespace(
                f"{name}-namespace-{namespace.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace.name, labels=dict(sorted(namespace.labels.items()))),
                opts=opts,
            )
            for namespace in required_namespaces(spec)
        }

    @staticmethod
    def _secret_values(
        name: str, args: KubeflowArgs, needed: set[str], parent: pulumi.Resource
    ) -> dict[str, dict[str, pulumi.Input[str]]]:
        """The keys of each needed Secret: the configured secrets, the rest generated once and kept in state."""
        opts = pulumi.ResourceOptions(parent=parent)

        def generated(role: str, length: int) -> pulumi.Output[str]:
            return random.RandomPassword(f"{name}-{role}", length=length, special=False, opts=opts).result

        values: dict[str, dict[str, pulumi.Input[str]]] = {}
        if DEX_PASSWORDS.name in needed:
            values[DEX_PASSWORDS.name] = {"DEX_USER_PASSWORD": args.dex_password_hash}
        if {DEX_OIDC_CLIENT.name, OAUTH2_PROXY_SECRET.name} & needed:
            client_secret = args.oidc_client_secret
            if client_secret is None:
                client_secret = generated("oidc-client-secret", 32)
            values[DEX_OIDC_CLIENT.name] = {"OIDC_CLIENT_ID": OIDC_CLIENT_ID, "OIDC_CLIENT_SECRET": client_secret}
            values[OAUTH2_PROXY_SECRET.name] = {
                "client-id": OIDC_CLIENT_ID,
                "client-secret": client_secret,
                # oauth2-proxy needs a cookie key of exactly 16, 24 or 32 bytes.
                "cookie-secret": generated("oauth2-proxy-cookie-secret", max(OAUTH2_PROXY_COOKIE_SECRET_BYTES)),
            }
        if KATIB_MYSQL_SECRET.name in needed:
            values[KATIB_MYSQL_SECRET.name] = {"MYSQL_ROOT_PASSWORD": generated("katib-mysql-root-password", 32)}
        if PIPELINES_MYSQL_SECRET.name in needed:
            values[PIPELINES_MYSQL_SECRET.name] = {
                "username": PIPELINES_MYSQL_USER,
                "password": generated("pipelines-mysql-root-password", 32),
            }
        if PIPELINES_MINIO_SECRET.name in needed:
            values[PIPELINES_MINIO_SECRET.name] = {
                "accesskey": generated("pipelines-minio-access-key", MINIO_ACCESS_KEY_LENGTH),
                "secretkey": generated("pipelines-minio-secret-key", MINIO_SECRET_KEY_LENGTH),
            }
        return values

    def _secrets(
        self,
        name: str,
        spec: KubeflowOverlaySpec,
        args: KubeflowArgs,
        namespaces: dict[str, k8s.core.v1.Namespace],
        opts: pulumi.ResourceOptions,
    ) -> dict[str, k8s.core.v1.Secret]:
        """The Secrets the overlay deleted, same namespace, name and keys, every value a Pulumi secret."""
        needed = required_secrets(spec)
        values = self._secret_values(name, args, {s.name for s in needed}, self)
        secrets = {}
        for supplied in needed:
            data = values[supplied.name]
            secrets[f"{supplied.namespace}/{supplied.name}"] = k8s.core.v1.Secret(
                f"{name}-{supplied.namespace}-{supplied.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=supplied.name, namespace=supplied.namespace),
                type="Opaque",
                string_data={key: pulumi.Output.secret(data[key]) for key in sorted(data)},
                opts=pulumi.ResourceOptions.merge(
                    opts, pulumi.ResourceOptions(depends_on=[namespaces[supplied.namespace]])
                ),
            )
        return secrets

    @staticmethod
    def _ingress(name: str, config: KubeflowConfig, opts: pulumi.ResourceOptions) -> k8s.networking.v1.Ingress:
        namespace, service, port = INGRESS_GATEWAY
        annotations = {
            "nginx.ingress.kubernetes.io/backend-protocol": "HTTP",
            "nginx.ingress.kubernetes.io/ssl-redirect": "true",
        }
        if config.ingress.tls.cluster_issuer:
            annotations["cert-manager.io/cluster-issuer"] = config.ingress.tls.cluster_issuer
        return k8s.networking.v1.Ingress(
            f"{name}-ingress",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="kubeflow", namespace=namespace, annotations=annotations),
            spec=k8s.networking.v1.IngressSpecArgs(
                ingress_class_name=config.ingress.class_name,
                tls=[
                    k8s.networking.v1.IngressTLSArgs(
                        hosts=[config.ingress.host], secret_name=config.ingress.tls.secret_name
                    )
                ],
                rules=[
                    k8s.networking.v1.IngressRuleArgs(
                        host=config.ingress.host,
                        http=k8s.networking.v1.HTTPIngressRuleValueArgs(
                            paths=[
                                k8s.networking.v1.HTTPIngressPathArgs(
                                    path="/",
                                    path_type="Prefix",
                                    backend=k8s.networking.v1.IngressBackendArgs(
                                        service=k8s.networking.v1.IngressServiceBackendArgs(
                                            name=service, port=k8s.networking.v1.ServiceBackendPortArgs(number=port)
                                        )
                                    ),
                                )
                            ]
                        ),
                    )
                ],
            ),
            opts=opts,
        )

    @staticmethod
    def _profile(
        name: str, profile: str, owner: str, quota: dict[str, str], opts: pulumi.ResourceOptions
    ) -> pulumi.Resource:
        spec: dict[str, Any] = {"owner": {"kind": "User", "name": owner}}
        if quota:
            spec["resourceQuotaSpec"] = {"hard": dict(sorted(quota.items()))}
        return k8s.apiextensions.CustomResource(
            f"{name}-profile-{profile}",
            api_version="kubeflow.org/v1",
            kind="Profile",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=profile),
            spec=spec,
            opts=opts,
        )
