"""Which input changes make ``pulumi up`` replace a resource instead of updating it, and how.

The diff engine (``preview.diff.changes``) asks ``replace_reasons`` for every resource present in both
previews; an empty answer means an in-place update. Nothing is listed here: the reasons come from

- the options the program put on the resource (``replace_on_changes``, ``delete_before_replace``),
  which the preview's mocks record (``options.json``, ``preview.run.resource_options``);
- the provider's own facts, one table per provider in the catalog (``components.catalog.replacements``:
  pulumi-kubernetes' ``forceNew``, terraform-provider-yandex's ``ForceNew``, pulumi-command's ``triggers``).

Inputs come as the preview writes them (wire format, secrets as ``"[secret]"``): a changed secret
value cannot be seen, so it is never reported as a replacement reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.catalog.names import NODE_GROUP_TYPE, is_cluster_object
from components.catalog.replacements import (
    COMMAND_FORCE_NEW,
    COMMAND_UPDATE_RUNS_CREATE,
    KUBERNETES_FORCE_NEW,
    KUBERNETES_FORCE_NEW_VERSIONS,
    KUBERNETES_METADATA_FORCE_NEW,
    KUBERNETES_SAME_NAME_DELETES_FIRST,
    YANDEX_NODE_GROUP_FORCE_NEW,
    YANDEX_NODE_GROUP_FORCE_NEW_BLOCKS,
)

_ABSENT = object()


@dataclass(frozen=True)
class ResourceOptions:
    """The replacement options the program set on one resource (recorded by the mocks)."""

    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False

    @classmethod
    def from_json(cls, record: Mapping[str, Any] | None) -> ResourceOptions:
        """From one ``options.json`` row (an older preview without the file: no options)."""
        record = record or {}
        return cls(
            tuple(str(p) for p in record.get("replaceOnChanges") or ()),
            bool(record.get("deleteBeforeReplace")),
        )


def values_at(value: Any, path: str) -> list[Any]:
    """Every value at a dotted path; ``name[*]`` (or a ``*`` segment) walks every list item or map value."""
    found = [value]
    for segment in path.split("."):
        every = segment.endswith("[*]") or segment == "*"
        key = segment.removesuffix("[*]")
        step: list[Any] = []
        for item in found:
            if key != "*":
                item = item.get(key, _ABSENT) if isinstance(item, Mapping) else _ABSENT
            if every and isinstance(item, list):
                step.extend(item)
            elif every and isinstance(item, Mapping):
                step.extend(item[k] for k in sorted(item))
            else:
                step.append(item)
        found = step
    return found


def _shown(values: list[Any]) -> str:
    if len(values) != 1:
        return repr([None if v is _ABSENT else v for v in values])
    return "(absent)" if values[0] is _ABSENT else repr(values[0])


def _reason(name: str, before: list[Any], after: list[Any]) -> str:
    scalar = all(not isinstance(v, Mapping | list) for v in [*before, *after])
    if scalar and len(before) <= 1 and len(after) <= 1:
        return f"{name} {_shown(before)} -> {_shown(after)}"
    return f"{name} changed (forces a replacement)"


def _changed_paths(
    paths: Sequence[str], old: Mapping[str, Any], new: Mapping[str, Any], names: Mapping[str, str]
) -> list[str]:
    reasons = []
    for path in paths:
        before, after = values_at(old, path), values_at(new, path)
        if before != after:
            reasons.append(_reason(names.get(path, path), before, after))
    return reasons


def kubernetes_paths(resource_type: str, version_kind: tuple[str, str, str] | None = None) -> tuple[str, ...] | None:
    """pulumi-kubernetes' replace-forcing paths of a type token; None for a type that is not an object (a
    provider-side component's children are the objects; the component itself is never replaced)."""
    if not is_cluster_object(resource_type):
        return None
    group, version, kind = version_kind or _group_version_kind(resource_type)
    key = f"{group}/{kind}"
    versions = KUBERNETES_FORCE_NEW_VERSIONS.get(key)
    own = KUBERNETES_FORCE_NEW.get(key, ()) if versions is None or version in versions else ()
    return KUBERNETES_METADATA_FORCE_NEW + own


