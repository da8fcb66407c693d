"""The real kustomize (``kubectl kustomize``, kustomize 5.5 from tools/install-kustomize.sh) and its output.

What ``kustomize.v2.Directory`` deploys is what kustomize renders from the Directory's path, so the
tests render exactly the paths the program registers, against the real pinned tree in ``.upstream/``.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from preview.render.cache import enabled, project_cache

REPO_ROOT = Path(__file__).resolve().parents[2]
KUBECTL = REPO_ROOT / ".tools" / "bin" / "kubectl"

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (kind, namespace or "", name)


def ensure_kubectl() -> Path:
    """Install kubectl into .tools/bin with the project's script if it is not there yet."""
    if not KUBECTL.is_file():
        env = {**os.environ, "PYTHON": sys.executable}
        subprocess.run(["bash", str(REPO_ROOT / "tools" / "install-kustomize.sh")], cwd=REPO_ROOT, env=env, check=True)
    return KUBECTL


def kustomize_build(directory: Path) -> list[Obj]:
    """The objects ``kubectl kustomize directory`` renders, in order; a failure shows kustomize's message."""
    result = subprocess.run(
        [str(ensure_kubectl()), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{result.stderr}")
    return parse(result.stdout)


def upstream_build(directory: Path) -> list[Obj]:
    """``kubectl kustomize`` of a folder of the pinned upstream tree, through the project's render cache.

    The cache key holds kubectl's version, the path and the pinned artifacts' digests, which are all a
    render of the unmodified tree depends on (``make upstream`` checks the tree against them); a
    folder this repository writes (an overlay) goes through :func:`kustomize_build` instead.
    """
    relative = directory.resolve().relative_to(REPO_ROOT.resolve())
    cache = project_cache(REPO_ROOT) if enabled() else None
    key = cache.key(str(ensure_kubectl()), ["kustomize", str(relative)], "pinned tree") if cache else None
    if cache is None or key is None:
        return kustomize_build(directory)
    stored = cache.get(key, "objects")
    if isinstance(stored, list):
        return stored
    objects = kustomize_build(directory)
    cache.put(key, "objects", objects)
    return objects


def parse(text: str) -> list[Obj]:
    """The documents of a multi-document YAML text (libyaml's parser: the pure-Python one takes ~30x longer)."""
    return [doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc]


def canonical(obj: Any) -> str:
    """One stable text per object (JSON with sorted keys: fast, and comparable)."""
    return json.dumps(obj, sort_keys=True)


def key(obj: Obj) -> Key:
    """(kind, namespace, name) of a rendered object."""
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def find(objects: list[Obj], kind: str, name: str, namespace: str | None = None) -> Obj:
    """The one object of ``kind`` and ``name`` (and ``namespace`` when given)."""
    matches = [
        o
        for o in objects
        if o["kind"] == kind
        and o["metadata"]["name"] == name
        and (namespace is None or o["metadata"].get("namespace", "") == namespace)
    ]
    assert len(matches) == 1, f"expected one {kind} {namespace}/{name}, found {len(matches)}"
    return matches[0]


def secret_values(secret: Obj) -> Iterator[tuple[str, str]]:
    """(key, plain value) of a Secret: ``stringData`` as is, ``data`` base64-decoded."""
    for name, value in (secret.get("stringData") or {}).items():
        yield name, str(value)
    for name, value in (secret.get("data") or {}).items():
        try:
            yield name, base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            yield name, str(value)


def pod_spec(obj: Obj) -> dict[str, Any] | None:
    """The pod template's spec of a workload, None for other kinds."""
    spec = obj.get("spec") or {}
    if obj["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"):
        return dict((spec.get("template") or {}).get("spec") or {})
    if obj["kind"] == "CronJob":
        return dict(((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec") or {})
    return None


def containers(obj: Obj) -> Iterator[dict[str, Any]]:
    """Every container and init container of a workload."""
    spec = pod_spec(obj)
    if spec is None:
        return
    yield from spec.get("initContainers") or []
    yield from spec.get("containers") or []
