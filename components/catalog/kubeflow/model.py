"""The shapes of the facts about a kubeflow/manifests release, shared by every version module.

Why its own module: a version module (``v1_10_2``) holds data only, written in these types, so a new
release is one new folder of data and the code that reads the facts never changes shape with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ManifestsTag:
    """The supported tag of kubeflow/manifests and where its directories are.

    The path layout changed inside the 1.10 line (v1.10.0 and v1.10.1 keep applications under
    ``apps/`` and Istio under ``common/istio-1-24/``; v1.10.2 moved them to ``applications/`` and
    ``common/istio/``), so a program that pins "1.10" must know the exact tag.
    """

    tag: str
    commit: str
    applications_dir: str
    istio_dir: str
    example_resources: tuple[tuple[str, str], ...]
    """``(component name, path)`` for every line of ``example/kustomization.yaml`` ``resources``,
    in upstream order, paths relative to the repository root."""


@dataclass(frozen=True)
class KubeflowComponent:
    """A named group of example resources that is switched on or off as one piece."""

    name: str
    description: str
    required: bool
    requires: tuple[str, ...] = ()
    """Other components that must be enabled with this one (it does not work without them)."""


@dataclass(frozen=True)
class PublicDefault:
    """One credential upstream ships with a value anyone can read, and where it is."""

    namespace: str
    secret: str
    key: str
    value: str
    source: str
    what: str = "a credential"  #: how a policy message names it


@dataclass(frozen=True)
class ReplacedSecret:
    """An upstream Secret holding a public default, which the overlay deletes.

    The Pulumi program creates a Secret of the same namespace, name and keys from Pulumi secrets,
    so the consumers (envFrom, secretKeyRef, the artifact repository config) find it unchanged.
    """

    namespace: str
    name: str
    component: str
    """The example component that ships it: the Secret exists (and is replaced) only when it is enabled."""
    keys: Mapping[str, str]
    """key -> what the value is and how to make it."""
    source: str
    generated_with_hash: bool
    """Upstream makes it with a secretGenerator that appends a content hash. Deleting it in the
    overlay (before kustomize adds hashes at the top level) leaves the consumers pointing at the
    plain name, which is the name the program uses."""


@dataclass(frozen=True)
class SecretNamespace:
    """An upstream Namespace that holds a replaced Secret, with its labels as upstream writes them.

    The program creates these Namespaces itself (and the overlay deletes upstream's), so that its
    Secrets exist before the Kubeflow workloads that read them start.
    """

    name: str
    component: str
    labels: Mapping[str, str]
    source: str


@dataclass(frozen=True)
class SecretConsumer:
    """A container that reads a replaced Secret: one env variable (secretKeyRef) or all of it (envFrom)."""

    namespace: str
    deployment: str
    container: str
    variable: str | None
    """The env variable; None for ``envFrom`` (every key of the Secret)."""
    secret: str
    key: str | None
    source: str


@dataclass(frozen=True)
class WebhookServer:
    """A webhook configuration of the example and the Deployment behind its Service."""

    kind: str
    """``ValidatingWebhookConfiguration`` or ``MutatingWebhookConfiguration``."""
    name: str
    component: str
    namespace: str
    deployment: str
