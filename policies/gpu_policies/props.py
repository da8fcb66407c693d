"""Reading resource properties the way CrossGuard hands them over.

Why this module: the analyzer wraps ``props`` in read-only proxies (``Mapping`` and ``Sequence``,
not ``dict`` and ``list``) that raise ``UnknownValueError`` when a value is unknown during a
preview, and the wire format sends every number as a float (``gpus: 1.0``). Every policy reads
props through these helpers so none of them trips over either fact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard


def is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """A dict or the analyzer's dict proxy."""
    return isinstance(value, Mapping)


def is_list(value: Any) -> TypeGuard[Sequence[Any]]:
    """A list or the analyzer's list proxy (strings are not lists here)."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def plain(value: Any) -> Any:
    """A deep plain copy: mappings become dicts, sequences lists, integral floats ints.

    The catalog's checks (the chart contract, MIG placement) expect ordinary Python data; reading
    every value here also surfaces unknowns as the analyzer's ``UnknownValueError``.
    """
    if is_mapping(value):
        return {key: plain(value[key]) for key in value}
    if is_list(value):
        return [plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def get(value: Any, *path: str) -> Any:
    """``value[path[0]][path[1]]...`` or None where a step is missing or not a mapping."""
    node = value
    for key in path:
        if not is_mapping(node) or key not in node:
            return None
        node = node[key]
    return node


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    return value if is_mapping(value) else {}


def items(value: Any) -> list[Any]:
    """``value`` as a list if it is a sequence, else an empty list."""
    return list(value) if is_list(value) else []


def text(value: Any) -> str:
    """``value`` if it is a string, else ""."""
    return value if isinstance(value, str) else ""


def number(value: Any) -> float:
    """``value`` as a number (wire numbers are floats), 0 when it is not one."""
    if isinstance(value, bool):
        return 0
    return float(value) if isinstance(value, int | float) else 0


def string_map(value: Any) -> dict[str, str]:
    """A label/annotation map with only its string entries."""
    return {str(k): v for k, v in mapping(value).items() if isinstance(v, str)}
