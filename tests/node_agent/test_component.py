"""The node agent under mocks: a dev variant with a runc_drivers_cuda group handed over, and the bare-metal
prod stack with a changed MIG layout going through the agent. The controller unprivileged, the executors root
on the pinned image, the admission policies in place, the settings in their ConfigMap, every manifest valid
against the Kubernetes OpenAPI schemas."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from components.base.problems import StackConfigError
from components.base.shipped_code import config_map_key
from components.catalog import node_agent as names
from components.catalog.names import HOST_DRIVER_REMOVAL_ENABLED, HOST_DRIVER_REMOVAL_LABEL, MIG_CONFIG_LABEL
from components.node_agent.agent.controller.smoke import SMOKE_PRIORITY_CLASS
from components.node_agent.agent.settings import OPERATOR_RUNTIME_CLASS, Settings
from components.node_agent.component import AGENT_FILES, agent_sources
from components.node_agent.rbac import CONTROLLER_CLUSTER_RULES, EXECUTOR_CLUSTER_RULES
from components.node_agent.reference import replace_tables
from preview.gate.evaluate import run_gate
from preview.gate.report import verdict_table
from preview.run.files import is_manifest, manifest_of
from preview.run.runner import ProgramRun, run_program
from tests.helpers import ROOT, plan_raw, set_path, stack_raw

KUBERNETES = "1.31.0"  # the prod stack's kubernetesVersion; ValidatingAdmissionPolicy v1 is GA since 1.30


def _handover_groups(max_unavailable: object = None) -> dict[str, Any]:
    groups = copy.deepcopy(yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]["gpu-platform:nodeGroups"])
    groups["v100"]["gpuEnvironment"] = "runc_drivers_cuda"
    groups["v100"]["hostDriverRemoval"] = True
    return groups


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    result = run_program(
        "dev",
        overrides={
            "gpu-platform:nodeGroups": _handover_groups(),
            "gpu-platform:nodeAgent": {"maxUnavailable": "50%"},
        },
    )
    assert result.config_error is None, result.config_error
    return result


def _prod_mig_change() -> dict[str, Any]:
    nodes = copy.deepcopy(yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())["config"]["gpu-platform:bareMetal"])
    nodes["nodes"][0]["mig"] = {"layout": "all-3g.40gb"}  # a changed layout on gpu-node-1
    return nodes


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    result = run_program(
        "prod",
        overrides={
            "gpu-platform:bareMetal": _prod_mig_change(),
            "gpu-platform:nodeAgent": {"migLayout": True, "maxUnavailable": 1},
            # The changed layout gives fewer 1g.10gb slices than prod's demand asks for (which the config
            # check refuses, tests/mig): this variant is about the rollout, so it declares no demand.
            "gpu-platform:mig": {"strategy": "mixed"},
        },
    )
    assert result.config_error is None, result.config_error
    return result


def _executor_pod(run: ProgramRun) -> dict[str, Any]:
    return dict(run.one("kubernetes:apps/v1:DaemonSet", "node-agent-daemonset").inputs["spec"]["template"]["spec"])


def _controller_pod(run: ProgramRun) -> dict[str, Any]:
    return dict(run.one("kubernetes:apps/v1:Deployment", "node-agent-controller").inputs["spec"]["template"]["spec"])


def _settings(run: ProgramRun) -> Settings:
    data = run.one("kubernetes:core/v1:ConfigMap", "node-agent-settings").inputs["data"]
    return Settings.from_json(json.loads(data[names.SETTINGS_KEY]))


def _policy(run: ProgramRun, role: str) -> dict[str, Any]:
    kind = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
    return dict(run.one(kind, f"node-agent-{role}-policy").inputs["spec"])


def _expressions(policy: dict[str, Any]) -> str:
    return " ".join(v["expression"] for v in policy["validations"])


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_executors_run_as_root_privileged_on_the_pinned_image(stack: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(stack)
    pod = _executor_pod(run)
    container = pod["containers"][0]
    assert container["image"] == names.AGENT_IMAGE
    assert "@sha256:" in container["image"] and container["image"].startswith("docker.io/library/python:3.12")
    assert container["securityContext"] == {"privileged": True, "runAsUser": 0, "runAsNonRoot": False}
    assert pod["hostPID"] is True
    assert pod["serviceAccountName"] == "node-agent-executor"
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/host"]["mountPropagation"] == "HostToContainer"
    assert {v["name"]: v for v in pod["volumes"]}["host-root"]["hostPath"] == {"path": "/", "type": "Directory"}
    assert container["command"] == [names.AGENT_PYTHON, "-m", "components.node_agent.agent.executor.main"]
    assert pod["tolerations"] == [{"operator": "Exists"}]
    # A long host step is finished on SIGTERM, not cut at 30 s.
    assert pod["terminationGracePeriodSeconds"] > Settings().uninstall_timeout_seconds
    strategy = run.one("kubernetes:apps/v1:DaemonSet", "node-agent-daemonset").inputs["spec"]["updateStrategy"]
    assert strategy == {"type": "RollingUpdate"}  # new executor code reaches running nodes


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_controller_is_one_unprivileged_pod(stack: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(stack)
    spec = run.one("kubernetes:apps/v1:Deployment", "node-agent-controller").inputs["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = _controller_pod(run)
    assert pod["serviceAccountName"] == "node-agent-controller"
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65534
    assert "hostPID" not in pod and "host-root" not in {v["name"] for v in pod["volumes"]}
    container = pod["containers"][0]
    assert container["image"] == names.AGENT_IMAGE
    assert container["command"] == [names.AGENT_PYTHON, "-m", "components.node_agent.agent.controller.main"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def test_the_settings_are_live_in_a_config_map(dev: ProgramRun, prod: ProgramRun) -> None:
    assert _settings(dev).max_unavailable == "50%"  # a percentage of the pool's live nodes, at every reconcile
    assert _settings(dev).budget(3) == 2  # an autoscaled group with 3 live nodes: 2, whatever its maximum
    assert _settings(prod).max_unavailable == "1"
    assert _settings(prod).mig_layout is True


def test_the_budget_output_is_per_pool_at_full_size(dev: ProgramRun, prod: ProgramRun) -> None:
    assert dev.outputs["nodeAgent"]["budgets"] == {"v100": 2}  # 50% of max 3, rounded up
    assert prod.outputs["nodeAgent"]["budgets"] == {"h100": 1}  # the bare-metal nodes share their pool's budget


def test_the_prod_layout_change_goes_through_the_agent(prod: ProgramRun) -> None:
    patch = prod.one("kubernetes:core/v1:NodePatch", "gpu-nodes-gpu-node-1").inputs["metadata"]["labels"]
    assert patch[names.MIG_DESIRED_LABEL] == "all-3g.40gb"
    assert MIG_CONFIG_LABEL not in patch  # the program no longer flips every node at once
    # The resources the node must advertise before it is done (and one smoke pod each).
    assert set(_settings(prod).mig_resources["gpu-node-1"]) == {"nvidia.com/mig-3g.40gb"}


def test_without_mig_layout_the_program_labels_as_before() -> None:
    run = run_program("prod")
    assert not [r for r in run.registrations if r.name.startswith("node-agent")]
    patch = run.one("kubernetes:core/v1:NodePatch", "gpu-nodes-gpu-node-1").inputs["metadata"]["labels"]
    assert MIG_CONFIG_LABEL in patch


def test_the_opted_in_group_carries_the_opt_in_label(dev: ProgramRun) -> None:
    labels = dev.one("yandex:index/kubernetesNodeGroup:KubernetesNodeGroup", "gpu-v100-group").inputs["nodeLabels"]
    assert labels[HOST_DRIVER_REMOVAL_LABEL] == HOST_DRIVER_REMOVAL_ENABLED


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_manifest_validates_against_the_kubernetes_schemas(stack: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(stack)
    manifests = [manifest_of(r) for r in run.registrations if is_manifest(r) and r.name.startswith("node-agent-")]
    kinds = sorted(m["kind"] for m in manifests)
    assert kinds.count("ValidatingAdmissionPolicy") == 3 and kinds.count("ValidatingAdmissionPolicyBinding") == 3
    assert {"DaemonSet", "Deployment", "ConfigMap", "ClusterRole", "Role", "ServiceAccount", "Namespace"} <= set(kinds)
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES, strict=True)


def _rules(run: ProgramRun, kind: str, name: str) -> set[tuple[str, str, str]]:
    found = run.one(f"kubernetes:rbac.authorization.k8s.io/v1:{kind}", name).inputs["rules"]
    return {(g, res, verb) for r in found for g in r["apiGroups"] for res in r["resources"] for verb in r["verbs"]}


def test_finding_8_only_the_controller_evicts_lists_pods_and_writes_leases(dev: ProgramRun) -> None:
    executor = _rules(dev, "ClusterRole", "node-agent-executor-cluster-role")
    # its own Node, watched by name (RBAC cannot name a node per executor; the admission policy limits the patch)
    assert executor == {("", "nodes", "get"), ("", "nodes", "list"), ("", "nodes", "watch"), ("", "nodes", "patch")}
    assert len(EXECUTOR_CLUSTER_RULES) == 1
    controller = _rules(dev, "ClusterRole", "node-agent-controller-cluster-role")
    assert controller == {
        ("", "nodes", "get"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("", "nodes", "patch"),
        ("", "pods", "list"),
        ("", "pods/eviction", "create"),
        ("resource.k8s.io", "resourceclaims", "list"),  # DRA GPU claims make a pod a GPU pod
    }
    assert len(CONTROLLER_CLUSTER_RULES) == 4
    operator_role = _rules(dev, "Role", "node-agent-operator-role")
    assert operator_role == {
        ("apps", "daemonsets", "list"),
        ("apps", "daemonsets", "watch"),
        ("apps", "controllerrevisions", "list"),
        ("apps", "controllerrevisions", "watch"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
    }
    namespaced = _rules(dev, "Role", "node-agent-controller-role")
    assert {verb for _, res, verb in namespaced if res == "leases"} == {
        "get",
        "list",
        "watch",
        "create",
        "update",
        "delete",
    }
    bindings = [
        r
        for r in dev.registrations
        if r.type.endswith(":RoleBinding") or r.type.endswith(":ClusterRoleBinding")
        if r.name.startswith("node-agent-")
    ]
    lease_subjects = {s["name"] for b in bindings if "controller" in b.name for s in b.inputs["subjects"]}
    assert lease_subjects == {"node-agent-controller"}
    events = dev.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "node-agent-events-role")
    assert events.inputs["metadata"]["namespace"] == "default"
    assert _rules(dev, "Role", "node-agent-events-role") == {("", "events", "create")}
    settings = dev.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "node-agent-controller-role").inputs["rules"]
    assert {tuple(r.get("resourceNames") or ()) for r in settings if r["resources"] == ["configmaps"]} == {
        (names.SETTINGS_CONFIG_MAP,)
    }
    assert not any(res in ("secrets", "nodes/status", "*") for _, res, _ in controller | executor | namespaced)


def test_finding_8_an_executor_may_change_only_its_own_nodes_report(dev: ProgramRun) -> None:
    policy = _policy(dev, "executor-own-node")
    assert policy["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:gpu-platform-system:node-agent-executor'"
    )
    token = {v["name"]: v["expression"] for v in policy["variables"]}["tokenNode"]
    assert token == "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')"
    text = _expressions(policy)
    assert "object.metadata.name == variables.tokenNode" in text
    assert f"['{names.REPORT_ANNOTATION}']" in text
    assert "object.spec == oldObject.spec" in text
    assert "ownerReferences" in text and "finalizers" in text
    binding = dev.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
        "node-agent-executor-own-node-binding",
    ).inputs["spec"]
    assert binding == {"policyName": "gpu-platform-node-agent-executor-own-node", "validationActions": ["Deny"]}


def test_finding_8_the_controller_keeps_to_its_keys_and_cannot_set_a_taint(dev: ProgramRun) -> None:
    text = _expressions(_policy(dev, "controller-nodes"))
    for label in names.CONTROLLER_LABELS:
        assert f"'{label}'" in text
    assert f"'{names.MIG_DESIRED_LABEL}'" not in text  # the program's desired label is not the controller's
    assert f"'{names.REPORT_ANNOTATION}'" not in text  # nor the executors' report
    assert "filter(t, t.key != " in text and ".size() == 0" in text  # other taints unchanged; its own only removed
    assert "ownerReferences" in text and "finalizers" in text


def test_finding_8_the_smoke_pod_policy_covers_every_container_and_the_pod(dev: ProgramRun) -> None:
    text = _expressions(_policy(dev, "smoke-pods"))
    for needle in (
        "initContainers",
        "ephemeralContainers",
        "capabilities.?add",
        "allowPrivilegeEscalation",
        "hostPID",
        "hostIPC",
        "hostNetwork",
        "serviceAccountName",
        "automountServiceAccountToken",
        "volumes",
        f"c.image == '{names.AGENT_IMAGE}'",
    ):
        assert needle in text, needle


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_smoke_pods_priority_class_and_runtime_class_are_the_ones_the_policy_pins(
    stack: str, request: pytest.FixtureRequest
) -> None:
    run: ProgramRun = request.getfixturevalue(stack)
    priority = run.one("kubernetes:scheduling.k8s.io/v1:PriorityClass", "node-agent-smoke-priority-class").inputs
    assert priority["metadata"]["name"] == SMOKE_PRIORITY_CLASS
    assert (priority["value"], priority["preemptionPolicy"], priority["globalDefault"]) == (0, "Never", False)
    assert _settings(run).runtime_class == OPERATOR_RUNTIME_CLASS  # the chart's default: no extraValues change it
    text = _expressions(_policy(run, "smoke-pods"))
    assert f"priorityClassName.orValue('') == '{SMOKE_PRIORITY_CLASS}'" in text
    assert f"runtimeClassName.orValue('') == '{OPERATOR_RUNTIME_CLASS}'" in text
    assert all(v.get("reason") == "Forbidden" for v in _policy(run, "controller-nodes")["validations"])


def test_the_config_map_ships_both_programs_and_their_catalog_names(dev: ProgramRun) -> None:
    data = dev.one("kubernetes:core/v1:ConfigMap", "node-agent-code").inputs["data"]
    assert data == agent_sources()
    shipped = {p for p in AGENT_FILES}
    on_disk = {str(path.relative_to(ROOT)) for path in (ROOT / "components" / "node_agent" / "agent").rglob("*.py")}
    assert on_disk <= shipped  # no module of the agent is left out of the ConfigMap
    for pod in (_executor_pod(dev), _controller_pod(dev)):
        items = {v["name"]: v for v in pod["volumes"]}["code"]["configMap"]["items"]
        assert {(i["key"], i["path"]) for i in items} == {(config_map_key(p), p) for p in AGENT_FILES}


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("components.node_agent.agent.controller.main", "AGENT_NAMESPACE and POD_NAME must be set"),
        ("components.node_agent.agent.executor.main", "NODE_NAME must be set"),
    ],
)
def test_the_shipped_code_runs_on_a_bare_python_with_the_standard_library_only(
    tmp_path: Path, module: str, message: str
) -> None:
    for key, text in agent_sources().items():
        path = next(p for p in AGENT_FILES if config_map_key(p) == key)
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    # -S: no site-packages; -E: no PYTHON* variables. What imports here imports on the stock image.
    result = subprocess.run(
        [sys.executable, "-S", "-E", "-m", module], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_not_created_for_a_stack_with_no_work_for_it() -> None:
    assert not [r for r in run_program("dev").registrations if r.name.startswith("node-agent")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "0 is not allowed: at least 1 node"),
        ("150%", "'150%' is not allowed: a number >= 1 or a percentage from '1%' to '100%'"),
        ("ten", "'ten' is not allowed"),
        (True, "not a boolean"),
    ],
)
def test_a_bad_budget_is_a_clear_error(value: object, message: str) -> None:
    raw = set_path(stack_raw("dev"), "nodeAgent.maxUnavailable", value)
    with pytest.raises(StackConfigError) as caught:
        plan_raw(raw)
    text = str(caught.value)
    assert "nodeAgent.maxUnavailable" in text and message in text
    assert "Traceback" not in text


def test_refused_for_a_driverless_group() -> None:
    with pytest.raises(StackConfigError) as caught:
        plan_raw(set_path(stack_raw("dev"), "nodeGroups.v100.hostDriverRemoval", True))
    assert "nodeGroups.v100.hostDriverRemoval: true is only for runc_drivers_cuda groups" in str(caught.value)


def test_finding_8_a_cluster_older_than_1_30_with_the_agent_on_is_refused_at_its_key() -> None:
    raw = set_path(stack_raw("dev"), "cluster.kubernetesVersion", "1.29")
    raw = set_path(raw, "nodeGroups.v100.gpuEnvironment", "runc_drivers_cuda")
    raw = set_path(raw, "nodeGroups.v100.hostDriverRemoval", True)
    raw = set_path(raw, "nodeAgent.migLayout", True)
    with pytest.raises(StackConfigError) as caught:
        plan_raw(raw)
    text = str(caught.value)
    assert "nodeGroups.v100.hostDriverRemoval: the node agent needs Kubernetes 1.30 or newer" in text
    assert "nodeAgent.migLayout: the node agent needs Kubernetes 1.30 or newer" in text
    # The same cluster without the agent is fine.
    plan_raw(set_path(stack_raw("dev"), "cluster.kubernetesVersion", "1.29"))


def test_the_docs_state_and_reason_tables_are_current() -> None:
    doc = (ROOT / "docs" / "node-agent.md").read_text()
    assert replace_tables(doc) == doc, "run: python -m components.node_agent.reference (and paste into the doc)"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_both_variants_pass_the_policy_gate(stack: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(stack)
    result = run_gate(run)
    assert result.mandatory == [], verdict_table(result)
    assert not result.failed


def test_each_pools_declaration_reaches_the_controller_for_the_continuous_proof(
    dev: ProgramRun, prod: ProgramRun
) -> None:
    for run in (dev, prod):
        declarations = _settings(run).declarations
        assert declarations, "every stack with the controller proves its pools"
        for pool, declared in declarations.items():
            assert declared.get("driver_version") or declared.get("mig_config"), pool
            if declared.get("driver_version"):  # the operator's driver: its image starts with the declared prefix
                assert ":" + declared["driver_version"] in declared["driver_image"], declared
    prod_node = _settings(prod).declarations["gpu-node-1"]
    assert (prod_node["mig_config"], set(prod_node["mig_resources"])) == ("all-3g.40gb", {"nvidia.com/mig-3g.40gb"})


def test_the_controller_serves_its_gauges_through_a_metrics_service(dev: ProgramRun) -> None:
    container = _controller_pod(dev)["containers"][0]
    assert container["ports"] == [{"name": names.METRICS_PORT_NAME, "containerPort": names.METRICS_PORT}]
    service = dev.one("kubernetes:core/v1:Service", "node-agent-metrics-service").inputs
    assert service["metadata"]["name"] == names.METRICS_SERVICE
    template = dev.one("kubernetes:apps/v1:Deployment", "node-agent-controller").inputs["spec"]["template"]
    assert service["spec"]["selector"] == template["metadata"]["labels"]
    assert service["spec"]["ports"][0]["targetPort"] == names.METRICS_PORT_NAME
    assert service["metadata"]["annotations"]["prometheus.io/port"] == str(names.METRICS_PORT)


def test_the_gauges_are_scraped_by_a_service_monitor_where_the_prometheus_operator_runs(
    prod: ProgramRun, dev: ProgramRun
) -> None:
    (monitor,) = [r for r in prod.registrations if r.name == "observability-node-agent-monitor"]
    assert monitor.type == "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
    spec = monitor.inputs["spec"]
    assert spec["selector"] == {"matchLabels": {"app.kubernetes.io/name": names.METRICS_SERVICE}}
    assert (spec["endpoints"][0]["port"], spec["endpoints"][0]["path"]) == (names.METRICS_PORT_NAME, "/metrics")
    service = prod.one("kubernetes:core/v1:Service", "node-agent-metrics-service").inputs
    assert monitor.inputs["metadata"]["namespace"] == service["metadata"]["namespace"]
    assert spec["namespaceSelector"] == {"matchNames": [service["metadata"]["namespace"]]}
    assert service["metadata"]["labels"]["app.kubernetes.io/name"] == names.METRICS_SERVICE
    rules = prod.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "observability-rules").inputs
    assert monitor.inputs["metadata"]["labels"] == rules["metadata"]["labels"]  # one Prometheus selects both
    assert "GpuNodeDrifting" in prod.outputs["observability"]["alerts"]
    # dev has no Prometheus Operator: no ServiceMonitor; the Service's prometheus.io annotations remain.
    assert not [r for r in dev.registrations if r.name == "observability-node-agent-monitor"]
    assert "GpuNodeDrifting" in dev.outputs["observability"]["alerts"]
