"""Named fault tests: the real controller and executors in the simulated world, one fault (or actor) each.

Each test names the invariants it proves (``@proves``); the world checks all six after every write, so
:func:`assert_sound` fails a test on any violation. Tests named ``test_finding_<n>_...`` reproduce the
numbered findings of the issue that replaced the node-side agent.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog.names import HOST_DRIVER_REMOVAL_LABEL
from components.catalog.node_agent import (
    DETAIL_ANNOTATION,
    GPU_DEPLOY_DRIVER_LABEL,
    LEASE_FAILED_ANNOTATION,
    LEASE_TOUCHED_ANNOTATION,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_PENDING_TAINT_KEY,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    OPERAND_DEPLOY_LABELS,
    REASON_LABEL,
    STATE_LABEL,
    Reason,
    State,
)
from components.node_agent.agent import objects
from components.node_agent.agent.controller.reconcile import Controller
from tests.node_agent.invariants import assert_sound, done, proves
from tests.node_agent.sim.actors import LAYOUTS
from tests.node_agent.sim.api import Client, Pdb
from tests.node_agent.sim.world import NAMESPACE, World


def states(world: World) -> set[str]:
    return set(world.states().values())


def node_patch_to(state: str) -> Any:
    """A fault hook: the controller's node patch that moves a node to ``state`` fails once per kind given."""

    def hook(kinds: list[str]) -> Any:
        def pick(caller: str, method: str, argument: Any) -> str:
            if caller == "controller" and method == "patch_node" and kinds:
                labels = (argument[1].get("metadata") or {}).get("labels") or {}
                if labels.get(STATE_LABEL) == state:
                    return kinds.pop(0)
            return ""

        return pick

    return hook


# -- the driver hand-over ---------------------------------------------------------------------------------
@proves("I1", "I5")
def test_handover_completes_one_node_at_a_time() -> None:
    world = World(nodes=3, budget="1")
    done(world)
    assert states(world) == {"done"}
    assert world.metrics.max_in_maintenance == 1
    for name in world.states():
        assert world.labels(name)[GPU_DEPLOY_DRIVER_LABEL] == "true"
        assert not world.node(name)["spec"].get("unschedulable")
        assert world.lease_of(name) is None


@proves("I1")
def test_finding_5_percentages_count_live_nodes_not_the_group_maximum() -> None:
    world = World(nodes=3, budget="50%")  # an autoscaled 2-10 group with 3 live nodes: 2 slots, never 5
    done(world)
    assert states(world) == {"done"}
    assert world.metrics.max_in_maintenance == 2


@proves("I1")
def test_finding_5_a_lower_budget_reaches_a_running_rollout() -> None:
    world = World(nodes=6, budget="3")
    world.run(60.0)
    assert world.in_maintenance("a100") == 3
    world.set_settings(max_unavailable="1")
    world.run(3600.0, until=lambda: world.in_maintenance("a100") <= 1)
    entered_after = world.metrics.admissions
    world.run(120.0)
    assert world.in_maintenance("a100") <= 1
    done(world)
    assert world.metrics.admissions >= entered_after
    assert states(world) == {"done"}


@proves("I1")
def test_a_pool_that_grows_gets_a_larger_percentage_budget() -> None:
    world = World(nodes=2, budget="50%")
    world.add_node("node-900")
    world.add_node("node-901")
    done(world)
    assert world.metrics.max_in_maintenance == 2
    assert states(world) == {"done"}


@proves("I5")
def test_finding_1_the_operators_installer_log_is_not_a_host_driver() -> None:
    world = World(nodes=2, settings={"recheck_seconds": 600})
    done(world)
    assert states(world) == {"done"}
    host = world.hosts["node-000"]
    assert host.exists("/var/log/nvidia-installer.log")  # left by the uninstaller, written again by the operator
    world.run(2 * 3600.0)  # several re-inspections after the hand-over
    assert_sound(world)
    assert states(world) == {"done"}
    assert world.labels("node-000")[GPU_DEPLOY_DRIVER_LABEL] == "true"
    assert not world.halted("a100")


