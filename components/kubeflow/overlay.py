"""Generate the kustomize overlay that installs Kubeflow 1.10 from the pinned kubeflow/manifests tree.

Upstream's install is ``kustomize build example | kubectl apply``, retried until it applies. The
Kubeflow component deploys a generated overlay with ``kustomize.v2.Directory`` instead, because the
example cannot be used as is:

- it ships public credentials (``PUBLIC_DEFAULT_CREDENTIALS`` in the catalog): the dex user's bcrypt
  hash of ``12341234``, the OIDC client secret, the oauth2-proxy cookie secret, Katib's MySQL root
  password, Pipelines' MinIO keys and Pipelines' MySQL root with no password. The overlay **deletes**
  those Secrets (``$patch: delete``) rather than patching new values in, so no secret value is ever
  written to disk or into a kustomization; the Pulumi program creates them from Pulumi secrets
  (``required_secrets``). Pipelines' MySQL server runs with ``MYSQL_ALLOW_EMPTY_PASSWORD`` upstream;
  the overlay makes it read its root password from ``mysql-secret`` instead (the clients already do),
  and drops the variable from Katib's MySQL too, which has a root password already.
- the Namespaces those Secrets live in (``auth``, ``oauth2-proxy``, ``kubeflow``) are deleted too:
  the program creates them with upstream's labels, then the Secrets, then the Directories, so every
  consumer finds its Secret when it starts.
- it always installs cert-manager; ``install_cert_manager=False`` leaves both cert-manager paths out
  for clusters that already run one.
- its dex user is ``user@example.com``; the dex ConfigMap holds no secret (the hash is read from env
  ``DEX_USER_PASSWORD``), so the overlay rewrites the email/username there when they are configured.

Stages (``STAGES``). Each is a standalone kustomization over whole upstream paths, in upstream
order, so every path keeps its own ``vars``, ``replacements`` and generators: upstream uses kustomize
``vars`` in 18 kustomizations, and a stage that dropped an object a var points at would not build
(filtering one full render by kind did exactly that). Inside one ``kustomize.v2.Directory``
pulumi-kubernetes orders CustomResourceDefinitions before their custom resources and Namespaces
before namespaced objects (its yaml/v2 ``Register`` sorts with the cli-utils dependency graph), so a
stage needs no CRD phase of its own:

- ``foundation/``: cert-manager (when installed) and Istio. It is applied and awaited first, so the
  cert-manager webhook answers before any ``Certificate`` or ``Issuer`` is created, and istiod's
  sidecar injector is registered before any Kubeflow pod starts (a pod created earlier would run
  without its sidecar, outside the mesh).
- ``platform/``: everything else.

Only whole objects are removed and nothing is renamed, so the stages together are the example's
render minus what the program owns and the components left out (the tests check this on the real
tree, and docs/kubeflow.md lists the differences).

Paths: kustomize refuses absolute resource directories ("new root ... cannot be absolute"), so the
kustomizations always reference the tree by a relative path. A relative ``manifests_path`` is
relative to the overlay directory and is written as given; an absolute one is converted when the
overlay directory is known (``write_overlay`` always knows it; ``render_overlay`` takes it as
``overlay_dir``). So no machine path ends up in the files. Everything here is pure and
deterministic: the same spec gives byte-identical files, with no timestamps.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.catalog import kubeflow_manifests as km
from components.catalog.names import DEPENDS_ON_ANNOTATION


@dataclass(frozen=True)
class Stage:
    """One ``kustomize.v2.Directory`` of the install: a subfolder of the overlay and what goes in it."""

    directory: str
    summary: str
    paths: frozenset[str] | None
    """The example paths it holds (when their component is enabled); None: every path no other stage holds."""
    webhooks_after_servers: bool
    """Register each webhook configuration only once the Deployment serving it is ready (see ``_webhook_patch``)."""


_LAYOUT = km.MANIFESTS_TAGS[km.DEFAULT_TAG]
FOUNDATION = Stage(
    "foundation",
    "cert-manager (when installed) and Istio: the webhooks and the mesh the rest relies on",
    frozenset(
        {
            km.CERT_MANAGER_PATH,
            *(path for component, path in _LAYOUT.example_resources if component == "istio"),
        }
    ),
    webhooks_after_servers=False,
)
PLATFORM = Stage(
    "platform",
    "everything else: Kubeflow's issuer, authentication, the Kubeflow applications",
    None,
    webhooks_after_servers=True,
)
STAGES: tuple[Stage, ...] = (FOUNDATION, PLATFORM)
"""Deploy in this order; each is a kustomization directory inside the overlay directory."""


class KubeflowOverlayError(ValueError):
    """A KubeflowOverlaySpec that cannot produce a working, non-default install."""


_EMAIL = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$")
_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class KubeflowOverlaySpec:
    """What to install from which checkout. Every refusal happens here, with the allowed values.

    ``components`` is the set of enabled components (``None``: everything the tag's example
    installs except ``user-namespace``, see ``DEFAULT_DISABLED`` in the catalog). Required
    components cannot be left out. cert-manager is switched by ``install_cert_manager`` only.
    """

    manifests_path: str | os.PathLike[str]
    """The kubeflow/manifests tree at ``tag``: relative to the overlay directory, or absolute."""
    tag: str = km.DEFAULT_TAG
    components: tuple[str, ...] | None = None
    install_cert_manager: bool = True
    """False when the cluster already runs cert-manager (cert-manager.io/v1 CRDs and webhook)."""
    dex_user_email: str | None = None
    """The static dex user's login email (not secret); None keeps upstream's user@example.com."""
    dex_username: str | None = None
    ingress_host: str | None = None
    """Public HTTPS host of the Ingress (the component creates it); makes oauth2-proxy cookies Secure."""
    spawner_ui_config: str | None = None
    """The notebook spawner's whole config file (``components.kubeflow.spawner``); None keeps upstream's."""
    _enabled: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        path = os.fspath(self.manifests_path).replace(os.sep, "/")
        if not path.strip() or any(ch in path for ch in "\n\r\0"):
            raise KubeflowOverlayError(f"manifests_path {path!r} must name the kubeflow/manifests tree")
        object.__setattr__(self, "manifests_path", path.rstrip("/") or "/")
        if self.tag not in km.MANIFESTS_TAGS:
            raise KubeflowOverlayError(
                f"unknown kubeflow/manifests tag {self.tag!r}; supported: {', '.join(km.SUPPORTED_TAGS)} "
                "(the tree pinned by content digest in components/catalog/upstream.py)"
            )
        if isinstance(self.components, str):
            raise KubeflowOverlayError(f"components must be a list of names, not the string {self.components!r}")
        if self.components is not None:
            object.__setattr__(self, "components", tuple(self.components))
        object.__setattr__(self, "_enabled", self._resolve_components())
        if self.dex_user_email is not None and not _EMAIL.match(self.dex_user_email):
            raise KubeflowOverlayError(f"dex_user_email {self.dex_user_email!r} is not an email address")
        if self.dex_username is not None and not _USERNAME.match(self.dex_username):
            raise KubeflowOverlayError(
                f"dex_username {self.dex_username!r} must be 1-63 letters, digits, '.', '_' or '-'"
            )
        if self.ingress_host is not None and not _is_dns_name(self.ingress_host):
            raise KubeflowOverlayError(
                f"ingress_host {self.ingress_host!r} must be a lowercase DNS name such as kubeflow.example.com"
            )

    def _resolve_components(self) -> tuple[str, ...]:
        available = [c for c in km.tag_components(self.tag) if c != km.CERT_MANAGER]
        if self.components is None:
            chosen = {c for c in available if c not in km.DEFAULT_DISABLED}
        else:
            chosen = set()
            for name in self.components:
                _check_component_name(name, self.tag, available)
                if name in chosen:
                    raise KubeflowOverlayError(f"Kubeflow component {name!r} is listed twice")
                chosen.add(name)
            missing = [c for c in km.REQUIRED_COMPONENTS if c not in chosen]
            if missing:
                raise KubeflowOverlayError(
                    f"required Kubeflow component(s) {', '.join(missing)} cannot be disabled "
                    f"(required: {', '.join(km.REQUIRED_COMPONENTS)})"
                )
        for name in sorted(chosen):
            needs = [n for n in km.COMPONENTS[name].requires if n not in chosen]
            if needs:
                raise KubeflowOverlayError(
                    f"Kubeflow component {name!r} needs {', '.join(needs)}; enable it too or disable {name!r}"
                )
        return tuple(c for c in available if c in chosen)

    @property
    def enabled_components(self) -> tuple[str, ...]:
        """Enabled components in upstream order (cert-manager is ``install_cert_manager``)."""
        return self._enabled

    @property
    def disabled_components(self) -> tuple[str, ...]:
        """Components of the tag's example that this spec leaves out (cert-manager included if off)."""
        return tuple(
            c
            for c in km.tag_components(self.tag)
            if (c == km.CERT_MANAGER and not self.install_cert_manager)
            or (c != km.CERT_MANAGER and c not in self._enabled)
        )


