"""One maintainer per GPU node: the rollout controller beside the GPU Operator's own machinery.

The real controller and executors run in the simulated world with the operator's driver DaemonSet in both modes
(NVIDIADriver, the dev stack's, and ClusterPolicy), its ControllerRevisions, and its upgrade controller as the
vendored k8s-operator-libs runs it (``tests/node_agent/sim/actors.py``). Every test checks the seven invariants
after every write (I7: one budget per pool, shared with the operator).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.node_agent import (
    GPU_DEPLOY_DRIVER_LABEL,
    MIG_LABEL,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    REASON_LABEL,
    SMOKE_LABEL,
    STATE_LABEL,
    UPGRADE_SKIP_LABEL,
    Reason,
    State,
)
from components.node_agent.agent import objects
from tests.node_agent.invariants import assert_sound, done, proves
from tests.node_agent.sim.actors import OperatorDriver
from tests.node_agent.sim.api import clone
from tests.node_agent.sim.world import NAMESPACE, World

NEW_DRIVER = "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04"


def operator_states(world: World) -> dict[str, str]:
    return {name: world.labels(name).get(operator.UPGRADE_STATE_LABEL, "") for name in sorted(world.states())}


def driver_pod_hashes(world: World) -> dict[str, str]:
    return {
        name: objects.labels(pods[0]).get(operator.CONTROLLER_REVISION_HASH_LABEL, "")
        for name in sorted(world.states())
        if (pods := [p for p in world.driver.pods_on(name) if not objects.terminating(p)])
    }


# -- driver pods found and judged as the operator does -----------------------------------------------------
@proves("I5")
@pytest.mark.parametrize("mode", ["nvidiadriver", "clusterpolicy"])
def test_a_handover_ends_done_with_the_operators_driver_in_either_mode(mode: str) -> None:
    world = World(nodes=2, budget="1", driver_mode=mode)
    done(world)
    assert set(world.states().values()) == {State.DONE}
    expected_app = OperatorDriver.NVIDIADRIVER_NAME if mode == "nvidiadriver" else operator.CLUSTER_POLICY_DRIVER_APP
    for name in world.states():
        pods = world.driver.pods_on(name)
        assert [objects.labels(p)["app"] for p in pods] == [expected_app]
        assert objects.pod_ready(pods[0])
        assert not world.node(name)["spec"].get("unschedulable")
        assert UPGRADE_SKIP_LABEL not in world.labels(name)  # given back at the end
    if mode == "nvidiadriver":
        assert expected_app.startswith("nvidia-gpu-driver-ubuntu22.04-")


@proves("I5")
def test_a_driver_pod_from_a_rolled_back_template_is_current() -> None:
    """A -> B -> A: the pods carry hash A, which is the newest revision again (its .revision bumped); the
    template generation would have moved to 3 and never matched them."""
    world = World(nodes=1, budget="1")
    original = world.driver.image
    world.driver.set_image(NEW_DRIVER)
    world.driver.set_image(original)
    revisions = world.api.store["controllerrevisions"]
    assert len(revisions) == 2 and max(r["revision"] for r in revisions.values()) == 3
    done(world)
    assert world.state("node-000") == State.DONE
    assert driver_pod_hashes(world) == {"node-000": world.driver.current_hash()}


@proves("I5")
def test_a_driver_pod_on_an_older_revision_is_not_taken_for_the_handover() -> None:
    """The DaemonSet moves on while the new pod starts: the pod of the old template is not the declared driver,
    and the hand-over waits for the operator to replace it."""
    world = World(nodes=1, budget="1")
    world.run(600.0, until=lambda: world.state("node-000") == State.HANDING_OVER)
    assert world.state("node-000") == State.HANDING_OVER
    world.driver.set_image(NEW_DRIVER)
    done(world)
    assert world.state("node-000") == State.DONE
    pod = world.driver.pods_on("node-000")[0]
    assert objects.container_image(pod["spec"], "nvidia-driver-ctr") == NEW_DRIVER


# -- GPU pods and pausers ------------------------------------------------------------------------------------
def _claim_pod(world: World, node: str, claim_driver: str) -> None:
    """A training pod holding a DRA claim (no device-plugin resource), as the NVIDIA DRA driver allocates it."""
    world.api.put(
        "resourceclaims",
        "team/gpu-claim",
        {
            "metadata": {"name": "gpu-claim", "namespace": "team"},
            "status": {"allocation": {"devices": {"results": [{"driver": claim_driver, "device": "gpu-0"}]}}},
        },
    )
    world.api.put(
        "pods",
        "team/dra-train",
        {
            "metadata": {
                "name": "dra-train",
                "namespace": "team",
                "ownerReferences": [{"kind": "Job", "name": "dra", "controller": True}],
            },
            "spec": {
                "nodeName": node,
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
                "containers": [{"name": "train", "resources": {"claims": [{"name": "gpu"}]}}],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        },
    )


@proves("I3")
def test_a_pod_holding_a_dra_gpu_claim_is_evicted_before_the_mig_change() -> None:
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    _claim_pod(world, "node-000", operator.GPU_DRA_DRIVER)
    world.run(300.0, until=lambda: "team/dra-train" not in world.api.store["pods"])
    assert "team/dra-train" not in world.api.store["pods"]  # evicted through the Eviction API
    assert world.labels("node-000").get(MIG_LABEL) == "all-disabled"  # not changed under it
    done(world)
    assert world.state("node-000") == State.DONE


def test_a_pod_with_a_claim_of_another_dra_driver_is_not_a_gpu_pod() -> None:
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    _claim_pod(world, "node-000", "net.example.com")
    done(world)
    assert world.state("node-000") == State.DONE
    assert "team/dra-train" in world.api.store["pods"]


@proves("I5")
def test_a_gpu_client_label_mig_manager_left_paused_is_restored() -> None:
    """mig-parted pauses nvidia.com/gpu.deploy.client too where it is present; after a failed run it stays
    paused (NoRestartK8sDaemonsetsOnExit): the controller restores it with the others."""
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    world.label("node-000", {"nvidia.com/gpu.deploy.client": "true"})
    world.mig.fail.add("node-000")
    world.mig.pod("node-000").no_restart = True  # an earlier success in the same mig-manager pod
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.MIG_FAILED)
    assert world.labels("node-000")[MIG_STATE_LABEL] == MIG_STATE_FAILED
    assert world.labels("node-000")["nvidia.com/gpu.deploy.client"] == "true"


def test_labels_paused_by_the_driver_manager_are_left_to_it() -> None:
    """k8s-driver-manager pauses 16 operand labels while a driver loads and restores them itself: the controller
    restores only what mig-manager paused, and never writes over a ``paused-for-driver-upgrade`` value (mig-manager
    itself does: its ``maybeSetPaused`` overwrites any value but "false")."""
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0, target_layout="all-disabled")
    paused: dict[str, str | None] = {
        key: operator.PAUSED_FOR_DRIVER_UPGRADE for key in operator.DRIVER_MANAGER_PAUSED_LABELS
    }
    world.label("node-000", paused)
    touched: list[str] = []

    def watch(kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if kind == "nodes" and world.api.caller == "controller" and old is not None and new is not None:
            before, after = objects.labels(old), objects.labels(new)
            touched.extend(k for k in paused if before.get(k) != after.get(k))

    world.api.watchers.append(watch)
    world.run(1800.0)
    assert touched == []
    assert {key: world.labels("node-000").get(key) for key in paused} == paused
    assert_sound(world)


# -- the skip label, and the operator's states -------------------------------------------------------------
def _writes(world: World, node: str) -> list[dict[str, Any]]:
    """The controller's node writes, in order (label changes and cordon)."""
    seen: list[dict[str, Any]] = []

    def watch(kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if kind == "nodes" and key == node and world.api.caller == "controller" and new is not None:
            seen.append(clone(new))

    world.api.watchers.append(watch)
    return seen


@proves("I5")
def test_the_skip_label_is_on_the_node_a_pass_before_the_cordon_and_gone_at_the_end() -> None:
    world = World(nodes=1, flow="mig", budget="1")
    writes = _writes(world, "node-000")
    done(world)
    first_cordoned = next(i for i, node in enumerate(writes) if node["spec"].get("unschedulable"))
    first_fenced = next(i for i, node in enumerate(writes) if objects.labels(node).get(UPGRADE_SKIP_LABEL))
    assert first_fenced < first_cordoned
    assert objects.labels(writes[first_fenced]).get(REASON_LABEL) == Reason.FENCING
    assert objects.labels(writes[first_fenced])[UPGRADE_SKIP_LABEL] == operator.UPGRADE_SKIP_VALUE
    assert all(objects.labels(node).get(UPGRADE_SKIP_LABEL) for node in writes[first_fenced:-1])
    assert world.state("node-000") == State.DONE
    assert UPGRADE_SKIP_LABEL not in world.labels("node-000")


def test_a_skip_label_someone_else_set_stays() -> None:
    world = World(nodes=1, flow="mig", budget="1")
    world.label("node-000", {UPGRADE_SKIP_LABEL: "true"})
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.labels("node-000")[UPGRADE_SKIP_LABEL] == "true"


@proves("I5", "I7")
def test_a_node_the_operator_is_upgrading_is_not_taken_until_it_is_done() -> None:
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    world.run(5.0)
    world.label("node-000", {operator.UPGRADE_STATE_LABEL: operator.UpgradeState.POD_DELETION_REQUIRED})
    world.upgrades.running = True  # this test plays the operator: its reconcile would move the state on
    world.queue = [item for item in world.queue if getattr(item[2], "__name__", "") != "reconcile"]
    world.run(120.0)
    assert (world.state("node-000"), world.reason("node-000")) == (State.WAITING_SLOT, Reason.OPERATOR_UPGRADING)
    assert not world.node("node-000")["spec"].get("unschedulable")
    assert UPGRADE_SKIP_LABEL not in world.labels("node-000")
    world.label("node-000", {operator.UPGRADE_STATE_LABEL: operator.UpgradeState.DONE})
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5", "I7")
def test_a_driver_upgrade_and_a_mig_rollout_share_one_budget_and_never_delete_the_agents_pods() -> None:
    """The operator upgrades the driver of a two-node pool while the controller rolls out a MIG layout on it:
    never more than the budget away at once, no smoke pod deleted by the operator, and both end done."""
    world = World(nodes=2, flow="mig", budget="1", operator_budget=1)
    world.run(200.0, until=lambda: any(world.state(n) != State.IDLE for n in world.states()))
    world.driver.set_image(NEW_DRIVER)
    done(world)
    world.run(3600.0)  # the operator finishes its upgrade of the node the controller held last
    assert_sound(world)
    assert set(world.states().values()) == {State.DONE}
    assert set(operator_states(world).values()) == {operator.UpgradeState.DONE}
    assert driver_pod_hashes(world) == {name: world.driver.current_hash() for name in world.states()}
    assert world.metrics.max_unavailable == 1
    assert world.smoke_pods_deleted_by_operator() == []
    for name in world.states():
        assert not world.node(name)["spec"].get("unschedulable")
        assert UPGRADE_SKIP_LABEL not in world.labels(name)
        assert operator.UPGRADE_INITIAL_STATE_ANNOTATION not in objects.annotations_of(world.node(name))


@proves("I5")
def test_the_operators_initial_state_note_made_by_the_agents_cordon_does_not_strand_the_node() -> None:
    """The operator marks a node the controller has cordoned ``upgrade-required`` and notes it was unschedulable;
    left there, the operator would finish its upgrade without uncordoning. The controller removes the note with
    its own release, and the node ends schedulable after both."""
    world = World(nodes=1, flow="mig", budget="1")
    world.run(600.0, until=lambda: world.state("node-000") == State.MIG_APPLYING)
    world.driver.set_image(NEW_DRIVER)
    world.run(30.0)
    notes = objects.annotations_of(world.node("node-000"))
    assert notes.get(operator.UPGRADE_INITIAL_STATE_ANNOTATION) == "true"
    assert operator_states(world)["node-000"] == operator.UpgradeState.UPGRADE_REQUIRED  # the skip label holds it
    done(world)
    world.run(3600.0)
    assert_sound(world)
    assert world.state("node-000") == State.DONE
    assert operator_states(world)["node-000"] == operator.UpgradeState.DONE
    assert not world.node("node-000")["spec"].get("unschedulable")


@proves("I5")
def test_a_node_cordoned_by_a_person_before_both_stays_cordoned_after_both() -> None:
    world = World(nodes=1, flow="mig", budget="1")
    world.human_patch("node-000", {"spec": {"unschedulable": True}})
    world.run(600.0, until=lambda: world.state("node-000") == State.MIG_APPLYING)
    world.driver.set_image(NEW_DRIVER)
    done(world)
    world.run(3600.0)
    assert_sound(world)
    assert world.state("node-000") == State.DONE
    assert operator_states(world)["node-000"] == operator.UpgradeState.DONE
    assert world.node("node-000")["spec"]["unschedulable"] is True


def test_the_controller_never_deletes_an_operator_state_or_its_own_smoke_pods_leak() -> None:
    world = World(nodes=2, flow="mig", budget="1")
    world.driver.set_image(NEW_DRIVER)
    done(world)
    world.run(3600.0)
    assert_sound(world)
    leftovers = [
        key
        for key, pod in world.api.store["pods"].items()
        if key.startswith(f"{NAMESPACE}/") and objects.labels(pod).get(SMOKE_LABEL) and not objects.terminating(pod)
    ]
    assert leftovers == []
    assert all(world.labels(n).get(STATE_LABEL) == State.DONE for n in world.states())
    assert all(world.labels(n).get(GPU_DEPLOY_DRIVER_LABEL) == "true" for n in world.states())


@proves("I7")
def test_the_controller_counts_a_node_the_operator_is_upgrading_against_the_pools_budget() -> None:
    """The operator goes first (the controller is down for a while) and holds one node of two; back, the
    controller waits for it instead of taking the other node beside it (budget 1), then does both."""
    world = World(nodes=2, flow="mig", budget="1", operator_budget=1)
    world.run(3.0)  # the driver pods exist, on the old template
    world.controller_down_until = world.t + 100.0
    world.driver.set_image(NEW_DRIVER)
    world.run(
        150.0,
        until=lambda: world.t > world.controller_down_until + 20.0,
    )
    held = [
        name
        for name, state in operator_states(world).items()
        if operator.operator_holds({operator.UPGRADE_STATE_LABEL: state})
    ]
    assert len(held) == 1
    waiting = [name for name in world.states() if name not in held]
    assert [world.reason(name) for name in waiting] == [Reason.BUDGET_FULL]
    assert held[0] in world.detail(waiting[0])
    done(world)
    world.run(3600.0)
    assert_sound(world)
    assert set(world.states().values()) == {State.DONE}
    assert world.metrics.max_unavailable == 1


@proves("I5", "I7")
def test_the_operator_is_held_off_a_pool_while_a_handover_rollout_runs_there() -> None:
    """Nodes held for a hand-over run no operator driver pod yet, so the operator's upgrade controller does not count
    them: upgrading the nodes handed over already, it would take one beside them (three of a 2-node budget). The
    controller keeps the operator's skip label, with its throttle note, on the pool's other nodes while its rollout
    there runs, and lifts it after; the operator then upgrades every node."""
    world = World(nodes=6, budget="2", operator_budget=2)
    world.run(7200.0, until=lambda: world.state("node-002") in (State.UNINSTALLING, State.VERIFYING))
    assert world.state("node-000") == State.DONE and world.state("node-002") in (State.UNINSTALLING, State.VERIFYING)
    assert world.labels("node-000").get(UPGRADE_SKIP_LABEL) == "true"  # held off while the rollout runs
    world.driver.set_image(NEW_DRIVER)
    done(world)
    world.run(4 * 3600.0)
    assert_sound(world)
    assert world.metrics.max_unavailable <= 2
    assert set(operator_states(world).values()) == {operator.UpgradeState.DONE}
    assert all(UPGRADE_SKIP_LABEL not in world.labels(name) for name in world.states())