@proves("I5", "I6")
def test_a_host_driver_that_comes_back_after_the_hand_over_halts_the_pool() -> None:
    world = World(nodes=2, settings={"recheck_seconds": 600})
    done(world)
    world.hosts["node-001"].install("run")  # someone runs the .run installer again
    world.run(1800.0)
    assert world.state("node-001") == State.FAILED
    assert world.reason("node-001") == Reason.DRIVER_REAPPEARED
    assert world.labels("node-001")[GPU_DEPLOY_DRIVER_LABEL] == "false"
    assert world.node("node-001")["spec"]["unschedulable"] is True
    assert world.halted("a100")
    assert_sound(world)


@pytest.mark.parametrize(
    ("install", "reason"),
    [
        ("package", Reason.PACKAGE_MANAGED),
        ("mixed", Reason.MIXED_INSTALL),
        ("unknown", Reason.UNKNOWN_INSTALL),
        ("run-no-uninstaller", Reason.UNINSTALLER_MISSING),
    ],
)
@proves("I2", "I5")
def test_a_host_the_executor_will_not_touch_is_refused_and_never_cordoned(install: str, reason: Reason) -> None:
    world = World(nodes=2)
    host = world.hosts["node-000"]
    host.files.clear()
    host.owned.clear()
    host.install(install)
    done(world)
    assert world.state("node-000") == State.REFUSED
    assert world.reason("node-000") == reason
    assert not world.node("node-000")["spec"].get("unschedulable")
    assert world.state("node-001") == State.DONE


@proves("I5")
def test_a_broken_dpkg_is_host_exec_failed_not_no_package() -> None:
    world = World(nodes=1)
    world.hosts["node-000"].install("package")
    world.hosts["node-000"].dpkg_broken = True
    done(world)
    assert world.reason("node-000") == Reason.HOST_EXEC_FAILED


@proves("I5")
def test_a_full_disk_before_the_start_is_refused() -> None:
    world = World(nodes=1)
    world.hosts["node-000"].disk_full = True
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.REFUSED, Reason.DISK_FULL)
    world.hosts["node-000"].disk_full = False
    world.set_settings(recheck_seconds=60)
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5", "I6")
def test_finding_7_a_full_disk_after_the_node_was_touched_fails_with_a_reason_and_halts() -> None:
    world = World(nodes=2)
    world.run(3600.0, until=lambda: world.state("node-000") == State.UNINSTALLING)
    world.hosts["node-000"].disk_full = True
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.HOST_STEP_FAILED)
    assert world.halted("a100")
    assert world.state("node-001") == State.WAITING_SLOT
    assert world.reason("node-001") == Reason.ROLLOUT_HALTED


@proves("I5", "I6")
def test_a_failed_uninstall_keeps_the_node_cordoned_and_halts_the_pool() -> None:
    world = World(nodes=3)
    world.hosts["node-000"].uninstall_rc = 1
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.UNINSTALL_FAILED)
    assert world.node("node-000")["spec"]["unschedulable"] is True
    assert {world.state("node-001"), world.state("node-002")} == {State.WAITING_SLOT}
    assert "node-000" in world.detail("node-001")


@proves("I6")
def test_clearing_the_halt_lets_the_rollout_go_on() -> None:
    world = World(nodes=3)
    world.hosts["node-000"].uninstall_rc = 1
    done(world)
    world.delete_lease("node-000")  # the documented clear command, after fixing the node
    done(world)
    # The failed node is still cordoned: it is away, and the pool's one slot is its (the budget is shared with
    # everything that takes a node away, as the GPU Operator counts it).
    assert [world.reason(n) for n in ("node-001", "node-002")] == [Reason.BUDGET_FULL, Reason.BUDGET_FULL]
    world.human_patch("node-000", {"spec": {"unschedulable": False}})  # the runbook's last step: back in service
    done(world)
    assert [world.state(n) for n in ("node-001", "node-002")] == [State.DONE, State.DONE]
    assert world.state("node-000") == State.FAILED


@proves("I5")
def test_a_module_in_use_takes_the_one_reboot() -> None:
    world = World(nodes=1)
    world.hosts["node-000"].modules_busy = True
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].reboots_requested == 1