def _check_component_name(name: str, tag: str, available: list[str]) -> None:
    if name == km.CERT_MANAGER:
        raise KubeflowOverlayError(
            "cert-manager is not switched by the component list: set install_cert_manager "
            "(False when the cluster already runs cert-manager)"
        )
    if name in available:
        return
    allowed = ", ".join(available)
    if name in km.NOT_OFFERED:
        raise KubeflowOverlayError(f"Kubeflow component {name!r} is not offered: {km.NOT_OFFERED[name]}")
    raise KubeflowOverlayError(f"unknown Kubeflow component {name!r}; allowed for {tag}: {allowed}")


def _is_dns_name(host: str) -> bool:
    labels = host.split(".")
    return len(host) <= 253 and len(labels) >= 2 and all(_DNS_LABEL.match(label) for label in labels)


def manifests_path_for(checkout: str | os.PathLike[str], overlay_dir: str | os.PathLike[str]) -> str:
    """``checkout`` as a path relative to ``overlay_dir``: what ``manifests_path`` should be.

    Relative paths keep the generated overlay free of machine-specific absolute paths.
    """
    rel = os.path.relpath(os.path.abspath(checkout), os.path.abspath(overlay_dir))
    return rel.replace(os.sep, "/")


# --------------------------------------------------------------------------------------------
# What the program must create because the overlay deletes it
# --------------------------------------------------------------------------------------------


