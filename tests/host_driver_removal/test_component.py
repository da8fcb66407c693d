"""The host-driver-removal component under mocks: least-privilege RBAC, a pinned privileged DaemonSet on opted-in nodes."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest
import yaml

from components.base.problems import StackConfigError
from components.catalog import host_driver_removal as contract
from components.host_driver_removal.component import SCRIPT_PATH
from preview.render import is_manifest, manifest_of
from preview.runner import ProgramRun, run_program
from tests.helpers import ROOT, plan_raw, set_path, stack_raw


def _opted_in_groups() -> dict[str, Any]:
    groups = copy.deepcopy(yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]["gpu-platform:nodeGroups"])
    groups["v100"]["gpuEnvironment"] = "runc_drivers_cuda"
    groups["v100"]["hostDriverRemoval"] = True
    return groups


@pytest.fixture(scope="module")
def run() -> ProgramRun:
    result = run_program("dev", overrides={"gpu-platform:nodeGroups": _opted_in_groups()})
    assert result.config_error is None, result.config_error
    return result


def _rules(registration: Any) -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    return [
        (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"]), tuple(r.get("resourceNames") or ()))
        for r in registration.inputs["rules"]
    ]


def test_cluster_role_is_least_privilege(run: ProgramRun) -> None:
    role = run.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "host-driver-removal-cluster-role")
    assert _rules(role) == [
        (("",), ("nodes",), ("get", "patch"), ()),
        (("",), ("pods",), ("list",), ()),
        (("",), ("pods/eviction",), ("create",), ()),
    ]


def test_lease_and_event_roles(run: ProgramRun) -> None:
    lock = run.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "host-driver-removal-lock-role")
    assert lock.inputs["metadata"]["namespace"] == "gpu-platform-system"
    assert (("coordination.k8s.io",), ("leases",), ("get", "update"), ("host-driver-removal-lock",)) in _rules(lock)
    events = run.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "host-driver-removal-events-role")
    assert events.inputs["metadata"]["namespace"] == "default"
    assert _rules(events) == [(("",), ("events",), ("create",), ())]


def test_daemonset_runs_only_on_opted_in_nodes_with_the_host_mounted(run: ProgramRun) -> None:
    spec = run.one("kubernetes:apps/v1:DaemonSet", "host-driver-removal-daemonset").inputs["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {contract.OPT_IN_LABEL: contract.OPT_IN_VALUE}
    assert spec["hostPID"] is True and spec["priorityClassName"] == "system-node-critical"
    (container,) = spec["containers"]
    assert container["securityContext"] == {"privileged": True}
    image, _, tag = container["image"].rpartition(":")
    assert image and tag and tag != "latest", "the image is pinned by tag"
    assert {"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}} in spec["volumes"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["OPERATOR_NAMESPACE"]["value"] == "gpu-operator"
    assert env["DRY_RUN"]["value"] == "false"
    tolerations = spec["tolerations"]
    assert {
        "key": "gpu-platform.io/workload",
        "operator": "Equal",
        "value": "notebooks",
        "effect": "NoSchedule",
    } in tolerations
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in tolerations


def test_script_ships_verbatim_in_a_configmap(run: ProgramRun) -> None:
    data = run.one("kubernetes:core/v1:ConfigMap", "host-driver-removal-script").inputs["data"]
    assert data["host-driver-removal.sh"] == SCRIPT_PATH.read_text()


def test_opted_in_group_carries_the_opt_in_label(run: ProgramRun) -> None:
    labels = run.one("yandex:index/kubernetesNodeGroup:KubernetesNodeGroup", "gpu-v100-group").inputs["nodeLabels"]
    assert labels[contract.OPT_IN_LABEL] == contract.OPT_IN_VALUE


def test_manifests_validate(run: ProgramRun) -> None:
    manifests = [
        manifest_of(r) for r in run.registrations if is_manifest(r) and r.name.startswith("host-driver-removal")
    ]
    assert len(manifests) == 10
    for manifest in manifests:
        kubernetes_validate.validate(manifest, "1.30.0", strict=True)


def test_not_created_when_no_group_opts_in() -> None:
    assert not [r for r in run_program("dev").registrations if r.name.startswith("host-driver-removal")]


def test_refused_for_a_driverless_group() -> None:
    with pytest.raises(StackConfigError) as caught:
        plan_raw(set_path(stack_raw("dev"), "nodeGroups.v100.hostDriverRemoval", True))
    assert "nodeGroups.v100.hostDriverRemoval: true is only for runc_drivers_cuda groups" in str(caught.value)