@proves("I5", "I6")
def test_a_module_loaded_again_after_the_reboot_is_module_stuck() -> None:
    world = World(nodes=1)
    world.hosts["node-000"].modules_busy = True
    world.hosts["node-000"].stuck_module = True
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.MODULE_STUCK)
    assert world.hosts["node-000"].reboots_requested == 1


@proves("I5")
def test_a_reboot_that_never_happens_is_reboot_not_performed() -> None:
    world = World(nodes=1)
    world.hosts["node-000"].modules_busy = True
    world.hosts["node-000"].ignore_reboot = True
    done(world)
    assert world.reason("node-000") == Reason.REBOOT_NOT_PERFORMED


@proves("I5")
def test_without_reboots_the_node_waits_for_kured_with_a_reason() -> None:
    world = World(nodes=1, allow_reboot=False)
    world.hosts["node-000"].modules_busy = True
    world.run(3600.0)
    assert (world.state("node-000"), world.reason("node-000")) == (State.REBOOTING, Reason.REBOOT_PENDING)
    assert world.hosts["node-000"].sentinel
    world.reboot("node-000")  # kured reboots it
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5", "I6")
def test_an_operator_driver_that_never_turns_ready_is_driver_not_ready() -> None:
    world = World(nodes=2)
    world.driver.never_ready.add("node-000")
    done(world)
    assert world.reason("node-000") == Reason.DRIVER_NOT_READY
    assert world.halted("a100")


@proves("I5")
def test_a_driver_file_left_behind_is_files_remain() -> None:
    world = World(nodes=1)
    world.hosts["node-000"].leave_files = True
    done(world)
    assert world.reason("node-000") == Reason.FILES_REMAIN


@proves("I4", "I5", "I6")
def test_an_executor_that_dies_after_touching_fails_the_node_and_keeps_its_slot() -> None:
    world = World(nodes=2)
    world.run(3600.0, until=lambda: world.state("node-000") == State.UNINSTALLING)
    world.kill_executor("node-000")
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.EXECUTOR_LOST)
    lease = world.lease_of("node-000")
    assert lease is not None and objects.annotations_of(lease)[LEASE_TOUCHED_ANNOTATION] == "true"
    assert world.state("node-001") == State.WAITING_SLOT


@pytest.mark.parametrize(
    "state",
    [State.CORDONED, State.EVICTING, State.UNINSTALLING, State.VERIFYING, State.HANDING_OVER],
)
@proves("I1", "I2", "I4", "I5")
def test_the_controller_restarted_in_any_state_resumes(state: State) -> None:
    world = World(nodes=2)
    world.run(3600.0, until=lambda: world.state("node-000") == state)
    world.restart_controller(down=45.0)
    done(world)
    assert states(world) == {"done"}


@pytest.mark.parametrize("kind", ["503", "timeout", "timeout-after", "409"])
@proves("I2", "I5")
def test_finding_2_the_finishing_write_that_fails_is_sent_again(kind: str) -> None:
    world = World(nodes=2)
    world.faults.hook = node_patch_to(State.DONE)([kind, kind])
    done(world)
    assert states(world) == {"done"}
    assert not any(world.node(n)["spec"].get("unschedulable") for n in world.states())
    assert world.leases() == []


@pytest.mark.parametrize("kind", ["503", "timeout", "409"])
@proves("I2")
def test_finding_2_a_failed_lease_release_is_retried_no_finished_node_keeps_a_slot(kind: str) -> None:
    world = World(nodes=3)
    failures = [kind, kind, kind]

    def hook(caller: str, method: str, argument: Any) -> str:
        return failures.pop(0) if method == "delete_lease" and failures else ""

    world.faults.hook = hook
    done(world)
    assert states(world) == {"done"}
    assert world.leases() == []


@proves("I1", "I4")
def test_finding_5_a_lease_deleted_mid_flow_does_not_free_a_slot() -> None:
    world = World(nodes=3, budget="1")
    world.run(3600.0, until=lambda: world.state("node-000") == State.UNINSTALLING)
    world.delete_lease("node-000")
    world.run(30.0)
    assert world.in_maintenance("a100") == 1
    lease = world.lease_of("node-000")
    assert lease is not None and objects.annotations_of(lease)[LEASE_TOUCHED_ANNOTATION] == "true"
    done(world)
    assert states(world) == {"done"}


