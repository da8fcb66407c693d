"""Helm and kustomize renders kept on disk, keyed by everything a render is a function of.

Why: a render is a pure function of what goes into it: the tool and its version, the pinned artifact
(chart or manifests tree, by its content digest), the command's arguments, and the release's values or
the overlay's files. Re-running ``helm template`` and ``kubectl kustomize`` over the real Kubeflow tree
on every preview costs seconds for output that cannot have changed, and the test suite previews the
same stacks hundreds of times. So each render's objects, and the masked YAML files written from them,
are stored under ``.cache/render/`` and re-used while the key is the same.

- **Key**: sha256 over the tool's name and version (``helm version``, ``kubectl version --client``; the
  version itself is remembered per binary, by path, size and modification time), every pinned upstream
  artifact's content digest (``make upstream`` checks each unpacked tree against it), the arguments
  (without the tool's own path) and the values, or the overlay folder's ``tree_digest``.
- **Safe under concurrent previews**: an entry is written to a temporary file in its folder and renamed
  into place (atomic on POSIX), so a reader sees no entry or a whole one; an unreadable entry is a miss.
- **Bounded**: a hit refreshes an entry's modification time; after a store, entries go until the folder
  holds at most ``MAX_BYTES``: first what the renders did not write (the result cache's whole previews,
  about 11 MB each and made again from the renders in seconds), then the renders, each oldest first. A
  preview served whole reads no render, so by age alone a run of previews would push out the renders
  every changed preview needs. ``make clean`` removes the folder.
- Failed renders are never stored: a failure is re-run, so its message is always the tool's current one.
- ``GPU_PLATFORM_RENDER_CACHE=off`` renders everything every time; ``GPU_PLATFORM_CACHE_DIR=<folder>``
  puts the cache elsewhere (a base preview of ``make diff``, exported under ``.cache/preview/``, shares
  the project's; so do the test suite's throw-away repositories). Entries are safe to share between
  revisions: an objects entry is the tool's output alone, a files entry is keyed by the code that writes it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from components.catalog.upstream import ARTIFACTS

CACHE_ENV = "GPU_PLATFORM_RENDER_CACHE"
CACHE_DIR_ENV = "GPU_PLATFORM_CACHE_DIR"
CACHE_DIR = Path(".cache") / "render"
MAX_BYTES = 512 * 1024 * 1024  #: the folder's bound; the dev and prod renders take about 30 MB together
#: The kinds of entry the renders write (``preview.render.rendered``): pruned after every other kind.
RENDER_KINDS = ("documents", "files-")
_VERSION_COMMANDS = {"helm": ["version", "--short"], "kubectl": ["version", "--client", "--output=json"]}


def enabled(variable: str = CACHE_ENV) -> bool:
    """False when ``variable`` (by default ``GPU_PLATFORM_RENDER_CACHE``) is ``off``, ``0``, ``false`` or ``no``."""
    return os.environ.get(variable, "on").lower() not in ("off", "0", "false", "no")


def project_cache(project: Path) -> RenderCache:
    """The cache of ``project``: ``$GPU_PLATFORM_CACHE_DIR``, else ``<project>/.cache/render``."""
    shared = os.environ.get(CACHE_DIR_ENV)
    return RenderCache(Path(shared) if shared else project / CACHE_DIR)


class RenderCache:
    """One cache folder of renders (and, through ``preview.run.result_cache``, of whole previews)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    # -- keys ------------------------------------------------------------------------------------

    def key(self, tool: str, arguments: list[str], inputs: str) -> str | None:
        """The key of a render by ``tool`` (a path) with ``arguments`` over ``inputs``; None: do not cache."""
        version = self.tool_version(tool)
        if version is None:
            return None
        material = {
            "tool": Path(tool).name,
            "version": version,
            "upstream": {artifact.name: artifact.content_sha256 for artifact in ARTIFACTS},
            "arguments": arguments,
            "inputs": inputs,
        }
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()

    def tool_version(self, tool: str) -> str | None:
        """The version text of the tool at ``tool`` (a path), remembered per binary; None if it cannot be read."""
        try:
            status = Path(tool).resolve().stat()
        except OSError:
            return None
        return _tool_version(str(Path(tool).resolve()), status.st_size, status.st_mtime_ns, self.folder)

    # -- entries ---------------------------------------------------------------------------------

    def get(self, key: str, kind: str) -> Any | None:
        """The stored value of ``kind`` (``documents``, ``files-<digest>``, another user's) under ``key``, or None."""
        path = self._path(key, kind)
        try:
            value = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
        return value

    def put(self, key: str, kind: str, value: Any) -> None:
        """Store ``value`` atomically, then keep the folder within ``MAX_BYTES``; a full disk only skips it."""
        path = self._path(key, kind)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            with os.fdopen(handle, "w") as stream:
                json.dump(value, stream, separators=(",", ":"))
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(temporary)
            return
        self._prune()

    def _path(self, key: str, kind: str) -> Path:
        return self.folder / key[:2] / f"{key}.{kind}.json"

    def _prune(self) -> None:
        entries = []
        for path in self.folder.glob("??/*.json"):
            with contextlib.suppress(OSError):
                status = path.stat()
                entries.append((status.st_mtime_ns, status.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries, key=lambda entry: (_is_render(entry[2]), entry[0])):
            if total <= MAX_BYTES:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size


def _is_render(path: Path) -> bool:
    """Whether ``<key>.<kind>.json`` is an entry the renders wrote."""
    kind = path.name.split(".")[1] if path.name.count(".") >= 2 else ""
    return kind.startswith(RENDER_KINDS)


@functools.cache
def _tool_version(tool: str, size: int, mtime_ns: int, folder: Path) -> str | None:
    """The tool's version text, remembered on disk per binary (path, size, mtime): one run per new binary."""
    arguments = _VERSION_COMMANDS.get(Path(tool).name)
    if arguments is None:
        return None
    identity = hashlib.sha256(f"{tool}\0{size}\0{mtime_ns}".encode()).hexdigest()
    remembered = folder / "tools" / identity
    with contextlib.suppress(OSError):
        return remembered.read_text()
    try:
        done = subprocess.run([tool, *arguments], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    version = done.stdout.strip()
    with contextlib.suppress(OSError):
        remembered.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=remembered.parent)
        with os.fdopen(handle, "w") as stream:
            stream.write(version)
        os.replace(temporary, remembered)
    return version
