"""A stack switched to another platform, where ``pulumi up`` would destroy what the old platform created.

Why the review refuses it and not the program: the program sees only the new config, never what the stack
created before, so it cannot tell a switch from a first deployment. The review has both previews: the base's
``cluster.kind`` (the ``cluster`` output) and the resources the head deletes. Moving a Yandex stack to
``existing`` (its node groups now owned by another stack) would delete the node groups, every GPU node with them;
moving bare metal to ``existing`` deletes only host preparation (its delete step runs nothing on the hosts) and
the NodePatches that label the hosts. Both destroy something the old platform created, so both are refused with
what would go and how to hand it over instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _kind(outputs: dict[str, Any]) -> str:
    cluster = outputs.get("cluster")
    return str(cluster.get("kind") or "") if isinstance(cluster, dict) else ""


def platform_switch_refusals(
    base_outputs: dict[str, Any] | None, head_outputs: dict[str, Any], deleted: Iterable[tuple[str, str]]
) -> list[str]:
    """One line per platform switch that deletes what the old platform created; ``deleted``: (type, name) of every
    resource the head deletes. Empty when the platform is unchanged or nothing of the old one is deleted."""
    before, after = _kind(base_outputs or {}), _kind(head_outputs)
    if not before or not after or before == after:
        return []
    # Only here: the registry loads the platforms (and the Pulumi SDK), which a warm preview never needs.
    from components.stack.platforms.registry import PLATFORMS

    old = PLATFORMS.get(before)
    if old is None:
        return []
    gone = sorted(name for kind, name in deleted if kind in old.creates)
    if not gone:
        return []
    return [
        f"cluster.kind changes from {before} to {after}: pulumi up would delete what the {before} platform created "
        f"({', '.join(gone)}), and with it the {old.pool_noun}s' nodes or their preparation. To keep them, take them "
        f"out of this stack's state first (pulumi state delete <urn> for each, or import them into the stack that "
        f"owns them now), then switch; or keep cluster.kind: {before}"
    ]