@proves("I4", "I6")
def test_finding_6_a_node_recreated_under_the_same_name_does_not_inherit_the_halt() -> None:
    world = World(nodes=3)
    world.hosts["node-000"].uninstall_rc = 1
    done(world)
    assert world.halted("a100")
    world.recreate("node-000")  # autoscaling: a new VM, a new UID, the same name
    done(world)
    assert world.halted("a100")
    assert world.state("node-000") == State.WAITING_SLOT
    assert world.reason("node-000") == Reason.ROLLOUT_HALTED
    assert world.state("node-001") == State.WAITING_SLOT


@proves("I4", "I6")
def test_finding_6_a_touched_node_that_vanishes_mid_flow_halts_the_pool() -> None:
    world = World(nodes=3)
    world.run(3600.0, until=lambda: world.state("node-000") == State.UNINSTALLING)
    world.recreate("node-000")
    done(world)
    assert world.halted("a100")
    failed = [objects.annotations_of(lease)[LEASE_FAILED_ANNOTATION] for lease in world.leases()]
    assert failed == [Reason.NODE_DELETED]
    assert world.state("node-000") == State.WAITING_SLOT


@proves("I1")
def test_a_node_deleted_before_it_was_touched_frees_its_slot() -> None:
    world = World(nodes=3)
    world.api.pdbs.append(Pdb("team", "app", "train-node-000", 0))
    world.run(3600.0, until=lambda: world.state("node-000") == State.EVICTING)
    world.delete_node("node-000")
    world.api.pdbs.clear()
    done(world)
    assert states(world) == {"done"}
    assert not world.halted("a100")


@proves("I3", "I5")
def test_finding_4_a_daemonset_pod_asking_for_a_gpu_blocks_the_node_and_it_fails_untouched() -> None:
    world = World(nodes=2, settings={"eviction_timeout_seconds": 120})
    world.daemon_sets.add("gpu-probe")
    done(world)
    for name in world.states():
        assert (world.state(name), world.reason(name)) == (State.FAILED, Reason.EVICTION_TIMEOUT)
        assert not world.node(name)["spec"].get("unschedulable")  # never touched: uncordoned
        assert world.hosts[name].uninstall_runs == 0
    assert not world.halted("a100")


@proves("I2", "I3")
def test_finding_4_a_node_uncordoned_by_someone_mid_change_is_cordoned_again_with_an_event() -> None:
    world = World(nodes=2, pods_per_node=2)
    world.run(3600.0, until=lambda: world.state("node-000") == State.EVICTING)
    world.human_patch("node-000", {"spec": {"unschedulable": False}})
    done(world)
    assert states(world) == {"done"}
    reasons = [e["reason"] for e in world.api.store["events"].values() if e["involvedObject"]["name"] == "node-000"]
    assert "Recordoned" in reasons


@proves("I3")
def test_finding_4_a_workload_that_lands_while_the_host_is_changed_is_evicted_first() -> None:
    world = World(nodes=1, pods_per_node=1)
    world.hosts["node-000"].modules_busy = True
    world.run(3600.0, until=lambda: world.state("node-000") == State.VERIFYING)
    world.human_patch("node-000", {"spec": {"unschedulable": False}})
    world.run(5.0)
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5", "I2")
def test_a_pdb_that_never_allows_eviction_fails_the_node_untouched_and_uncordoned() -> None:
    world = World(nodes=2, settings={"eviction_timeout_seconds": 120})
    world.api.pdbs.append(Pdb("team", "app", "train-node-000", 0))
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.EVICTION_TIMEOUT)
    assert not world.node("node-000")["spec"].get("unschedulable")
    assert world.state("node-001") == State.DONE


@proves("I3", "I5")
def test_a_pdb_allowing_one_disruption_lets_the_pods_go_one_by_one() -> None:
    world = World(nodes=2, pods_per_node=3)
    world.api.pdbs.append(Pdb("team", "app", "train-node-000", 1))
    done(world)
    assert states(world) == {"done"}


