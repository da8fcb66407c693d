"""The CUDA half of the continuous proof over real HTTP: the controller as it runs in the cluster (``CachedApi`` over
``Kube``, its caches lists then watches) against the fake API server (``tests/node_agent/http_api.py``).

A node added after the controller started reaches it through the nodes' watch, not a new list; its proof costs
its own writes (the Lease, the node's state and record, one smoke pod) and no list of pods (a proof needs only the
smoke pods, which the controller watches already).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import GPU_NODE_LABEL
from components.catalog.node_agent import FLEET_METRIC, POOL_LABEL, PROOF_ANNOTATION, SETTINGS_CONFIG_MAP, SETTINGS_KEY
from components.catalog.nvidia_driver import GFD_DRIVER_VERSION_LABEL
from components.node_agent.agent.controller.reconcile import Controller
from components.node_agent.agent.kube import Kube
from components.node_agent.agent.watch import CachedApi
from tests.node_agent.http_api import FakeApiServer

NAMESPACE = "gpu-platform-system"
OPERATOR = "gpu-operator"
POOL = "v100"
VERSION = "580.95.05"
OWNER = "gpu-platform-v100"
DS = "nvidia-gpu-driver-ubuntu22.04-6c9f4d7b8"
COMPONENT = {operator.DRIVER_COMPONENT_LABEL: operator.DRIVER_COMPONENT, "app": DS}
NODES = "/api/v1/nodes"
PODS = "/api/v1/pods"


def _node(name: str) -> dict[str, Any]:
    """A node of the pool as the kubelet, the operator and GPU Feature Discovery leave it once its driver runs."""
    labels = {
        GPU_NODE_LABEL: "true",
        POOL_LABEL: POOL,
        operator.DRIVER_OWNER_LABEL: OWNER,
        GFD_DRIVER_VERSION_LABEL: VERSION,
    }
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "64", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"bootID": f"boot-{name}"},
        },
    }


def _driver_pod(node: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{DS}-{node}",
            "namespace": OPERATOR,
            "labels": {**COMPONENT, operator.CONTROLLER_REVISION_HASH_LABEL: "abc"},
            "ownerReferences": [{"kind": "DaemonSet", "name": DS, "controller": True}],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": operator.DRIVER_CONTAINER, "image": f"nvcr.io/nvidia/driver:{VERSION}-ubuntu22.04"}
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _populate(server: FakeApiServer) -> None:
    declared = {POOL: {"driver_version": VERSION, "driver_image": f"nvcr.io/nvidia/driver:{VERSION}", "owner": OWNER}}
    settings = {"max_unavailable": "1", "operator_namespace": OPERATOR, "declarations": declared}
    server.store.put(
        "/api/v1/configmaps",
        {
            "metadata": {"name": SETTINGS_CONFIG_MAP, "namespace": NAMESPACE},
            "data": {SETTINGS_KEY: json.dumps(settings)},
        },
    )
    server.store.put(
        "/apis/apps/v1/daemonsets",
        {
            "metadata": {"name": DS, "namespace": OPERATOR, "labels": COMPONENT},
            "spec": {
                "selector": {"matchLabels": {"app": DS}},
                "template": {
                    "spec": {
                        "nodeSelector": {operator.DRIVER_OWNER_LABEL: OWNER},
                        "containers": [
                            {"name": operator.DRIVER_CONTAINER, "image": f"nvcr.io/nvidia/driver:{VERSION}-ubuntu22.04"}
                        ],
                    }
                },
            },
        },
    )
    server.store.put(
        "/apis/apps/v1/controllerrevisions",
        {"metadata": {"name": f"{DS}-abc", "namespace": OPERATOR, "labels": {"app": DS}}, "revision": 1},
    )
    server.store.put(NODES, _node("gpu-0"))
    server.store.put(PODS, _driver_pod("gpu-0"))


def _kubelet(server: FakeApiServer, stop: threading.Event) -> None:
    """Runs every smoke pod of the controller to ``Succeeded`` (``nvidia-smi -L`` on a healthy node)."""
    while not stop.is_set():
        with server.store.lock:
            pods = list(server.store.objects.get(PODS, {}).values())
        for pod in pods:
            if pod["metadata"].get("namespace") == NAMESPACE and (pod.get("status") or {}).get("phase") != "Succeeded":
                body = json.loads(json.dumps(pod))
                body["status"] = {"phase": "Succeeded"}
                server.store.put(PODS, body)
        stop.wait(0.05)


def _cuda(server: FakeApiServer, name: str) -> dict[str, Any]:
    with server.store.lock:
        node = server.store.objects[NODES][f"/{name}"]
    return dict(json.loads((node["metadata"].get("annotations") or {}).get(PROOF_ANNOTATION) or "{}").get("cuda") or {})


def _until(controller: Controller, api: CachedApi, done: Any, seconds: float = 20.0) -> None:
    """The controller's loop (``controller/main.py``): a pass when a cache changed, else every 0.2 s here."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        controller.reconcile()
        if done():
            return
        api.changed.wait(0.2)
        api.changed.clear()
    raise AssertionError(f"not done in {seconds} s: {controller.log[-5:]}")


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_every=0.2) as fake:
        yield fake


def test_a_node_added_after_start_is_proven_through_the_informer(server: FakeApiServer) -> None:
    _populate(server)
    stop = threading.Event()
    threading.Thread(target=_kubelet, args=(server, stop), daemon=True).start()
    api = CachedApi(Kube(server.url, "token", timeout=5.0))
    controller = Controller(api, NAMESPACE, "controller-0", time.time)
    try:
        _until(controller, api, lambda: _cuda(server, "gpu-0").get("result") == "passed")
        time.sleep(0.3)  # the echo of its last writes
        controller.reconcile()
        server.reset_counts()
        server.store.put(NODES, _node("gpu-1"))  # the autoscaler adds a node, its driver pod starts
        server.store.put(PODS, _driver_pod("gpu-1"))
        _until(controller, api, lambda: _cuda(server, "gpu-1").get("result") == "passed")
        controller.reconcile()  # the pass that counts it
    finally:
        stop.set()
        api.close()
    proof = _cuda(server, "gpu-1")
    assert (proof["uid"], proof["boot_id"], proof["driver"]) == ("uid-gpu-1", "boot-gpu-1", VERSION)
    assert f'{FLEET_METRIC}{{pool="{POOL}",verdict="conformant"}} 2' in controller.metrics
    counts = dict(server.counts)
    assert counts.get(("list", "nodes"), 0) == 0  # the new node came through the watch
    assert counts.get(("list", "pods"), 0) == 0  # a proof lists no pods: its smoke pod is watched already
    assert counts[("create", "pods")] == 1  # one smoke pod (one whole GPU: the pool declares no MIG layout)
    assert counts[("create", "leases")] == 1 and counts[("delete", "leases")] == 1  # its slot, taken and given back
    with server.store.lock:
        assert not [key for key in server.store.objects.get(PODS, {}) if key.startswith(f"{NAMESPACE}/")]
