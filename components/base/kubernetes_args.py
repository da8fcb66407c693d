"""Small conversions from the catalog's plain dicts to pulumi-kubernetes argument types."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pulumi_kubernetes as k8s


def toleration_args(tolerations: Iterable[Mapping[str, str]]) -> list[k8s.core.v1.TolerationArgs]:
    """``{"key", "operator", "value"?, "effect"}`` dicts (as the catalog builds them) as TolerationArgs."""
    return [
        k8s.core.v1.TolerationArgs(
            key=t.get("key"), operator=t.get("operator"), value=t.get("value"), effect=t.get("effect")
        )
        for t in tolerations
    ]