@proves("I2")
def test_finding_7_a_node_cordoned_before_the_rollout_stays_cordoned() -> None:
    world = World(nodes=2, budget="2", operator_budget=2)
    world.human_patch("node-001", {"spec": {"unschedulable": True}})
    done(world)
    assert states(world) == {"done"}
    assert world.node("node-001")["spec"]["unschedulable"] is True
    assert not world.node("node-000")["spec"].get("unschedulable")


@proves("I7")
def test_a_node_cordoned_by_a_person_takes_its_place_in_the_budget() -> None:
    world = World(nodes=2, budget="1")
    world.human_patch("node-001", {"spec": {"unschedulable": True}})
    done(world)
    # node-001 is away already: it may go through maintenance (it adds nothing), node-000 may not join it.
    assert world.state("node-001") == State.DONE and world.node("node-001")["spec"]["unschedulable"] is True
    assert (world.state("node-000"), world.reason("node-000")) == (State.WAITING_SLOT, Reason.BUDGET_FULL)
    assert "node-001" in world.detail("node-000")
    world.human_patch("node-001", {"spec": {"unschedulable": False}})
    done(world)
    assert states(world) == {"done"}


@proves("I2")
def test_finding_7_a_cordon_between_the_controllers_read_and_its_cordon_is_not_lost() -> None:
    world = World(nodes=1)
    cordoned: list[bool] = []

    def hook(caller: str, method: str, argument: Any) -> str:
        labels = (argument[1].get("metadata") or {}).get("labels") or {} if method == "patch_node" else {}
        if caller == "controller" and labels.get(STATE_LABEL) == State.CORDONED and not cordoned:
            cordoned.append(True)
            world.human_patch("node-000", {"spec": {"unschedulable": True}})  # another writer gets in first
        return ""

    world.faults.hook = hook
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.node("node-000")["spec"]["unschedulable"] is True  # theirs: kept


@pytest.mark.parametrize("kind", ["503", "timeout", "409"])
@proves("I5")
def test_finding_7_a_lost_gpu_deploy_driver_write_is_sent_again(kind: str) -> None:
    world = World(nodes=1)
    world.faults.hook = node_patch_to(State.HANDING_OVER)([kind, kind])
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.labels("node-000")[GPU_DEPLOY_DRIVER_LABEL] == "true"


@proves("I2", "I5")
def test_dry_run_changes_nothing_and_says_what_it_would_do() -> None:
    world = World(nodes=2, settings={"dry_run": True})
    world.run(1800.0)
    assert_sound(world)
    for name in world.states():
        assert world.state(name) == State.IDLE
        assert not world.node(name)["spec"].get("unschedulable")
        assert world.hosts[name].uninstall_runs == 0
        assert world.detail(name).startswith("dry run: would")
    assert world.leases() == []


@proves("I5")
def test_a_node_that_did_not_opt_in_is_never_touched() -> None:
    world = World(nodes=2)
    world.human_patch("node-001", {"metadata": {"labels": {HOST_DRIVER_REMOVAL_LABEL: None}}})
    done(world)
    assert world.state("node-001") == State.IDLE
    assert world.hosts["node-001"].uninstall_runs == 0


@proves("I1")
def test_two_controllers_one_leader() -> None:
    world = World(nodes=4, budget="1")
    second = Controller(Client(world.api, "controller", NAMESPACE), NAMESPACE, "controller-b", lambda: world.t)

    def both() -> None:
        second.reconcile()
        world.at(7.0, both)

    world.at(3.0, both)
    done(world)
    assert states(world) == {"done"}
    assert world.metrics.max_in_maintenance == 1