def _enabled_with_cert_manager(spec: KubeflowOverlaySpec) -> tuple[str, ...]:
    """Enabled components in upstream order, cert-manager included when it is installed."""
    return tuple(
        c
        for c in km.tag_components(spec.tag)
        if (c == km.CERT_MANAGER and spec.install_cert_manager) or c in spec.enabled_components
    )


def required_secrets(spec: KubeflowOverlaySpec) -> tuple[km.ReplacedSecret, ...]:
    """The Secrets the overlay deletes (their components are enabled): the program must create them."""
    return tuple(s for s in km.REPLACED_SECRETS if s.component in spec.enabled_components)


def required_namespaces(spec: KubeflowOverlaySpec) -> tuple[km.SecretNamespace, ...]:
    """The Namespaces the overlay deletes because a program-created Secret lives in them."""
    needed = {s.namespace for s in required_secrets(spec)}
    return tuple(n for n in km.SECRET_NAMESPACES if n.name in needed and n.component in spec.enabled_components)


def stage_resources(spec: KubeflowOverlaySpec, stage: Stage) -> tuple[tuple[str, str], ...]:
    """``(component, path)`` of the enabled example resources ``stage`` deploys, in upstream order."""
    enabled = set(_enabled_with_cert_manager(spec))
    taken = {path for other in STAGES if other.paths is not None for path in other.paths}
    return tuple(
        (component, path)
        for component, path in km.MANIFESTS_TAGS[spec.tag].example_resources
        if component in enabled and (path in stage.paths if stage.paths is not None else path not in taken)
    )


