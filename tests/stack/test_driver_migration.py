"""Moving a stack from the one ClusterPolicy driver to per-pool NVIDIADriver resources, and back.

The program under mocks, before and after the config change (docs/operations.md, "Per-pool drivers").
Forward, in one ``pulumi up``: the node groups get their driver label before the release switches the
ClusterPolicy to NVIDIADriver resources, and the resources come after the release. Back: the resources
and labels go, the ClusterPolicy driver returns exactly as before, and the preview warns that this
direction needs two steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.catalog.names import DRIVER_GROUP_LABEL, NVIDIA_DRIVER_TYPE
from preview.diff.driver_plan import BACK_TO_CLUSTER_POLICY, driver_upgrade_plan
from preview.run.runner import ProgramRun
from tests.helpers import one_driver, run_raw, stack_raw

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_GROUP = "yandex:index/kubernetesNodeGroup:KubernetesNodeGroup"


@pytest.fixture(scope="module")
def single() -> ProgramRun:
    return run_raw("dev", one_driver(stack_raw("dev")))


@pytest.fixture(scope="module")
def per_pool() -> ProgramRun:
    return run_raw("dev", stack_raw("dev"))


def _names(run: ProgramRun) -> set[tuple[str, str]]:
    return {(r.type, r.name) for r in run.registrations}


def test_forward_adds_only_the_nvidiadrivers_and_keeps_every_other_resource(
    single: ProgramRun, per_pool: ProgramRun
) -> None:
    added = _names(per_pool) - _names(single)
    assert added == {
        ("gpu-platform:gpu:GpuDrivers", "gpu-drivers"),
        (NVIDIA_DRIVER_TYPE, "gpu-drivers-a100"),
        (NVIDIA_DRIVER_TYPE, "gpu-drivers-v100"),
    }
    assert _names(single) - _names(per_pool) == set()  # nothing is deleted or renamed (no replacement)


def test_forward_labels_the_nodes_before_the_release_and_the_drivers_after_it(per_pool: ProgramRun) -> None:
    release = per_pool.one(RELEASE, "gpu-operator-release")
    for group in per_pool.by_type(NODE_GROUP):
        assert DRIVER_GROUP_LABEL in group.inputs["nodeLabels"]
        assert group.urn in release.dependencies  # labels first: no NVIDIADriver selects an unlabelled node
    for driver in per_pool.by_type(NVIDIA_DRIVER_TYPE):
        assert release.urn in driver.dependencies  # the CRD and useNvidiaDriverCRD come with the release


def test_back_restores_the_clusterpolicy_driver_exactly(single: ProgramRun, per_pool: ProgramRun) -> None:
    values = single.one(RELEASE, "gpu-operator-release").inputs["values"]["driver"]
    assert values["version"] == "580.95.05" and "nvidiaDriverCRD" not in values
    assert single.by_type(NVIDIA_DRIVER_TYPE) == []
    assert all(DRIVER_GROUP_LABEL not in g.inputs["nodeLabels"] for g in single.by_type(NODE_GROUP))
    per_pool_values = per_pool.one(RELEASE, "gpu-operator-release").inputs["values"]["driver"]
    assert per_pool_values["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}


def _write_outputs(tmp_path: Path, run: ProgramRun) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(run.outputs))
    return path


def test_the_preview_warns_going_back_and_not_going_forward(
    tmp_path: Path, single: ProgramRun, per_pool: ProgramRun
) -> None:
    back = driver_upgrade_plan(_write_outputs(tmp_path, per_pool), single.outputs)
    assert back[0] == BACK_TO_CLUSTER_POLICY
    forward = driver_upgrade_plan(_write_outputs(tmp_path, single), per_pool.outputs)
    assert BACK_TO_CLUSTER_POLICY not in forward
    assert "    a100: driver 595.91.07 (CHANGES from 580.95.05)" in "\n".join(forward)
    assert any(line.startswith("    v100: driver 580.95.05 (unchanged)") for line in forward)
