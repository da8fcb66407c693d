"""The rollout controller's continuous proof (issue #37 items 2 and 3): every node of a declared pool is judged by the
proof Job's rules against its pool's declaration, the result recorded on the node only when it changes, and
counted in the ``/metrics`` gauges.

The world is the simulated one (``tests/node_agent/sim``): the real controller against the simulated API server,
with the GPU Operator's driver DaemonSet (its ControllerRevisions, OnDelete pods that turn Ready after their
startup probe), mig-manager and the device plugin; with ``declarations`` in its settings it also plays the kubelet's
Ready condition and GPU Feature Discovery's version label, and ``_kubelet_and_gfd`` writes them (or another version)
straight to the store where a test sets them itself. The CUDA half (the smoke pod once per node identity) has its
own scenarios in ``test_cuda_proof.py``; here it runs and passes on every healthy node.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

from components.catalog.node_agent import FLEET_METRIC, MIG_LABEL, PROOF_ANNOTATION, SETTINGS_CONFIG_MAP, SETTINGS_KEY
from components.catalog.nvidia_driver import GFD_DRIVER_VERSION_LABEL
from components.node_agent.agent import objects
from components.node_agent.agent.controller.main import metrics_server
from components.node_agent.agent.controller.proving import metrics_text
from tests.node_agent.sim.actors import LAYOUTS
from tests.node_agent.sim.api import clone
from tests.node_agent.sim.world import DECLARED_DRIVER, DECLARED_LAYOUT, NAMESPACE, POOL, World, declared, declared_pool

VERSION = DECLARED_DRIVER
LAYOUT = DECLARED_LAYOUT
DECLARED = declared()


def _world(nodes: int = 2) -> World:
    """A pool on its declared layout already (no rollout to do), the operator's driver on every node."""
    world = declared_pool(nodes)
    for name in list(world.api.store["nodes"]):
        _kubelet_and_gfd(world, name)
    return world