def stage_components(spec: KubeflowOverlaySpec, stage: Stage) -> tuple[str, ...]:
    """The enabled components with a resource in ``stage``, in upstream order."""
    return tuple(dict.fromkeys(component for component, _path in stage_resources(spec, stage)))


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (inline patches) as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)


def _dump(data: object) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096)


def _checkout_ref(spec: KubeflowOverlaySpec, overlay_dir: str | os.PathLike[str] | None) -> str:
    """The tree as kustomize must see it from the overlay directory: a relative path."""
    path = str(spec.manifests_path)
    if not posixpath.isabs(path) and not os.path.isabs(path):
        return path
    if overlay_dir is None:
        raise KubeflowOverlayError(
            f"manifests_path {path!r} is absolute and kustomize refuses absolute resource directories; "
            "pass overlay_dir (write_overlay does) or a path relative to the overlay directory"
        )
    return manifests_path_for(path, overlay_dir)


def _resources(spec: KubeflowOverlaySpec, checkout: str, stage: Stage) -> list[str]:
    prefix = posixpath.normpath(posixpath.join("..", checkout))
    return [posixpath.join(prefix, path) for _component, path in stage_resources(spec, stage)]


def _patch(body: dict[str, Any]) -> dict[str, Any]:
    return {"patch": _dump(body)}


def _delete_patch(api_version: str, kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, str] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return _patch({"$patch": "delete", "apiVersion": api_version, "kind": kind, "metadata": metadata})


def _mysql_env_patch(
    workload: tuple[str, str, str], add_root_password_from: km.ReplacedSecret | None
) -> dict[str, Any]:
    """A strategic merge patch: drop MYSQL_ALLOW_EMPTY_PASSWORD, optionally read the root password.

    ``$patch: delete`` on a list element removes the element with that merge key (``name``).
    """
    namespace, deployment, container = workload
    env: list[dict[str, Any]] = [{"name": km.MYSQL_ALLOW_EMPTY_PASSWORD_ENV, "$patch": "delete"}]
    if add_root_password_from is not None:
        env.append(
            {
                "name": km.MYSQL_ROOT_PASSWORD_ENV,
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
    text = km.UPSTREAM_DEX_CONFIG_YAML
    replacements = []
    if spec.dex_user_email is not None:
        replacements.append((f"- email: {km.DEFAULT_USER_EMAIL}\n", f'- email: "{spec.dex_user_email}"\n'))
    if spec.dex_username is not None:
        replacements.append((f"  username: {km.DEFAULT_USERNAME}\n", f'  username: "{spec.dex_username}"\n'))
    for old, new in replacements:
        if text.count(old) != 1:  # the catalog text changed shape: fail loudly, never half-patch
            raise RuntimeError(f"upstream dex config no longer has exactly one line {old.strip()!r}")
        text = text.replace(old, new)
    parsed = yaml.safe_load(text)
    user = parsed["staticPasswords"][0]
    if user["email"] != (spec.dex_user_email or km.DEFAULT_USER_EMAIL) or user["hashFromEnv"] != "DEX_USER_PASSWORD":
        raise RuntimeError("rewritten dex config does not carry the configured user")
    return text


def _webhook_patch(webhook: km.WebhookServer) -> dict[str, Any]:
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
        patches.append(_mysql_env_patch(km.PIPELINES_MYSQL, km.PIPELINES_MYSQL_SECRET))
    if "katib" in components:
        patches.append(_mysql_env_patch(km.KATIB_MYSQL, None))
    if "dex" in components and (spec.dex_user_email is not None or spec.dex_username is not None):
        configmap = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": km.DEX_CONFIGMAP, "namespace": km.DEX_NAMESPACE},
            "data": {km.DEX_CONFIG_KEY: dex_config_yaml(spec)},
        }
        patches.append(_patch(configmap))
    if "user-namespace" in components and spec.dex_user_email is not None:
        profile = {
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "Profile",
            "metadata": {"name": km.USER_PROFILE_NAME},
            "spec": {"owner": {"kind": "User", "name": spec.dex_user_email}},
        }
        params = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": km.USER_NAMESPACE_CONFIGMAP},
            "data": {"user": spec.dex_user_email},
        }
        patches.extend([_patch(profile), _patch(params)])
    if "oauth2-proxy" in components and spec.ingress_host is not None:
        params = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": km.OAUTH2_PROXY_PARAMETERS_CONFIGMAP, "namespace": km.OAUTH2_PROXY_NAMESPACE},
            "data": {"FORCE_HTTPS": "true"},
        }
        patches.append(_patch(params))
    return patches


