"""Where the GPU Operator chart is installed from: NVIDIA's Helm repository, or a local copy.

A closed network cannot reach ``helm.ngc.nvidia.com``, so ``gpuOperator.chartPath`` points the release at
a mirrored chart: the packaged archive (``gpu-operator-v26.7.0.tgz``) or its unpacked folder (what
``make upstream UPSTREAM_MIRROR=<dir>`` leaves in ``.upstream/``). Helm installs a local chart without
looking at a version, so the check here is the only thing between a stale or edited copy and the
cluster: the path must hold the ``gpu-operator`` chart at ``chartVersion``, and, where the catalog pins
that version (``components.catalog.upstream``), exactly the pinned content.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import yaml

from components.catalog import gpu_operator_chart as chart
from components.catalog.upstream import archive_digest, pinned_chart, tree_digest

CHART_FILE = "Chart.yaml"
MIRROR_HINT = "mirror the chart first (docs/operations.md, Air-gapped install) or unset chartPath to use " + (
    chart.CHART_REPO
)


def _chart_yaml(path: Path) -> tuple[dict[str, Any] | None, str]:
    """Chart.yaml of a chart folder or archive and the archive's top folder ("" for a folder)."""
    if path.is_dir():
        manifest = path / CHART_FILE
        if not manifest.is_file():
            return None, ""
        return yaml.safe_load(manifest.read_text()), ""
    with tarfile.open(path) as tar:
        for member in tar:
            parts = Path(member.name).parts
            if len(parts) == 2 and parts[1] == CHART_FILE and member.isfile():
                handle = tar.extractfile(member)
                if handle is None:
                    break
                return yaml.safe_load(handle.read()), parts[0]
    return None, ""


def chart_path_problem(path: Path, chart_version: str) -> str | None:
    """Why ``path`` is not the pinned GPU Operator chart at ``chart_version``, or None when it is."""
    try:
        exists = path.exists()
    except (OSError, ValueError) as error:  # a name too long, a 0 byte: the file system's answer, as a problem
        return f"{str(path)[:80]!r} cannot be looked up: {error}"
    if not exists:
        return f"{path} does not exist; {MIRROR_HINT}"
    try:
        manifest, top = _chart_yaml(path)
    except (tarfile.TarError, OSError, yaml.YAMLError) as error:
        return f"{path} is neither a chart folder nor a readable chart archive (.tgz): {error}"
    if not isinstance(manifest, dict):
        return f"{path} is not a Helm chart: no {CHART_FILE} (expected a chart folder or a packaged .tgz)"
    name, version = manifest.get("name"), manifest.get("version")
    if name != chart.CHART_NAME:
        return f"{path} holds the chart {name!r}, not {chart.CHART_NAME!r}"
    if version != chart_version:
        return (
            f"{path} holds {chart.CHART_NAME} {version}, but gpuOperator.chartVersion is {chart_version}; "
            f"mirror {chart.CHART_NAME}-{chart_version}.tgz or change chartVersion"
        )
    pin = pinned_chart(chart_version)
    if pin is None:
        return None
    digest = tree_digest(path) if path.is_dir() else archive_digest(path, top)
    if digest != pin.content_sha256:
        return (
            f"{path} is {chart.CHART_NAME} {version} with other content than the pinned chart "
            f"(content digest {digest}, pinned {pin.content_sha256} in components/catalog/upstream.py); "
            "use the archive NVIDIA publishes, unmodified"
        )
    return None
