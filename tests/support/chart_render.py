"""Render the GPU Operator release with the real pinned chart and the real helm, and read the objects.

Why: the chart has no values schema and drops or rewrites some values in its templates (a ``false`` that
is never written, a default that wins when a key is left out), so a test of the values dict alone cannot
tell whether a setting reaches the operator. This renders what the program registers (the Release's
chart, name, namespace and values, in the wire format the mocks saw) with ``helm template`` on the
unpacked chart that ``make upstream`` verified, and returns the objects the API server would get.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.catalog import gpu_operator_chart as chart
from components.catalog.upstream import GPU_OPERATOR_CHART

ROOT = Path(__file__).resolve().parents[2]
HELM = ROOT / ".tools" / "bin" / "helm"
PINNED_CHART = ROOT / GPU_OPERATOR_CHART.path


class ChartRenderError(AssertionError):
    """helm could not render the release (a test failure, with helm's own message)."""


@dataclass(frozen=True)
class RenderedChart:
    """The objects ``helm template`` rendered, in file order."""

    objects: tuple[dict[str, Any], ...]

    def all(self, kind: str) -> list[dict[str, Any]]:
        """Every object of ``kind``."""
        return [obj for obj in self.objects if obj.get("kind") == kind]

    def one(self, kind: str, name: str) -> dict[str, Any]:
        """The object of ``kind`` called ``name``; fails the test when it was not rendered."""
        for obj in self.all(kind):
            if obj["metadata"]["name"] == name:
                return obj
        names = ", ".join(obj["metadata"]["name"] for obj in self.all(kind)) or "none"
        raise AssertionError(f"no {kind} {name!r} rendered; {kind} objects: {names}")

    @property
    def cluster_policy(self) -> dict[str, Any]:
        """``spec`` of the ClusterPolicy the operator reconciles."""
        (policy,) = self.all("ClusterPolicy")
        spec: dict[str, Any] = policy["spec"]
        return spec

    def nfd_worker(self, release: str = "gpu-operator") -> dict[str, Any]:
        """The pod spec of node-feature-discovery's worker DaemonSet (the subchart)."""
        daemonset = self.one("DaemonSet", f"{release}-node-feature-discovery-worker")
        spec: dict[str, Any] = daemonset["spec"]["template"]["spec"]
        return spec

    def operand_enabled(self, block: str) -> bool:
        """Whether the operator deploys ``block``, reading the rendered ClusterPolicy as it does."""
        return chart.operand_enabled(self.cluster_policy, block)


def chart_source(release_inputs: Mapping[str, Any]) -> Path:
    """The chart folder or archive ``release_inputs`` installs, as a local path helm can render.

    A repository chart must be the pinned one (``components.catalog.upstream``); its verified copy under
    ``.upstream/`` stands in for the download. A local chart is rendered from where the Release points.
    """
    repository = (release_inputs.get("repositoryOpts") or {}).get("repo")
    if repository is None:
        path = Path(str(release_inputs["chart"]))
        return path if path.is_absolute() else ROOT / path
    assert repository == chart.CHART_REPO, f"unexpected chart repository {repository!r}"
    assert release_inputs["chart"] == chart.CHART_NAME
    assert release_inputs["version"] == GPU_OPERATOR_CHART.version, "only the pinned chart is in .upstream/"
    return PINNED_CHART


def render_release(release_inputs: Mapping[str, Any]) -> RenderedChart:
    """``helm template`` of a registered ``kubernetes:helm.sh/v3:Release`` (its inputs as the mock saw them)."""
    return render_values(
        release_inputs.get("values") or {},
        chart_path=chart_source(release_inputs),
        release=str(release_inputs.get("name") or "gpu-operator"),
        namespace=str(release_inputs.get("namespace") or "gpu-operator"),
    )


def render_values(
    values: Mapping[str, Any],
    *,
    chart_path: Path = PINNED_CHART,
    release: str = "gpu-operator",
    namespace: str = "gpu-operator",
) -> RenderedChart:
    """``helm template RELEASE CHART -n NAMESPACE -f values.json``, parsed."""
    for needed, hint in ((HELM, "make tools"), (chart_path, "make upstream")):
        if not needed.exists():
            raise ChartRenderError(f"{needed.relative_to(ROOT)} is missing; run `{hint}`")
    with tempfile.TemporaryDirectory() as tmp:
        values_file = Path(tmp) / "values.json"
        values_file.write_text(json.dumps(values))
        result = subprocess.run(
            [str(HELM), "template", release, str(chart_path), "--namespace", namespace, "--values", str(values_file)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={
                "HOME": tmp,
                "PATH": "/usr/bin:/bin",
                "HELM_CACHE_HOME": tmp,
                "HELM_CONFIG_HOME": tmp,
                "HELM_DATA_HOME": tmp,
            },
        )
    if result.returncode != 0:
        raise ChartRenderError(f"helm template failed ({result.returncode}): {result.stderr.strip()}")
    objects = tuple(obj for obj in yaml.safe_load_all(result.stdout) if isinstance(obj, dict))
    return RenderedChart(objects)
