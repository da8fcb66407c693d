"""Host networking only where allowed by name; no LoadBalancer or NodePort Service unless allowed."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from components.catalog.gpu_operator_operands import HOST_NETWORK_OPERANDS
from policies.gpu_policies.network import external_services_allowlisted, host_network_allowlisted
from tests.policies.support import RELEASE_TYPE, config_for, daemon_set, operator_release, pod_spec, run_resource

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
CLUSTER_POLICY = "kubernetes:nvidia.com/v1:ClusterPolicy"
SERVICE = "kubernetes:core/v1:Service"


def test_pods_without_host_networking_pass_and_the_pinned_chart_needs_no_exception() -> None:
    assert (
        run_resource(host_network_allowlisted, DAEMON_SET, daemon_set(pod=pod_spec(hostNetwork=False))).messages == []
    )
    assert config_for(host_network_allowlisted)["allowedWorkloads"] == dict(HOST_NETWORK_OPERANDS) == {}
    assert host_network_allowlisted.enforcement_level is EnforcementLevel.MANDATORY


def test_a_host_network_pod_is_refused_and_named_for_the_allow_list() -> None:
    props = daemon_set("monitoring", "node-exporter", pod=pod_spec(hostNetwork=True))
    outcome = run_resource(host_network_allowlisted, DAEMON_SET, props)
    assert outcome.messages == [
        "DaemonSet monitoring/node-exporter hostNetwork is true: the pod shares the node's network (its ports, every "
        "address the node reaches, no NetworkPolicy applies); drop it, or allow it with the reason (policy config "
        'allowedWorkloads: {"monitoring/node-exporter": "why"})'
    ]
    config = config_for(host_network_allowlisted, allowedWorkloads={"monitoring/node-exporter": "scrapes the node"})
    assert run_resource(host_network_allowlisted, DAEMON_SET, props, config=config).messages == []


def test_an_operand_switched_to_host_networking_in_the_values_is_refused() -> None:
    values = {"dcgmExporter": {"hostNetwork": True}, "node-feature-discovery": {"worker": {"hostNetwork": True}}}
    outcome = run_resource(host_network_allowlisted, RELEASE_TYPE, operator_release(values), name="op")
    assert [m.split(" is true")[0] for m in outcome.messages] == [
        "GPU Operator release op values dcgmExporter.hostNetwork",
        "GPU Operator release op values node-feature-discovery.worker.hostNetwork",
    ]
    config = config_for(
        host_network_allowlisted, allowedWorkloads={"dcgmExporter": "r", "node-feature-discovery.worker": "r"}
    )
    assert run_resource(host_network_allowlisted, RELEASE_TYPE, operator_release(values), config=config).messages == []


def test_the_rendered_cluster_policy_block_is_refused_and_a_disabled_one_is_not() -> None:
    spec = {"dcgmExporter": {"enabled": True, "hostNetwork": True}, "dcgm": {"enabled": False, "hostNetwork": True}}
    props = {"metadata": {"name": "cluster-policy"}, "spec": spec}
    outcome = run_resource(host_network_allowlisted, CLUSTER_POLICY, props)
    assert [m.split(" is true")[0] for m in outcome.messages] == [
        "ClusterPolicy cluster-policy spec.dcgmExporter.hostNetwork"
    ]


def _service(kind: str | None, namespace: str = "kubeflow", name: str = "ml-pipeline-ui") -> dict:
    spec: dict = {"ports": [{"port": 80}]}
    if kind is not None:
        spec["type"] = kind
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": namespace, "name": name}, "spec": spec}


@pytest.mark.parametrize("kind", [None, "ClusterIP", "ExternalName"])
def test_cluster_internal_services_pass(kind: str | None) -> None:
    assert run_resource(external_services_allowlisted, SERVICE, _service(kind)).messages == []


@pytest.mark.parametrize("kind", ["LoadBalancer", "NodePort"])
def test_a_service_opened_outside_the_cluster_is_refused(kind: str) -> None:
    outcome = run_resource(external_services_allowlisted, SERVICE, _service(kind))
    assert outcome.messages == [
        f"Service kubeflow/ml-pipeline-ui is of type {kind}, which opens it outside the cluster past the Ingress and "
        "its login (oauth2-proxy for Kubeflow); make it ClusterIP and reach it through the Ingress, or allow it with "
        'the reason (policy config allowedServices: {"kubeflow/ml-pipeline-ui": "why"})'
    ]
    assert external_services_allowlisted.enforcement_level is EnforcementLevel.MANDATORY


def test_an_allowed_service_passes() -> None:
    config = config_for(external_services_allowlisted, allowedServices={"istio-system/istio-ingressgateway": "the LB"})
    props = _service("LoadBalancer", "istio-system", "istio-ingressgateway")
    assert run_resource(external_services_allowlisted, SERVICE, props, config=config).messages == []
