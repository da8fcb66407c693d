"""Helm's merge rule for nested config: maps merge key by key, anything else (lists too) replaces."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from components.base.problems import shown_key


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` laid over it; neither argument is changed, nothing is shared with them.

    Values are copied, so two results merged from the same ``base`` never alias one nested map
    (editing one group's inherited ``location`` must not move every group).
    """
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def spells_out(node: Any, rest: str) -> bool:
    """Whether the key path ``rest`` (``location.zone``, ``taints[0]``, relative to ``node``) is written in ``node``.

    A path that goes below a scalar the file wrote belongs to that scalar (the value is what is wrong).
    Map keys may hold dots (label keys such as ``gpu-platform.io/role``), so the longest key that fits wins.
    """
    if not rest:
        return True
    if isinstance(node, Mapping):
        shown = {shown_key(k): k for k in node if isinstance(k, str)}
        keys = [k for k in shown if rest == k or rest.startswith((f"{k}.", f"{k}["))]
        if not keys:
            return False
        key = max(keys, key=len)
        return spells_out(node[shown[key]], rest[len(key) :].removeprefix("."))
    if isinstance(node, list):
        index, closing, tail = rest.removeprefix("[").partition("]")
        if not rest.startswith("[") or not closing or not index.isdigit() or int(index) >= len(node):
            return False
        return spells_out(node[int(index)], tail.removeprefix("."))
    return True


def inherited_key(
    path: str, sections_key: str, sections: Mapping[str, Any], defaults_key: str, defaults: Mapping[str, Any]
) -> tuple[str, str] | None:
    """Where the user wrote the value a problem at ``path`` is about, when a section inherited it from defaults.

    ``path`` ``nodeGroups.a100.taints`` of a group that sets no ``taints`` while ``nodeGroupDefaults`` does:
    ``("nodeGroupDefaults.taints", "a100")``. None when the section wrote the value itself (or nobody did:
    a missing key is the section's).
    """
    for name, section in sections.items():
        head = f"{sections_key}.{name}"
        if (
            not isinstance(name, str)
            or not path.startswith(head)
            or path[len(head) : len(head) + 1] not in ("", ".", "[")
        ):
            continue
        rest = path[len(head) :].removeprefix(".")
        if rest and not spells_out(section, rest) and spells_out(defaults, rest):
            return f"{defaults_key}.{rest}" if not rest.startswith("[") else f"{defaults_key}{rest}", name
    return None
