"""What the engine received for one resource, and the Pulumi wire format's special values, without the SDK.

Why apart from ``preview.run.mocks``: the summary of a preview read from the result cache (``preview.diff``),
the gate and the renderers read registrations and masked values, and a preview whose inputs did not change
must import no SDK (``preview.run.result_cache``); the mocks themselves need ``pulumi`` and protobuf.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from components.catalog.command_connection import CLEAR_FIELDS, CONNECTION_INPUT, CONNECTION_TYPES, PROXY_FIELD
from components.catalog.names import STACK_TYPE

# Signatures of special values in the Pulumi wire format (pulumi/runtime/rpc.py).
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

SECRET_MASK = "[secret]"


def mask_wire(value: Any) -> Any:
    """Replace secrets in a wire-format value with "[secret]", resource refs with their URN."""
    if isinstance(value, dict):
        signature = value.get(_SIG_KEY)
        if signature == _SECRET_SIG:
            return SECRET_MASK
        if signature == _RESOURCE_SIG:
            return value.get("urn", "")
        return {key: mask_wire(item) for key, item in value.items()}
    if isinstance(value, list):
        return [mask_wire(item) for item in value]
    if value == _UNKNOWN:
        return "[unknown]"
    return value


def mask_like(plain: Any, masked: Any) -> Any:
    """Masked values shaped like the plain ones: a secret map keeps its keys, each value "[secret]".

    Pulumi marks a whole map secret when one of its values is, so ``stringData`` of a Secret
    arrives as one secret; showing its keys (never its values) keeps the manifest readable and valid.
    """
    if masked == SECRET_MASK and isinstance(plain, dict):
        return {key: mask_like(value, SECRET_MASK) for key, value in plain.items()}
    if masked == SECRET_MASK and isinstance(plain, list):
        return [mask_like(value, SECRET_MASK) for value in plain]
    if masked == SECRET_MASK:
        return SECRET_MASK
    if isinstance(masked, dict) and isinstance(plain, dict):
        return {key: mask_like(plain.get(key), value) for key, value in masked.items()}
    if isinstance(masked, list) and isinstance(plain, list) and len(masked) == len(plain):
        return [mask_like(p, m) for p, m in zip(plain, masked, strict=True)]
    return masked


def reveal_connection(resource_type: str, plain: dict[str, Any], masked: dict[str, Any]) -> dict[str, Any]:
    """``masked`` with a remote command's host, user, port and bastion in clear, its credentials still masked.

    The SDK makes the whole connection one secret (``components.catalog.command_connection``); only the
    fields that say where the command connects are shown, every other field stays ``[secret]``.
    """
    if resource_type not in CONNECTION_TYPES or not isinstance(plain.get(CONNECTION_INPUT), dict):
        return masked

    def clear(connection: dict[str, Any]) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        for key, value in connection.items():
            if key == PROXY_FIELD and isinstance(value, dict):
                shown[key] = clear(value)
            elif key in CLEAR_FIELDS and not isinstance(value, dict | list):
                shown[key] = value
            else:
                shown[key] = mask_like(value, SECRET_MASK)
        return shown

    return {**masked, CONNECTION_INPUT: clear(plain[CONNECTION_INPUT])}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def secret_strings(plain: Any, masked: Any) -> set[str]:
    """The plaintext strings of ``plain`` wherever ``masked`` (the same value, secrets masked) says secret."""
    if masked == SECRET_MASK and plain != SECRET_MASK:
        return set(_strings(plain))
    found: set[str] = set()
    if isinstance(plain, dict) and isinstance(masked, dict):
        for key in plain.keys() & masked.keys():
            found |= secret_strings(plain[key], masked[key])
    elif isinstance(plain, list) and isinstance(masked, list):
        for plain_item, masked_item in zip(plain, masked, strict=False):
            found |= secret_strings(plain_item, masked_item)
    return found


def unwrap_wire(value: Any) -> Any:
    """Plain values of a wire-format value: secrets unwrapped (policies see them so), refs as URNs."""
    if isinstance(value, dict):
        signature = value.get(_SIG_KEY)
        if signature == _SECRET_SIG:
            return unwrap_wire(value.get("value"))
        if signature == _RESOURCE_SIG:
            return value.get("urn", "")
        return {key: unwrap_wire(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrap_wire(item) for item in value]
    return value


@dataclass
class Registration:
    """One resource registration as the engine received it."""

    type: str
    name: str
    urn: str
    parent_urn: str
    custom: bool
    inputs: dict[str, Any]  # plain: for policies, never written to disk
    masked_inputs: dict[str, Any]
    dependencies: list[str] = field(default_factory=list)
    transforms: tuple[Any, ...] = ()  # the ``transforms`` callbacks of its options (the mocks never run them)
    engine_urn: str = ""  # the URN the engine would give it (``preview.diff.urns``), not the mock's
    aliases: tuple[str, ...] = ()  # the old URNs it answers to, resolved as the engine resolves them
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False

    @property
    def parent_name(self) -> str | None:
        """The parent's logical name, or None for top-level resources."""
        if not self.parent_urn or f"::{STACK_TYPE}::" in self.parent_urn:
            return None
        return self.parent_urn.rsplit("::", 1)[-1]
