"""Node maintenance that never strands a node: its own cordon remembered, reports from any version, host services
before GPU use, halts that stop untouched nodes, refused slots that say so, and the documented retry.

The real controller and executors in the simulated world (``tests/node_agent/sim``); every test checks the seven
invariants after every write.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog.names import HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    CONTROLLER_LEASE,
    DETAIL_ANNOTATION,
    LEASE_FAILED_ANNOTATION,
    MIG_DESIRED_LABEL,
    RECORD_ANNOTATION,
    REPORT_ANNOTATION,
    REQUEST_ANNOTATION,
    RETRY_ANNOTATION,
    STATE_LABEL,
    UPGRADE_SKIP_LABEL,
    Reason,
    State,
)
from components.node_agent.agent import objects
from tests.node_agent.invariants import assert_sound, done, proves, until_state
from tests.node_agent.sim.actors import LAYOUTS
from tests.node_agent.sim.api import Pdb
from tests.node_agent.sim.world import World


# -- 1. a cordon the agent made is never taken for somebody else's ------------------------------------------
@proves("I2", "I5")
@pytest.mark.parametrize(
    "edit",
    [
        {"metadata": {"labels": {STATE_LABEL: None}}},
        {"metadata": {"labels": {STATE_LABEL: None}, "annotations": {RECORD_ANNOTATION: None}}},
        {"metadata": {"labels": {STATE_LABEL: "idle"}, "annotations": {RECORD_ANNOTATION: None}}},
    ],
    ids=["state-removed", "state-and-record-removed", "state-set-idle-record-removed"],
)
def test_a_hand_edit_mid_flow_still_ends_with_the_node_schedulable(edit: dict[str, Any]) -> None:
    world = World(nodes=1, flow="mig", budget="1")
    until_state(world, "node-000", State.EVICTING)
    world.human_patch("node-000", edit)
    done(world)
    assert world.state("node-000") == State.DONE
    assert not world.node("node-000")["spec"].get("unschedulable")
    assert UPGRADE_SKIP_LABEL not in world.labels("node-000")


@proves("I5")
def test_a_hand_edit_keeps_a_person_s_earlier_cordon() -> None:
    world = World(nodes=1, flow="mig", budget="1")
    world.human_patch("node-000", {"spec": {"unschedulable": True}})
    until_state(world, "node-000", State.EVICTING)
    world.human_patch(
        "node-000", {"metadata": {"labels": {STATE_LABEL: None}, "annotations": {RECORD_ANNOTATION: None}}}
    )
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.node("node-000")["spec"]["unschedulable"] is True


@proves("I4", "I5", "I6")
@pytest.mark.parametrize("cordoned_before", [False, True])
def test_the_documented_retry_gives_the_node_back_as_it_was_and_starts_over(cordoned_before: bool) -> None:
    world = World(nodes=2, budget="2", operator_budget=2)  # a person's cordon takes a slot of its own
    if cordoned_before:
        world.human_patch("node-000", {"spec": {"unschedulable": True}})
    world.hosts["node-000"].uninstall_rc = 1
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.UNINSTALL_FAILED)
    assert world.lease_of("node-000") is not None  # the halt
    world.hosts["node-000"].uninstall_rc = 0  # fixed by a person
    world.human_patch("node-000", {"metadata": {"annotations": {RETRY_ANNOTATION: "after-fixing-the-uninstaller"}}})
    world.run(30.0)
    # Given back as it was before the first attempt: a node that was schedulable is schedulable again.
    assert bool(world.node("node-000")["spec"].get("unschedulable")) is cordoned_before or world.state("node-000") in (
        State.CORDONED,
        State.EVICTING,
    )
    done(world)
    assert set(world.states().values()) == {State.DONE}
    assert bool(world.node("node-000")["spec"].get("unschedulable")) is cordoned_before
    assert not world.node("node-001")["spec"].get("unschedulable")
    assert RETRY_ANNOTATION not in objects.annotations_of(world.node("node-000"))


# -- 4. reports from any version -------------------------------------------------------------------------------
MALFORMED: dict[str, dict[str, Any]] = {
    "unknown-reason": {"outcome": "failed", "reason": "gpu-fell-off-the-bus"},
    "unknown-outcome": {"outcome": "half-done"},
    "no-outcome": {},
    "facts-a-list": {"outcome": "ok", "facts": ["install", "none"]},
    "reason-a-number": {"outcome": "failed", "reason": 7},
    "detail-an-object": {"outcome": "failed", "reason": "uninstall-failed", "detail": {"rc": 1}},
    "outcome-null": {"outcome": None},
}


@proves("I5", "I6")
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_report_this_controller_cannot_read_fails_that_node_only(name: str) -> None:
    """An executor one version ahead answers the uninstall request with a report this controller cannot read:
    the node fails with unknown-report (its pool halts), the controller keeps running every other pool's node."""
    world = World(nodes=2, budget="1")
    until_state(world, "node-000", State.UNINSTALLING)
    request = json.loads(objects.annotations_of(world.node("node-000"))[REQUEST_ANNOTATION])
    world.kill_executor("node-000")  # the new executor's answer is the one below
    report = {"id": request["id"], "step": request["step"], **MALFORMED[name]}
    world.human_patch("node-000", {"metadata": {"annotations": {REPORT_ANNOTATION: json.dumps(report)}}})
    world.run(60.0)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.UNKNOWN_REPORT)
    assert "cannot be read" in world.detail("node-000")
    assert world.controller.log == [] or not any("Traceback" in line for line in world.controller.log)
    # The controller runs on: another pool's node, or this pool after the halt is cleared, goes on.
    world.delete_lease("node-000")
    world.human_patch("node-000", {"spec": {"unschedulable": False}})
    done(world)
    assert world.state("node-001") == State.DONE