def _header(spec: KubeflowOverlaySpec, stage: Stage) -> str:
    number = STAGES.index(stage) + 1
    lines = [
        "Generated by gpu-platform components/kubeflow/overlay.py. Do not edit: regenerate.",
        f"kubeflow/manifests {spec.tag} ({km.MANIFESTS_TAGS[spec.tag].commit}).",
        f"Stage {number} of {len(STAGES)}: {stage.summary}.",
        f"Components: {', '.join(stage_components(spec, stage))}.",
        f"cert-manager: {'installed' if spec.install_cert_manager else 'left out (the cluster provides it)'}.",
        f"Disabled components: {', '.join(spec.disabled_components) or 'none'}.",
    ]
    if _spawner_stage(spec) == stage:
        lines.append(
            f"Notebook spawner: {km.SPAWNER_CONFIG_KEY} is upstream's, plus the fleet's MIG resources and GPU pools."
        )
    if spec.ingress_host and "oauth2-proxy" in stage_components(spec, stage):
        lines.append(f"Served at https://{spec.ingress_host}/ (oauth2-proxy FORCE_HTTPS=true).")
    components = stage_components(spec, stage)
    deleted = [f"Namespace {n.name}" for n in required_namespaces(spec) if n.component in components]
    deleted += [f"Secret {s.namespace}/{s.name}" for s in required_secrets(spec) if s.component in components]
    if deleted:
        lines.append("Deleted here; the Pulumi program creates them (the Secrets from Pulumi secrets):")
        lines.extend(f"  {item}" for item in deleted)
    return "".join(f"# {line}\n" for line in lines)


def _kustomization(spec: KubeflowOverlaySpec, checkout: str, stage: Stage) -> str:
    document: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "sortOptions": km.upstream_sort_options(),
        "resources": _resources(spec, checkout, stage),
    }
    components = stage_components(spec, stage)
    patches = _content_patches(spec, components)
    if stage.webhooks_after_servers:
        # cert-manager has a path in each stage; its webhooks are in the foundation's.
        elsewhere = {c for other in STAGES if not other.webhooks_after_servers for c in stage_components(spec, other)}
        patches.extend(
            _webhook_patch(w) for w in km.WEBHOOK_SERVERS if w.component in components and w.component not in elsewhere
        )
    if patches:
        document["patches"] = patches
    if _spawner_stage(spec) == stage:
        # Upstream's generator builds the ConfigMap from its file; a merge generator replaces that key
        # with ours (same name, so the Deployment follows the new content hash).
        document["configMapGenerator"] = [
            {
                "name": km.SPAWNER_CONFIGMAP,
                "namespace": km.SPAWNER_NAMESPACE,
                "behavior": "merge",
                "files": [km.SPAWNER_CONFIG_KEY],
            }
        ]
    return _header(spec, stage) + _dump(document)


def _spawner_stage(spec: KubeflowOverlaySpec) -> Stage | None:
    """The stage that holds the jupyter web app, when the spec changes its spawner config."""
    if spec.spawner_ui_config is None:
        return None
    return next((stage for stage in STAGES if km.SPAWNER_COMPONENT in stage_components(spec, stage)), None)


def review_command(overlay_dir: str | os.PathLike[str] | None, stage: Stage) -> str:
    """A shell command that renders ``stage`` and works from any folder of the project's git checkout.

    With a relative ``overlay_dir`` (the project-relative folder the component writes to), the path is
    anchored at ``git rev-parse --show-toplevel``: the same command then works from the overlay folder
    and from the preview's copy of it (``build/preview/<stack>/kubeflow/``), where a relative path to
    the tree would point elsewhere.
    """
    if overlay_dir is not None and not os.path.isabs(overlay_dir):
        where = posixpath.join(os.fspath(overlay_dir).replace(os.sep, "/"), stage.directory)
        return f'kubectl kustomize "$(git rev-parse --show-toplevel)/{where}"'
    return f"kubectl kustomize {stage.directory}"