# -- containment -----------------------------------------------------------------------------------------
@proves("I4")
def test_finding_8_an_executor_may_change_only_its_own_nodes_report() -> None:
    world = World(nodes=2)
    executor = Client(world.api, "executor:node-000", NAMESPACE)
    attempts = [
        lambda: executor.patch_node(
            "node-001", {"metadata": {"annotations": {"gpu-platform.io/node-agent.report": "{}"}}}
        ),
        lambda: executor.patch_node("node-000", {"spec": {"unschedulable": True}}),
        lambda: executor.patch_node("node-000", {"metadata": {"labels": {STATE_LABEL: "done"}}}),
        lambda: executor.patch_node("node-000", {"metadata": {"finalizers": ["x"]}}),
        lambda: executor.evict("team", "train-node-001-1"),
        lambda: executor.list_leases(NAMESPACE, "x"),
        lambda: executor.delete_lease(NAMESPACE, "node-agent-x", ""),
        lambda: executor.list_pods_on("node-000"),
    ]
    for attempt in attempts:
        with pytest.raises(Exception, match="403"):
            attempt()
    assert len(world.api.forbidden) == len(attempts)


def test_finding_8_the_controller_may_not_change_other_taints_owners_or_finalizers() -> None:
    world = World(nodes=1)
    controller = Client(world.api, "controller", NAMESPACE)
    for patch in (
        {"spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}},
        {"metadata": {"finalizers": ["x"]}},
        {"metadata": {"ownerReferences": [{"kind": "Node"}]}},
        {"metadata": {"labels": {"team": "x"}}},
    ):
        with pytest.raises(Exception, match="403"):
            controller.patch_node("node-000", patch)


# -- MIG layouts ------------------------------------------------------------------------------------------
@proves("I1", "I3", "I5")
def test_mig_layout_changes_one_node_at_a_time() -> None:
    world = World(nodes=3, flow="mig")
    done(world)
    assert states(world) == {"done"}
    for name in world.states():
        assert world.hosts[name].mig_layout == "all-1g.10gb"
        assert world.labels(name)[MIG_LABEL] == "all-1g.10gb"
        assert not world.node(name)["spec"].get("unschedulable")


@proves("I3", "I5")
def test_finding_3_a_leftover_success_is_not_an_answer() -> None:
    world = World(nodes=1, flow="mig", leftover_state="success")
    world.timing.mig_checks = (30.0, 40.0)  # mig-manager answers late: the old "success" is there for 30 s
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].mig_layout == "all-1g.10gb"


@proves("I5")
def test_finding_3_a_leftover_failed_is_not_an_answer() -> None:
    world = World(nodes=1, flow="mig", leftover_state=MIG_STATE_FAILED)
    world.timing.mig_checks = (30.0, 40.0)
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5")
def test_finding_3_operands_left_paused_by_mig_manager_are_restored() -> None:
    world = World(nodes=1, flow="mig")
    world.mig.pod("node-000").no_restart = True  # a success earlier in this mig-manager pod's life
    world.mig.fail.add("node-000")
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.MIG_FAILED)
    for key in OPERAND_DEPLOY_LABELS:
        assert world.labels("node-000")[key] == "true", key


@proves("I5")
def test_one_mig_failure_is_recovered_by_the_toggle() -> None:
    world = World(nodes=1, flow="mig")
    world.mig.fail.add("node-000")

    def heal() -> None:
        if world.labels("node-000").get(MIG_LABEL) == "all-disabled":
            world.mig.fail.discard("node-000")
        else:
            world.at(5.0, heal)

    world.at(5.0, heal)
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5", "I6")
def test_mig_failing_after_the_toggle_fails_the_node_and_halts_the_pool() -> None:
    world = World(nodes=2, flow="mig")
    world.mig.fail.add("node-000")
    done(world)
    assert (world.state("node-000"), world.reason("node-000")) == (State.FAILED, Reason.MIG_FAILED)
    assert world.reason("node-001") == Reason.ROLLOUT_HALTED


@proves("I5")
def test_a_mig_manager_that_never_answers_is_mig_timeout() -> None:
    world = World(nodes=1, flow="mig")
    world.mig.stall.add("node-000")
    done(world)
    assert world.reason("node-000") == Reason.MIG_TIMEOUT


