"""Generate the kustomize overlay that installs Kubeflow 1.10 from a pinned kubeflow/manifests checkout.

Upstream's install is ``kustomize build example | kubectl apply``. The Kubeflow component deploys a
generated overlay with ``kustomize.v2.Directory`` instead, because the example cannot be used as is:

- it ships public secrets: the dex user's bcrypt hash (of ``12341234``), the OIDC client secret and
  the oauth2-proxy cookie secret. The overlay **deletes** those Secrets (``$patch: delete``) rather
  than patching new values in, so no secret value is ever written to disk or into a kustomization.
  The Pulumi program creates them as Pulumi-managed Secrets from Pulumi secrets:
  ``PROGRAM_SUPPLIED_SECRETS`` lists namespace, name and keys; ``REPLACED_SECRETS`` in
  ``components.catalog.kubeflow_manifests`` says what each key holds. The oauth2-proxy Secret comes
  from a hashing secretGenerator; deleting it before kustomize appends hashes (which it does last,
  at the top level) leaves oauth2-proxy's secretKeyRef on the plain name ``oauth2-proxy``.
- it always installs cert-manager; ``install_cert_manager=False`` leaves both cert-manager paths out
  for clusters that already run one.
- its dex user is ``user@example.com``; the dex ConfigMap holds no secret (the hash is read from env
  ``DEX_USER_PASSWORD``), so the overlay rewrites the email/username there when they are configured.

CRD ordering (decided here, used by the component). ``kubectl apply`` of the example "may fail on
the first try" because custom resources arrive before their CRDs. A kustomization cannot reference
its own parent directory (kustomize refuses: "cycle detected"), so the overlay is written three
times from the same resource list and patches, each a standalone kustomization:

- ``kustomization.yaml``: the full install, the upstream example with our changes. Deploy it alone
  when ordering does not matter (or for review: ``kubectl kustomize <dir>``).
- ``crds-and-namespaces/kustomization.yaml``: only the CustomResourceDefinitions and Namespaces.
- ``rest/kustomization.yaml``: everything else.

The two phases split the full render exactly (the tests check that their union is the full render,
byte for byte per object). Each phase is filtered with one kustomize ``$patch: delete`` patch whose
``target.kind`` is a regular expression: ``CustomResourceDefinition|Namespace`` for ``rest/``, and
its complement for ``crds-and-namespaces/``. kustomize's selectors are Go RE2 without look-ahead, so
the complement is spelled out by ``kind_regex_excluding``. No object is relabelled or changed by the
split. The component deploys ``crds-and-namespaces`` first, then the program-supplied Secrets (their
namespaces ``auth`` and ``oauth2-proxy`` now exist), then ``rest`` with ``depends_on`` on both.

Paths: kustomize refuses absolute resource directories ("new root ... cannot be absolute"), so the
kustomizations always reference the checkout by a relative path. A relative ``manifests_path`` is
relative to the overlay directory and is written as given; an absolute one is converted when the
overlay directory is known (``write_overlay`` always knows it; ``render_overlay`` takes it as
``overlay_dir``). So no machine path ends up in the files. Everything here is pure and
deterministic: the same spec gives byte-identical files, with no timestamps.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from components.catalog import kubeflow_manifests as km

FULL_OVERLAY_DIR = "."
CRDS_AND_NAMESPACES_DIR = "crds-and-namespaces"
REST_DIR = "rest"
PHASE_DIRS: tuple[str, ...] = (CRDS_AND_NAMESPACES_DIR, REST_DIR)
"""Deploy in this order; each is a kustomization directory inside the overlay directory."""

FIRST_PHASE_KINDS: tuple[str, ...] = ("CustomResourceDefinition", "Namespace")


class SuppliedSecret(NamedTuple):
    """A Secret the Pulumi program must create because the overlay deletes upstream's."""

    namespace: str
    name: str
    keys: tuple[str, ...]


