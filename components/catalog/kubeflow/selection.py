"""Which Kubeflow components a stack may switch on or off, and what a selection enables.

Why here: the config check (key-named problems), the overlay spec (its enabled components) and the
docs describe one rule: an unknown or unoffered name is refused, required components stay, a
component comes with what it needs, each name once, cert-manager is switched by its own key. The
components and their needs are the facts of the tag (``v1_10_2.components``).
"""

from __future__ import annotations

from collections.abc import Sequence

from components.catalog.kubeflow.releases import tag_components
from components.catalog.kubeflow.v1_10_2.components import (
    CERT_MANAGER,
    COMPONENTS,
    DEFAULT_DISABLED,
    NOT_OFFERED,
    REQUIRED_COMPONENTS,
)


class ComponentSelectionError(ValueError):
    """A component list that cannot make a working install (the config refuses it first, by key)."""


def switchable_components(tag: str) -> tuple[str, ...]:
    """The components of ``tag``'s example a stack lists or leaves out (all but cert-manager), in upstream order."""
    return tuple(c for c in tag_components(tag) if c != CERT_MANAGER)


def _name_problem(name: str, tag: str, available: Sequence[str]) -> str | None:
    if name == CERT_MANAGER:
        return (
            "cert-manager is not switched by the component list: set installCertManager "
            "(false when the cluster already runs cert-manager)"
        )
    if name in available:
        return None
    if name in NOT_OFFERED:
        return f"Kubeflow component {name!r} is not offered: {NOT_OFFERED[name]}"
    return f"unknown Kubeflow component {name!r}; allowed for {tag}: {', '.join(available)}"


def _chosen(tag: str, components: Sequence[str] | None) -> tuple[set[str], str | None]:
    """The chosen names, or the first reason the list is refused."""
    available = switchable_components(tag)
    if components is None:
        return {c for c in available if c not in DEFAULT_DISABLED}, None
    chosen: set[str] = set()
    for name in components:
        problem = _name_problem(name, tag, available)
        if problem:
            return chosen, problem
        if name in chosen:
            return chosen, f"Kubeflow component {name!r} is listed twice"
        chosen.add(name)
    missing = [c for c in REQUIRED_COMPONENTS if c not in chosen]
    if missing:
        return chosen, (
            f"required Kubeflow component(s) {', '.join(missing)} cannot be disabled "
            f"(required: {', '.join(REQUIRED_COMPONENTS)})"
        )
    return chosen, None


def component_selection_problem(tag: str, components: Sequence[str] | None) -> str | None:
    """Why ``components`` (None: the default selection) cannot be installed from ``tag``, or None."""
    chosen, problem = _chosen(tag, components)
    if problem:
        return problem
    for name in sorted(chosen):
        needs = [n for n in COMPONENTS[name].requires if n not in chosen]
        if needs:
            return f"Kubeflow component {name!r} needs {', '.join(needs)}; enable it too or disable {name!r}"
    return None


def enabled_components(tag: str, components: Sequence[str] | None) -> tuple[str, ...]:
    """The enabled components in upstream order (None: everything but ``DEFAULT_DISABLED``).

    Raises ComponentSelectionError with ``component_selection_problem``'s reason for a list that cannot work.
    """
    problem = component_selection_problem(tag, components)
    if problem:
        raise ComponentSelectionError(problem)
    chosen, _ = _chosen(tag, components)
    return tuple(c for c in switchable_components(tag) if c in chosen)


def disabled_components(tag: str, enabled: Sequence[str], install_cert_manager: bool) -> tuple[str, ...]:
    """Components of ``tag``'s example a selection leaves out, in upstream order (cert-manager when not installed)."""
    return tuple(
        c
        for c in tag_components(tag)
        if (c == CERT_MANAGER and not install_cert_manager) or (c != CERT_MANAGER and c not in enabled)
    )