def _kubelet_and_gfd(world: World, name: str, version: str = VERSION) -> None:
    """The kubelet's Ready condition and GPU Feature Discovery's driver version label."""
    body = clone(world.api.store["nodes"][name])
    body["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    body["metadata"]["labels"][GFD_DRIVER_VERSION_LABEL] = version
    world.api.put("nodes", name, body)


def _declare(world: World, **changes: Any) -> None:
    """A new declaration of the pool in the controller's settings (what ``pulumi up`` writes there)."""
    key = f"{NAMESPACE}/{SETTINGS_CONFIG_MAP}"
    body = clone(world.api.store["configmaps"][key])
    settings = json.loads(body["data"][SETTINGS_KEY])
    settings["declarations"][POOL].update(changes)
    body["data"][SETTINGS_KEY] = json.dumps(settings)
    world.api.put("configmaps", key, body)


def _proof(world: World, name: str) -> dict[str, Any]:
    return json.loads(objects.annotations_of(world.node(name)).get(PROOF_ANNOTATION, "null") or "null") or {}


def _proof_writes(world: World) -> list[str]:
    """Every change of a node's proof record, from now on (who wrote it, and the node)."""
    writes: list[str] = []

    def watch(kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if kind == "nodes" and old is not None and new is not None:
            before = objects.annotations_of(old).get(PROOF_ANNOTATION)
            if objects.annotations_of(new).get(PROOF_ANNOTATION) != before:
                writes.append(f"{world.api.caller}:{key}")

    world.api.watchers.append(watch)
    return writes


def _clean(world: World) -> None:
    assert not world.metrics.violations, world.metrics.details


def test_a_node_added_after_start_is_proven_once_its_driver_pod_is_current_and_ready() -> None:
    world = _world()
    world.run(600.0)
    assert {_proof(world, n)["result"] for n in ("node-000", "node-001")} == {"passed"}
    world.add_node("node-002")
    _kubelet_and_gfd(world, "node-002")
    world.run(30.0)  # its driver pod is there, not Ready yet (the startup probe): not proven
    early = _proof(world, "node-002")
    assert early["result"] == "failed"
    assert "not Ready" in early["reason"] or "no driver pod" in early["reason"], early
    world.run(600.0)
    proof = _proof(world, "node-002")
    assert proof["result"] == "passed", proof
    assert (proof["driver"], proof["mig"], proof["reason"]) == (VERSION, LAYOUT, "")
    assert proof["at"].endswith("Z")
    assert not world.node("node-002")["spec"].get("unschedulable")
    _clean(world)


def test_a_driver_pod_of_an_older_revision_fails_the_proof_with_the_reason_and_no_cordon() -> None:
    world = _world()
    world.run(600.0)
    # A new template (OnDelete: no pod is replaced) and the operator's upgrade controller kept from acting
    # on it: the pods stay on the old revision.
    world.upgrades.reconcile = lambda: None  # type: ignore[method-assign]
    world.driver.set_image(f"nvcr.io/nvidia/driver:{VERSION}-ubuntu24.04")
    world.run(120.0)
    proof = _proof(world, "node-000")
    assert proof["result"] == "failed"
    assert "revision" in proof["reason"] and "not the newest" in proof["reason"], proof
    assert not world.node("node-000")["spec"].get("unschedulable")  # the proof records; it never cordons
    text = world.controller.metrics
    assert f'{FLEET_METRIC}{{pool="{POOL}",verdict="drifting"}} 2' in text
    _clean(world)


def test_a_node_on_another_mig_layout_fails_the_proof() -> None:
    world = _world()
    world.run(600.0)
    # The pool is declared on another layout, and its nodes were never moved to it (no MIG rollout asked).
    _declare(world, mig_config="all-3g.40gb", mig_resources=LAYOUTS["all-3g.40gb"])
    world.run(120.0)
    for name in ("node-000", "node-001"):
        proof = _proof(world, name)
        assert (proof["result"], proof["mig"]) == ("failed", "all-3g.40gb")
        assert proof["reason"] == f"MIG config {LAYOUT} ({MIG_LABEL}), not all-3g.40gb", proof
    _declare(world, mig_config=LAYOUT, mig_resources={"nvidia.com/mig-1g.10gb": 28})  # the effect differs
    world.run(120.0)
    assert _proof(world, "node-000")["reason"].startswith("advertises {"), _proof(world, "node-000")
    _clean(world)


def test_an_idle_settled_world_writes_no_proof_over_an_hour() -> None:
    world = _world(nodes=3)
    world.run(900.0)
    assert all(_proof(world, n)["result"] == "passed" for n in ("node-000", "node-001", "node-002"))
    writes = _proof_writes(world)
    world.run(3600.0)
    assert writes == []
    _clean(world)


def test_a_pool_with_nothing_declared_is_not_proven() -> None:
    world = World(nodes=1, flow="mig", start_layout=LAYOUT, target_layout=LAYOUT, pods_per_node=0)
    world.run(600.0)
    assert PROOF_ANNOTATION not in objects.annotations_of(world.node("node-000"))
    assert world.controller.metrics.count("\n") == 2  # HELP and TYPE, no series
    _clean(world)


def test_the_gauges_of_a_small_fleet_are_served_on_metrics() -> None:
    world = _world()
    world.run(600.0)
    # node-001's GPU Feature Discovery reports another driver: it drifts.
    _kubelet_and_gfd(world, "node-001", version="570.172.08")
    world.run(120.0)
    assert "GPU Feature Discovery reports driver 570.172.08" in _proof(world, "node-001")["reason"]
    expected = (
        f"# HELP {FLEET_METRIC} GPU nodes of each declared pool by verdict of the node agent's continuous proof.\n"
        f"# TYPE {FLEET_METRIC} gauge\n"
        f'{FLEET_METRIC}{{pool="a100",verdict="conformant"}} 1\n'
        f'{FLEET_METRIC}{{pool="a100",verdict="drifting"}} 1\n'
        f'{FLEET_METRIC}{{pool="a100",verdict="in_maintenance"}} 0\n'
        f'{FLEET_METRIC}{{pool="a100",verdict="failed"}} 0\n'
        f'{FLEET_METRIC}{{pool="a100",verdict="unproven"}} 0\n'
    )
    assert world.controller.metrics == expected
    server = metrics_server(lambda: world.controller.metrics, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert response.read().decode() == expected
    finally:
        server.shutdown()
        server.server_close()


def test_the_gauges_count_every_verdict_of_every_pool_and_escape_labels() -> None:
    text = metrics_text({"b": {"unproven": 2}, 'a"x': {"conformant": 3, "failed": 1}})
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines[0] == f'{FLEET_METRIC}{{pool="a\\"x",verdict="conformant"}} 3'
    assert f'{FLEET_METRIC}{{pool="a\\"x",verdict="failed"}} 1' in lines
    assert f'{FLEET_METRIC}{{pool="b",verdict="unproven"}} 2' in lines
    assert len(lines) == 10
