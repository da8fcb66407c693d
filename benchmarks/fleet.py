"""Fleet-sized stacks for the scale benchmark: the prod stack with its three kinds of node repeated.

Node ``i`` is like prod's node ``i mod 3`` (inference slices, mixed notebooks, training with a few
sliced GPUs), so the fleet still holds the stack's MIG demand; each node gets its own name and a host
name of its own (a fleet of hundreds runs out of documentation addresses).
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from preview.run.runner import REPO_ROOT

PREFIX = "gpu-platform:"


def prod_raw() -> dict[str, Any]:
    """The ``gpu-platform:*`` keys of ``Pulumi.prod.yaml`` (prefix kept), as the stack file has them."""
    document = yaml.safe_load((REPO_ROOT / "Pulumi.prod.yaml").read_text())
    return {key: value for key, value in document["config"].items() if key.startswith(PREFIX)}


def fleet_overrides(nodes: int) -> dict[str, Any]:
    """Stack-file overrides (``run_program(..., overrides=...)``) for a prod stack of ``nodes`` GPU hosts."""
    raw = prod_raw()
    bare_metal = copy.deepcopy(raw[f"{PREFIX}bareMetal"])
    kinds = bare_metal["nodes"]
    bare_metal["nodes"] = [
        {
            **copy.deepcopy(kinds[index % len(kinds)]),
            "name": f"gpu-node-{index + 1}",
            "address": f"gpu-node-{index + 1}.prod.example.com",
        }
        for index in range(nodes)
    ]
    return {**raw, f"{PREFIX}bareMetal": bare_metal}
