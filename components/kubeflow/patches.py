"""The overlay's patches: what it changes in upstream's objects, stage by stage.

The example ships public credentials (``PUBLIC_DEFAULT_CREDENTIALS`` in the catalog): the dex user's
bcrypt hash of ``12341234``, the OIDC client secret, the oauth2-proxy cookie secret, Katib's MySQL root
password, Pipelines' MinIO keys and Pipelines' MySQL root with no password. The overlay **deletes**
those Secrets (``$patch: delete``) rather than patching new values in, so no secret value is ever
written to disk or into a kustomization; the Pulumi program creates them from Pulumi secrets
(``spec.required_secrets``). Pipelines' MySQL server runs with ``MYSQL_ALLOW_EMPTY_PASSWORD`` upstream;
the overlay makes it read its root password from ``mysql-secret`` instead (the clients already do),
and drops the variable from Katib's MySQL too, which has a root password already. The Namespaces those
Secrets live in (``auth``, ``oauth2-proxy``, ``kubeflow``) are deleted too: the program creates them with
upstream's labels, then the Secrets, then the Directories, so every consumer finds its Secret when it
starts. Upstream's dex user is ``user@example.com``; the dex ConfigMap holds no secret (the hash is read
from env ``DEX_USER_PASSWORD``), so the overlay rewrites the email/username there when they are
configured. Every patch must find its object (the tests build the real tree with them).
"""

from __future__ import annotations

from typing import Any

import yaml

from components.catalog.kubeflow.model import ReplacedSecret, WebhookServer
from components.catalog.kubeflow.v1_10_2.credentials import DEFAULT_USER_EMAIL, DEFAULT_USERNAME
from components.catalog.kubeflow.v1_10_2.login import (
    DEX_CONFIG_KEY,
    DEX_CONFIGMAP,
    DEX_NAMESPACE,
    OAUTH2_PROXY_NAMESPACE,
    OAUTH2_PROXY_PARAMETERS_CONFIGMAP,
    UPSTREAM_DEX_CONFIG_YAML,
    USER_NAMESPACE_CONFIGMAP,
    USER_PROFILE_NAME,
)
from components.catalog.kubeflow.v1_10_2.replaced import (
    KATIB_MYSQL,
    MYSQL_ALLOW_EMPTY_PASSWORD_ENV,
    MYSQL_ROOT_PASSWORD_ENV,
    PIPELINES_MYSQL,
    PIPELINES_MYSQL_SECRET,
)
from components.catalog.kubeflow.v1_10_2.webhooks import WEBHOOK_SERVERS
from components.catalog.names import DEPENDS_ON_ANNOTATION
from components.kubeflow.overlay_yaml import dump
from components.kubeflow.spec import KubeflowOverlaySpec, required_namespaces, required_secrets
from components.kubeflow.stages import STAGES, Stage, stage_components


def _patch(body: dict[str, Any]) -> dict[str, Any]:
    return {"patch": dump(body)}


def _delete_patch(api_version: str, kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, str] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return _patch({"$patch": "delete", "apiVersion": api_version, "kind": kind, "metadata": metadata})


def _mysql_env_patch(workload: tuple[str, str, str], add_root_password_from: ReplacedSecret | None) -> dict[str, Any]:
    """A strategic merge patch: drop MYSQL_ALLOW_EMPTY_PASSWORD, optionally read the root password.

    ``$patch: delete`` on a list element removes the element with that merge key (``name``).
    """
    namespace, deployment, container = workload
    env: list[dict[str, Any]] = [{"name": MYSQL_ALLOW_EMPTY_PASSWORD_ENV, "$patch": "delete"}]
    if add_root_password_from is not None:
        env.append(
            {
                "name": MYSQL_ROOT_PASSWORD_ENV,
                "valueFrom": {"secretKeyRef": {"name": add_root_password_from.name, "key": "password"}},
            }
        )
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": deployment, "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [{"name": container, "env": env}]}}},
    }
    return _patch(body)