def test_an_exception_on_one_node_leaves_the_others_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a node's data makes a decision raise, it stays that node's problem."""
    from components.node_agent.agent.controller import reconcile

    real = reconcile.decide

    def brittle(view: Any, work: Any, ctx: Any) -> Any:
        if view.name == "node-000":
            raise KeyError("something nobody thought of")
        return real(view, work, ctx)

    monkeypatch.setattr(reconcile, "decide", brittle)
    world = World(nodes=2, budget="1")
    world.run(3 * 3600.0)
    assert world.state("node-001") == State.DONE
    assert any("node-000: no decision (KeyError" in line for line in world.controller.log)


# -- 5. host services before GPU use; every wait bounded ---------------------------------------------------------
@proves("I5")
def test_the_host_s_own_persistenced_is_stopped_before_gpu_use_is_judged() -> None:
    world = World(nodes=1, budget="1")
    assert world.hosts["node-000"].persistenced  # a .run install runs nvidia-persistenced, devices open
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].uninstall_runs == 1


@proves("I5")
def test_a_host_process_that_never_lets_go_of_a_gpu_ends_failed_with_a_reason() -> None:
    world = World(nodes=1, budget="1", settings={"eviction_timeout_seconds": 600})
    world.hosts["node-000"].gpu_busy = lambda: "4242 python3 (not a pod)"
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.EVICTION_TIMEOUT)
    assert "4242 python3" in world.detail("node-000")
    assert world.hosts["node-000"].uninstall_runs == 0


# -- 6. a halt stops the nodes of the pool that are not yet touched -----------------------------------------------
@proves("I5", "I6")
def test_a_halt_stops_a_node_still_evicting_before_its_first_change() -> None:
    world = World(nodes=2, budget="2", operator_budget=2)
    world.api.pdbs.append(Pdb("team", "app", "train-node-001", 0))  # node-001's pod cannot leave for now
    world.hosts["node-000"].uninstall_rc = 1
    world.run(3600.0, until=lambda: world.state("node-000") == State.FAILED)
    assert world.state("node-000") == State.FAILED
    world.run(60.0)
    assert (world.state("node-001"), world.reason("node-001")) == (State.WAITING_SLOT, Reason.ROLLOUT_HALTED)
    assert "stopped before any change" in world.detail("node-001")
    assert not world.node("node-001")["spec"].get("unschedulable")
    assert world.lease_of("node-001") is None
    assert world.hosts["node-001"].uninstall_runs == 0
    assert_sound(world)


# -- 7. a refused slot leaves a trace ------------------------------------------------------------------------------
@proves("I5")
def test_a_refused_lease_says_why_on_the_node() -> None:
    world = World(nodes=1, flow="mig", budget="1")
    refusing = [True]

    def hook(caller: str, method: str, argument: Any) -> str:
        node_lease = method == "create_lease" and argument["metadata"]["name"] != CONTROLLER_LEASE
        return "403" if caller == "controller" and node_lease and refusing[0] else ""

    world.faults.hook = hook
    world.run(120.0)
    assert (world.state("node-000"), world.reason("node-000")) == (State.WAITING_SLOT, Reason.SLOT_REFUSED)
    detail = objects.annotations_of(world.node("node-000"))[DETAIL_ANNOTATION]
    assert "refused" in detail and "quota exceeded" in detail
    assert not world.node("node-000")["spec"].get("unschedulable")
    refusing[0] = False  # the quota is raised
    done(world)
    assert world.state("node-000") == State.DONE
    assert not any(objects.annotations_of(lease).get(LEASE_FAILED_ANNOTATION) for lease in world.leases())


# -- 2. writes fenced by leadership; 3. one clock --------------------------------------------------------------
def _leader_changes(world: World) -> list[tuple[float, str]]:
    changes: list[tuple[float, str]] = []

    def watch(kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if kind == "leases" and key.endswith(f"/{CONTROLLER_LEASE}") and new is not None:
            holder = new["spec"].get("holderIdentity", "")
            if not changes or changes[-1][1] != holder:
                changes.append((world.t, holder))

    world.api.watchers.append(watch)
    return changes


@proves("I1", "I5")
@pytest.mark.parametrize(
    ("leader_skew", "other_skew"),
    [(0.0, 300.0), (0.0, -300.0), (300.0, -300.0), (-300.0, 300.0)],
    ids=["other-ahead", "other-behind", "leader-ahead-other-behind", "leader-behind-other-ahead"],
)
def test_a_replica_on_a_skewed_clock_never_takes_the_lease_from_a_live_leader(
    leader_skew: float, other_skew: float
) -> None:
    world = World(nodes=3, flow="mig", budget="1", controller_skew=leader_skew)
    changes = _leader_changes(world)
    world.add_replica("controller-1", skew=other_skew)
    done(world)
    assert set(world.states().values()) == {State.DONE}
    assert [holder for _, holder in changes] == ["controller-0"]


@proves("I5")
def test_a_replica_takes_over_from_a_leader_that_stopped() -> None:
    world = World(nodes=2, flow="mig", budget="1")
    changes = _leader_changes(world)
    world.add_replica("controller-1", skew=-240.0)
    world.run(40.0)
    world.paused["controller-0"] = world.t + 24 * 3600.0  # gone for good
    done(world)
    assert set(world.states().values()) == {State.DONE}
    assert [holder for _, holder in changes] == ["controller-0", "controller-1"]


@proves("I1")
def test_a_paused_leader_wakes_up_and_writes_nothing_with_its_old_view() -> None:
    """controller-0 decides to admit a second node (budget 2), then freezes for a minute before writing; meanwhile
    the budget is lowered to 1 and controller-1 takes over. Awake, controller-0 writes nothing at all with its old
    view: not the node (a resourceVersion would also stop that), not a Lease, an eviction, a pod or an Event."""
    world = World(nodes=3, flow="mig", budget="2", operator_budget=2, pods_per_node=0)
    leader = world.controller
    world.add_replica("controller-1", first=5.0)
    real_perform = leader.perform
    frozen: list[float] = []
    writes_after_wake: list[str] = []

    def record_writes(name: str) -> None:
        real = getattr(leader.api, name)

        def call(*args: Any) -> Any:
            leader_lease = name in ("replace_lease", "create_lease") and args[1]["metadata"]["name"] == CONTROLLER_LEASE
            if frozen and not leader_lease:  # renewing its own Lease is how it finds out it lost it
                writes_after_wake.append(f"{name}{args[:1]}")
            return real(*args)

        setattr(leader.api, name, call)

    def perform(actions: list[Any], blocked: set[str]) -> None:
        cordons = [
            a
            for a in actions
            if getattr(a, "node", "") == "node-001"
            and ((getattr(a, "patch", {}) or {}).get("spec") or {}).get("unschedulable") is True
        ]
        if cordons and not frozen:
            world.paused[leader.identity] = world.t + 60.0
            world.set_settings(max_unavailable="1")
            world.run(60.0)  # the pause: the world goes on without it
            frozen.append(world.t)
        real_perform(actions, blocked)

    writes = ("patch_node", "create_lease", "replace_lease", "delete_lease", "evict", "create_pod", "delete_pod")
    for name in (*writes, "create_event"):
        record_writes(name)
    leader.perform = perform  # type: ignore[method-assign]
    done(world)
    assert frozen, "the scenario did not happen: controller-0 never came to cordon node-001"
    assert writes_after_wake == []
    assert any("leadership is not current" in line for line in leader.log)
    assert set(world.states().values()) == {State.DONE}


@proves("I5")
@pytest.mark.parametrize("skew", [-600.0, 600.0])
def test_a_handover_on_a_controller_whose_clock_is_off_by_ten_minutes_completes(skew: float) -> None:
    """The driver pod's creationTimestamp is the API server's clock: it is never compared with the controller's."""
    world = World(nodes=2, budget="1", controller_skew=skew)
    done(world)
    assert set(world.states().values()) == {State.DONE}