PROGRAM_SUPPLIED_SECRETS: tuple[SuppliedSecret, ...] = tuple(
    SuppliedSecret(s.namespace, s.name, tuple(s.keys)) for s in km.REPLACED_SECRETS
)


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
    """The kubeflow/manifests checkout at ``tag``: relative to the overlay directory, or absolute."""
    tag: str = km.DEFAULT_TAG
    components: tuple[str, ...] | None = None
    install_cert_manager: bool = True
    """False when the cluster already runs cert-manager (cert-manager.io/v1 CRDs and webhook)."""
    dex_user_email: str | None = None
    """The static dex user's login email (not secret); None keeps upstream's user@example.com."""
    dex_username: str | None = None
    ingress_host: str | None = None
    """Public HTTPS host of the Ingress (the component creates it); makes oauth2-proxy cookies Secure."""
    _enabled: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        path = os.fspath(self.manifests_path).replace(os.sep, "/")
        if not path.strip() or any(ch in path for ch in "\n\r\0"):
            raise KubeflowOverlayError(f"manifests_path {path!r} must name the kubeflow/manifests checkout")
        object.__setattr__(self, "manifests_path", path.rstrip("/") or "/")
        if self.tag not in km.MANIFESTS_TAGS:
            raise KubeflowOverlayError(
                f"unknown kubeflow/manifests tag {self.tag!r}; supported tags: {', '.join(km.SUPPORTED_TAGS)}"
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
    if name in km.COMPONENTS:
        tags = [t for t in km.SUPPORTED_TAGS if name in km.tag_components(t)]
        raise KubeflowOverlayError(
            f"Kubeflow component {name!r} is not in the {tag} example (it is in: {', '.join(tags)}); "
            f"allowed for {tag}: {allowed}"
        )
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
# Regular expression for "every kind except these"
# --------------------------------------------------------------------------------------------


def kind_regex_excluding(excluded: Iterable[str]) -> str:
    """A Go RE2 / Python ``re`` pattern whose full matches are all strings except ``excluded``.

    kustomize anchors selector patterns (``^(?:pattern)$``) and RE2 has no negative look-ahead, so
    the complement of a finite set of words is built from their trie: at each node a string is
    allowed if it ends here (and the node is not an excluded word), or continues with a character
    that leaves the trie, or continues into a child whose own complement allows the rest.
    """
    trie: dict[str, Any] = {}
    for word in excluded:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # end-of-word marker

    def complement(node: dict[str, Any]) -> str:
        children = sorted(ch for ch in node if ch)
        alternatives = [] if "" in node else [""]
        if children:
            alternatives.append("[^" + "".join(re.escape(ch) for ch in children) + "].*")
        else:
            alternatives.append(".+")
        alternatives.extend(re.escape(ch) + "(?:" + complement(node[ch]) + ")" for ch in children)
        return "|".join(alternatives)

    return "(?:" + complement(trie) + ")"


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
    """The checkout as kustomize must see it from the overlay directory: a relative path."""
    path = str(spec.manifests_path)
    if not posixpath.isabs(path) and not os.path.isabs(path):
        return path
    if overlay_dir is None:
        raise KubeflowOverlayError(
            f"manifests_path {path!r} is absolute and kustomize refuses absolute resource directories; "
            "pass overlay_dir (write_overlay does) or a path relative to the overlay directory"
        )
    return manifests_path_for(path, overlay_dir)


def _resources(spec: KubeflowOverlaySpec, checkout: str, subdir: str) -> list[str]:
    enabled = set(spec.enabled_components)
    if spec.install_cert_manager:
        enabled.add(km.CERT_MANAGER)
    prefix = checkout if subdir == FULL_OVERLAY_DIR else posixpath.normpath(posixpath.join("..", checkout))
    return [
        posixpath.join(prefix, path)
        for component, path in km.MANIFESTS_TAGS[spec.tag].example_resources
        if component in enabled
    ]


def _delete_patch(api_version: str, kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, str] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    body = {"$patch": "delete", "apiVersion": api_version, "kind": kind, "metadata": metadata}
    return {"patch": _dump(body)}


def _kind_filter_patch(kind_pattern: str) -> dict[str, Any]:
    # With a target, kustomize applies the patch to every match and ignores the body's name/kind.
    body = {
        "$patch": "delete",
        "apiVersion": "v1",
        "kind": "DeletedByTarget",
        "metadata": {"name": "deleted-by-target"},
    }
    return {"target": {"kind": kind_pattern}, "patch": _dump(body)}


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


def _content_patches(spec: KubeflowOverlaySpec) -> list[dict[str, Any]]:
    patches = [_delete_patch("v1", "Secret", s.name, s.namespace) for s in km.REPLACED_SECRETS]
    if spec.dex_user_email is not None or spec.dex_username is not None:
        configmap = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": km.DEX_CONFIGMAP, "namespace": km.DEX_NAMESPACE},
            "data": {km.DEX_CONFIG_KEY: dex_config_yaml(spec)},
        }
        patches.append({"patch": _dump(configmap)})
    if spec.dex_user_email is not None and "user-namespace" in spec.enabled_components:
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
        patches.extend([{"patch": _dump(profile)}, {"patch": _dump(params)}])
    if spec.ingress_host is not None:
        params = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": km.OAUTH2_PROXY_PARAMETERS_CONFIGMAP, "namespace": km.OAUTH2_PROXY_NAMESPACE},
            "data": {"FORCE_HTTPS": "true"},
        }
        patches.append({"patch": _dump(params)})
    return patches


