"""Where the render tools and the pinned chart are: ``helm``/``kubectl`` from ``.tools/bin`` or ``PATH``.

Kept apart from the renderers (standard library and the catalog only), so the result cache can key a
preview by the tools' versions without importing the SDKs.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from components.catalog.upstream import GPU_OPERATOR_CHART

REPO_ROOT = Path(__file__).resolve().parents[2]


class RenderSetupError(RuntimeError):
    """A tool or pinned artifact the renders need is missing: the preview stops with this message."""


def find_tool(name: str, root: Path = REPO_ROOT) -> str:
    """``<root>/.tools/bin/<name>``, else the repository's, else ``<name>`` on PATH; a clear error if none."""
    for folder in dict.fromkeys((root / ".tools" / "bin", REPO_ROOT / ".tools" / "bin")):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise RenderSetupError(
        f"{name} is not in .tools/bin nor on PATH; the policy gate renders Helm releases and kustomize "
        "Directories with the real tools: run `make tools`"
    )


def pinned_chart_dir(root: Path = REPO_ROOT) -> Path:
    """The unpacked pinned GPU Operator chart; a clear error when ``make upstream`` has not run."""
    for base in dict.fromkeys((root, REPO_ROOT)):
        candidate = base / GPU_OPERATOR_CHART.path
        if (candidate / "Chart.yaml").is_file():
            return candidate
    raise RenderSetupError(
        f"the pinned GPU Operator chart {GPU_OPERATOR_CHART.version} is not at {GPU_OPERATOR_CHART.path}; "
        "the policy gate renders the release with it: run `make upstream`"
    )
