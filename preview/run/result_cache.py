"""Whole previews kept on disk, keyed by every input a preview is a function of.

Why: the preview is deterministic (the same inputs give byte-identical files), and a preview whose
inputs did not change (a second ``make preview``, a ``make diff`` whose base is cached, the test suite
previewing the stacks again) re-did everything: imports of every SDK, the program under mocks, the
renders, the policy gate. A build tool skips a target whose inputs did not change; so does this.

- **Key**: sha256 over the project's code (``components/``, ``policies/``, ``preview/`` and the root's
  ``__main__.py``, by content), the stack's own files (``Pulumi.yaml``, ``Pulumi.<stack>.yaml``, its
  recorded MIG plan, its policy config), the pinned requirements, the Python version, the render tools'
  versions (``preview.render.cache``), the ``GPU_PLATFORM_*`` and ``PULUMI_*`` environment, the project
  folder and the output folder (the console names it). The pinned upstream artifacts are in the key
  through the catalog's digests, which ``make upstream`` checks the unpacked trees against.
- **Value**: what the preview wrote and printed before the summary, whose base is read anew each time:
  every file, the notices, the resource tree, the policy verdicts, the MIG plan lines, and whether a
  mandatory policy failed. Refused stacks and errors are never stored: they run every time.
- Stored in the render cache's folder (``.cache/render``, or ``$GPU_PLATFORM_CACHE_DIR``), atomically and
  within its bound; ``GPU_PLATFORM_RENDER_CACHE=off`` turns both off, ``GPU_PLATFORM_RESULT_CACHE=off`` this
  one only (the program and the gate run, unchanged renders are still read from their cache: what
  ``make bench`` measures as a preview's cost beyond the renders), ``make clean`` empties both.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from preview.render.cache import enabled, project_cache

#: The code a preview runs, relative to the repository (every file, so scripts and data count too).
CODE_TREES = ("components", "policies", "preview")
_KIND = "preview"
#: ``off`` (or 0, false, no): whole previews are neither read nor stored; renders are still cached.
RESULT_CACHE_ENV = "GPU_PLATFORM_RESULT_CACHE"
_ENVIRONMENT_PREFIXES = ("GPU_PLATFORM_", "PULUMI_")
_SKIPPED_PARTS = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


@dataclass
class Produced:
    """What one preview of a stack produced, whatever base it is compared with."""

    files: dict[str, str]  #: relative path -> text of every file of the preview folder
    notices: list[str] = field(default_factory=list)
    tree: str = ""  #: the resource tree (``--verbose``)
    verdicts: str = ""  #: the policy verdict table
    failed: bool = False  #: a mandatory policy is violated (exit 3)
    mig_lines: list[str] = field(default_factory=list)  #: the MIG plan per GPU and the record hint


def _tree_lines(base: Path, folder: str) -> list[str]:
    root = base / folder
    lines = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not _SKIPPED_PARTS & set(path.relative_to(base).parts) and path.suffix != ".pyc":
            lines.append(f"{path.relative_to(base).as_posix()} {hashlib.sha256(path.read_bytes()).hexdigest()}")
    return lines


def _file_line(path: Path, name: str) -> str:
    try:
        return f"{name} {hashlib.sha256(path.read_bytes()).hexdigest()}"
    except OSError:
        return f"{name} absent"


def preview_key(stack: str, root: Path, out_dir: Path, repository: Path, tools: list[str]) -> str:
    """The key of the preview of ``stack`` in project ``root`` written to ``out_dir``."""
    code = [line for folder in CODE_TREES for line in _tree_lines(repository, folder)]
    if root.resolve() != repository.resolve():
        code += [
            f"root:{line}" for folder in ("policies",) if (root / folder).is_dir() for line in _tree_lines(root, folder)
        ]
    own = [
        _file_line(root / name, name)
        for name in (
            "__main__.py",
            "Pulumi.yaml",
            f"Pulumi.{stack}.yaml",
            f"mig-plans/{stack}.yaml",
            f"policies/config/{stack}.json",
        )
    ]
    pins = [_file_line(repository / name, name) for name in ("requirements.txt", "requirements-dev.txt")]
    environment = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(_ENVIRONMENT_PREFIXES))
    material = {
        "stack": stack,
        "root": str(root.resolve()),
        "out": str(out_dir.resolve()),
        "python": sys.version,
        "code": code,
        "own": own,
        "pins": pins,
        "tools": tools,
        "environment": environment,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


class ResultCache:
    """Whole previews in the project's render cache folder."""

    def __init__(self, repository: Path) -> None:
        self.store = project_cache(repository)
        self.repository = repository
        #: key -> the lineage of the preview it names (the same stack previewed into the same folder): a later
        #: preview of a lineage takes the earlier one's place among the previews the cache keeps.
        self.lineages: dict[str, str] = {}

    def key(self, stack: str, root: Path, out_dir: Path, tools: list[str]) -> str | None:
        """The key, or None when caching is off or a tool's version cannot be read."""
        if not (enabled() and enabled(RESULT_CACHE_ENV)):
            return None
        versions = [self.store.tool_version(tool) for tool in tools]
        if any(version is None for version in versions):
            return None
        key = preview_key(stack, root, out_dir, self.repository, [str(v) for v in versions])
        self.lineages[key] = f"{stack}\0{root.resolve()}\0{out_dir.resolve()}"
        return key

    def get(self, key: str | None) -> Produced | None:
        """The stored preview of ``key``, or None."""
        stored: Any = self.store.get(key, _KIND) if key else None
        if not isinstance(stored, dict):
            return None
        try:
            return Produced(**stored)
        except TypeError:  # stored by an older layout: a miss
            return None

    def put(self, key: str | None, produced: Produced) -> None:
        """Store ``produced`` under ``key`` (no-op without a key)."""
        if key:
            self.store.put(key, _KIND, asdict(produced), lineage=self.lineages.get(key))
