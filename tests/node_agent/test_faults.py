"""Faults: the real agent (client, executor, machine) over real HTTP against the fake API server and a fake host.

After every fault the node is done, or cordoned with a failed/waiting state and a reason; never cordoned
without one; the budget is never exceeded (:func:`assert_safe`).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from components.catalog.node_agent import (
    LEASE_FAILED_ANNOTATION,
    LEASE_TOUCHED_ANNOTATION,
    MIG_DESIRED_LABEL,
    MIG_LABEL,
    MIG_PENDING_TAINT_KEY,
    STATE_LABEL,
    TOUCHED_STATES,
    TRANSITIONS,
    Reason,
    State,
    clear_command,
    slot_lease_name,
)
from components.node_agent.agent.host import RealHost, Result
from components.node_agent.agent.machine import Install, Settings
from components.node_agent.agent.main import install_sigterm
from tests.node_agent.harness import NAMESPACE, Cluster, mig_taint

#: Each failure reason and the test that produces it (checked below: every reason has a test).
REASON_TESTS: dict[Reason, str] = {}


def covers(*reasons: Reason):
    def mark(test):
        for reason in reasons:
            REASON_TESTS[reason] = test.__name__
        return test

    return mark


@pytest.fixture
def make() -> Iterator[list[Cluster]]:
    made: list[Cluster] = []
    yield made
    for cluster in made:
        cluster.close()


def cluster(made: list[Cluster], **kwargs: object) -> Cluster:
    built = Cluster(**kwargs)  # type: ignore[arg-type]
    made.append(built)
    return built


ALLOWED = {(str(t.source), str(t.target)) for t in TRANSITIONS}
TOUCHED = {str(state) for state in TOUCHED_STATES}


def assert_safe(c: Cluster) -> None:
    known = {str(state) for state in State}
    unlisted = {
        (a, b)
        for a, b in c.transitions - ALLOWED
        if a in known and b in known and not (b == "failed" and a in TOUCHED | {"idle", "evicting"})
    }
    assert unlisted == set(), "transitions missing from components.catalog.node_agent.TRANSITIONS"
    assert c.stuck_without_reason() == []
    assert c.stats.over_budget == 0
    assert c.stats.double_holds == 0


def run_until_state(c: Cluster, node: str, state: State, rounds: int = 200) -> None:
    c.run(rounds, until=lambda: c.state(node) == state)
    assert c.state(node) == state, (c.state(node), c.reason(node), c.agents[node].log[-3:])


def all_done(c: Cluster) -> bool:
    return all(c.state(name) == State.DONE for name in c.hosts)


# -- the happy paths the faults are measured against ----------------------------------------------------------
def test_a_pool_is_handed_over_one_budget_at_a_time(make: list[Cluster]) -> None:
    c = cluster(make, count=4, budget=2)
    c.run(400)
    assert all_done(c)
    assert c.stats.max_in_maintenance == 2
    for name in c.hosts:
        labels = c.node(name)["metadata"]["labels"]
        assert labels["nvidia.com/gpu.deploy.driver"] == "true"
        assert not c.cordoned(name)
    assert c.store.leases == {}
    assert_safe(c)


@covers(Reason.BUDGET_FULL)
def test_nodes_beyond_the_budget_wait_with_a_reason(make: list[Cluster]) -> None:
    c = cluster(make, count=3, budget=1)
    c.run(3, until=lambda: False)
    states = sorted((c.state(name), c.reason(name)) for name in c.hosts)
    assert states.count(("waiting-slot", "budget-full")) == 2
    assert not any(c.cordoned(name) for name in c.hosts if c.state(name) == State.WAITING_SLOT)


@covers(Reason.DRIVER_PENDING)
def test_the_node_waits_for_the_operators_driver_before_uncordoning(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.driver_delay = 300.0
    run_until_state(c, "node-000", State.HANDING_OVER)
    assert c.reason("node-000") == "driver-pending"
    assert c.cordoned("node-000")
    c.run(200)
    assert all_done(c)


@covers(Reason.MIG_PENDING)
def test_a_new_mig_layout_goes_through_cordon_evict_label_smoke(make: list[Cluster]) -> None:
    c = cluster(make, count=3, budget=1, flow="mig")
    run_until_state(c, "node-000", State.MIG_APPLYING)
    assert c.reason("node-000") == "mig-pending"
    assert c.cordoned("node-000")
    assert ("team", "train-node-000") not in c.store.pods
    c.run(400)
    assert all_done(c)
    assert all(c.node(n)["metadata"]["labels"][MIG_LABEL] == "all-1g.10gb" for n in c.hosts)
    assert c.stats.max_in_maintenance == 1
    assert_safe(c)


def test_a_new_node_with_no_gpu_pods_goes_straight_through_and_loses_the_taint(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    del c.store.pods[("team", "train-node-000")]
    c.node("node-000")["spec"]["taints"] = [mig_taint()]
    rounds = c.run(100)
    assert all_done(c)
    assert rounds < 30  # no eviction wait: minutes, not the eviction timeout
    assert [t for t in c.node("node-000")["spec"]["taints"] if t["key"] == MIG_PENDING_TAINT_KEY] == []


def test_the_taint_stays_until_the_layout_is_in_place(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    c.node("node-000")["spec"]["taints"] = [mig_taint()]
    run_until_state(c, "node-000", State.SMOKE_TESTING)
    assert [t["key"] for t in c.node("node-000")["spec"]["taints"]] == [MIG_PENDING_TAINT_KEY]
    c.run(100)
    assert c.node("node-000")["spec"]["taints"] == []


# -- the API: outages, transient errors, conflicts, timeouts --------------------------------------------------
DRIVER_STEPS = [State.WAITING_SLOT, State.CORDONED, State.EVICTING, State.UNINSTALLING, State.VERIFYING]


@pytest.mark.parametrize("step", [*DRIVER_STEPS, State.HANDING_OVER])
def test_api_outage_at_every_step_of_the_hand_over(make: list[Cluster], step: State) -> None:
    c = cluster(make, count=2, budget=1)
    c.driver_delay = 200.0
    run_until_state(c, "node-000", step)
    c.store.outage(503)
    c.run(8, until=lambda: False)
    c.store.heal()
    c.run(400)
    assert all_done(c)
    assert_safe(c)


@pytest.mark.parametrize("step", [State.MIG_APPLYING, State.SMOKE_TESTING])
def test_api_outage_at_every_step_of_a_mig_change(make: list[Cluster], step: State) -> None:
    c = cluster(make, count=2, budget=1, flow="mig")
    c.mig_delay = c.smoke_delay = 100.0
    run_until_state(c, "node-000", step)
    c.store.outage(503)
    c.run(6, until=lambda: False)
    c.store.heal()
    c.run(400)
    assert all_done(c)
    assert_safe(c)


def test_transient_5xx_on_every_kind_of_write_is_retried(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    for method, path in (("PATCH", "/nodes/"), ("POST", "/leases"), ("PUT", "/leases/"), ("POST", "/eviction")):
        c.store.fail(method, path, 500, count=3)
    c.run(400)
    assert all_done(c)
    assert_safe(c)


def test_calls_that_hang_past_the_client_timeout_are_retried(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.store.hang_seconds = 0.4
    c.store.fail("PATCH", "/nodes/node-000", 0, count=2)
    c.store.fail("GET", "/api/v1/pods", 0, count=2)
    c.run(300)
    assert all_done(c)
    assert any("504" in line or ": 0:" in line or "timed out" in line for line in c.agents["node-000"].log)


def test_a_lease_conflict_409_means_another_node_won_the_slot(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    c.store.fail("POST", "/leases", 409, count=1)  # someone created slot 0 first, as far as node-000 knows
    c.run(2, until=lambda: False)
    assert [c.state(n) for n in sorted(c.hosts)].count(State.CORDONED) <= 1
    c.run(400)
    assert all_done(c)
    assert_safe(c)


def test_a_resource_version_conflict_on_the_taint_patch_is_retried(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    c.node("node-000")["spec"]["taints"] = [mig_taint()]
    run_until_state(c, "node-000", State.SMOKE_TESTING)
    c.store.fail("PATCH", "/nodes/node-000", 409, count=2)
    c.run(100)
    assert all_done(c)
    assert c.node("node-000")["spec"]["taints"] == []


# -- the budget: holders that die, heartbeats ------------------------------------------------------------------
def test_a_holder_that_dies_before_touching_is_reclaimed_after_the_ttl(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    c.store.pods[("team", "train-node-000")]["metadata"]["name"] = "train-node-000"
    c.store.pdb_blocked.add(("team", "train-node-000"))
    run_until_state(c, "node-000", State.EVICTING)
    c.kill("node-000")
    c.store.pdb_blocked.clear()
    c.run(20, until=lambda: False)
    assert c.state("node-001") == State.WAITING_SLOT  # not before the TTL
    c.run(400, until=lambda: c.state("node-001") == State.DONE)
    assert c.state("node-001") == State.DONE
    assert c.stats.max_touched == 1


@covers(Reason.ROLLOUT_HALTED)
def test_a_holder_that_dies_after_touching_is_never_taken_over(make: list[Cluster]) -> None:
    c = cluster(make, count=3, budget=1)
    run_until_state(c, "node-000", State.VERIFYING)
    c.kill("node-000")
    c.run(100, until=lambda: False)  # far past the TTL
    lease = c.store.leases[(NAMESPACE, slot_lease_name("gpu", 0))]
    assert lease["spec"]["holderIdentity"] == "node-000"
    assert LEASE_TOUCHED_ANNOTATION in lease["metadata"]["annotations"]
    for name in ("node-001", "node-002"):
        assert (c.state(name), c.reason(name)) == ("waiting-slot", "rollout-halted")
        assert "node-000" in c.node(name)["metadata"]["annotations"]["gpu-platform.io/node-agent.detail"]
    assert c.hosts["node-001"].files  # nothing was touched elsewhere
    # The documented clear: the operator deletes the Lease; the rollout goes on.
    assert clear_command(NAMESPACE, "gpu", 0) == f"kubectl -n {NAMESPACE} delete lease node-agent-gpu-0"
    del c.store.leases[(NAMESPACE, slot_lease_name("gpu", 0))]
    c.start("node-000")  # the DaemonSet's next pod: it must take a slot again before it goes on
    c.run(400)
    assert all_done(c)
    assert c.stats.max_touched == 1
    assert_safe(c)


def test_the_heartbeat_keeps_the_slot_through_an_uninstall_longer_than_the_ttl(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    c.hosts["node-000"].uninstall_seconds = 1200.0  # four TTLs
    run_until_state(c, "node-000", State.VERIFYING)
    assert c.hosts["node-000"].heartbeats >= 100
    assert c.state("node-001") == State.WAITING_SLOT
    assert c.reason("node-001") == "budget-full"  # never "halted": the holder kept renewing
    c.run(400)
    assert all_done(c)
    assert_safe(c)


def test_a_lease_lost_during_an_outage_before_touching_steps_back(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    c.store.pdb_blocked.add(("team", "train-node-000"))
    run_until_state(c, "node-000", State.EVICTING)
    c.kill("node-000")
    c.run(60, until=lambda: c.state("node-001") == State.CORDONED)  # node-001 took the expired slot
    assert c.state("node-001") in (State.CORDONED, State.EVICTING)
    c.start("node-000")
    c.store.pdb_blocked.clear()
    c.run(3, until=lambda: False)
    assert c.state("node-000") == State.WAITING_SLOT
    assert not c.cordoned("node-000")
    c.run(400)
    assert all_done(c)
    assert_safe(c)


def test_the_budget_holds_under_faults_across_a_pool(make: list[Cluster]) -> None:
    c = cluster(make, count=8, budget=3, http=False)
    for index in range(0, 300, 37):
        c.run(index % 11 + 1, until=lambda: False)
        c.store.outage(503)
        c.run(2, until=lambda: False)
        c.store.heal()
        c.kill(f"node-{index % 8:03d}")
        c.run(1, until=lambda: False)
        c.start(f"node-{index % 8:03d}")
    c.run(800)
    assert all_done(c)
    assert c.stats.max_touched <= 3
    assert_safe(c)


# -- the pod: restarts, SIGTERM ---------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [*DRIVER_STEPS, State.REBOOTING, State.HANDING_OVER])
def test_the_pod_restarted_at_every_state_of_the_hand_over_resumes(make: list[Cluster], step: State) -> None:
    c = cluster(make, count=2, budget=1)
    c.hosts["node-000"].modules_busy = True  # so that the flow passes through rebooting
    c.reboot_delay = 200.0
    run_until_state(c, "node-000", step)
    c.start("node-000")
    c.run(400)
    assert all_done(c)
    assert c.hosts["node-000"].boot_id != "boot-1"
    assert_safe(c)


@pytest.mark.parametrize("step", [State.MIG_APPLYING, State.MIG_RECOVERING, State.SMOKE_TESTING])
def test_the_pod_restarted_at_every_state_of_a_mig_change_resumes(make: list[Cluster], step: State) -> None:
    c = cluster(make, count=1, flow="mig")
    c.mig_outcome["node-000"] = "fail-once"
    run_until_state(c, "node-000", step)
    c.start("node-000")
    c.run(400)
    assert all_done(c)


def test_sigterm_during_a_long_uninstall_finishes_the_step_and_starts_no_other(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    agent = c.agents["node-000"]
    c.hosts["node-000"].during_uninstall = agent.stop.set
    c.hosts["node-000"].modules_busy = True
    run_until_state(c, "node-000", State.UNINSTALLING)
    c.run(5, until=lambda: False)
    assert c.hosts["node-000"].uninstall_runs == 1  # the step in progress finished...
    assert c.state("node-000") == State.UNINSTALLING  # ...as recorded before it began
    assert not c.hosts["node-000"].reboot_requested  # and no new long step was started
    c.start("node-000")  # the DaemonSet's next pod
    c.run(400)
    assert all_done(c)
    assert c.hosts["node-000"].uninstall_runs == 1


def test_sigterm_sets_the_stop_flag_and_wakes_the_loop() -> None:
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        install_sigterm(stop)
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(2.0)
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- the node ------------------------------------------------------------------------------------------------
@covers(Reason.NODE_DELETED)
def test_a_node_deleted_mid_flow_is_recorded_on_the_host(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    run_until_state(c, "node-000", State.HANDING_OVER)
    del c.store.nodes["node-000"]
    c.run(5, until=lambda: False)
    assert c.hosts["node-000"].marker is not None
    assert (c.hosts["node-000"].marker["state"], c.hosts["node-000"].marker["reason"]) == ("failed", "node-deleted")
    # It comes back (re-registered): the node says what the host remembers, and it is not cordoned silently.
    c.store.add_node("node-000", {"gpu-platform.io/node-group": "gpu"})
    c.run(3, until=lambda: False)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "node-deleted")
    assert_safe(c)


@covers(Reason.UNKNOWN_STATE)
def test_an_unknown_state_label_fails_and_keeps_the_node_cordoned(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    run_until_state(c, "node-000", State.EVICTING)
    c.store.set_label("node-000", STATE_LABEL, "draining")  # a value from another tool or version
    c.run(3, until=lambda: False)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "unknown-state")
    assert c.cordoned("node-000")
    assert_safe(c)


@covers(Reason.EVICTION_BLOCKED, Reason.EVICTION_TIMEOUT)
def test_an_eviction_blocked_forever_by_a_pdb_fails_and_uncordons(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    c.store.pdb_blocked.add(("team", "train-node-000"))
    run_until_state(c, "node-000", State.EVICTING)
    c.run(3, until=lambda: False)
    assert c.reason("node-000") == "eviction-blocked"
    assert c.cordoned("node-000")
    c.run(200, until=lambda: c.state("node-000") == State.FAILED)
    assert c.reason("node-000") == "eviction-timeout"
    assert not c.cordoned("node-000")  # nothing was touched: the node is given back
    assert c.hosts["node-000"].files
    c.run(400)
    assert c.state("node-001") == State.DONE  # the slot was released
    assert_safe(c)


# -- the host --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({"install": Install.PACKAGE, "detail": "/usr/bin/nvidia-smi: nvidia-utils-550"}, "package-managed"),
        ({"install": Install.MIXED, "detail": "libnvidia-ml.so.1: libnvidia-compute-550"}, "mixed-install"),
        ({"install": Install.UNKNOWN}, "unknown-install"),
        ({"uninstaller": False}, "uninstaller-missing"),
        ({"install": Install.EXEC_ERROR, "detail": "dpkg -S exited 2: chroot: failed"}, "host-exec-failed"),
    ],
)
def test_a_host_that_cannot_be_handed_over_is_refused_untouched(
    make: list[Cluster], setup: dict[str, object], reason: str
) -> None:
    c = cluster(make, count=2, budget=1)
    for key, value in setup.items():
        setattr(c.hosts["node-000"], key, value)
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) == ("refused", reason)
    assert not c.cordoned("node-000")
    assert c.hosts["node-000"].uninstall_runs == 0
    assert c.state("node-001") == State.DONE
    assert any(e["reason"] == "NodeAgentRefused" for e in c.store.events)


for _reason in (
    Reason.PACKAGE_MANAGED,
    Reason.MIXED_INSTALL,
    Reason.UNKNOWN_INSTALL,
    Reason.UNINSTALLER_MISSING,
    Reason.HOST_EXEC_FAILED,
):
    REASON_TESTS[_reason] = "test_a_host_that_cannot_be_handed_over_is_refused_untouched"


def _runner(answers: dict[str, Result]):
    def run(argv: list[str]) -> Result:
        return answers[argv[2]]

    return run


def _host_tree(tmp_path: object, *paths: str) -> str:
    root = str(tmp_path)
    for path in paths:
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        with open(root + path, "w") as handle:
            handle.write("x")
    return root


def test_a_dpkg_that_cannot_run_is_an_error_not_no_owner(tmp_path: object) -> None:
    root = _host_tree(tmp_path, "/usr/bin/dpkg", "/usr/bin/nvidia-smi", "/var/log/nvidia-installer.log")
    failing = _runner({"dpkg": Result(127, "", "chroot: failed to run command 'dpkg': Permission denied")})
    facts = RealHost(root, failing).inspect()
    assert facts.install == Install.EXEC_ERROR
    assert "Permission denied" in facts.detail
    not_owned = _runner({"dpkg": Result(1, "", "dpkg-query: no path found matching pattern /usr/bin/nvidia-smi")})
    assert RealHost(root, not_owned).inspect().install == Install.RUN
    owned = _runner({"dpkg": Result(0, "nvidia-utils-550: /usr/bin/nvidia-smi\n", "")})
    assert RealHost(root, owned).inspect().install == Install.MIXED


def test_rpm_not_owned_and_owned_are_told_apart(tmp_path: object) -> None:
    root = _host_tree(tmp_path, "/usr/bin/rpm", "/usr/bin/nvidia-smi")
    not_owned = _runner({"rpm": Result(1, "file /usr/bin/nvidia-smi is not owned by any package\n", "")})
    assert RealHost(root, not_owned).inspect().install == Install.UNKNOWN
    owned = _runner({"rpm": Result(0, "nvidia-driver-cuda-550\n", "")})
    assert RealHost(root, owned).inspect().install == Install.PACKAGE
    broken = _runner({"rpm": Result(1, "", "error: rpmdb: BDB0113 Thread/process failed")})
    assert RealHost(root, broken).inspect().install == Install.EXEC_ERROR


@covers(Reason.DISK_FULL)
def test_a_full_disk_refuses_before_cordoning_and_recovers(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.hosts["node-000"].disk_full = True
    c.run(10, until=lambda: c.state("node-000") == State.REFUSED)
    assert (c.state("node-000"), c.reason("node-000")) == ("refused", "disk-full")
    assert not c.cordoned("node-000")
    c.hosts["node-000"].disk_full = False
    c.run(400, until=lambda: all_done(c))
    assert all_done(c)


@covers(Reason.UNINSTALL_FAILED)
def test_a_failing_uninstaller_keeps_the_node_cordoned_and_halts_the_pool(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1)
    c.hosts["node-000"].uninstall_rc = 1
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "uninstall-failed")
    assert c.cordoned("node-000")
    lease = c.store.leases[(NAMESPACE, slot_lease_name("gpu", 0))]
    assert lease["metadata"]["annotations"][LEASE_FAILED_ANNOTATION] == "uninstall-failed"
    assert (c.state("node-001"), c.reason("node-001")) == ("waiting-slot", "rollout-halted")
    assert_safe(c)


@covers(Reason.FILES_REMAIN)
def test_files_left_after_the_uninstall_fail_the_node(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.hosts["node-000"].uninstall_leaves_files = True
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "files-remain")
    assert c.cordoned("node-000")
    assert c.node("node-000")["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] == "pre-installed"


def test_a_busy_module_reboots_exactly_once_guarded_by_the_boot_id(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.hosts["node-000"].modules_busy = True
    run_until_state(c, "node-000", State.REBOOTING)
    assert c.record("node-000")["reboot_boot_id"] == "boot-1"
    c.run(400)
    assert all_done(c)
    assert c.hosts["node-000"].boot_id != "boot-1"


@covers(Reason.MODULE_STUCK)
def test_a_module_still_loaded_after_the_one_reboot_fails(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.hosts["node-000"].module_stuck = True
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "module-stuck")
    assert c.cordoned("node-000")


@covers(Reason.REBOOT_NOT_PERFORMED)
def test_a_reboot_that_never_returns_fails_after_the_timeout(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.hosts["node-000"].modules_busy = True
    c.reboot_fails.add("node-000")
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "reboot-not-performed")
    assert c.cordoned("node-000")
    assert_safe(c)


@covers(Reason.REBOOT_PENDING)
def test_without_reboots_the_kured_sentinel_is_written_and_the_node_waits(make: list[Cluster]) -> None:
    c = cluster(make, count=1, settings=Settings(pool_budgets={"gpu": 1}, allow_reboot=False, lease_ttl_seconds=300.0))
    c.hosts["node-000"].modules_busy = True
    c.run(100, until=lambda: False)
    assert (c.state("node-000"), c.reason("node-000")) == ("rebooting", "reboot-pending")
    assert c.hosts["node-000"].reboot_sentinel
    assert_safe(c)


@covers(Reason.DRIVER_NOT_READY)
def test_an_operator_driver_that_never_gets_ready_fails(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.driver_delay = 1e9
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "driver-not-ready")
    assert c.cordoned("node-000")


@covers(Reason.DRIVER_REAPPEARED)
def test_a_driver_that_reappears_takes_the_node_from_the_operator(make: list[Cluster]) -> None:
    c = cluster(make, count=1)
    c.run(400)
    assert all_done(c)
    c.hosts["node-000"].files = True  # someone ran the .run installer again
    c.hosts["node-000"].install = Install.RUN
    c.run(8, until=lambda: False)  # done nodes poll every idlePollSeconds
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "driver-reappeared")
    assert c.node("node-000")["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] == "false"
    assert c.cordoned("node-000")


# -- mig-manager -----------------------------------------------------------------------------------------------
def test_mig_manager_failed_is_recovered_once_by_the_toggle(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    c.mig_outcome["node-000"] = "fail-once"
    c.run(400)
    assert all_done(c)
    assert c.record("node-000")["state"] == "done"


@covers(Reason.MIG_FAILED)
def test_mig_manager_failed_again_after_the_toggle_fails_the_node(make: list[Cluster]) -> None:
    c = cluster(make, count=2, budget=1, flow="mig")
    c.mig_outcome["node-000"] = "failed"
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) in {("failed", "mig-failed")}
    assert c.cordoned("node-000")
    assert (c.state("node-001"), c.reason("node-001")) == ("waiting-slot", "rollout-halted")
    assert_safe(c)


def test_a_wedged_pending_is_recovered_by_the_toggle(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    c.mig_outcome["node-000"] = "wedged"
    c.run(600)
    assert all_done(c)


@covers(Reason.MIG_TIMEOUT)
def test_a_pending_wedged_for_good_times_out(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    c.mig_outcome["node-000"] = "wedged-always"
    c.run(800)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "mig-timeout")
    assert c.cordoned("node-000")


@covers(Reason.SMOKE_FAILED)
def test_a_failing_smoke_pod_fails_the_node(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    c.smoke_fails.add("node-000")
    c.node("node-000")["spec"]["taints"] = [mig_taint()]
    c.run(400)
    assert (c.state("node-000"), c.reason("node-000")) == ("failed", "smoke-failed")
    assert c.cordoned("node-000")
    assert [t["key"] for t in c.node("node-000")["spec"]["taints"]] == [MIG_PENDING_TAINT_KEY]


def test_dry_run_changes_nothing(make: list[Cluster]) -> None:
    c = cluster(make, count=2, settings=Settings(pool_budgets={"gpu": 1}, dry_run=True))
    c.run(20, until=lambda: False)
    assert not any(c.cordoned(n) for n in c.hosts)
    assert c.store.leases == {}
    assert all(c.hosts[n].uninstall_runs == 0 for n in c.hosts)
    assert "dry run" in c.node("node-000")["metadata"]["annotations"]["gpu-platform.io/node-agent.detail"]


def test_a_changed_desired_layout_after_done_starts_a_new_change(make: list[Cluster]) -> None:
    c = cluster(make, count=1, flow="mig")
    c.run(400)
    c.store.set_label("node-000", MIG_DESIRED_LABEL, "all-3g.40gb")
    c.run(20, until=lambda: c.state("node-000") == State.EVICTING)
    assert c.state("node-000") == State.EVICTING
    c.run(400)
    assert all_done(c)
    assert c.node("node-000")["metadata"]["labels"][MIG_LABEL] == "all-3g.40gb"


def test_every_failure_reason_has_a_fault_test() -> None:
    assert set(REASON_TESTS) == set(Reason)
    assert all(callable(globals()[name]) for name in REASON_TESTS.values())
