"""The Kubeflow ComponentResource: generated overlay, program-owned secrets, ordered deploy, Ingress, Profiles.

Order: CRDs and namespaces first (one ``kustomize.v2.Directory``), then the Secrets the overlay
deleted from upstream (their namespaces now exist), then everything else (a second Directory that
depends on both), then the Ingress and the Profiles (their CRD and namespace exist by then). The
overlay on disk carries no secret value: the dex password hash and the OIDC client secret are
Pulumi secrets from start to end.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.base.problems import Problem, StackConfigError
from components.base.runtime_mode import is_offline, notice
from components.catalog import kubeflow_manifests as km
from components.kubeflow.checkout import checkout_problem
from components.kubeflow.config import KubeflowConfig
from components.kubeflow.overlay import CRDS_AND_NAMESPACES_DIR, REST_DIR, manifests_path_for, write_overlay

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


def kubeflow_namespaces(install_cert_manager: bool) -> list[str]:
    """The namespaces the upstream install creates (cert-manager's only when we install it)."""
    names = ["auth", "istio-system", "knative-serving", "kubeflow", "oauth2-proxy"]
    if install_cert_manager:
        names.append("cert-manager")
    return sorted(names)


def overlay_dir(stack: str) -> Path:
    """Where the stack's generated overlay is written (relative to the project)."""
    return OVERLAY_ROOT / stack


class Kubeflow(pulumi.ComponentResource):
    """Kubeflow 1.10 behind an HTTPS Ingress, with no default credentials left."""

    url: str
    overlay: Path
    crds: k8s.kustomize.v2.Directory
    rest: k8s.kustomize.v2.Directory
    ingress: k8s.networking.v1.Ingress

    def __init__(self, name: str, args: KubeflowArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpu-platform:kubeflow:Kubeflow", name, None, opts)
        config = args.config
        self._check_checkout(config)
        self.overlay = overlay_dir(args.stack)
        # The config names the checkout relative to the project; kustomize reads it relative to the overlay.
        spec = dataclasses.replace(
            config.overlay_spec(), manifests_path=manifests_path_for(config.manifests_path, self.overlay)
        )
        write_overlay(spec, self.overlay)
        self.url = f"https://{config.ingress.host}/"
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)

        self.crds = k8s.kustomize.v2.Directory(
            f"{name}-crds-and-namespaces",
            directory=str(self.overlay / CRDS_AND_NAMESPACES_DIR),
            skip_await=False,
            opts=child,
        )
        after_crds = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.crds]))
        secrets = self._secrets(name, args, after_crds)
        self.rest = k8s.kustomize.v2.Directory(
            f"{name}-platform",
            directory=str(self.overlay / REST_DIR),
            skip_await=False,
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    depends_on=[self.crds, *secrets],
                    custom_timeouts=pulumi.CustomTimeouts(create=f"{config.await_timeout_seconds}s"),
                ),
            ),
        )
        after_rest = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.rest]))
        self.ingress = self._ingress(name, config, after_rest)
        for profile in config.profiles:
            self._profile(name, profile.name, profile.owner, profile.resource_quota, after_rest)
        self.register_outputs({"url": self.url, "version": config.tag})

    @staticmethod
    def _check_checkout(config: KubeflowConfig) -> None:
        problem = checkout_problem(Path(config.manifests_path), config.tag)
        if problem is None:
            return
        if is_offline():
            notice(f"kubeflow.manifestsPath: {problem} (the offline preview goes on; pulumi up would stop here)")
            return
        raise StackConfigError([Problem("kubeflow.manifestsPath", problem)])

    @staticmethod
    def _secrets(name: str, args: KubeflowArgs, opts: pulumi.ResourceOptions) -> list[k8s.core.v1.Secret]:
        client_secret: pulumi.Input[str]
        if args.oidc_client_secret is not None:
            client_secret = args.oidc_client_secret
        else:
            client_secret = random.RandomPassword(
                f"{name}-oidc-client-secret", length=32, special=False, opts=pulumi.ResourceOptions(parent=opts.parent)
            ).result
        # oauth2-proxy needs a cookie key of exactly 16, 24 or 32 bytes.
        cookie_secret = random.RandomPassword(
            f"{name}-oauth2-proxy-cookie-secret",
            length=32,
            special=False,
            opts=pulumi.ResourceOptions(parent=opts.parent),
        ).result
        values: dict[str, dict[str, pulumi.Input[str]]] = {
            "dex-passwords": {"DEX_USER_PASSWORD": args.dex_password_hash},
            "dex-oidc-client": {"OIDC_CLIENT_ID": km.OIDC_CLIENT_ID, "OIDC_CLIENT_SECRET": client_secret},
            "oauth2-proxy": {
                "client-id": km.OIDC_CLIENT_ID,
                "client-secret": client_secret,
                "cookie-secret": cookie_secret,
            },
        }
        secrets = []
        for supplied in km.REPLACED_SECRETS:
            data = values[supplied.name]
            secrets.append(
                k8s.core.v1.Secret(
                    f"{name}-{supplied.namespace}-{supplied.name}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=supplied.name, namespace=supplied.namespace),
                    type="Opaque",
                    string_data={key: pulumi.Output.secret(data[key]) for key in sorted(data)},
                    opts=opts,
                )
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
    def _profile(name: str, profile: str, owner: str, quota: dict[str, str], opts: pulumi.ResourceOptions) -> None:
        spec: dict[str, Any] = {"owner": {"kind": "User", "name": owner}}
        if quota:
            spec["resourceQuotaSpec"] = {"hard": dict(sorted(quota.items()))}
        k8s.apiextensions.CustomResource(
            f"{name}-profile-{profile}",
            api_version="kubeflow.org/v1",
            kind="Profile",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=profile),
            spec=spec,
            opts=opts,
        )
