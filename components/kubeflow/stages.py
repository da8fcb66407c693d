"""The overlay's stages: which upstream paths each ``kustomize.v2.Directory`` deploys, in which order.

Each stage is a standalone kustomization over whole upstream paths, in upstream order, so every path
keeps its own ``vars``, ``replacements`` and generators: upstream uses kustomize ``vars`` in 18
kustomizations, and a stage that dropped an object a var points at would not build (filtering one
full render by kind did exactly that). Inside one ``kustomize.v2.Directory`` pulumi-kubernetes orders
CustomResourceDefinitions before their custom resources and Namespaces before namespaced objects (its
yaml/v2 ``Register`` sorts with the cli-utils dependency graph), so a stage needs no CRD phase of its own:

- ``foundation/``: cert-manager (when installed) and Istio. It is applied and awaited first, so the
  cert-manager webhook answers before any ``Certificate`` or ``Issuer`` is created, and istiod's
  sidecar injector is registered before any Kubeflow pod starts (a pod created earlier would run
  without its sidecar, outside the mesh).
- ``platform/``: everything else.

Only whole objects are removed and nothing is renamed, so the stages together are the example's
render minus what the program owns and the components left out (the tests check this on the real
tree, and docs/kubeflow.md lists the differences).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.kubeflow.releases import DEFAULT_TAG, MANIFESTS_TAGS
from components.catalog.kubeflow.v1_10_2.layout import CERT_MANAGER_PATH
from components.catalog.kubeflow.v1_10_2.spawner import SPAWNER_COMPONENT
from components.kubeflow.spec import KubeflowOverlaySpec


@dataclass(frozen=True)
class Stage:
    """One ``kustomize.v2.Directory`` of the install: a subfolder of the overlay and what goes in it."""

    directory: str
    summary: str
    paths: frozenset[str] | None
    """The example paths it holds (when their component is enabled); None: every path no other stage holds."""
    webhooks_after_servers: bool
    """Register each webhook configuration only once the Deployment serving it is ready (``patches.webhook_patch``)."""


_LAYOUT = MANIFESTS_TAGS[DEFAULT_TAG]
FOUNDATION = Stage(
    "foundation",
    "cert-manager (when installed) and Istio: the webhooks and the mesh the rest relies on",
    frozenset(
        {
            CERT_MANAGER_PATH,
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


def stage_resources(spec: KubeflowOverlaySpec, stage: Stage) -> tuple[tuple[str, str], ...]:
    """``(component, path)`` of the enabled example resources ``stage`` deploys, in upstream order."""
    enabled = set(spec.installed_components)
    taken = {path for other in STAGES if other.paths is not None for path in other.paths}
    return tuple(
        (component, path)
        for component, path in MANIFESTS_TAGS[spec.tag].example_resources
        if component in enabled and (path in stage.paths if stage.paths is not None else path not in taken)
    )


def stage_components(spec: KubeflowOverlaySpec, stage: Stage) -> tuple[str, ...]:
    """The enabled components with a resource in ``stage``, in upstream order."""
    return tuple(dict.fromkeys(component for component, _path in stage_resources(spec, stage)))


def spawner_stage(spec: KubeflowOverlaySpec) -> Stage | None:
    """The stage that holds the jupyter web app, when the spec changes its spawner config."""
    if spec.spawner_ui_config is None:
        return None
    return next((stage for stage in STAGES if SPAWNER_COMPONENT in stage_components(spec, stage)), None)