# -- a declaration that moves or goes away mid-flow ---------------------------------------------------------------
@proves("I5")
def test_a_desired_layout_changed_during_the_toggle_is_the_one_applied() -> None:
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    world.mig.fail.add("node-000")  # the first apply fails: the one toggle through all-disabled
    until_state(world, "node-000", State.MIG_RECOVERING)
    world.mig.fail.discard("node-000")
    world.human_patch("node-000", {"metadata": {"labels": {MIG_DESIRED_LABEL: "all-3g.40gb"}}})
    world.set_settings(mig_resources={"a100": LAYOUTS["all-3g.40gb"]})
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].mig_layout == "all-3g.40gb"
    assert world.api.forbidden == []


@proves("I5")
def test_an_opt_in_removed_before_the_node_was_touched_releases_it() -> None:
    world = World(nodes=1, budget="1")
    until_state(world, "node-000", State.EVICTING)
    world.human_patch("node-000", {"metadata": {"labels": {HOST_DRIVER_REMOVAL_LABEL: None}}})
    world.run(120.0)
    assert world.state("node-000") == State.IDLE
    assert not world.node("node-000")["spec"].get("unschedulable")
    assert world.hosts["node-000"].uninstall_runs == 0
    assert world.api.forbidden == []


@proves("I5", "I6")
def test_a_desired_layout_removed_after_the_change_began_fails_the_node_with_a_reason() -> None:
    world = World(nodes=1, flow="mig", budget="1")
    until_state(world, "node-000", State.MIG_APPLYING)
    world.human_patch("node-000", {"metadata": {"labels": {MIG_DESIRED_LABEL: None}}})
    world.run(120.0)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.DECLARATION_GONE)
    assert world.api.forbidden == []
