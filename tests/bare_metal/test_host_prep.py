"""The bare-metal host preparation scripts, run against a fake host (tests/bare_metal/hostprep_fakes.py).

Every step is run the way the component will run it (``command_text`` on the stdin of ``bash -s``)
at least twice: the first run changes the host and says so, the second changes nothing and says
``changed: nothing``. The recorded stub calls show what a real host would have seen.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from components.bare_metal.host_prep_steps import (
    SCRIPTS_DIR,
    STEPS,
    HostPrepInputError,
    HostPrepOutputError,
    command_text,
    get_step,
    parse_changed,
    parse_errors,
    parse_facts,
    resolve_env,
    script_text,
)
from components.catalog.node_agent import HOST_DRIVER_FILES
from tests.bare_metal.hostprep_fakes import FakeHost, RunResult

SHELLCHECK = Path(sys.executable).parent / "shellcheck"
SCRIPT_FILES = sorted(SCRIPTS_DIR.glob("*.sh"))


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path)


def changed(step: str, result: RunResult) -> list[str]:
    """The run's changes, checked against the names the step declares."""
    names = parse_changed(result.stdout)
    assert set(names) <= set(get_step(step).changes), names
    return names


def assert_failed(result: RunResult, code: int, *fragments: str) -> None:
    """Failed with ``code``, and each fragment is in an error line on stdout AND on stderr."""
    assert result.returncode == code, (result.stdout, result.stderr)
    errors = " ".join(parse_errors(result.stdout))
    for fragment in fragments:
        assert fragment in errors, errors
        assert fragment in result.stderr, result.stderr
    assert result.stdout_lines[-1].startswith("changed:"), result.stdout


# ---------------------------------------------------------------------------------------------
# The scripts as files, and what the component ships
# ---------------------------------------------------------------------------------------------


def test_every_step_has_its_script_and_the_steps_run_in_host_order() -> None:
    assert [step.name for step in STEPS] == [
        "nouveau",
        "sysctl",
        "driver-check",
        "nvidia-services",
        "container-toolkit",
    ]
    assert {SCRIPTS_DIR / step.script for step in STEPS} | {SCRIPTS_DIR / "lib.sh"} == set(SCRIPT_FILES)


@pytest.mark.parametrize("script", SCRIPT_FILES, ids=lambda p: p.name)
def test_shellcheck_is_clean_on_every_script(script: Path) -> None:
    proc = subprocess.run(
        [str(SHELLCHECK), "-x", script.name], cwd=SCRIPTS_DIR, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("step", [s.name for s in STEPS])
def test_shellcheck_is_clean_on_the_shipped_command(step: str, tmp_path: Path) -> None:
    shipped = tmp_path / f"{step}.sh"
    shipped.write_text(command_text(step, {}))
    proc = subprocess.run([str(SHELLCHECK), str(shipped)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("step", [s.name for s in STEPS])
def test_the_shipped_command_is_one_self_contained_script(step: str) -> None:
    text = command_text(step, {})
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    exported = [line for line in lines[1:] if line.startswith("export ")]
    assert lines[1 : 1 + len(exported)] == exported, "the inputs come right after the shebang"
    assert [line.split("=")[0].removeprefix("export ") for line in exported] == [i.name for i in get_step(step).inputs]
    assert 'lib.sh" #' not in text and "BASH_SOURCE" not in text, "lib.sh must be inlined, not sourced"
    assert "hp_init() {" in text


def test_a_change_to_an_input_or_to_lib_sh_changes_the_command_text() -> None:
    """pulumi-command re-runs a step when its command text changes."""
    assert command_text("sysctl", {"BPF_JIT_HARDEN": "0"}) != command_text("sysctl", {})
    assert (SCRIPTS_DIR / "lib.sh").read_text().splitlines()[-1] in script_text("sysctl")


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.name)
def test_the_inputs_and_defaults_the_script_reads_are_the_ones_declared(step) -> None:
    text = (SCRIPTS_DIR / step.script).read_text()
    read = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=\$\{\1:-([^}]*)\}$", text, flags=re.MULTILINE))
    assert read == {i.name: i.default for i in step.inputs}
    used = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]+)", text))
    undeclared = {name for name in used - set(read) if not name.startswith(("HP_", "BASH_"))}
    assert not undeclared, f"{step.script} reads environment variables it does not declare: {undeclared}"


@pytest.mark.parametrize(
    ("step", "name"),
    [(s.name, i.name) for s in STEPS for i in s.inputs if i.choices],
)
def test_the_script_itself_refuses_a_value_outside_the_choices(host: FakeHost, step: str, name: str) -> None:
    result = host.run_unchecked(step, {name: "bogus"})
    assert_failed(result, 2, f"{name} must be one of")
    assert parse_changed(result.stdout) == []
    assert host.calls() == [], "nothing may run before the inputs are checked"
    with pytest.raises(HostPrepInputError, match=name):
        resolve_env(step, {name: "bogus"})


