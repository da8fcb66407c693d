"""What the generated Kubeflow overlay installs: the checkout, the tag, the components, the dex user, the host.

Why its own module: the config model (``config.py``) checks every value by its config key and builds
this spec from a valid config; the stages, the patches and the file rendering only read it. The spec
still refuses what would make a broken or public-default install when it is built directly (the
tests, a tool), with the same catalog rules the config applies, so a rule is written once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from components.catalog.kubeflow.model import ReplacedSecret, SecretNamespace
from components.catalog.kubeflow.releases import DEFAULT_TAG, tag_components, unsupported_tag_problem
from components.catalog.kubeflow.selection import (
    ComponentSelectionError,
    disabled_components,
    enabled_components,
)
from components.catalog.kubeflow.users import dex_email_problem, dex_username_problem
from components.catalog.kubeflow.v1_10_2.components import CERT_MANAGER
from components.catalog.kubeflow.v1_10_2.replaced import REPLACED_SECRETS, SECRET_NAMESPACES
from components.catalog.kubernetes import hostname_problem


class KubeflowOverlayError(ValueError):
    """A KubeflowOverlaySpec that cannot produce a working, non-default install."""


def manifests_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name the kubeflow/manifests tree (empty, or a line break or NUL in it), or None."""
    if not path.strip() or any(ch in path for ch in "\n\r\0"):
        return f"{path!r} must name the kubeflow/manifests tree (a folder path on one line)"
    return None


@dataclass(frozen=True)
class KubeflowOverlaySpec:
    """What to install from which checkout.

    ``components`` is the set of enabled components (``None``: everything the tag's example
    installs except ``user-namespace``, see ``DEFAULT_DISABLED`` in the catalog). Required
    components cannot be left out. cert-manager is switched by ``install_cert_manager`` only.
    """

    manifests_path: str | os.PathLike[str]
    """The kubeflow/manifests tree at ``tag``: relative to the overlay directory, or absolute."""
    tag: str = DEFAULT_TAG
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
        _refuse("manifests_path", manifests_path_problem(path))
        object.__setattr__(self, "manifests_path", path.rstrip("/") or "/")
        _refuse("tag", unsupported_tag_problem(self.tag))
        if isinstance(self.components, str):
            raise KubeflowOverlayError(f"components must be a list of names, not the string {self.components!r}")
        if self.components is not None:
            object.__setattr__(self, "components", tuple(self.components))
        try:
            object.__setattr__(self, "_enabled", enabled_components(self.tag, self.components))
        except ComponentSelectionError as error:
            raise KubeflowOverlayError(f"components: {error}") from None
        if self.dex_user_email is not None:
            _refuse("dex_user_email", dex_email_problem(self.dex_user_email))
        if self.dex_username is not None:
            _refuse("dex_username", dex_username_problem(self.dex_username))
        if self.ingress_host is not None:
            _refuse("ingress_host", hostname_problem(self.ingress_host))

    @property
    def enabled_components(self) -> tuple[str, ...]:
        """Enabled components in upstream order (cert-manager is ``install_cert_manager``)."""
        return self._enabled

    @property
    def disabled_components(self) -> tuple[str, ...]:
        """Components of the tag's example that this spec leaves out (cert-manager included if off)."""
        return disabled_components(self.tag, self._enabled, self.install_cert_manager)

    @property
    def installed_components(self) -> tuple[str, ...]:
        """Enabled components in upstream order, cert-manager included when it is installed."""
        return tuple(
            c
            for c in tag_components(self.tag)
            if (c == CERT_MANAGER and self.install_cert_manager) or c in self._enabled
        )


def _refuse(field_name: str, problem: str | None) -> None:
    if problem:
        raise KubeflowOverlayError(f"{field_name}: {problem}")


def manifests_path_for(checkout: str | os.PathLike[str], overlay_dir: str | os.PathLike[str]) -> str:
    """``checkout`` as a path relative to ``overlay_dir``: what ``manifests_path`` should be.

    Relative paths keep the generated overlay free of machine-specific absolute paths.
    """
    rel = os.path.relpath(os.path.abspath(checkout), os.path.abspath(overlay_dir))
    return rel.replace(os.sep, "/")


# --------------------------------------------------------------------------------------------
# What the program must create because the overlay deletes it
# --------------------------------------------------------------------------------------------


def required_secrets(spec: KubeflowOverlaySpec) -> tuple[ReplacedSecret, ...]:
    """The Secrets the overlay deletes (their components are enabled): the program must create them."""
    return tuple(s for s in REPLACED_SECRETS if s.component in spec.enabled_components)


def required_namespaces(spec: KubeflowOverlaySpec) -> tuple[SecretNamespace, ...]:
    """The Namespaces the overlay deletes because a program-created Secret lives in them."""
    needed = {s.namespace for s in required_secrets(spec)}
    return tuple(n for n in SECRET_NAMESPACES if n.name in needed and n.component in spec.enabled_components)