@proves("I5")
def test_a_mig_manager_restarted_mid_run_leaves_pending_and_the_toggle_recovers() -> None:
    world = World(nodes=1, flow="mig")
    world.run(3600.0, until=lambda: world.labels("node-000").get(MIG_STATE_LABEL) == "pending")
    world.mig.restarted("node-000")  # the pod dies mid-run: "pending" stays (gpu-operator#2833)
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5", "I6")
def test_a_failing_smoke_pod_fails_the_node() -> None:
    world = World(nodes=2, flow="mig")
    world.smoke_failing.add("node-000")
    done(world)
    assert world.reason("node-000") == Reason.SMOKE_FAILED
    assert world.halted("a100")


@proves("I3", "I5")
def test_a_desired_layout_changed_mid_flow_is_applied() -> None:
    world = World(nodes=1, flow="mig")
    world.run(3600.0, until=lambda: world.state("node-000") == State.MIG_APPLYING)
    world.human_patch("node-000", {"metadata": {"labels": {MIG_DESIRED_LABEL: "all-3g.40gb"}}})
    world.set_settings(mig_resources={"a100": LAYOUTS["all-3g.40gb"]})
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].mig_layout == "all-3g.40gb"


@proves("I5")
def test_a_new_node_already_in_its_layout_loses_the_pending_taint() -> None:
    world = World(nodes=1, flow="mig", start_layout="all-1g.10gb")
    taint = {"key": MIG_PENDING_TAINT_KEY, "effect": "NoSchedule"}
    world.human_patch("node-000", {"spec": {"taints": [taint]}})
    done(world)
    assert world.state("node-000") == State.DONE
    assert not world.node("node-000")["spec"].get("taints")


@proves("I3")
def test_a_gpu_pod_that_appears_during_the_mig_change_is_evicted() -> None:
    world = World(nodes=1, flow="mig", pods_per_node=1)
    world.timing.mig_checks = (40.0, 50.0)
    world.run(3600.0, until=lambda: world.state("node-000") == State.MIG_APPLYING)
    world.human_patch("node-000", {"spec": {"unschedulable": False}})
    done(world)
    assert world.state("node-000") in (State.DONE, State.FAILED)
    assert world.reason("node-000") in ("", Reason.MIG_FAILED)


@proves("I5")
def test_an_allocatable_that_never_matches_is_not_done() -> None:
    world = World(nodes=1, flow="mig", settings={"mig_resources": {"a100": {"nvidia.com/mig-1g.10gb": 55}}})
    done(world)
    assert world.state("node-000") == State.FAILED
    assert world.reason("node-000") == Reason.MIG_TIMEOUT


# -- many faults at once -----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("flow", ["driver", "mig"])
@proves("I1", "I2", "I3", "I4", "I5", "I6")
def test_random_faults_at_every_call(flow: str, seed: int) -> None:
    world = World(nodes=8, flow=flow, budget="2", seed=seed, fault_rate=0.15, pods_per_node=2)
    done(world)
    assert states(world) == {"done"}
    assert world.faults.injected > 20


@pytest.mark.parametrize("seed", range(3))
@proves("I1", "I2", "I4", "I5", "I6")
def test_random_faults_with_failing_nodes_and_restarts(seed: int) -> None:
    world = World(nodes=8, budget="3", seed=seed, fault_rate=0.1)
    world.hosts["node-003"].uninstall_rc = 1
    world.hosts["node-005"].modules_busy = True
    world.at(400.0, lambda: world.restart_controller(30.0))
    world.at(900.0, lambda: world.reboot("node-006"))
    done(world)
    assert world.reason("node-003") == Reason.UNINSTALL_FAILED
    halted = [n for n, s in world.states().items() if s == State.WAITING_SLOT]
    assert all(world.reason(n) == Reason.ROLLOUT_HALTED for n in halted)


def test_every_named_fault_test_names_an_invariant() -> None:
    from tests.node_agent.invariants import PROVES

    tests = [name for name in globals() if name.startswith("test_") and "named" not in name]
    unnamed = [name for name in tests if name not in PROVES and "may_not" not in name]
    assert unnamed == []
    assert len(PROVES) >= 40


@proves("I5")
def test_reason_and_detail_are_on_the_node_for_operators() -> None:
    world = World(nodes=2)
    world.hosts["node-000"].uninstall_rc = 1
    done(world)
    node = world.node("node-000")
    assert objects.labels(node)[REASON_LABEL] == Reason.UNINSTALL_FAILED
    assert "gpu-platform.io/node-agent.retry=" in objects.annotations_of(node)[DETAIL_ANNOTATION]  # the retry to run