def _group_version_kind(resource_type: str) -> tuple[str, str, str]:
    """``kubernetes:apps/v1:Deployment`` -> (``apps``, ``v1``, ``Deployment``); the core group is ``core``."""
    _, group_version, kind = [*resource_type.split(":", 2), "", ""][:3]
    group, _, version = group_version.rpartition("/")
    return group or "core", version, kind


def _node_group_reasons(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    reasons = _changed_paths(list(YANDEX_NODE_GROUP_FORCE_NEW), old, new, YANDEX_NODE_GROUP_FORCE_NEW)
    for path, name in YANDEX_NODE_GROUP_FORCE_NEW_BLOCKS.items():
        had = values_at(old, path) != [_ABSENT]
        has = values_at(new, path) != [_ABSENT]
        if had != has:
            if name == "scaleKind":
                reasons.append(f"scaleKind {'auto' if had else 'fixed'!r} -> {'auto' if has else 'fixed'!r}")
            else:
                reasons.append(f"{name} {'added' if has else 'removed'} (forces a replacement)")
    return reasons


def replace_reasons(
    resource_type: str, old: Mapping[str, Any], new: Mapping[str, Any], options: ResourceOptions | None = None
) -> list[str]:
    """``["gpuEnvironment 'runc_drivers_cuda' -> 'runc'", ...]``: why the change replaces; [] for an update."""
    options = options or ResourceOptions()
    if resource_type == NODE_GROUP_TYPE:
        reasons = _node_group_reasons(old, new)
    elif resource_type in COMMAND_FORCE_NEW:
        reasons = _changed_paths(COMMAND_FORCE_NEW[resource_type], old, new, {})
    else:
        reasons = _changed_paths(kubernetes_paths(resource_type) or (), old, new, {})
    own = _changed_paths(options.replace_on_changes, old, new, {})
    reasons += [f"{reason} (the program's replace_on_changes)" for reason in own if reason not in reasons]
    return reasons


def replace_note(
    resource_type: str, old: Mapping[str, Any], new: Mapping[str, Any], options: ResourceOptions | None = None
) -> str:
    """How the replacement happens: which one exists first, and for how long neither does."""
    if options is not None and options.delete_before_replace:
        return (
            "delete-before-replace (the program's delete_before_replace): pulumi up deletes the old one first, "
            "then creates the new one; nothing runs in between."
        )
    if resource_type == NODE_GROUP_TYPE and old.get("name") != new.get("name"):
        return (
            f"pulumi up creates {new.get('name')} first and deletes {old.get('name')} once it is ready "
            "(create-before-delete)."
        )
    if resource_type == NODE_GROUP_TYPE:
        return "the cloud-side name did not change, so the new group cannot be created first (delete-before-create)."
    if KUBERNETES_SAME_NAME_DELETES_FIRST and kubernetes_paths(resource_type) is not None:
        old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
        same = (old_meta.get("name"), old_meta.get("namespace")) == (new_meta.get("name"), new_meta.get("namespace"))
        if same and new_meta.get("name"):
            return (
                "pulumi-kubernetes deletes the object first, then creates it under the same name: "
                "it does not exist in between."
            )
    return ""


def update_note(resource_type: str, new: Mapping[str, Any]) -> str:
    """What an in-place update does beyond writing the new inputs ('' when nothing more)."""
    if COMMAND_UPDATE_RUNS_CREATE and resource_type in COMMAND_FORCE_NEW and not new.get("update"):
        connection = new.get("connection")
        host = connection.get("host") if isinstance(connection, Mapping) else None
        where = f" on {host}" if isinstance(host, str) and host != "[secret]" else ""
        return f"pulumi up runs its create command again{where} (it has no update command)."
    return ""
