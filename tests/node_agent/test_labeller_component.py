"""The NodeAgent component under mocks with and without memberships: the pool labeller's ServiceAccount, ClusterRole,
admission policy, memberships ConfigMap and Deployment exist only where memberships are given, each a child of the
component; the pod is Pod Security "restricted" on the agent's image and code; the manifests validate."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s

from components.base.shipped_code import config_map_key
from components.catalog import node_agent as names
from components.node_agent import component
from components.node_agent.admission import labeller_policy
from components.node_agent.agent.labeller.membership import (
    MEMBERSHIPS_DIGEST_ANNOTATION,
    MEMBERSHIPS_DIR,
    MEMBERSHIPS_KEY,
    parse_memberships,
)
from components.node_agent.component import AGENT_FILES, LABELLER, NodeAgent, NodeAgentArgs, agent_sources
from components.stack.config import parse_stack_config
from preview.run.files import is_manifest, manifest_of
from preview.run.mocks import RecordingMonitor
from preview.run.registration import Registration
from tests.helpers import plan_raw, stack_raw

KUBERNETES = "1.31.0"
EXISTING = stack_raw("existing")
MEMBERSHIPS: dict[str, Any] = plan_raw(EXISTING).node_agent_memberships
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"


def _render(monitor: RecordingMonitor, memberships: dict[str, Any]) -> dict[str, Registration]:
    config = parse_stack_config(EXISTING).node_agent

    @pulumi.runtime.test
    def build() -> pulumi.Output[Any]:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        agent = NodeAgent(
            "node-agent",
            NodeAgentArgs(
                config=config,
                pool_budgets={"infer": 1, "train": 1},
                mig_resources={},
                provider=provider,
                memberships=memberships,
            ),
        )
        return agent.controller.metadata

    build()
    return {r.name: r for r in monitor.registrations}


def _labeller(registrations: dict[str, Registration]) -> dict[str, Registration]:
    return {name: r for name, r in registrations.items() if name.startswith("node-agent-labeller")}


def test_the_labeller_is_created_only_where_memberships_are_given(monitor: RecordingMonitor) -> None:
    assert _labeller(_render(monitor, {})) == {}
    assert sum(r.type == VAP for r in monitor.registrations) == 3


def test_the_labellers_objects_are_children_of_the_component(monitor: RecordingMonitor) -> None:
    found = _labeller(_render(monitor, MEMBERSHIPS))
    kinds = {name: r.type.rsplit(":", 1)[-1] for name, r in found.items()}
    assert kinds == {
        "node-agent-labeller-account": "ServiceAccount",
        "node-agent-labeller-cluster-role": "ClusterRole",
        "node-agent-labeller-cluster-role-binding": "ClusterRoleBinding",
        "node-agent-labeller-nodes-policy": "ValidatingAdmissionPolicy",
        "node-agent-labeller-nodes-binding": "ValidatingAdmissionPolicyBinding",
        "node-agent-labeller-memberships": "ConfigMap",
        "node-agent-labeller": "Deployment",
    }
    assert {r.parent_name for r in found.values()} == {"node-agent"}
    for registration in found.values():
        if is_manifest(registration):
            kubernetes_validate.validate(manifest_of(registration), KUBERNETES, strict=True)


def test_its_token_may_read_and_patch_nodes_and_nothing_else(monitor: RecordingMonitor) -> None:
    found = _render(monitor, MEMBERSHIPS)
    rules = found["node-agent-labeller-cluster-role"].inputs["rules"]
    granted = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    assert granted == {("", "nodes", "get"), ("", "nodes", "list"), ("", "nodes", "watch"), ("", "nodes", "patch")}
    binding = found["node-agent-labeller-cluster-role-binding"].inputs
    namespace = found["node-agent-namespace"].inputs["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": LABELLER, "namespace": namespace}]
    assert binding["roleRef"]["name"] == f"gpu-platform-{LABELLER}"
    policy = found["node-agent-labeller-nodes-policy"].inputs
    assert policy["spec"] == json.loads(json.dumps(labeller_policy(namespace, LABELLER, MEMBERSHIPS)["spec"]))
    binding = found["node-agent-labeller-nodes-binding"].inputs["spec"]
    assert binding == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}


def test_the_pod_is_restricted_on_the_agents_image_and_starts_after_its_policy_is_bound(
    monitor: RecordingMonitor,
) -> None:
    found = _render(monitor, MEMBERSHIPS)
    deployment = found["node-agent-labeller"]
    spec = deployment.inputs["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == LABELLER
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": names.CONTROLLER_USER,
        "runAsGroup": names.CONTROLLER_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert not {"hostPID", "hostNetwork", "hostIPC", "tolerations", "nodeSelector"} & set(pod)
    (container,) = pod["containers"]
    assert container["image"] == names.AGENT_IMAGE
    assert container["command"] == [names.AGENT_PYTHON, "-m", "components.node_agent.agent.labeller.main"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    controller = found["node-agent-controller"].inputs["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == controller["resources"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(volumes) == {"code", "memberships"}
    items = volumes["code"]["configMap"]["items"]
    assert {(i["key"], i["path"]) for i in items} == {(config_map_key(p), p) for p in AGENT_FILES}
    assert volumes["memberships"]["configMap"]["name"] == component.LABELLER_CONFIG_MAP
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["memberships"] == {"name": "memberships", "mountPath": MEMBERSHIPS_DIR, "readOnly": True}
    # The memberships, and their digest on the template: a change of them rolls the pod.
    data = found["node-agent-labeller-memberships"].inputs["data"][MEMBERSHIPS_KEY]
    assert parse_memberships(json.loads(data)) == parse_memberships(MEMBERSHIPS)
    annotations = spec["template"]["metadata"]["annotations"]
    assert annotations == {MEMBERSHIPS_DIGEST_ANNOTATION: hashlib.sha256(data.encode()).hexdigest()}
    # Never a moment of writes its policy does not contain yet.
    urns = {name: r.urn for name, r in found.items()}
    for before in ("node-agent-labeller-nodes-binding", "node-agent-labeller-nodes-policy", "node-agent-code"):
        assert urns[before] in deployment.dependencies, before


def test_the_code_config_map_ships_the_labeller_and_it_runs_on_a_bare_python(tmp_path: Path) -> None:
    sources = agent_sources()
    for path in AGENT_FILES:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(sources[config_map_key(path)])
    assert {p for p in AGENT_FILES if "/labeller/" in p} == {
        str(p.relative_to(Path(component.__file__).resolve().parents[2]))
        for p in (Path(component.__file__).parent / "agent" / "labeller").glob("*.py")
    }
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    # -S: no site-packages; -E: no PYTHON* variables (so no memberships path either: the mounted one is absent here).
    result = subprocess.run(
        [sys.executable, "-S", "-E", "-m", "components.node_agent.agent.labeller.main"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert f"the memberships ({MEMBERSHIPS_DIR}/{MEMBERSHIPS_KEY}) cannot be read" in result.stderr