def _readme(spec: KubeflowOverlaySpec, overlay_dir: str | os.PathLike[str] | None) -> str:
    stages = "\n".join(
        f"{number}. `{stage.directory}/`: {stage.summary}. Review: `{review_command(overlay_dir, stage)}`"
        for number, stage in enumerate(STAGES, start=1)
    )
    namespaces = "\n".join(
        f"- `{n.name}` (labels " + ", ".join(f"`{k}={v}`" for k, v in n.labels.items()) + ")"
        for n in required_namespaces(spec)
    )
    secrets = "\n".join(
        f"- `{s.namespace}/{s.name}`: " + "; ".join(f"`{k}`: {v}" for k, v in s.keys.items())
        for s in required_secrets(spec)
    )
    spawner = _spawner_stage(spec)
    spawner_note = (
        f"\n## The notebook spawner\n\n`{spawner.directory}/{km.SPAWNER_CONFIG_KEY}` is upstream's "
        f"`{km.SPAWNER_CONFIG_PATH}` with the fleet's MIG resources in the GPU list and one node affinity per GPU\n"
        f"pool; a `configMapGenerator` (`behavior: merge`) puts it into `{km.SPAWNER_NAMESPACE}/{km.SPAWNER_CONFIGMAP}`.\n"
        if spawner is not None
        else ""
    )
    return (
        f"# Generated Kubeflow overlay ({spec.tag})\n\n"
        "Generated by `components/kubeflow/overlay.py`; regenerate instead of editing. Each folder is one\n"
        "`kustomize.v2.Directory`, deployed in this order (the review commands work from any folder of the\n"
        "project's git checkout, with kubectl 1.32 / kustomize 5.5 such as the project's `.tools/bin/kubectl`):\n\n"
        f"{stages}\n\n"
        "## Created by the Pulumi program before the Directories\n\n"
        "Namespaces (deleted here, created with upstream's labels):\n\n"
        f"{namespaces}\n\n"
        "Secrets (deleted here because upstream ships public values; created from Pulumi secrets):\n\n"
        f"{secrets}\n"
        f"{spawner_note}"
    )


def render_overlay(spec: KubeflowOverlaySpec, overlay_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Relative file path -> text of every file of the overlay, sorted by path.

    ``overlay_dir`` (where the files will be written) is needed when ``manifests_path`` is absolute,
    and makes the README's review commands project-relative when it is relative. Pure: same spec and
    overlay location, same bytes. No secret value appears in any file.
    """
    checkout = _checkout_ref(spec, overlay_dir)
    files = {"README.md": _readme(spec, overlay_dir)}
    for stage in STAGES:
        files[f"{stage.directory}/kustomization.yaml"] = _kustomization(spec, checkout, stage)
    spawner = _spawner_stage(spec)
    if spawner is not None and spec.spawner_ui_config is not None:
        files[f"{spawner.directory}/{km.SPAWNER_CONFIG_KEY}"] = spec.spawner_ui_config
    return dict(sorted(files.items()))


def write_overlay(spec: KubeflowOverlaySpec, out_dir: str | os.PathLike[str]) -> tuple[Path, ...]:
    """Write ``render_overlay(spec, out_dir)`` under ``out_dir``; return the paths written.

    Files whose content is already identical are left untouched (their mtime too), so repeated
    ``pulumi preview`` runs do not churn the directory. ``out_dir`` belongs to the generator: any other
    file in it (an earlier layout's stage, a hand edit) is removed, so what is there is what deploys
    (and what the preview copies).
    """
    root = Path(out_dir)
    written = []
    for relative, text in render_overlay(spec, root).items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
        written.append(target)
    keep = set(written)
    for path in sorted(root.rglob("*"), reverse=True):  # children before their folders
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif path not in keep:
            path.unlink()
    return tuple(written)
