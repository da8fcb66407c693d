"""Every Kubernetes object the program declares validates against the stack's Kubernetes version."""

from __future__ import annotations

import jsonschema
import kubernetes_validate
import pytest
import yaml

from preview.run.files import is_manifest, manifest_of
from preview.run.runner import run_program
from preview.run.stack_file import available_stacks
from tests.helpers import ROOT
from tests.support.chart_render import PINNED_CHART

# CRDs whose schema kubernetes-validate does not ship (custom resources of other projects). The
# PrometheusRule's rules are checked by promtool instead (tests/observability/test_alert_rules.py).
CUSTOM_API_GROUPS = (
    "kyverno.io/",
    "kubeflow.org/",
    "networking.istio.io/",
    "security.istio.io/",
    "monitoring.coreos.com/",
)


# The GPU Operator's own resources (NVIDIADriver): validated against the CRD the pinned chart ships.
GPU_OPERATOR_API_GROUP = "nvidia.com/"


def gpu_operator_crd_schema(kind: str) -> dict:
    """The openAPI schema of ``kind`` from the pinned chart's crds/ folder."""
    for path in sorted((PINNED_CHART / "crds").glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        if document["spec"]["names"]["kind"] == kind:
            (served,) = [v for v in document["spec"]["versions"] if v.get("storage")]
            schema: dict = served["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"the pinned chart has no CRD for {kind}")


def _manifests(stack: str) -> list[dict]:
    run = run_program(stack)
    assert run.config_error is None, run.config_error
    return [manifest_of(r) for r in run.registrations if is_manifest(r)]


@pytest.mark.parametrize("stack", available_stacks(ROOT))
def test_every_manifest_is_valid_for_the_stacks_kubernetes_version(stack: str) -> None:
    run = run_program(stack)
    version = run.outputs["cluster"]["kubernetesVersion"]
    manifests = _manifests(stack)
    assert manifests, f"stack {stack} declares Kubernetes objects"
    checked = 0
    for manifest in manifests:
        if manifest["apiVersion"].startswith(GPU_OPERATOR_API_GROUP):
            jsonschema.validate(manifest, gpu_operator_crd_schema(manifest["kind"]))  # the pinned chart's CRD
            checked += 1
            continue
        if manifest["apiVersion"].startswith(CUSTOM_API_GROUPS) or manifest["kind"].endswith("Patch"):
            continue
        kubernetes_validate.validate(manifest, f"{version}.0", strict=True)
        checked += 1
    assert checked > 0


def test_validation_catches_a_bad_manifest() -> None:
    """The validator really checks: a Namespace with a misspelled field fails strict validation."""
    bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": {"finalizer": []}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.30.0", strict=True)
