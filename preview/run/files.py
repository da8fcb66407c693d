"""Writes what an offline run saw to ``build/preview/<stack>/`` and prints the resource tree.

Files (all deterministic: sorted keys, no timestamps, secrets masked):
- ``resources.json``: every registration in registration order, ``{type, name, parent, inputs}``;
- ``outputs.json``: the stack outputs;
- ``manifests/``: one YAML file per Kubernetes object the program declares directly;
- ``helm/<release>-values.yaml``: the values of each Helm release.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml

from components.catalog.names import HELM_RELEASE_TYPE as HELM_RELEASE
from components.catalog.names import KUSTOMIZE_DIRECTORY_TYPE, is_cluster_object
from preview.run.output_folder import write_files as write_files  # re-exported: preview.diff.review writes with it
from preview.run.registration import Registration
from preview.run.runner import ProgramRun


def is_manifest(registration: Registration) -> bool:
    """A Kubernetes object the program declares itself (not a chart or a kustomize directory)."""
    return is_cluster_object(registration.type)


def whole_numbers(value: Any) -> Any:
    """Wire format sends every number as a float; 3.0 -> 3 so manifests read as written."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value


def sorted_deep(value: Any) -> Any:
    """Dict keys sorted at every level (list order kept): the wire format gives no stable order."""
    if isinstance(value, dict):
        return {key: sorted_deep(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_deep(item) for item in value]
    return value


def manifest_of(registration: Registration) -> dict[str, Any]:
    """The Kubernetes object as it would be sent to the API server (secrets masked)."""
    manifest: dict[str, Any] = sorted_deep(whole_numbers(registration.masked_inputs))
    ordered: dict[str, Any] = {key: manifest[key] for key in ("apiVersion", "kind", "metadata") if key in manifest}
    ordered.update({key: value for key, value in sorted(manifest.items()) if key not in ordered})
    return ordered


def manifest_filename(manifest: dict[str, Any], fallback: str) -> str:
    """``<kind>-<namespace>-<name>.yaml`` in lowercase; cluster-scoped objects have no namespace part."""
    metadata = manifest.get("metadata") or {}
    parts = [str(manifest.get("kind") or "object"), metadata.get("namespace"), metadata.get("name") or fallback]
    return "-".join(str(p) for p in parts if p).lower().replace("/", "-").replace(":", "-") + ".yaml"


# libyaml's emitter (shipped in PyYAML's wheels) writes the same YAML about 30 times faster than the
# pure-Python one; a preview writes hundreds of rendered objects, so it matters.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(document: Any) -> str:
    """Block-style YAML with keys in the order given."""
    return yaml.dump(document, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=120)


def dump_json(document: Any) -> str:
    """Indented JSON with sorted keys and a final newline."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def preview_files(run: ProgramRun) -> dict[str, str]:
    """Relative path -> text of every file the preview writes."""
    files: dict[str, str] = {}
    resources = [
        {"type": r.type, "name": r.name, "parent": r.parent_name, "inputs": whole_numbers(r.masked_inputs)}
        for r in run.registrations
    ]
    files["resources.json"] = dump_json(resources)
    files["outputs.json"] = dump_json(run.outputs)
    for registration in run.registrations:
        if is_manifest(registration):
            manifest = manifest_of(registration)
            files[f"manifests/{manifest_filename(manifest, registration.name)}"] = dump_yaml(manifest)
        elif registration.type == HELM_RELEASE:
            release = registration.masked_inputs.get("name") or registration.name
            values = sorted_deep(whole_numbers(registration.masked_inputs.get("values") or {}))
            files[f"helm/{release}-values.yaml"] = dump_yaml(values)
    files.update(kustomize_files(run))
    return dict(sorted(files.items()))


def kustomize_files(run: ProgramRun) -> dict[str, str]:
    """The generated kustomize overlay(s) the program deploys, under ``kubeflow/``."""
    files: dict[str, str] = {}
    for registration in run.registrations:
        if registration.type != KUSTOMIZE_DIRECTORY_TYPE:
            continue
        directory = run.root / str(registration.inputs.get("directory", ""))
        overlay_root = directory.parent
        for path in sorted(overlay_root.rglob("*")):
            if path.is_file():
                files[f"kubeflow/{path.relative_to(overlay_root).as_posix()}"] = path.read_text()
    return files


def resource_tree(registrations: Iterable[Registration]) -> str:
    """An indented tree of ``type name`` lines, children under their parent."""
    items = list(registrations)
    children: dict[str | None, list[Registration]] = {}
    for registration in items:
        children.setdefault(registration.parent_name, []).append(registration)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for child in children.get(parent, []):
            lines.append(f"{'  ' * depth}{child.type}  {child.name}")
            if child.name != parent:
                walk(child.name, depth + 1)

    walk(None, 1)
    return "\n".join(lines)
