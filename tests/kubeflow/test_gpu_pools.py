"""A PodDefault per GPU pool in every Profile namespace, valid against the real PodDefault CRD of the pinned tree.

The API server validates a custom resource against its CRD's openAPI schema and silently prunes fields the
schema does not know, so the test checks both: the schema accepts the object (jsonschema), and every field
the program sets exists in the schema (nothing would be pruned, e.g. a ``nodeSelector`` the CRD lacks).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from components.catalog.kubeflow.v1_10_2.spawner import PODDEFAULT_API_VERSION, PODDEFAULT_CRD_PATH, PODDEFAULT_KIND
from components.catalog.kubernetes import tolerates
from components.catalog.upstream import KUBEFLOW_MANIFESTS
from preview.run.runner import ProgramRun, run_program
from tests.helpers import ROOT, plan_raw, stack_raw

CUSTOM_RESOURCE = "kubernetes:kubeflow.org/v1alpha1:PodDefault"
PROFILE = "kubernetes:kubeflow.org/v1:Profile"


@pytest.fixture(scope="module")
def runs() -> dict[str, ProgramRun]:
    return {stack: run_program(stack) for stack in ("dev", "prod")}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / KUBEFLOW_MANIFESTS.path / PODDEFAULT_CRD_PATH).read_text())
    group, version = PODDEFAULT_API_VERSION.split("/")
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == PODDEFAULT_KIND
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    return dict(served["schema"]["openAPIV3Schema"])


def _pruned(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields of ``value`` that structural pruning would drop (not in ``properties``, no ``additionalProperties``)."""
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return []
        found = []
        for key, item in value.items():
            if path == "" and key == "metadata":  # ObjectMeta: validated by the API server, not the CRD schema
                continue
            if key in schema.get("properties", {}):
                found += _pruned(item, schema["properties"][key], f"{path}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += _pruned(item, schema["additionalProperties"], f"{path}.{key}")
            else:
                found.append(f"{path}.{key}")
        return found
    if isinstance(value, list):
        return [f for i, item in enumerate(value) for f in _pruned(item, schema.get("items", {}), f"{path}[{i}]")]
    return []


def _pod_defaults(run: ProgramRun) -> list[dict[str, Any]]:
    return [r.inputs for r in run.by_type(CUSTOM_RESOURCE)]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_each_profile_gets_one_pod_default_per_gpu_pool(runs: dict[str, ProgramRun], stack: str) -> None:
    run = runs[stack]
    profiles = sorted(r.inputs["metadata"]["name"] for r in run.by_type(PROFILE))
    pools = sorted(run.outputs["gpuPools"])
    assert profiles and pools
    found = sorted((d["metadata"]["namespace"], d["metadata"]["name"]) for d in _pod_defaults(run))
    assert found == sorted((p, f"gpu-pool-{pool}") for p in profiles for pool in pools)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_pod_defaults_are_valid_against_the_real_crd(
    runs: dict[str, ProgramRun], schema: dict[str, Any], stack: str
) -> None:
    for body in _pod_defaults(runs[stack]):
        jsonschema.Draft7Validator(schema).validate(body)
        assert _pruned(body, schema) == [], body["metadata"]
        assert body["spec"]["desc"]
        (value,) = body["spec"]["selector"]["matchLabels"].values()
        assert value == "true", "the spawner sets a ticked PodDefault's label to 'true'"


def test_the_schema_check_catches_a_field_the_crd_lacks(schema: dict[str, Any]) -> None:
    body = {"apiVersion": "kubeflow.org/v1alpha1", "kind": "PodDefault", "spec": {"selector": {}, "nodeSelector": {}}}
    assert _pruned(body, schema) == [".spec.nodeSelector"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_ticked_pod_default_tolerates_every_taint_of_its_pool(runs: dict[str, ProgramRun], stack: str) -> None:
    run = runs[stack]
    taints = {pool.name: pool.taints for pool in plan_raw(stack_raw(stack)).pools}
    for body in _pod_defaults(run):
        pool = body["metadata"]["name"].removeprefix("gpu-pool-")
        assert taints[pool], pool
        for taint in taints[pool]:
            assert any(tolerates(t, taint) for t in body["spec"]["tolerations"]), (pool, taint)
        # The selector label is the pool's own: ticking one pool's PodDefault applies nothing of another's.
        (label,) = body["spec"]["selector"]["matchLabels"]
        assert label == f"gpu-platform.io/gpu-pool-{pool}"


def test_pod_defaults_wait_for_their_profile(runs: dict[str, ProgramRun]) -> None:
    run = runs["dev"]
    profile = next(r for r in run.by_type(PROFILE))
    for registration in run.by_type(CUSTOM_RESOURCE):
        assert profile.urn in registration.dependencies, registration.name