def dex_config_yaml(spec: KubeflowOverlaySpec) -> str:
    """The dex ``config.yaml`` with the configured email/username (upstream text otherwise)."""
    text = UPSTREAM_DEX_CONFIG_YAML
    replacements = []
    if spec.dex_user_email is not None:
        replacements.append((f"- email: {DEFAULT_USER_EMAIL}\n", f'- email: "{spec.dex_user_email}"\n'))
    if spec.dex_username is not None:
        replacements.append((f"  username: {DEFAULT_USERNAME}\n", f'  username: "{spec.dex_username}"\n'))
    for old, new in replacements:
        if text.count(old) != 1:  # the catalog text changed shape: fail loudly, never half-patch
            raise RuntimeError(f"upstream dex config no longer has exactly one line {old.strip()!r}")
        text = text.replace(old, new)
    parsed = yaml.safe_load(text)
    user = parsed["staticPasswords"][0]
    if user["email"] != (spec.dex_user_email or DEFAULT_USER_EMAIL) or user["hashFromEnv"] != "DEX_USER_PASSWORD":
        raise RuntimeError("rewritten dex config does not carry the configured user")
    return text


def _webhook_patch(webhook: WebhookServer) -> dict[str, Any]:
    """Annotate a webhook configuration to depend on the Deployment that serves it.

    Inside one Directory pulumi-kubernetes creates an object as soon as its CRD and Namespace exist,
    so a ``failurePolicy: Fail`` webhook registered early refuses what it matches (Knative's config
    ConfigMaps, KServe's ClusterServingRuntimes) until its server is up, and ``pulumi up`` fails where
    upstream's README retries. Registered after its server is ready, a webhook admits everything
    created before it unchecked, as upstream's ``sortOptions`` (webhooks last) intend. Not for the
    foundation: there the webhooks (istiod's sidecar injector above all) must exist before the
    platform's pods, and are given their CA bundle while their servers start.
    """
    return _patch(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": webhook.kind,
            "metadata": {
                "name": webhook.name,
                "annotations": {
                    DEPENDS_ON_ANNOTATION: f"apps/namespaces/{webhook.namespace}/Deployment/{webhook.deployment}"
                },
            },
        }
    )


def _content_patches(spec: KubeflowOverlaySpec, components: tuple[str, ...]) -> list[dict[str, Any]]:
    """The overlay's changes to the objects of ``components`` (each patch must find its object)."""
    patches = [
        _delete_patch("v1", "Secret", s.name, s.namespace) for s in required_secrets(spec) if s.component in components
    ]
    patches.extend(
        _delete_patch("v1", "Namespace", n.name, None) for n in required_namespaces(spec) if n.component in components
    )
    if "pipelines" in components:
        patches.append(_mysql_env_patch(PIPELINES_MYSQL, PIPELINES_MYSQL_SECRET))
    if "katib" in components:
        patches.append(_mysql_env_patch(KATIB_MYSQL, None))
    if "dex" in components and (spec.dex_user_email is not None or spec.dex_username is not None):
        configmap = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": DEX_CONFIGMAP, "namespace": DEX_NAMESPACE},
            "data": {DEX_CONFIG_KEY: dex_config_yaml(spec)},
        }
        patches.append(_patch(configmap))
    if "user-namespace" in components and spec.dex_user_email is not None:
        profile = {
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "Profile",
            "metadata": {"name": USER_PROFILE_NAME},
            "spec": {"owner": {"kind": "User", "name": spec.dex_user_email}},
        }
        params = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": USER_NAMESPACE_CONFIGMAP},
            "data": {"user": spec.dex_user_email},
        }
        patches.extend([_patch(profile), _patch(params)])
    if "oauth2-proxy" in components and spec.ingress_host is not None:
        params = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": OAUTH2_PROXY_PARAMETERS_CONFIGMAP, "namespace": OAUTH2_PROXY_NAMESPACE},
            "data": {"FORCE_HTTPS": "true"},
        }
        patches.append(_patch(params))
    return patches


def stage_patches(spec: KubeflowOverlaySpec, stage: Stage) -> list[dict[str, Any]]:
    """Every patch of ``stage``'s kustomization, in the order written: content changes, then webhook waits."""
    components = stage_components(spec, stage)
    patches = _content_patches(spec, components)
    if stage.webhooks_after_servers:
        # cert-manager has a path in each stage; its webhooks are in the foundation's.
        elsewhere = {c for other in STAGES if not other.webhooks_after_servers for c in stage_components(spec, other)}
        patches.extend(
            _webhook_patch(w) for w in WEBHOOK_SERVERS if w.component in components and w.component not in elsewhere
        )
    return patches
