"""A MIG plan as stack config to paste: the ``mig.demand`` block and one ``mig`` block per node.

Here, not in the catalog: it renders this capability's config shape (``components/mig/config.py``),
and the catalog holds facts and pure rules, not renderers. ``tools/mig.py`` (``plan --format yaml``)
prints it.

The planner answers per GPU; a stack configures MIG per node (``custom`` when every GPU of the node
has the same layout, ``perGpu`` otherwise, GPUs not listed staying whole). This module cuts the
plan's GPUs of each model into nodes of ``gpus_per_node`` and writes each node's block in exactly
the shape ``components/mig/config.py`` reads, so the output is valid config as it stands.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import yaml

from components.catalog.mig import SOLVER, MigPlan, count_text, mig_gpu

#: How a user runs the MIG command line (``tools/mig.py``), which prints this module's YAML; the demand
#: check quotes it, so the command is named here once.
MIG_COMMAND = "python -m tools.mig"


def node_blocks(plan: MigPlan, gpus_per_node: int) -> list[tuple[str, int, dict[str, Any]]]:
    """(GPU model, node number from 1, the node's ``mig`` value) for every node the plan uses."""
    if gpus_per_node < 1:
        raise ValueError(f"gpus per node must be >= 1, got {gpus_per_node}")
    blocks: list[tuple[str, int, dict[str, Any]]] = []
    for model in plan.fleet:
        layouts = [dict(gpu.layout) for gpu in plan.gpus if gpu.model == model]
        for number, start in enumerate(range(0, len(layouts), gpus_per_node), start=1):
            node = layouts[start : start + gpus_per_node]
            if len(node) == gpus_per_node and all(layout == node[0] for layout in node):
                blocks.append((model, number, {"custom": node[0]}))
                continue
            groups: dict[tuple[tuple[str, int], ...], list[int]] = {}
            for device, layout in enumerate(node):
                groups.setdefault(tuple(layout.items()), []).append(device)
            per_gpu = [{"devices": devices, "layout": dict(key)} for key, devices in groups.items()]
            blocks.append((model, number, {"perGpu": per_gpu}))
    return blocks


def demand_block(plan: MigPlan) -> dict[str, Any]:
    """``gpu-platform:mig`` with one ``demand`` entry per model: what the plan puts on that model's GPUs."""
    entries = []
    for model in plan.fleet:
        held: Counter[str] = Counter()
        for gpu in plan.gpus:
            if gpu.model == model:
                held.update(gpu.layout)
        if held:
            profiles = {p.name: held[p.name] for p in mig_gpu(model).profiles if held[p.name]}
            entries.append({"gpuModel": model, "profiles": profiles})
    return {"gpu-platform:mig": {"demand": entries}}


def plan_yaml(plan: MigPlan, gpus_per_node: int) -> str:
    """YAML documents: the demand block, then each node's ``mig`` block, each with a comment saying where."""
    wanted = count_text(plan.demand)
    blocks = node_blocks(plan, gpus_per_node)
    nodes = Counter(model for model, _, _ in blocks)
    header = (
        f"# {plan.model}: {plan.gpus_used} of {plan.fleet_size} GPUs hold {wanted}, "
        f"proven optimal by {SOLVER}.\n"
        f"# Paste the demand block into the stack config, and each node's block as the `mig` key of one node\n"
        f"# ({gpus_per_node} GPUs each: bareMetal.nodes[i] or nodeGroups.<name>); GPUs not listed stay whole.\n"
    )
    parts = [header + _dump(demand_block(plan))]
    for model, number, block in blocks:
        parts.append(f"# {model} node {number} of {nodes[model]}\n" + _dump({"mig": block}))
    return "---\n".join(parts)


def _dump(value: dict[str, Any]) -> str:
    """Block style, with lists and maps of plain values inline (``devices: [0, 1]``), keys in given order."""
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=None)