def _header(spec: KubeflowOverlaySpec, subdir: str) -> str:
    what = {
        FULL_OVERLAY_DIR: "the full Kubeflow install (upstream example/kustomization.yaml with our changes)",
        CRDS_AND_NAMESPACES_DIR: "phase 1 of 2: only CustomResourceDefinitions and Namespaces",
        REST_DIR: "phase 2 of 2: everything except CustomResourceDefinitions and Namespaces",
    }[subdir]
    lines = [
        "Generated by gpu-platform components/kubeflow/overlay.py. Do not edit: regenerate.",
        f"kubeflow/manifests {spec.tag} ({km.MANIFESTS_TAGS[spec.tag].commit}), {what}.",
        f"cert-manager: {'installed' if spec.install_cert_manager else 'left out (the cluster provides it)'}.",
        f"Disabled components: {', '.join(spec.disabled_components) or 'none'}.",
    ]
    if spec.ingress_host:
        lines.append(f"Served at https://{spec.ingress_host}/ (oauth2-proxy FORCE_HTTPS=true).")
    lines.append("Deleted here; the Pulumi program creates them from Pulumi secrets:")
    lines.extend(f"  {s.namespace}/{s.name}: {', '.join(s.keys)}" for s in PROGRAM_SUPPLIED_SECRETS)
    return "".join(f"# {line}\n" for line in lines)


def _kustomization(spec: KubeflowOverlaySpec, checkout: str, subdir: str) -> str:
    patches = _content_patches(spec)
    if subdir == CRDS_AND_NAMESPACES_DIR:
        patches.append(_kind_filter_patch(kind_regex_excluding(FIRST_PHASE_KINDS)))
    elif subdir == REST_DIR:
        patches.append(_kind_filter_patch("|".join(FIRST_PHASE_KINDS)))
    document = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "sortOptions": km.upstream_sort_options(),
        "resources": _resources(spec, checkout, subdir),
        "patches": patches,
    }
    return _header(spec, subdir) + _dump(document)


def _readme(spec: KubeflowOverlaySpec) -> str:
    secrets = "\n".join(
        f"- `{s.namespace}/{s.name}`: " + "; ".join(f"`{k}`: {v}" for k, v in s.keys.items())
        for s in km.REPLACED_SECRETS
    )
    return (
        f"# Generated Kubeflow overlay ({spec.tag})\n\n"
        "Generated by `components/kubeflow/overlay.py`; regenerate instead of editing.\n\n"
        "- `kustomization.yaml`: the full install (`kubectl kustomize .` to review it).\n"
        f"- `{CRDS_AND_NAMESPACES_DIR}/`: phase 1, CustomResourceDefinitions and Namespaces only.\n"
        f"- `{REST_DIR}/`: phase 2, everything else. Deploy it after phase 1 and after the Secrets below.\n\n"
        "## Secrets the Pulumi program creates (the overlay deletes upstream's public defaults)\n\n"
        f"{secrets}\n"
    )


def render_overlay(spec: KubeflowOverlaySpec, overlay_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Relative file path -> text of every file of the overlay, sorted by path.

    ``overlay_dir`` (where the files will be written) is only needed when ``manifests_path`` is
    absolute. Pure: same spec and overlay location, same bytes. No secret value appears in any file.
    """
    checkout = _checkout_ref(spec, overlay_dir)
    files = {
        "README.md": _readme(spec),
        "kustomization.yaml": _kustomization(spec, checkout, FULL_OVERLAY_DIR),
    }
    for subdir in PHASE_DIRS:
        files[f"{subdir}/kustomization.yaml"] = _kustomization(spec, checkout, subdir)
    return dict(sorted(files.items()))


def write_overlay(spec: KubeflowOverlaySpec, out_dir: str | os.PathLike[str]) -> tuple[Path, ...]:
    """Write ``render_overlay(spec, out_dir)`` under ``out_dir``; return the paths written.

    Files whose content is already identical are left untouched (their mtime too), so repeated
    ``pulumi preview`` runs do not churn the directory. Other files in ``out_dir`` are left alone.
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
    return tuple(written)
