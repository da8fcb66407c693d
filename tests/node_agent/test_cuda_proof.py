"""The CUDA half of the continuous proof (issue #37 item 2): a node that joined a pool, or came back under a new
identity, gets the controller's smoke pod within its pool's budget, respecting halts, and the result (with the
identity proven) lands in the node's proof record, in the gauges and, for a failure, in its state and reason.

The world is the simulated one (``tests/node_agent/sim``) with the continuous proof on (``declarations`` in the
settings): the real controller, the simulated API server (its admission policies included), the operator's driver
DaemonSet, the kubelet (a smoke pod it cannot admit fails ``OutOf<resource>``; a broken node's ``nvidia-smi`` exits
9), the kubelet's Ready condition and boot ID, and GPU Feature Discovery's version label. Every scenario ends with
the nine invariants checked (I9: a proof within the budget, never in a halted pool, never with a cordon).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog.node_agent import (
    FLEET_METRIC,
    LEASE_FAILED_ANNOTATION,
    LEASE_NODE_ANNOTATION,
    LEASE_POOL_LABEL,
    MIG_DESIRED_LABEL,
    PROOF_ANNOTATION,
    RETRY_ANNOTATION,
    SMOKE_LABEL,
    Reason,
    State,
)
from components.node_agent.agent import objects
from tests.node_agent.invariants import assert_sound, proves
from tests.node_agent.sim.actors import LAYOUTS, ReplicaSet
from tests.node_agent.sim.api import clone
from tests.node_agent.sim.world import DECLARED_DRIVER, DECLARED_LAYOUT, NAMESPACE, POOL, World, declared, declared_pool

VERSION = DECLARED_DRIVER
LAYOUT = DECLARED_LAYOUT
RESOURCE = "nvidia.com/mig-1g.10gb"
DECLARED = declared()


def settled_pool(nodes: int = 2, **settings: Any) -> World:
    """A pool already on its declared layout (no rollout to do), its nodes proven: the last ``pulumi up`` is done."""
    world = declared_pool(nodes, **settings)
    world.run(900.0)
    assert all(cuda(world, name)["result"] == "passed" for name in world.states()), world.states()
    return world


def record(world: World, name: str) -> dict[str, Any]:
    return json.loads(objects.annotations_of(world.node(name)).get(PROOF_ANNOTATION) or "{}")


def cuda(world: World, name: str) -> dict[str, Any]:
    return dict(record(world, name).get("cuda") or {})


def gauge(world: World, verdict: str) -> int:
    prefix = f'{FLEET_METRIC}{{pool="{POOL}",verdict="{verdict}"}} '
    line = next(line for line in world.controller.metrics.splitlines() if line.startswith(prefix))
    return int(line.removeprefix(prefix))


def verdicts(world: World) -> dict[str, int]:
    return {v: gauge(world, v) for v in ("conformant", "drifting", "in_maintenance", "failed", "unproven")}


def proof_pods(world: World) -> list[tuple[str, str]]:
    """Every CUDA-proof pod the controller creates from now on: (pod, node)."""
    made: list[tuple[str, str]] = []

    def watch(kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if kind == "pods" and old is None and new is not None and "-proof" in objects.name(new):
            assert objects.labels(new).get(SMOKE_LABEL)
            made.append((objects.name(new), new["spec"]["nodeName"]))

    world.api.watchers.append(watch)
    return made


def history(world: World, name: str) -> list[tuple[str, bool]]:
    """Every (state, cordoned) the node goes through from now on."""
    seen: list[tuple[str, bool]] = []

    def watch(kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if kind == "nodes" and key == name and new is not None:
            now = (
                objects.labels(new).get("gpu-platform.io/node-agent.state", "idle"),
                bool(new["spec"].get("unschedulable")),
            )
            if not seen or seen[-1] != now:
                seen.append(now)

    world.api.watchers.append(watch)
    return seen


def gauge_trail(world: World, seconds: float, step: float = 10.0) -> list[dict[str, int]]:
    """The gauges after every ``step`` seconds, each distinct reading once."""
    trail: list[dict[str, int]] = []
    for _ in range(int(seconds / step)):
        world.run(step)
        now = verdicts(world)
        if not trail or trail[-1] != now:
            trail.append(now)
    return trail


def halt(world: World, node: str = "node-gone") -> None:
    """A halt of the pool, as a touched node that vanished mid-flow leaves it (its Lease, marked failed)."""
    key = f"{NAMESPACE}/node-agent-u99999-0000-4000-8000-000000099999"
    world.api.put(
        "leases",
        key,
        {
            "metadata": {
                "name": key.split("/", 1)[1],
                "namespace": NAMESPACE,
                "labels": {LEASE_POOL_LABEL: POOL},
                "annotations": {LEASE_NODE_ANNOTATION: node, LEASE_FAILED_ANNOTATION: Reason.NODE_DELETED.value},
            },
            "spec": {"holderIdentity": node},
        },
    )


@proves("I9")
def test_a_node_added_after_the_last_pulumi_up_is_proven_and_the_gauges_follow() -> None:
    world = settled_pool()
    assert verdicts(world)["conformant"] == 2
    started = world.metrics.proofs
    pods = proof_pods(world)
    states = history(world, "node-002")
    world.add_node("node-002")
    trail = gauge_trail(world, 600.0)
    proof = cuda(world, "node-002")
    node = world.node("node-002")
    assert (proof["uid"], proof["boot_id"]) == (objects.uid(node), node["status"]["nodeInfo"]["bootID"])
    assert (proof["result"], proof["driver"], proof["mig"]) == ("passed", VERSION, LAYOUT)
    assert proof["reason"] == f"nvidia-smi -L on one device of each of {RESOURCE}"
    assert pods == [(f"node-agent-smoke-{objects.uid(node)[:18]}-proof1-0", "node-002")]
    # Its driver pod first (drifting while it starts), then proven by evidence but not yet with CUDA (unproven,
    # while its proof runs), then conformant; never cordoned, its Lease gone, the smoke pod cleaned up.
    node_002 = [(t["conformant"], t["drifting"], t["unproven"]) for t in trail]
    assert node_002[0] == (2, 1, 0), trail
    assert (2, 0, 1) in node_002, trail
    assert node_002[-1] == (3, 0, 0), trail
    assert states == [("idle", False), ("proving", False), ("idle", False)]
    assert world.lease_of("node-002") is None
    assert not [p for p in world.pods_on("node-002") if objects.labels(p).get(SMOKE_LABEL)]
    assert world.metrics.proofs == started + 1
    assert_sound(world)


@proves("I9")
def test_a_node_replaced_with_the_image_s_driver_drifts_and_is_not_proven() -> None:
    world = settled_pool()
    pods = proof_pods(world)
    old_uid = objects.uid(world.node("node-001"))
    world.recreate("node-001")  # the cloud recreates it under the same name: a new Node object, a new UID
    world.hosts["node-001"].install("run")  # booted from an image with its own driver (runc_drivers_cuda)
    world.run(900.0)
    assert objects.uid(world.node("node-001")) != old_uid
    proof = record(world, "node-001")
    assert proof["result"] == "failed", proof
    assert "driver pod" in proof["reason"], proof  # the operator's driver pod cannot start beside the image's driver
    assert "cuda" not in proof  # the evidence fails: no CUDA proof of this node is tried
    assert pods == []
    assert (gauge(world, "conformant"), gauge(world, "drifting")) == (1, 1)
    assert not world.node("node-001")["spec"].get("unschedulable")
    assert_sound(world)


@proves("I9")
def test_a_vm_replaced_under_the_same_node_object_is_proven_again() -> None:
    """The kubelet of a new VM registers onto the Node object that is still there (same name, same UID, the old
    record on it): its new boot ID says it is another machine, so it is proven again."""
    world = settled_pool()
    before = cuda(world, "node-000")
    pods = proof_pods(world)
    body = clone(world.node("node-000"))
    body["status"]["nodeInfo"] = {"bootID": "a6cbb2d6-0d52-4a8d-8a7b-replaced-vm"}
    world.api.put("nodes", "node-000", body)
    world.run(60.0)
    assert verdicts(world)["unproven"] == 0  # proven again within a pass or two
    after = cuda(world, "node-000")
    assert (after["uid"], after["result"]) == (before["uid"], "passed")
    assert after["boot_id"] == "a6cbb2d6-0d52-4a8d-8a7b-replaced-vm" != before["boot_id"]
    assert [node for _, node in pods] == ["node-000"]
    assert_sound(world)


@proves("I6", "I9")
def test_a_halted_pool_leaves_a_new_node_unproven_until_the_halt_is_cleared() -> None:
    world = settled_pool()
    halt(world)
    pods = proof_pods(world)
    world.add_node("node-002")
    world.run(1800.0)
    assert pods == []
    waiting = cuda(world, "node-002")
    assert waiting["result"] == "waiting"
    assert waiting["reason"].startswith(f"the pool {POOL} is halted by node-gone (node-deleted)"), waiting
    assert (gauge(world, "conformant"), gauge(world, "unproven")) == (2, 1)
    assert world.state("node-002") == State.IDLE
    world.api.put("leases", f"{NAMESPACE}/node-agent-u99999-0000-4000-8000-000000099999", None)  # cleared
    world.run(120.0)
    assert cuda(world, "node-002")["result"] == "passed"
    assert gauge(world, "conformant") == 3
    assert_sound(world)


@proves("I1", "I7", "I9")
def test_with_a_budget_of_one_and_a_rollout_running_the_new_node_waits_for_its_slot() -> None:
    world = World(
        nodes=2,
        flow="mig",
        budget="1",
        pods_per_node=0,
        start_layout="all-disabled",
        target_layout=LAYOUT,
        settings={"declarations": DECLARED},
    )
    world.start_layout = LAYOUT  # a node the autoscaler adds now boots on the declared layout: no rollout for it
    states = history(world, "node-002")
    world.run(200.0, until=lambda: world.state("node-000") in (State.MIG_APPLYING, State.SMOKE_TESTING))
    world.add_node("node-002")
    world.run(300.0, until=lambda: cuda(world, "node-002").get("result") == "waiting")
    assert cuda(world, "node-002")["reason"].startswith(f"waiting for a slot of the pool {POOL}'s budget")
    assert world.state("node-002") == State.IDLE  # not proving beside the rollout's node
    world.settle()
    world.run(600.0)
    assert ("proving", False) in states
    assert {name: cuda(world, name).get("result") for name in world.states()} == dict.fromkeys(world.states(), "passed")
    assert world.metrics.max_in_maintenance == 1  # the rollout's nodes and the proofs, one slot at a time
    assert world.metrics.proofs == 3  # the new node, and each rolled-out node after its rollout (done -> proving)
    assert gauge(world, "conformant") == 3
    assert_sound(world)


@pytest.mark.parametrize("cordon", [False, True], ids=["default-no-cordon", "cordonOnProofFailure"])
@proves("I2", "I5", "I9")
def test_a_failing_cuda_pod_fails_the_node_with_its_reason_and_the_documented_cordon(cordon: bool) -> None:
    world = settled_pool(cordon_on_proof_failure=cordon)
    world.smoke_failing.add("node-002")  # its driver loads, but nvidia-smi cannot talk to it
    world.add_node("node-002")
    world.run(900.0)
    assert (world.state("node-002"), world.reason("node-002")) == (State.FAILED, Reason.PROOF_FAILED)
    said = "container smoke exited 9 (Error)"
    assert said in world.detail("node-002") and said in cuda(world, "node-002")["reason"]
    assert cuda(world, "node-002")["result"] == "failed"
    assert bool(world.node("node-002")["spec"].get("unschedulable")) is cordon
    assert ("cordoned (nodeAgent.cordonOnProofFailure)" if cordon else "not cordoned") in world.detail("node-002")
    events = [e for e in world.api.store["events"].values() if e["involvedObject"]["name"] == "node-002"]
    assert [e["reason"] for e in events] == ["ProofFailed"]
    assert world.lease_of("node-002") is None and not world.halted(POOL)  # nothing was changed: no halt
    assert (gauge(world, "conformant"), gauge(world, "failed")) == (2, 1)
    world.add_node("node-003")
    world.run(600.0)
    if cordon:
        # The cordoned node is away: it takes the budget's one slot until it is retried (or uncordoned).
        assert cuda(world, "node-003")["result"] == "waiting"
    else:
        assert cuda(world, "node-003")["result"] == "passed"  # no halt: the pool goes on
    # Fixed, then the documented retry: proven again, and the cordon (only the controller's own) lifted.
    world.smoke_failing.discard("node-002")
    world.human_patch("node-002", {"metadata": {"annotations": {RETRY_ANNOTATION: "replaced the GPU"}}})
    world.run(600.0)
    assert (world.state("node-002"), cuda(world, "node-002")["result"]) == (State.IDLE, "passed")
    assert not world.node("node-002")["spec"].get("unschedulable")
    assert cuda(world, "node-003")["result"] == "passed"
    assert gauge(world, "conformant") == 4
    world.settle()
    assert_sound(world)


@proves("I9")
def test_a_retry_keeps_a_cordon_the_failed_proof_did_not_make() -> None:
    world = settled_pool()
    world.smoke_failing.add("node-002")
    world.add_node("node-002")
    world.run(900.0)
    assert world.state("node-002") == State.FAILED
    world.human_patch("node-002", {"spec": {"unschedulable": True}})  # a person takes it out while looking
    world.smoke_failing.discard("node-002")
    world.human_patch("node-002", {"metadata": {"annotations": {RETRY_ANNOTATION: "reseated the GPU"}}})
    world.run(600.0)
    assert cuda(world, "node-002")["result"] == "passed"
    assert world.node("node-002")["spec"].get("unschedulable") is True
    assert_sound(world)


@proves("I9")
def test_a_node_with_no_free_device_gives_its_proof_back_and_is_proven_once_one_is_free() -> None:
    world = settled_pool()
    states = history(world, "node-002")
    world.add_node("node-002")
    # Its devices are all taken before its proof starts: every slice by a workload.
    world.replica_sets.add(ReplicaSet("team", "fill", LAYOUTS[LAYOUT][RESOURCE], POOL, RESOURCE), node="node-002")
    world.run(600.0)
    deferred = cuda(world, "node-002")
    assert deferred["result"] == "deferred", deferred
    assert f"OutOf{RESOURCE}" in deferred["reason"] and "tried again in about 600 s" in deferred["reason"]
    assert world.state("node-002") == State.IDLE and world.reason("node-002") == ""  # given back, not failed
    assert gauge(world, "unproven") == 1
    del world.replica_sets.sets["fill"]
    for pod in [p for p in world.pods_on("node-002") if objects.name(p).startswith("fill-")][:1]:
        world.api.put("pods", f"team/{objects.name(pod)}", None)  # one job ends: one slice free
    world.run(1500.0)  # within the retry period (seen from the controller's own passes) and a pass
    assert cuda(world, "node-002")["result"] == "passed"
    assert states.count(("proving", False)) >= 2 and all(not cordoned for _, cordoned in states)
    assert gauge(world, "conformant") == 3
    assert_sound(world)


@proves("I9")
def test_a_node_that_leaves_its_pool_declared_nothing_is_not_proven() -> None:
    """Only a declared pool is proven: a node whose pool has no declaration gets no proof pod and no record."""
    world = settled_pool()
    pods = proof_pods(world)
    world.add_node("node-002")
    world.label("node-002", {"gpu-platform.io/node-group": "t4"})  # a pool the stack does not declare
    world.run(600.0)
    assert pods == [] and PROOF_ANNOTATION not in objects.annotations_of(world.node("node-002"))
    assert_sound(world)


def test_a_new_node_of_a_pool_no_flow_applies_to_is_proven_too() -> None:
    """The proof needs no flow on the pool (no hand-over opt-in, no desired MIG layout): the admission policies let
    its writes and its smoke pod through on any GPU node of a pool."""
    world = settled_pool()
    world.add_node("node-002")
    world.label("node-002", {MIG_DESIRED_LABEL: None})
    world.run(600.0)
    assert cuda(world, "node-002")["result"] == "passed"
    assert world.api.forbidden == []
    assert_sound(world)
