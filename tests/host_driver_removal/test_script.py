"""Behaviour tests for components/host_driver_removal/host-driver-removal.sh.

Each test runs the real script with bash against a fake host root (stub modprobe/rmmod/systemctl/dpkg/rpm/
nvidia-uninstall operating on a temp dir) and a fake Kubernetes API (a stub kubectl over a JSON file), then
asserts what an operator would see: node labels, annotations and cordon state, the Lease, Events, evictions,
the host marker file, which host commands ran and which driver files are left.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest

from components.catalog import host_driver_removal as c
from components.catalog.host_driver_removal import ExitCode, Reason, RemovalState
from components.host_driver_removal.component import SCRIPT_PATH
from tests.host_driver_removal.hostfakes import NAMESPACE, Env, FakeCluster, FakeHost, script_process

NODE = "gpu-node-1"
OPERAND_KEYS = {
    f"{c.OPERAND_LABEL_PREFIX}{o}"
    for o in ("device-plugin", "dcgm-exporter", "operator-validator", "container-toolkit")
}


@pytest.fixture
def env(tmp_path: Path) -> Env:
    """A schedulable, opted-in GPU node with a pre-installed .run driver, operands and one GPU workload."""
    host = FakeHost.create(tmp_path / NODE)
    cluster = FakeCluster.create(tmp_path, host.root)
    cluster.add_node(NODE)
    cluster.add_operand_pods(NODE)
    host.install_run_driver()
    return Env(host, cluster, NODE)


def assert_handed_over(env: Env) -> None:
    labels = env.cluster.labels(env.node)
    assert labels[c.STATE_LABEL] == RemovalState.HANDED_OVER
    assert c.REASON_LABEL not in labels
    assert labels[c.GPU_DEPLOY_DRIVER_LABEL] == "true"
    assert env.host.driver_files() == []
    assert not env.host.module_loaded("nvidia")
    assert env.cluster.lease_holder() is None, "lock must be released after hand-over"
    assert env.host.marker()["state"] == RemovalState.HANDED_OVER


# ---------------------------------------------------------------------------------------------------------------
# Happy paths.
# ---------------------------------------------------------------------------------------------------------------
def test_fresh_run_driver_is_removed_and_node_handed_over_and_uncordoned(env: Env) -> None:
    env.cluster.add_pod("ml", "trainer", NODE, gpus=1)
    env.cluster.add_pod("ml", "mig-job", NODE, gpus=1, resource="nvidia.com/mig-1g.10gb")
    env.cluster.add_pod("web", "frontend", NODE)  # no GPU: must stay
    env.host.activate_services("nvidia-persistenced")

    result = env.run()

    assert result.returncode == ExitCode.OK, result.output
    assert_handed_over(env)
    assert not env.cluster.unschedulable(NODE), "node was schedulable before, so it is uncordoned"
    assert sorted(env.cluster.evictions()) == ["ml/mig-job", "ml/trainer"], "only GPU pods, no DaemonSet pods"
    assert "web/frontend" in env.cluster.pods_on(NODE)
    labels = env.cluster.labels(NODE)
    assert {k: labels[k] for k in OPERAND_KEYS} == dict.fromkeys(OPERAND_KEYS, "true"), "operands restored"
    annotations = env.cluster.annotations(NODE)
    assert annotations[c.ATTEMPT_ANNOTATION] == "1"
    assert annotations[c.DRIVER_VERSION_ANNOTATION] == "550.54.15"
    assert c.INITIAL_UNSCHEDULABLE_ANNOTATION not in annotations
    assert c.PAUSED_OPERANDS_ANNOTATION not in annotations
    assert env.host.calls_of("nvidia-uninstall") == [["nvidia-uninstall", "--silent"]]
    assert ["systemctl", "stop", "nvidia-persistenced"] in env.host.calls()
    assert env.host.active_services() == []
    assert env.host.reboots() == 0
    unloads = [call[-1] for call in env.host.calls_of("modprobe")]
    assert unloads == ["nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia"], "dependents before nvidia"
    assert env.cluster.event_reasons() == [
        c.EVENT_REASON_STARTED,
        c.EVENT_REASON_REMOVED,
        c.EVENT_REASON_HANDED_OVER,
    ]
    assert all(e["metadata"]["namespace"] == "default" for e in env.cluster.events())


def test_node_is_cordoned_and_operands_paused_while_the_driver_is_removed(env: Env) -> None:
    env.run()

    patches = [p["patch"] for p in env.cluster.patches()]
    draining = next(p for p in patches if p["metadata"]["labels"].get(c.STATE_LABEL) == RemovalState.DRAINING)
    assert draining["spec"] == {"unschedulable": True}
    assert draining["metadata"]["annotations"][c.INITIAL_UNSCHEDULABLE_ANNOTATION] == "false"
    assert {k for k, v in draining["metadata"]["labels"].items() if v == c.OPERAND_PAUSED_VALUE} == OPERAND_KEYS
    states = [p["metadata"]["labels"][c.STATE_LABEL] for p in patches if c.STATE_LABEL in p["metadata"]["labels"]]
    assert states == ["draining", "removing", "removed", "handed-over"]
    # Uncordon only comes with the final hand-over, after the operator's driver reported ready.
    assert [p.get("spec") for p in patches].index({"unschedulable": False}) == len(patches) - 1


def test_node_that_was_cordoned_before_stays_cordoned(tmp_path: Path) -> None:
    host = FakeHost.create(tmp_path / NODE)
    cluster = FakeCluster.create(tmp_path, host.root)
    cluster.add_node(NODE, unschedulable=True)
    cluster.set_operator(uncordons_on_driver_start=True)
    host.install_run_driver()
    env = Env(host, cluster, NODE)

    result = env.run()

    assert result.returncode == ExitCode.OK, result.output
    assert_handed_over(env)
    assert cluster.unschedulable(NODE), "an admin's cordon must survive the hand-over (and the driver manager)"
    assert "kept cordoned" in cluster.annotations(NODE)[c.DETAIL_ANNOTATION]


def test_rerun_after_hand_over_changes_nothing(env: Env) -> None:
    assert env.run().returncode == ExitCode.OK
    node_before = env.cluster.node(NODE)
    writes_before = len(env.cluster.write_calls())
    host_calls_before = len(env.host.mutating_calls())

    result = env.run()

    assert result.returncode == ExitCode.OK, result.output
    assert "already handed over" in result.output
    assert env.cluster.node(NODE) == node_before
    assert len(env.cluster.write_calls()) == writes_before
    assert len(env.host.mutating_calls()) == host_calls_before


def test_already_removed_driver_is_handed_over_without_uninstall_or_cordon(tmp_path: Path) -> None:
    host = FakeHost.create(tmp_path / NODE)  # no driver on the host
    cluster = FakeCluster.create(tmp_path, host.root)
    cluster.add_node(NODE)
    env = Env(host, cluster, NODE)

    result = env.run()

    assert result.returncode == ExitCode.OK, result.output
    labels = cluster.labels(NODE)
    assert labels[c.STATE_LABEL] == RemovalState.HANDED_OVER
    assert labels[c.GPU_DEPLOY_DRIVER_LABEL] == "true", "pre-installed must be replaced or the operator never acts"
    assert host.mutating_calls() == []
    assert not cluster.unschedulable(NODE)
    assert all("spec" not in p["patch"] for p in cluster.patches()), "no cordon for a node with nothing to remove"
    assert cluster.lease() is None, "no lock needed when nothing is disrupted"

    writes = len(cluster.write_calls())
    assert env.run().returncode == ExitCode.OK
    assert len(cluster.write_calls()) == writes, "re-run is idempotent"


def test_operator_driver_label_set_to_false_by_a_human_is_respected(tmp_path: Path) -> None:
    host = FakeHost.create(tmp_path / NODE)
    cluster = FakeCluster.create(tmp_path, host.root)
    cluster.add_node(NODE, driver_label="false")
    env = Env(host, cluster, NODE)

    assert env.run().returncode == ExitCode.OK
    assert cluster.labels(NODE)[c.GPU_DEPLOY_DRIVER_LABEL] == "false"


# ---------------------------------------------------------------------------------------------------------------
# Refusals.
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("manager", "with_run_traces", "reason"),
    [
        ("dpkg", False, Reason.PACKAGE_MANAGED),
        ("rpm", False, Reason.PACKAGE_MANAGED),
        ("dpkg", True, Reason.MIXED_INSTALL),
    ],
)
def test_package_managed_driver_is_skipped_and_nothing_is_removed(
    tmp_path: Path, manager: str, with_run_traces: bool, reason: Reason
) -> None:
    host = FakeHost.create(tmp_path / NODE)
    cluster = FakeCluster.create(tmp_path, host.root)
    cluster.add_node(NODE)
    host.install_package_driver(manager)
    if with_run_traces:
        host.write("/var/lib/nvidia/log", "550.54.15\n")
    cluster.add_pod("ml", "trainer", NODE, gpus=1)
    files_before = host.driver_files()

    result = Env(host, cluster, NODE).run()

    assert result.returncode == ExitCode.OK, result.output
    assert cluster.state(NODE) == RemovalState.SKIPPED
    assert cluster.reason(NODE) == reason
    assert host.driver_files() == files_before
    assert host.module_loaded("nvidia")
    assert host.mutating_calls() == []
    assert not cluster.unschedulable(NODE)
    assert cluster.evictions() == []
    assert cluster.labels(NODE)[c.GPU_DEPLOY_DRIVER_LABEL] == c.GPU_DEPLOY_DRIVER_PRE_INSTALLED
    assert cluster.event_reasons() == [c.EVENT_REASON_SKIPPED]


def test_node_without_opt_in_label_is_left_alone(tmp_path: Path) -> None:
    host = FakeHost.create(tmp_path / NODE)
    cluster = FakeCluster.create(tmp_path, host.root)
    cluster.add_node(NODE, opted_in=False)
    host.install_run_driver()

    result = Env(host, cluster, NODE).run()

    assert result.returncode == ExitCode.OK
    assert "not touching it" in result.output
    assert cluster.write_calls() == []
    assert host.mutating_calls() == []


# ---------------------------------------------------------------------------------------------------------------
# Failures.
# ---------------------------------------------------------------------------------------------------------------
def test_uninstall_failure_marks_failed_keeps_cordon_emits_event_and_halts_rollout(env: Env) -> None:
    env.host.fail_uninstall(rc=1)

    result = env.run()

    assert result.returncode == ExitCode.FAILED, result.output
    assert env.cluster.state(NODE) == RemovalState.FAILED
    assert env.cluster.reason(NODE) == Reason.UNINSTALL_FAILED
    assert env.cluster.unschedulable(NODE), "driver was touched: stay cordoned"
    detail = env.cluster.annotations(NODE)[c.DETAIL_ANNOTATION]
    assert "exited 1" in detail
    assert "fake uninstall failure" in detail, "the uninstaller's own error is kept for the operator"
    failed = [e for e in env.cluster.events() if e["reason"] == c.EVENT_REASON_FAILED]
    assert len(failed) == 1
    assert failed[0]["type"] == "Warning"
    assert failed[0]["involvedObject"]["kind"] == "Node"
    assert failed[0]["involvedObject"]["name"] == NODE
    assert failed[0]["message"].startswith("uninstall-failed")
    assert env.cluster.labels(NODE)[c.GPU_DEPLOY_DRIVER_LABEL] == c.GPU_DEPLOY_DRIVER_PRE_INSTALLED
    assert env.host.marker()["state"] == RemovalState.FAILED
    lease = env.cluster.lease()
    assert lease is not None
    assert lease["metadata"]["annotations"][c.LOCK_HALTED_ANNOTATION] == NODE

    rerun = env.run()
    assert rerun.returncode == ExitCode.FAILED
    assert env.host.calls_of("nvidia-uninstall") == [["nvidia-uninstall", "--silent"]], "failed is terminal"


def test_halted_rollout_keeps_other_nodes_pending_even_after_lock_expiry(env: Env, tmp_path: Path) -> None:
    env.cluster.set_lease("gpu-node-0", timedelta(hours=5), 60, halted_by="gpu-node-0")

    result = env.run()

    assert result.returncode == ExitCode.RETRY_LATER, result.output
    assert env.cluster.state(NODE) == RemovalState.PENDING
    assert env.cluster.reason(NODE) == Reason.ROLLOUT_HALTED
    assert "gpu-node-0" in env.cluster.annotations(NODE)[c.DETAIL_ANNOTATION]
    assert env.host.mutating_calls() == []
    assert env.cluster.lease_holder() == "gpu-node-0"


def test_eviction_timeout_fails_uncordons_restores_operands_and_releases_lock(env: Env) -> None:
    env.cluster.add_pod("ml", "guarded", NODE, gpus=1, pdb_blocks_eviction=True)

    result = env.run(EVICTION_TIMEOUT_SECONDS="1")

    assert result.returncode == ExitCode.FAILED, result.output
    assert env.cluster.state(NODE) == RemovalState.FAILED
    assert env.cluster.reason(NODE) == Reason.EVICTION_TIMEOUT
    assert "ml/guarded" in env.cluster.annotations(NODE)[c.DETAIL_ANNOTATION]
    assert not env.cluster.unschedulable(NODE), "driver untouched: node goes back to service"
    labels = env.cluster.labels(NODE)
    assert {k: labels[k] for k in OPERAND_KEYS} == dict.fromkeys(OPERAND_KEYS, "true")
    assert c.INITIAL_UNSCHEDULABLE_ANNOTATION not in env.cluster.annotations(NODE)
    assert env.cluster.lease_holder() is None
    assert c.LOCK_HALTED_ANNOTATION not in (env.cluster.lease() or {}).get("metadata", {}).get("annotations", {})
    assert env.host.mutating_calls() == []
    assert env.host.driver_files() != []
    assert "ml/guarded" in env.cluster.pods_on(NODE)
    assert c.EVENT_REASON_FAILED in env.cluster.event_reasons()


def test_sigterm_while_draining_restores_the_node_and_releases_the_lock(env: Env) -> None:
    env.cluster.add_pod("ml", "guarded", NODE, gpus=1, pdb_blocks_eviction=True)
    proc = script_process(env, EVICTION_TIMEOUT_SECONDS="60")
    try:
        deadline = time.monotonic() + 30
        while env.cluster.state(NODE) != RemovalState.DRAINING:
            assert proc.poll() is None and time.monotonic() < deadline, "script never reached draining"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()

    assert proc.returncode == 143, output
    assert env.cluster.state(NODE) == RemovalState.PENDING
    assert not env.cluster.unschedulable(NODE)
    labels = env.cluster.labels(NODE)
    assert {k: labels[k] for k in OPERAND_KEYS} == dict.fromkeys(OPERAND_KEYS, "true")
    assert env.cluster.lease_holder() is None
    assert env.host.mutating_calls() == []


def test_operator_driver_never_ready_keeps_node_cordoned(env: Env) -> None:
    env.cluster.set_operator(installs_driver=False)

    result = env.run(DRIVER_READY_TIMEOUT_SECONDS="1")

    assert result.returncode == ExitCode.FAILED, result.output
    assert env.cluster.reason(NODE) == Reason.DRIVER_NOT_READY
    assert env.cluster.unschedulable(NODE), "no working driver: do not send GPU pods here"
    assert env.cluster.labels(NODE)[c.GPU_DEPLOY_DRIVER_LABEL] == "true"
    assert env.host.driver_files() == []


def test_stale_driver_ready_file_from_the_host_driver_is_not_trusted(env: Env) -> None:
    env.host.write(c.HOST_DRIVER_READY_FILE, "IS_HOST_DRIVER=false\n")  # left over; operator not actually ready
    env.cluster.set_operator(installs_driver=False)

    result = env.run(DRIVER_READY_TIMEOUT_SECONDS="1")

    assert env.cluster.reason(NODE) == Reason.DRIVER_NOT_READY, result.output
    assert env.cluster.unschedulable(NODE)


# ---------------------------------------------------------------------------------------------------------------
# Stuck module and the reboot guard.
# ---------------------------------------------------------------------------------------------------------------
def _run_until_reboot(env: Env) -> str:
    env.host.stick_modules("nvidia")
    boot = env.host.boot_id()
    result = env.run()
    assert result.returncode == ExitCode.REBOOT_PENDING, result.output
    assert env.host.reboots() == 1
    assert env.cluster.state(NODE) == RemovalState.REBOOTING
    assert env.cluster.reason(NODE) == Reason.MODULES_BUSY
    assert env.cluster.annotations(NODE)[c.REBOOT_BOOT_ID_ANNOTATION] == boot
    assert env.host.marker()["boot_id"] == boot
    assert env.host.marker()["state"] == RemovalState.REBOOTING
    assert env.cluster.unschedulable(NODE)
    assert env.host.driver_files() == [], "user space is removed before the reboot"
    assert env.cluster.lease_holder() == NODE, "the lock is held across the reboot"
    return boot


def test_stuck_module_reboots_once_and_fails_if_module_survives_the_reboot(env: Env) -> None:
    _run_until_reboot(env)
    env.host.reboot(module_survives=True)

    result = env.run()

    assert result.returncode == ExitCode.FAILED, result.output
    assert env.host.reboots() == 1, "never a second reboot"
    assert env.cluster.state(NODE) == RemovalState.FAILED
    assert env.cluster.reason(NODE) == Reason.MODULE_STUCK
    assert "initramfs" in env.cluster.annotations(NODE)[c.DETAIL_ANNOTATION]
    assert env.cluster.unschedulable(NODE)
    assert env.cluster.labels(NODE)[c.GPU_DEPLOY_DRIVER_LABEL] == c.GPU_DEPLOY_DRIVER_PRE_INSTALLED

    assert env.run().returncode == ExitCode.FAILED
    assert env.host.reboots() == 1, "still no reboot loop on later restarts"


def test_stuck_module_reboots_once_and_hands_over_when_module_is_gone(env: Env) -> None:
    _run_until_reboot(env)
    env.host.reboot(module_survives=False)

    result = env.run()

    assert result.returncode == ExitCode.OK, result.output
    assert env.host.reboots() == 1
    assert_handed_over(env)
    assert not env.cluster.unschedulable(NODE)
    assert c.REBOOT_BOOT_ID_ANNOTATION not in env.cluster.annotations(NODE)
    assert env.host.calls_of("nvidia-uninstall") == [["nvidia-uninstall", "--silent"]], "uninstall ran once"


def test_restart_on_the_same_boot_after_requesting_a_reboot_does_not_reboot_again(env: Env) -> None:
    _run_until_reboot(env)  # reboot requested but the host never went down

    result = env.run()

    assert result.returncode == ExitCode.FAILED, result.output
    assert env.host.reboots() == 1
    assert env.cluster.reason(NODE) == Reason.REBOOT_NOT_PERFORMED
    assert env.cluster.unschedulable(NODE)


def test_reboot_disabled_writes_sentinel_and_waits_for_an_external_reboot(env: Env) -> None:
    env.host.stick_modules("nvidia")

    result = env.run(ALLOW_REBOOT="false")

    assert result.returncode == ExitCode.REBOOT_PENDING, result.output
    assert env.host.reboots() == 0
    assert env.host.exists(c.HOST_REBOOT_SENTINEL)
    assert env.cluster.state(NODE) == RemovalState.REBOOTING

    env.host.reboot(module_survives=False)  # e.g. kured
    assert env.run(ALLOW_REBOOT="false").returncode == ExitCode.OK
    assert_handed_over(env)
    assert env.host.reboots() == 0


def test_lost_node_labels_resume_from_the_host_marker_without_second_reboot(env: Env) -> None:
    _run_until_reboot(env)
    env.host.reboot(module_survives=True)

    def drop_labels(data: dict) -> None:
        meta = data["nodes"][NODE]["metadata"]
        meta["labels"].pop(c.STATE_LABEL)
        meta["annotations"].pop(c.REBOOT_BOOT_ID_ANNOTATION)

    env.cluster.update(drop_labels)

    result = env.run()

    assert "resuming from the marker" in result.output
    assert env.host.reboots() == 1
    assert env.cluster.reason(NODE) == Reason.MODULE_STUCK


# ---------------------------------------------------------------------------------------------------------------
# One node at a time.
# ---------------------------------------------------------------------------------------------------------------
def test_lock_held_by_another_node_leaves_node_pending_and_host_untouched(env: Env) -> None:
    env.cluster.set_lease("gpu-node-0", timedelta(seconds=5), 1800)
    env.cluster.add_pod("ml", "trainer", NODE, gpus=1)

    result = env.run(LOCK_WAIT_TIMEOUT_SECONDS="1")

    assert result.returncode == ExitCode.RETRY_LATER, result.output
    assert env.cluster.state(NODE) == RemovalState.PENDING
    assert env.cluster.reason(NODE) == Reason.LOCK_HELD
    assert "gpu-node-0" in env.cluster.annotations(NODE)[c.DETAIL_ANNOTATION]
    assert not env.cluster.unschedulable(NODE)
    assert env.cluster.evictions() == []
    assert env.host.mutating_calls() == []
    assert env.host.driver_files() != []
    assert env.cluster.lease_holder() == "gpu-node-0"
    assert env.cluster.labels(NODE)[c.GPU_DEPLOY_DRIVER_LABEL] == c.GPU_DEPLOY_DRIVER_PRE_INSTALLED


def test_pending_node_proceeds_once_the_lock_is_free(env: Env) -> None:
    env.cluster.set_lease("gpu-node-0", timedelta(seconds=5), 1800)
    assert env.run().returncode == ExitCode.RETRY_LATER

    env.cluster.update(lambda d: d["leases"][f"{NAMESPACE}/{c.LOCK_LEASE_NAME}"]["spec"].pop("holderIdentity"))
    assert env.run().returncode == ExitCode.OK
    assert_handed_over(env)


def test_expired_lock_of_a_crashed_node_is_taken_over(env: Env) -> None:
    env.cluster.set_lease("gpu-node-0", timedelta(hours=2), 60)

    result = env.run()

    assert result.returncode == ExitCode.OK, result.output
    assert "taking over" in result.output
    assert_handed_over(env)
    lease = env.cluster.lease()
    assert lease is not None
    assert lease["spec"]["leaseTransitions"] == 4


def test_two_nodes_never_hold_the_lock_together(tmp_path: Path) -> None:
    host_a = FakeHost.create(tmp_path / "a")
    host_b = FakeHost.create(tmp_path / "b")
    cluster = FakeCluster.create(tmp_path, host_a.root)
    for name, host in (("node-a", host_a), ("node-b", host_b)):
        cluster.add_node(name)
        host.install_run_driver()
    host_a.stick_modules("nvidia")  # node-a stops mid-way (rebooting), holding the lock

    assert Env(host_a, cluster, "node-a").run().returncode == ExitCode.REBOOT_PENDING
    result_b = Env(host_b, cluster, "node-b").run()

    assert result_b.returncode == ExitCode.RETRY_LATER, result_b.output
    assert cluster.state("node-b") == RemovalState.PENDING
    assert host_b.mutating_calls() == []
    assert not cluster.unschedulable("node-b")


# ---------------------------------------------------------------------------------------------------------------
# Dry run.
# ---------------------------------------------------------------------------------------------------------------
def test_dry_run_lists_the_steps_and_changes_nothing(env: Env) -> None:
    env.cluster.add_pod("ml", "trainer", NODE, gpus=1)
    env.host.activate_services("nvidia-persistenced")
    node_before = env.cluster.node(NODE)
    files_before = env.host.driver_files()

    result = env.run(DRY_RUN="true", EVICTION_TIMEOUT_SECONDS="1")

    assert result.returncode == ExitCode.OK, result.output
    for step in (
        "would acquire lock",
        "cordon",
        "would pause operand labels",
        "would evict GPU pods (timeout 1s): ml/trainer",
        "would stop host services",
        "would unload kernel modules: nvidia_drm nvidia_modeset nvidia_uvm nvidia",
        "would run on host: nvidia-uninstall --silent",
        "would set nvidia.com/gpu.deploy.driver=true",
        "uncordon",
        "no changes made",
    ):
        assert step in result.output
    assert env.cluster.node(NODE) == node_before
    assert env.cluster.write_calls() == []
    assert env.cluster.lease() is None
    assert env.host.mutating_calls() == []
    assert env.host.calls_of("systemctl") == []
    assert env.host.driver_files() == files_before
    assert env.host.active_services() == ["nvidia-persistenced"]
    assert env.host.marker() == {}


# ---------------------------------------------------------------------------------------------------------------
# Contract and static checks.
# ---------------------------------------------------------------------------------------------------------------
def test_script_is_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck") or str(Path(__file__).parents[2] / ".venv" / "bin" / "shellcheck")
    fakes = sorted(str(p) for p in (Path(__file__).parent / "fakes" / "bin").iterdir())
    proc = subprocess.run([shellcheck, "-x", str(SCRIPT_PATH), *fakes], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_contract_env_defaults_are_the_script_defaults() -> None:
    script = SCRIPT_PATH.read_text()
    defaults = dict(re.findall(r'^([A-Z_]+)="\$\{\1:-([^}]*)\}"$', script, flags=re.MULTILINE))
    assert defaults == c.env_defaults()


def test_contract_names_are_the_ones_the_script_writes() -> None:
    script = SCRIPT_PATH.read_text()
    for reason in Reason:
        assert re.search(rf"\b{re.escape(reason.value)}\b", script), f"reason {reason} unused by the script"
    for state in RemovalState:
        assert re.search(rf"\b{re.escape(state.value)}\b", script), f"state {state} unused by the script"
    assert " ".join(c.NVIDIA_MODULES_UNLOAD_ORDER) in script


@pytest.mark.parametrize("value", [*Reason, *RemovalState, c.OPT_IN_VALUE, c.OPERAND_PAUSED_VALUE])
def test_label_values_are_valid_kubernetes_label_values(value: str) -> None:
    assert len(value) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value)


def test_missing_node_name_is_a_config_error_that_changes_nothing(env: Env) -> None:
    result = env.run(NODE_NAME="")

    assert result.returncode == ExitCode.CONFIG_ERROR
    assert "NODE_NAME is required" in result.output
    assert env.cluster.calls() == []
    assert env.host.calls() == []


def test_retry_after_a_failure_keeps_the_schedulability_from_before_the_first_attempt(env: Env) -> None:
    """The documented retry (clear the state label and the halted Lease, restart) uncordons a node that
    was schedulable before the first attempt, although the failure left it cordoned."""
    env.host.fail_uninstall(rc=1)
    assert env.run().returncode == ExitCode.FAILED
    assert env.cluster.unschedulable(NODE)

    env.host.fail_uninstall(rc=0)

    def reset(data: dict) -> None:
        labels = data["nodes"][NODE]["metadata"]["labels"]
        labels.pop(c.STATE_LABEL, None)
        labels.pop(c.REASON_LABEL, None)
        data["leases"].clear()

    env.cluster.update(reset)
    result = env.run()

    assert env.cluster.state(NODE) == RemovalState.HANDED_OVER, result.output
    assert not env.cluster.unschedulable(NODE), "it was schedulable before the first attempt"