def test_the_command_also_runs_as_a_bash_c_argument(host: FakeHost) -> None:
    """pulumi-command hands ``create`` to the login shell: ``bash -c <text>`` on RHEL."""
    first = host.run("sysctl", {"BPF_JIT_HARDEN": "0"}, as_argument=True)
    assert first.returncode == 0, first.stderr
    assert changed("sysctl", first) == ["sysctl-conf", "sysctl-live"]
    assert host.read(LIVE).strip() == "0"
    assert host.run("sysctl", {"BPF_JIT_HARDEN": "0"}, as_argument=True).stdout_lines[-1] == "changed: nothing"


def test_running_a_script_from_the_checkout_sources_lib_sh_next_to_it(host: FakeHost) -> None:
    result = host.run_from_disk(SCRIPTS_DIR / "sysctl.sh", {"BPF_JIT_HARDEN": "1"})
    assert result.returncode == 0, result.stderr
    assert changed("sysctl", result) == ["sysctl-conf", "sysctl-live"]


# ---------------------------------------------------------------------------------------------
# host_prep_steps: inputs and output parsing
# ---------------------------------------------------------------------------------------------


def test_resolve_env_fills_defaults_and_rejects_inputs_a_step_does_not_take() -> None:
    assert resolve_env("container-toolkit", {"ENABLE_CDI": "true"}) == {
        "CONTAINERD_CONFIG": "/etc/containerd/config.toml",
        "CTK_DROP_IN_CONFIG": "/etc/containerd/conf.d/99-nvidia.toml",
        "CONTAINERD_SERVICE": "containerd",
        "SET_AS_DEFAULT": "true",
        "ENABLE_CDI": "true",
    }
    with pytest.raises(HostPrepInputError, match=r"takes no input 'BPF_JIT_HARDEN'.*CONTAINERD_CONFIG"):
        resolve_env("container-toolkit", {"BPF_JIT_HARDEN": "1"})
    with pytest.raises(HostPrepInputError, match=r"unknown host preparation step 'drivers'.*driver-check"):
        get_step("drivers")


