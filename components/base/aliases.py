"""Aliases for resources that move between a canary ordering step and the rest.

Why: the engine matches resources by URN. Making a pool the canary moves its ``NVIDIADriver`` and its
smoke Jobs from the ``<step>`` component to the ``<step>-canary`` one (and back when the canary is
dropped): new parents, new URNs, the same Kubernetes objects. Without an alias naming the old URN,
``pulumi up`` creates the "new" object first (it already exists: the create fails, or server-side
apply adopts it) and then deletes it with the old resource. Each child therefore answers to the URN
it has under the other step; an alias to a URN that is not in the stack is ignored by the engine.
"""

from __future__ import annotations

import pulumi

#: The name suffix of a canary ordering step's component (``gpu-drivers-canary``, ``gpu-smoke-test-canary``).
CANARY_SUFFIX = "-canary"


def sibling_step(component_name: str) -> str:
    """The other ordering step's component name: ``gpu-drivers`` <-> ``gpu-drivers-canary``."""
    if component_name.endswith(CANARY_SUFFIX):
        return component_name.removesuffix(CANARY_SUFFIX)
    return component_name + CANARY_SUFFIX


def moved_between_steps(
    component_name: str, component_type: str, child_suffix: str, parent: pulumi.Resource | None = None
) -> list[pulumi.Input[str | pulumi.Alias]]:
    """The alias of child ``<component>-<suffix>`` to where it is under the other step: ``<sibling>-<suffix>``.

    ``parent``: the component's own parent (None: the stack), which the sibling shares.
    """
    sibling = sibling_step(component_name)
    return [
        pulumi.Alias(
            name=f"{sibling}-{child_suffix}",
            parent=pulumi.create_urn(sibling, component_type, parent=parent),
        )
    ]