@proves("I5")
def test_a_layout_wedged_at_its_own_value_is_toggled_not_written_again() -> None:
    world = World(nodes=1, flow="mig", start_layout="all-1g.10gb", leftover_state="pending")
    world.hosts["node-000"].mig_layout = "all-disabled"  # the label says 1g.10gb; mig-manager never applied it
    world.human_patch("node-000", {"status": {"allocatable": {"cpu": "64", "nvidia.com/gpu": "8"}}})
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].mig_layout == "all-1g.10gb"
    assert world.mig.runs >= 2  # the toggle, then the layout


@proves("I4", "I5")
def test_a_reboot_in_the_middle_of_the_uninstall_resumes_from_the_host_record() -> None:
    world = World(nodes=2)
    world.run(3600.0, until=lambda: world.state("node-000") == State.UNINSTALLING)
    world.reboot("node-000")  # power cut: the executor dies with its step; the request is still there
    done(world)
    assert states(world) == {"done"}


@proves("I5")
def test_a_node_rebooted_by_someone_while_it_is_evicted_goes_on() -> None:
    world = World(nodes=1, pods_per_node=2)
    world.run(3600.0, until=lambda: world.state("node-000") == State.EVICTING)
    world.reboot("node-000")
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5")
def test_an_executor_restarted_mid_step_answers_the_request_once() -> None:
    world = World(nodes=1)
    world.run(3600.0, until=lambda: world.state("node-000") == State.VERIFYING)
    executor = world.executors.pop("node-000")
    world.run(20.0)
    world.executors["node-000"] = executor  # the DaemonSet's next pod
    world._poll("node-000", 1.0)
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].uninstall_runs == 1


@pytest.mark.parametrize("state", [State.MIG_APPLYING, State.SMOKE_TESTING])
@proves("I1", "I3", "I5")
def test_the_controller_restarted_during_a_mig_change_resumes(state: State) -> None:
    world = World(nodes=2, flow="mig")
    world.run(3600.0, until=lambda: world.state("node-000") == state)
    world.restart_controller(down=60.0)
    done(world)
    assert states(world) == {"done"}


@proves("I1", "I2")
def test_dry_run_switched_on_mid_rollout_admits_nobody_new() -> None:
    world = World(nodes=4, budget="1")
    world.run(3600.0, until=lambda: world.state("node-000") == State.EVICTING)
    world.set_settings(dry_run=True)
    world.run(3 * 3600.0)
    assert_sound(world)
    assert world.metrics.admissions == 1
    assert [world.state(n) for n in ("node-001", "node-002", "node-003")] != [State.DONE] * 3


@pytest.mark.parametrize("kind", ["503", "timeout", "timeout-after"])
@proves("I3", "I5")
def test_evictions_that_fail_are_asked_again(kind: str) -> None:
    world = World(nodes=1, pods_per_node=3)
    failures = [kind] * 4

    def hook(caller: str, method: str, argument: Any) -> str:
        return failures.pop(0) if method == "evict" and failures else ""

    world.faults.hook = hook
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I1")
def test_unreadable_settings_change_nothing_until_they_are_back() -> None:
    world = World(nodes=2)
    settings = world.api.store["configmaps"].pop("gpu-platform-system/node-agent-settings")
    world.run(1800.0)
    assert world.metrics.admissions == 0 and set(world.states().values()) == {"idle"}
    world.api.put("configmaps", "gpu-platform-system/node-agent-settings", settings)
    done(world)
    assert states(world) == {"done"}


@proves("I1")
def test_a_node_without_a_pool_label_is_never_admitted() -> None:
    world = World(nodes=2)
    world.human_patch("node-001", {"metadata": {"labels": {"gpu-platform.io/node-group": None}}})
    world.run(3 * 3600.0)
    assert_sound(world)
    assert world.state("node-000") == State.DONE
    assert world.state("node-001") in (State.IDLE, State.WAITING_SLOT)
    assert world.hosts["node-001"].uninstall_runs == 0