@pytest.mark.parametrize(
    ("step", "env", "message"),
    [
        ("sysctl", {"BPF_JIT_HARDEN": "2"}, "must be one of: 0, 1"),
        ("driver-check", {"REQUIRED_MIN_DRIVER": "latest"}, "REQUIRED_MIN_DRIVER"),
        ("container-toolkit", {"CONTAINERD_CONFIG": "etc/containerd/config.toml"}, "CONTAINERD_CONFIG"),
        ("nouveau", {"KERNEL_ARGS": "quiet; reboot"}, "KERNEL_ARGS"),
        ("nouveau", {"KERNEL_ARGS": "module.sig_enforce=0"}, "ALLOW_UNSIGNED_MODULES=true"),
        ("sysctl", {"BPF_JIT_HARDEN": "1\nreboot"}, "single line"),
    ],
)
def test_command_text_refuses_what_the_script_would_refuse(step: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(HostPrepInputError, match=re.escape(message)):
        command_text(step, env)


def test_command_text_quotes_values_for_the_shell() -> None:
    text = command_text("nouveau", {"KERNEL_ARGS": "rd.driver.blacklist=nouveau nouveau.modeset=0"})
    assert "export KERNEL_ARGS='rd.driver.blacklist=nouveau nouveau.modeset=0'\n" in text
    assert "export ALLOW_UNSIGNED_MODULES=false\n" in text


def test_parse_changed_reads_the_last_changed_line() -> None:
    assert parse_changed("x=1\nchanged: nothing\n") == []
    assert parse_changed("changed: nothing\nchanged: nouveau-blacklist, initramfs\n") == [
        "nouveau-blacklist",
        "initramfs",
    ]
    with pytest.raises(HostPrepOutputError, match="did not finish"):
        parse_changed("driver_version=580.159.04\n")


def test_parse_facts_and_errors() -> None:
    out = "gpu.0.name=NVIDIA H200\nnet.core.bpf_jit_harden = 1\nerror: driver too old\nchanged: nothing\n"
    assert parse_facts(out) == {"gpu.0.name": "NVIDIA H200"}
    assert parse_errors(out) == ["driver too old"]


# ---------------------------------------------------------------------------------------------
# nouveau.sh
# ---------------------------------------------------------------------------------------------


def test_nouveau_blacklists_and_rebuilds_the_initramfs_once(host: FakeHost) -> None:
    first = host.run("nouveau")
    assert first.returncode == 0, first.stderr
    assert changed("nouveau", first) == ["nouveau-blacklist", "initramfs"]
    conf = host.read("etc/modprobe.d/blacklist-nouveau.conf").splitlines()
    assert "blacklist nouveau" in conf and "options nouveau modeset=0" in conf

    second = host.run("nouveau")
    assert second.returncode == 0
    assert second.stdout_lines[-1] == "changed: nothing"
    assert host.calls("dracut") == [["dracut", "-f", "--regenerate-all"]]
    assert host.calls("grubby") == [], "no KERNEL_ARGS: grubby is left alone"
    assert parse_facts(second.stdout) == {"nouveau_loaded": "false", "reboot_required": "false"}


def test_nouveau_rewrites_a_blacklist_someone_edited(host: FakeHost) -> None:
    host.write("etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n")
    result = host.run("nouveau")
    assert changed("nouveau", result) == ["nouveau-blacklist", "initramfs"]
    assert "options nouveau modeset=0" in host.read("etc/modprobe.d/blacklist-nouveau.conf")


def test_nouveau_retries_a_failed_initramfs_rebuild_on_the_next_run(host: FakeHost) -> None:
    host.set_flag("dracut-fail")
    failed = host.run("nouveau")
    assert_failed(failed, 1, "dracut -f --regenerate-all failed", "re-run this step")
    assert changed("nouveau", failed) == ["nouveau-blacklist"]

    host.set_flag("dracut-fail", on=False)
    retried = host.run("nouveau")
    assert retried.returncode == 0
    assert changed("nouveau", retried) == ["initramfs"]
    assert host.run("nouveau").stdout_lines[-1] == "changed: nothing"
    assert len(host.calls("dracut")) == 2


def test_nouveau_adds_only_missing_kernel_args_to_every_boot_entry(host: FakeHost) -> None:
    env = {"KERNEL_ARGS": "rhgb rd.driver.blacklist=nouveau nouveau.modeset=0"}
    first = host.run("nouveau", env)
    assert "kernel-args" in changed("nouveau", first)
    assert (
        host.calls_matching("grubby", "--update-kernel=ALL", "--args=rd.driver.blacklist=nouveau nouveau.modeset=0")
        == 1
    )
    for args in host.grub_args():
        assert "rd.driver.blacklist=nouveau" in args.split() and "nouveau.modeset=0" in args.split()
    assert parse_facts(first.stdout)["reboot_required"] == "true"

    second = host.run("nouveau", env)
    assert second.stdout_lines[-1] == "changed: nothing"
    assert len([c for c in host.calls("grubby") if c[1] != "--info=ALL"]) == 1
    assert parse_facts(second.stdout)["reboot_required"] == "true", "still true until the host reboots"

    host.reboot()
    assert parse_facts(host.run("nouveau", env).stdout)["reboot_required"] == "false"


def test_nouveau_counts_an_arg_as_missing_when_one_boot_entry_lacks_it(host: FakeHost) -> None:
    host.set_grub_args(0, "ro quiet nouveau.modeset=0")
    result = host.run("nouveau", {"KERNEL_ARGS": "nouveau.modeset=0"})
    assert "kernel-args" in changed("nouveau", result)
    assert all("nouveau.modeset=0" in args.split() for args in host.grub_args())

    host.set_grub_args(1, "ro quiet nouveau.modeset=1")
    again = host.run("nouveau", {"KERNEL_ARGS": "nouveau.modeset=0"})
    assert "kernel-args" in changed("nouveau", again), "a different value is not the requested argument"
    assert host.grub_args()[1].split().count("nouveau.modeset=0") == 1
    assert "nouveau.modeset=1" not in host.grub_args()[1]


def test_nouveau_matches_whole_kernel_args_not_substrings(host: FakeHost) -> None:
    host.set_grub_args(0, "ro intel_iommu=on")
    host.set_grub_args(1, "ro intel_iommu=on")
    host.write("proc/cmdline", "BOOT_IMAGE=/vmlinuz ro intel_iommu=on\n")
    result = host.run("nouveau", {"KERNEL_ARGS": "iommu=on"})
    assert "kernel-args" in changed("nouveau", result)
    assert all(args.split()[-1] == "iommu=on" for args in host.grub_args())
    assert parse_facts(result.stdout)["reboot_required"] == "true"


def test_nouveau_unloads_a_loaded_nouveau(host: FakeHost) -> None:
    host.load_nouveau()
    result = host.run("nouveau")
    assert "nouveau-unloaded" in changed("nouveau", result)
    assert host.calls_matching("modprobe", "-r", "nouveau") == 1
    assert parse_facts(result.stdout) == {"nouveau_loaded": "false", "reboot_required": "false"}


def test_nouveau_in_use_means_reboot_required_not_failure(host: FakeHost) -> None:
    host.load_nouveau()
    host.set_flag("modprobe-busy")
    result = host.run("nouveau")
    assert result.returncode == 0
    assert "nouveau-unloaded" not in changed("nouveau", result)
    assert parse_facts(result.stdout) == {"nouveau_loaded": "true", "reboot_required": "true"}


def test_nouveau_refuses_unsigned_modules_without_permission(host: FakeHost) -> None:
    result = host.run_unchecked("nouveau", {"KERNEL_ARGS": "rd.driver.blacklist=nouveau module.sig_enforce=0"})
    assert_failed(result, 2, "module.sig_enforce=0", "ALLOW_UNSIGNED_MODULES=true")
    assert parse_changed(result.stdout) == []
    assert host.calls() == []
    assert not host.path("etc/modprobe.d/blacklist-nouveau.conf").exists()


def test_nouveau_sets_sig_enforce_off_when_allowed(host: FakeHost) -> None:
    result = host.run("nouveau", {"KERNEL_ARGS": "module.sig_enforce=0", "ALLOW_UNSIGNED_MODULES": "true"})
    assert result.returncode == 0, result.stderr
    assert host.calls_matching("grubby", "--update-kernel=ALL", "--args=module.sig_enforce=0") == 1


def test_nouveau_refuses_kernel_args_that_are_not_plain_arguments(host: FakeHost) -> None:
    result = host.run_unchecked("nouveau", {"KERNEL_ARGS": "quiet $(reboot)"})
    assert_failed(result, 2, "is not a plain kernel argument")
    assert host.calls() == []


# ---------------------------------------------------------------------------------------------
# sysctl.sh
# ---------------------------------------------------------------------------------------------

SYSCTL_CONF = "etc/sysctl.d/99-gpu-platform.conf"
LIVE = "proc/sys/net/core/bpf_jit_harden"


def test_sysctl_persists_and_applies_bpf_jit_harden_once(host: FakeHost) -> None:
    first = host.run("sysctl")
    assert first.returncode == 0, first.stderr
    assert changed("sysctl", first) == ["sysctl-conf", "sysctl-live"]
    conf = host.read(SYSCTL_CONF)
    assert "net.core.bpf_jit_harden = 1" in conf.splitlines()
    assert "failed to add device rules" in conf, "the file says why, for the next admin"
    assert host.read(LIVE).strip() == "1"

    second = host.run("sysctl")
    assert second.stdout_lines[-1] == "changed: nothing"
    assert host.calls("sysctl") == [["sysctl", "-p", str(host.path(SYSCTL_CONF))]]
    assert parse_facts(second.stdout) == {"bpf_jit_harden": "1"}


def test_sysctl_reapplies_when_the_live_value_drifted(host: FakeHost) -> None:
    host.run("sysctl")
    host.write(LIVE, "2\n")
    result = host.run("sysctl")
    assert changed("sysctl", result) == ["sysctl-live"]
    assert host.read(LIVE).strip() == "1"
    assert len(host.calls("sysctl")) == 2


def test_sysctl_can_turn_hardening_off_but_refuses_2(host: FakeHost) -> None:
    assert host.run("sysctl", {"BPF_JIT_HARDEN": "0"}).returncode == 0
    assert "net.core.bpf_jit_harden = 0" in host.read(SYSCTL_CONF)
    refused = host.run_unchecked("sysctl", {"BPF_JIT_HARDEN": "2"})
    assert_failed(refused, 2, "BPF_JIT_HARDEN=2 breaks GPU containers")
    assert "net.core.bpf_jit_harden = 0" in host.read(SYSCTL_CONF)


@pytest.mark.parametrize(
    "conflicting", ["etc/sysctl.d/99-zz-cis.conf", "etc/sysctl.conf", "usr/lib/sysctl.d/99-z.conf"]
)
def test_sysctl_refuses_when_a_file_read_later_at_boot_sets_2(host: FakeHost, conflicting: str) -> None:
    host.write(conflicting, "kernel.kptr_restrict = 2\nnet.core.bpf_jit_harden=2\n")
    result = host.run("sysctl")
    assert_failed(result, 1, f"/{conflicting} sets net.core.bpf_jit_harden=2", "would undo")
    assert not host.path(SYSCTL_CONF).exists()
    assert host.calls("sysctl") == []


def test_sysctl_ignores_a_file_that_ours_overrides(host: FakeHost) -> None:
    host.write("etc/sysctl.d/50-cis.conf", "net.core.bpf_jit_harden = 2\n")
    host.write("usr/lib/sysctl.d/99-zzz.conf", "# net.core.bpf_jit_harden = 2\n")
    assert host.run("sysctl").returncode == 0


def test_sysctl_fails_when_the_value_does_not_stick(host: FakeHost) -> None:
    host.set_flag("sysctl-ignored")
    assert_failed(host.run("sysctl"), 1, "still 2 after sysctl -p")


def test_sysctl_does_nothing_on_a_kernel_without_bpf_jit(host: FakeHost) -> None:
    host.path(LIVE).unlink()
    result = host.run("sysctl")
    assert result.returncode == 0
    assert parse_facts(result.stdout) == {"bpf_jit_harden": "unsupported"}
    assert changed("sysctl", result) == []


# ---------------------------------------------------------------------------------------------
# container-toolkit.sh
# ---------------------------------------------------------------------------------------------

DROP_IN = "etc/containerd/conf.d/99-nvidia.toml"


def test_container_toolkit_configures_containerd_and_restarts_it_once(host: FakeHost) -> None:
    first = host.run("container-toolkit")
    assert first.returncode == 0, first.stderr
    assert changed("container-toolkit", first) == ["containerd-config", "containerd-restart"]
    assert 'default_runtime_name = "nvidia"' in host.read(DROP_IN)
    assert "imports" in host.read("etc/containerd/config.toml")

    second = host.run("container-toolkit")
    assert second.stdout_lines[-1] == "changed: nothing"
    configure = [
        "runtime",
        "configure",
        "--runtime=containerd",
        f"--config={host.path('etc/containerd/config.toml')}",
        f"--drop-in-config={host.path(DROP_IN)}",
        "--set-as-default",
    ]
    assert host.calls("nvidia-ctk") == [["nvidia-ctk", *configure]] * 2, "nvidia-ctk runs every time"
    assert host.calls_matching("systemctl", "restart", "containerd") == 1


def test_container_toolkit_does_not_restart_a_containerd_already_configured(host: FakeHost) -> None:
    host.run_tool(
        "nvidia-ctk",
        "runtime",
        "configure",
        "--runtime=containerd",
        f"--config={host.path('etc/containerd/config.toml')}",
        f"--drop-in-config={host.path(DROP_IN)}",
        "--set-as-default",
    )
    result = host.run("container-toolkit")
    assert result.returncode == 0
    assert result.stdout_lines[-1] == "changed: nothing"
    assert host.calls("systemctl") == []


def test_container_toolkit_retries_a_failed_restart(host: FakeHost) -> None:
    host.set_unit("containerd", fail_start=True)
    failed = host.run("container-toolkit")
    assert_failed(failed, 1, "journalctl -u containerd", "retries the restart")
    assert changed("container-toolkit", failed) == ["containerd-config"]

    host.set_unit("containerd", fail_start=False)
    retried = host.run("container-toolkit")
    assert changed("container-toolkit", retried) == ["containerd-restart"]
    assert host.run("container-toolkit").stdout_lines[-1] == "changed: nothing"
    assert host.calls_matching("systemctl", "restart", "containerd") == 2


def test_container_toolkit_edits_the_main_config_for_old_toolkits(host: FakeHost) -> None:
    env = {"CTK_DROP_IN_CONFIG": "none", "SET_AS_DEFAULT": "false", "ENABLE_CDI": "true"}
    first = host.run("container-toolkit", env)
    assert changed("container-toolkit", first) == ["containerd-config", "containerd-restart"]
    ctk = host.calls("nvidia-ctk")[0]
    assert "--cdi.enabled" in ctk and "--set-as-default" not in ctk
    assert not any(arg.startswith("--drop-in-config") for arg in ctk)
    assert "nvidia-container-runtime" in host.read("etc/containerd/config.toml")
    assert host.run("container-toolkit", env).stdout_lines[-1] == "changed: nothing"
    assert parse_facts(first.stdout) == {"nvidia_runtime_default": "false"}


def test_container_toolkit_restarts_the_declared_service(host: FakeHost) -> None:
    host.set_unit("k0scontainerd", enabled=True, active=True)
    result = host.run("container-toolkit", {"CONTAINERD_SERVICE": "k0scontainerd"})
    assert result.returncode == 0
    assert host.calls_matching("systemctl", "restart", "k0scontainerd") == 1
    assert host.calls_matching("systemctl", "restart", "containerd") == 0


def test_container_toolkit_needs_the_toolkit_installed(host: FakeHost) -> None:
    host.remove_tool("nvidia-ctk")
    assert_failed(host.run("container-toolkit"), 1, "install the nvidia-container-toolkit package")


def test_container_toolkit_fails_when_nvidia_ctk_fails(host: FakeHost) -> None:
    host.set_flag("ctk-fail")
    assert_failed(host.run("container-toolkit"), 1, "nvidia-ctk runtime configure failed")
    assert host.calls("systemctl") == []


# ---------------------------------------------------------------------------------------------
# nvidia-services.sh
# ---------------------------------------------------------------------------------------------


def test_services_start_persistenced_once_and_skip_fabricmanager_without_nvswitch(host: FakeHost) -> None:
    first = host.run("nvidia-services")
    assert first.returncode == 0, first.stderr
    assert changed("nvidia-services", first) == ["nvidia-persistenced"]
    assert host.unit("nvidia-persistenced") == {"enabled": True, "active": True}
    assert parse_facts(first.stdout) == {"nvswitch": "false", "nvswitch_detected_by": "none"}

    second = host.run("nvidia-services")
    assert second.stdout_lines[-1] == "changed: nothing"
    assert host.calls_matching("systemctl", "enable", "--now", "nvidia-persistenced") == 1
    assert host.calls("nvidia-smi") == [] and host.calls("nv-fabricmanager") == []


def test_services_start_a_stopped_but_enabled_persistenced(host: FakeHost) -> None:
    host.set_unit("nvidia-persistenced", enabled=True, active=False)
    assert changed("nvidia-services", host.run("nvidia-services")) == ["nvidia-persistenced"]
    assert host.calls_matching("systemctl", "start", "nvidia-persistenced") == 1
    assert host.calls_matching("systemctl", "enable", "--now", "nvidia-persistenced") == 0


def test_services_fail_without_persistenced(host: FakeHost) -> None:
    host.set_unit("nvidia-persistenced", installed=False)
    assert_failed(host.run("nvidia-services"), 1, "nvidia-persistenced.service is not installed")


def test_services_start_fabricmanager_at_the_driver_version_on_nvswitch_hosts(host: FakeHost) -> None:
    host.set_gpu_count(8)
    host.add_nvswitch_devices()
    host.install_fabricmanager("580.159.04")
    first = host.run("nvidia-services")
    assert first.returncode == 0, first.stderr
    assert changed("nvidia-services", first) == ["nvidia-persistenced", "nvidia-fabricmanager"]
    assert parse_facts(first.stdout) == {
        "nvswitch": "true",
        "nvswitch_detected_by": "dev",
        "driver_version": "580.159.04",
        "fabricmanager_version": "580.159.04",
    }
    assert host.unit("nvidia-fabricmanager") == {"enabled": True, "active": True}
    assert host.run("nvidia-services").stdout_lines[-1] == "changed: nothing"
    assert host.calls_matching("systemctl", "enable", "--now", "nvidia-fabricmanager") == 1


def test_services_refuse_a_fabricmanager_that_is_not_the_driver_version(host: FakeHost) -> None:
    host.add_nvswitch_devices()
    host.install_fabricmanager("570.172.08")
    result = host.run("nvidia-services")
    assert_failed(result, 1, "fabric manager version 570.172.08 does not match driver version 580.159.04")
    assert "nvidia-fabric-manager-580.159.04" in result.stdout
    assert host.unit("nvidia-fabricmanager") == {"enabled": False, "active": False}


def test_services_need_fabricmanager_when_told_the_host_has_nvswitches(host: FakeHost) -> None:
    result = host.run("nvidia-services", {"NVSWITCH": "true"})
    assert_failed(result, 1, "needs the NVIDIA fabric manager", "nvidia-fabric-manager-580.159.04")
    assert parse_facts(result.stdout)["nvswitch_detected_by"] == "config"


def test_services_skip_fabricmanager_when_told_there_are_no_nvswitches(host: FakeHost) -> None:
    host.add_nvswitch_devices()
    result = host.run("nvidia-services", {"NVSWITCH": "false"})
    assert result.returncode == 0
    assert parse_facts(result.stdout)["nvswitch"] == "false"


@pytest.mark.parametrize(
    ("lines", "nvswitch"),
    [
        (["0000:18:00.0 0302: 10de:2335 (rev a1)", "0000:05:00.0 0680: 10de:22a3 (rev a1)"], "true"),
        (["0000:18:00.0 0302: 10de:2335 (rev a1)"], "false"),
    ],
)
def test_services_detect_nvswitches_with_lspci(host: FakeHost, lines: list[str], nvswitch: str) -> None:
    host.set_lspci(lines)
    host.install_fabricmanager("580.159.04")
    result = host.run("nvidia-services")
    assert result.returncode == 0, result.stderr
    facts = parse_facts(result.stdout)
    assert facts["nvswitch"] == nvswitch
    assert facts["nvswitch_detected_by"] == ("lspci" if nvswitch == "true" else "none")
    assert (host.calls_matching("nv-fabricmanager", "--version") == 1) == (nvswitch == "true")


def test_services_fail_when_fabricmanager_does_not_start(host: FakeHost) -> None:
    host.write("proc/driver/nvidia-nvswitch/devices/0000:05:00.0", "")
    host.install_fabricmanager("580.159.04")
    host.set_unit("nvidia-fabricmanager", fail_start=True)
    result = host.run("nvidia-services")
    assert_failed(result, 1, "journalctl -u nvidia-fabricmanager")
    assert parse_facts(result.stdout)["nvswitch_detected_by"] == "procfs"


# ---------------------------------------------------------------------------------------------
# driver-check.sh
# ---------------------------------------------------------------------------------------------


def test_driver_check_prints_what_the_real_h200_reported(host: FakeHost) -> None:
    result = host.run("driver-check", {"REQUIRED_MIN_DRIVER": "580.65.06", "EXPECTED_DRIVER_VERSION": "580.159.04"})
    assert result.returncode == 0, result.stdout
    assert parse_facts(result.stdout) == {
        "gpu.0.name": "NVIDIA H200",
        "gpu.0.memory_total": "143771 MiB",
        "gpu.0.pci_device_id": "0x233510DE",
        "gpu_count": "1",
        "driver_version": "580.159.04",
        "kernel_module_version": "580.159.04",
        "cuda_version": "13.0",
    }
    assert changed("driver-check", result) == []
    assert host.calls("nvidia-smi")[0] == [
        "nvidia-smi",
        "--query-gpu=driver_version,name,memory.total,pci.device_id",
        "--format=csv,noheader",
    ]


def test_driver_check_compares_versions_numerically(host: FakeHost) -> None:
    """580.159 is newer than 580.65, though "580.1" < "580.6" as text."""
    host.set_driver("580.9.1")
    assert_failed(host.run("driver-check", {"REQUIRED_MIN_DRIVER": "580.65.06"}), 1, "older than the required minimum")
    host.set_driver("580.65.6")
    assert host.run("driver-check", {"REQUIRED_MIN_DRIVER": "580.65.06"}).returncode == 0
    host.set_driver("580.65.08")
    assert_failed(host.run("driver-check", {"REQUIRED_MIN_DRIVER": "580.65.09"}), 1, "580.65.08 is older")


def test_driver_check_fails_below_the_cuda_minimum(host: FakeHost) -> None:
    host.set_gpu_count(8)
    host.set_driver("550.54.15")
    result = host.run("driver-check", {"REQUIRED_MIN_DRIVER": "580.65.06"})
    assert_failed(result, 1, "driver 550.54.15 is older than the required minimum 580.65.06")
    facts = parse_facts(result.stdout)
    assert facts["driver_version"] == "550.54.15" and facts["gpu_count"] == "8", "facts come before the verdict"


def test_driver_check_fails_when_the_driver_is_not_the_declared_one(host: FakeHost) -> None:
    result = host.run("driver-check", {"EXPECTED_DRIVER_VERSION": "580.95.05"})
    assert_failed(result, 1, "driver 580.159.04 is not the declared version 580.95.05")


def test_driver_check_reports_every_failed_check(host: FakeHost) -> None:
    host.set_driver("550.54.15")
    result = host.run("driver-check", {"REQUIRED_MIN_DRIVER": "580.65.06", "EXPECTED_DRIVER_VERSION": "580.95.05"})
    assert result.returncode == 1
    assert len(parse_errors(result.stdout)) == 2


def test_driver_check_fails_on_a_half_upgraded_driver(host: FakeHost) -> None:
    host.set_driver("580.159.04", kernel_module="580.95.05")
    result = host.run("driver-check")
    assert_failed(result, 1, "loaded kernel module is 580.95.05 but the user-space driver is 580.159.04")
    assert parse_facts(result.stdout)["kernel_module_version"] == "580.95.05"


def test_driver_check_fails_when_nvml_reports_a_version_mismatch(host: FakeHost) -> None:
    host.break_nvml("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.159", 18)
    assert_failed(host.run("driver-check"), 1, "Driver/library version mismatch", "reboot or reload the nvidia modules")


def test_driver_check_fails_without_gpus_or_driver(host: FakeHost) -> None:
    host.break_nvml("No devices were found", 6)
    assert_failed(host.run("driver-check"), 1, "nvidia-smi failed: No devices were found")
    host.remove_tool("nvidia-smi")
    assert_failed(host.run("driver-check"), 1, "the NVIDIA driver is not installed")


def test_driver_check_fails_when_gpus_disagree_on_the_driver(host: FakeHost) -> None:
    host.set_gpu_count(2)
    host.set_row(1, {"driver_version": "580.95.05"})
    assert_failed(host.run("driver-check"), 1, "the GPUs report different driver versions")


# driver-check.sh with HOST_DRIVER=absent: driverless hosts, the GPU Operator's driver container owns the driver
KERNEL_MODULES = "lib/modules/5.14.0-503.11.1.el9_5.x86_64"


def _driverless(host: FakeHost) -> FakeHost:
    """The fake host before any driver: no module loaded (the fake host ships none on disk)."""
    host.path("proc/driver/nvidia/version").unlink()
    host.write(f"{KERNEL_MODULES}/kernel/drivers/gpu/drm/ast/ast.ko.xz", "")
    return host


def test_driverless_check_passes_on_a_host_without_a_driver_and_reads_nothing_else(host: FakeHost) -> None:
    result = _driverless(host).run("driver-check", {"HOST_DRIVER": "absent"})
    assert result.returncode == 0, result.stdout
    facts = parse_facts(result.stdout)
    assert (facts["host_driver"], facts["driver_source"]) == ("absent", "none")
    assert changed("driver-check", result) == []
    assert host.calls() == [], "nvidia-smi is not called: the host has none"
    assert host.run("driver-check", {"HOST_DRIVER": "absent"}).returncode == 0


def test_driverless_check_accepts_the_operators_loaded_driver(host: FakeHost) -> None:
    """A re-run on a working node: the module is loaded by the driver container, whose root is there."""
    host.write("run/nvidia/driver/usr/bin/nvidia-smi", "")
    result = host.run("driver-check", {"HOST_DRIVER": "absent"})
    assert result.returncode == 0, result.stdout
    facts = parse_facts(result.stdout)
    assert (facts["driver_source"], facts["kernel_module_version"]) == ("operator", "580.159.04")


def test_driverless_check_fails_on_a_module_the_operator_did_not_load(host: FakeHost) -> None:
    assert_failed(
        host.run("driver-check", {"HOST_DRIVER": "absent"}),
        1,
        "an nvidia kernel module 580.159.04 is loaded but not by the GPU Operator's driver container",
    )


def test_the_operators_driver_root_is_the_catalogs_and_the_charts(host: FakeHost) -> None:
    import yaml

    from components.catalog.drivers import OPERATOR_DRIVER_ROOT
    from tests.support.chart_render import PINNED_CHART

    chart_values = yaml.safe_load((PINNED_CHART / "values.yaml").read_text())
    assert chart_values["hostPaths"]["driverInstallDir"] == OPERATOR_DRIVER_ROOT
    assert get_step("driver-check").input("OPERATOR_DRIVER_ROOT").default == OPERATOR_DRIVER_ROOT
    host.write("opt/operator-driver/usr/bin/nvidia-smi", "")  # another root: the one passed in counts
    result = host.run("driver-check", {"HOST_DRIVER": "absent", "OPERATOR_DRIVER_ROOT": "/opt/operator-driver"})
    assert parse_facts(result.stdout)["driver_source"] == "operator"


def test_the_driverless_check_looks_for_exactly_the_catalogs_host_driver_files() -> None:
    """One list of the files that mean a host driver: the node agent's (``HOST_DRIVER_FILES``), which the script's
    loop must name, no more and no fewer (the kernel modules it globs for besides are no files of the list)."""
    script = (SCRIPTS_DIR / "driver-check.sh").read_text(encoding="utf-8")
    (words,) = re.findall(r"^\s*for path in (/(?:[^;\n]|\\\n)+); do$", script, re.MULTILINE)  # absolute paths
    assert sorted(words.replace("\\\n", " ").split()) == sorted(HOST_DRIVER_FILES)


@pytest.mark.parametrize(
    "installed", [*(path.lstrip("/") for path in HOST_DRIVER_FILES), f"{KERNEL_MODULES}/extra/nvidia.ko.xz"]
)
def test_driverless_check_fails_on_an_installed_host_driver(host: FakeHost, installed: str) -> None:
    _driverless(host).write(installed, "")
    assert_failed(
        host.run("driver-check", {"HOST_DRIVER": "absent"}),
        1,
        f"a host NVIDIA driver is installed (/{installed}), but the GPU Operator owns the driver on this host",
    )


def test_driver_check_refuses_a_version_that_is_not_one(host: FakeHost) -> None:
    result = host.run_unchecked("driver-check", {"REQUIRED_MIN_DRIVER": "580.x"})
    assert_failed(result, 2, "REQUIRED_MIN_DRIVER must be a driver version")
    assert host.calls() == []
