"""Tells, before anything is applied, which node groups a change will replace.

The offline preview compares the node groups it just recorded with those of the previous preview
of the same stack (``resources.json``). A changed replace-triggering field (gpuEnvironment, taints,
scale kind, location, nat) means a new cloud-side name, so ``pulumi up`` will create the new group
before deleting the old one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.catalog.names import NODE_GROUP_TYPE
from preview.mocks import Registration


def _groups(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r["inputs"] for r in resources if r.get("type") == NODE_GROUP_TYPE}


def _replace_fields(inputs: dict[str, Any]) -> dict[str, Any]:
    template = inputs.get("instanceTemplate") or {}
    return {
        "gpuEnvironment": (template.get("gpuSettings") or {}).get("gpuEnvironment"),
        "taints": inputs.get("nodeTaints"),
        "scaleKind": "auto" if "autoScale" in (inputs.get("scalePolicy") or {}) else "fixed",
        "location": (inputs.get("allocationPolicy") or {}).get("locations"),
        "subnets": [i.get("subnetIds") for i in template.get("networkInterfaces") or []],
        "nat": [i.get("nat") for i in template.get("networkInterfaces") or []],
    }


def planned_replacements(previous_resources: Path, registrations: list[Registration]) -> list[str]:
    """One line per node group that will be replaced, naming the fields that force it."""
    if not previous_resources.exists():
        return []
    try:
        before = _groups(json.loads(previous_resources.read_text()))
    except (json.JSONDecodeError, TypeError, AttributeError):
        return []
    lines: list[str] = []
    for registration in registrations:
        if registration.type != NODE_GROUP_TYPE or registration.name not in before:
            continue
        old, new = before[registration.name], registration.masked_inputs
        if old.get("name") == new.get("name"):
            continue
        old_fields, new_fields = _replace_fields(old), _replace_fields(new)
        changed = [
            f"{key} {old_fields[key]!r} -> {new_fields[key]!r}"
            for key in old_fields
            if old_fields[key] != new_fields[key]
        ]
        lines.append(
            f"REPLACE {registration.name}: {'; '.join(changed) or 'name changed'}. pulumi up creates "
            f"{new.get('name')} first and deletes {old.get('name')} once it is ready (create-before-delete)."
        )
    return lines
