"""What changes inside the Helm release and the kustomize Directories: their rendered objects, diffed.

Why: to Pulumi a release or a Directory is one resource; its change reads as new ``values`` or a
changed overlay file, while what rolls in the cluster is the objects they render: dropping a MIG
profile from a node changes the spawner's ConfigMap, kustomize gives it a new hash-suffixed name, and
the Deployment that mounts it gets a new pod template, so its pods restart. The preview writes every
rendered object (``rendered/<release or Directory>/<kind>-<namespace>-<name>.yaml``, Secret values
masked, ``preview.render.rendered``); this module compares the two previews' objects per origin and names the
workloads whose pod template changes (a rollout of their pods).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from preview.diff.changes import CREATE, DELETE, UPDATE, RenderedChange, value_changes

RENDERED_DIR = "rendered"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _key(manifest: dict[str, Any]) -> tuple[str, str, str]:
    metadata = manifest.get("metadata") or {}
    api_version = str(manifest.get("apiVersion") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else "core"
    namespace, name = metadata.get("namespace"), str(metadata.get("name") or "")
    return group, str(manifest.get("kind") or ""), f"{namespace}/{name}" if namespace else name


def load_rendered(stack_dir: Path | None) -> dict[str, dict[str, str]]:
    """``origin -> file name -> text`` of one preview's rendered objects ({} when there are none)."""
    found: dict[str, dict[str, str]] = {}
    root = stack_dir / RENDERED_DIR if stack_dir else None
    if root is None or not root.is_dir():
        return found
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        found[folder.name] = {path.name: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.yaml"))}
    return found


def _manifest(text: str) -> dict[str, Any]:
    manifest = yaml.load(text, Loader=_LOADER)
    return manifest if isinstance(manifest, dict) else {}


def rendered_changes(base_dir: Path | None, head_dir: Path) -> list[RenderedChange]:
    """Every rendered object that differs between the two previews, origin by origin, in a stable order.

    Files are one object each, named by kind, namespace and name, so equal texts are equal objects and
    only the files that differ are parsed (a Kubeflow render is hundreds of objects).
    """
    before, after = load_rendered(base_dir), load_rendered(head_dir)
    found: list[tuple[str, tuple[str, str, str], RenderedChange]] = []
    for origin in sorted(set(before) | set(after)):
        old, new = before.get(origin, {}), after.get(origin, {})
        for file in sorted(set(old) | set(new)):
            if old.get(file) == new.get(file):
                continue
            if file not in old:
                manifest = _manifest(new[file])
                _, kind, name = key = _key(manifest)
                found.append((origin, key, RenderedChange(origin, CREATE, kind, name)))
            elif file not in new:
                manifest = _manifest(old[file])
                _, kind, name = key = _key(manifest)
                found.append((origin, key, RenderedChange(origin, DELETE, kind, name)))
            else:
                before_object, after_object = _manifest(old[file]), _manifest(new[file])
                _, kind, name = key = _key(after_object)
                changes = tuple(value_changes(before_object, after_object))
                if changes:
                    found.append((origin, key, RenderedChange(origin, UPDATE, kind, name, changes)))
    return [c for _, _, c in sorted(found, key=lambda i: (i[0], i[1][1], i[1][2], i[1][0], i[2].action))]
