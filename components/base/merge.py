"""Helm's merge rule for nested config: maps merge key by key, anything else (lists too) replaces."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


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
