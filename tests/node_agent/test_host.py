"""The executor's host code on a real file system: install kinds as NVIDIA's installer leaves them.

The host root is a temporary directory laid out as nvidia-installer leaves a machine (NVIDIA/nvidia-installer
backup.c: a ``.run`` install writes ``/var/lib/nvidia/log``; ``nvidia-uninstall`` removes ``/var/lib/nvidia``
and leaves ``/var/log/nvidia-installer.log``). The uninstaller is a real script (no chroot: the tests run the
host's path directly).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from components.catalog.node_agent import (
    HOST_DRIVER_FILES,
    HOST_RUN_BACKUP_LOG,
    HOST_RUN_INSTALL_LOG,
    HOST_UNINSTALLER,
)
from components.node_agent.agent.executor.host import RealHost, Result


class LocalHost(RealHost):
    """RealHost whose commands run the host's files directly instead of through ``chroot`` (no root needed)."""

    def _chroot(self, *argv: str) -> list[str]:
        return [self.root + argv[0], *argv[1:]] if argv[0].startswith("/") else list(argv)


def touch(root: Path, path: str, text: str = "x") -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def run_install(root: Path) -> None:
    for path in (HOST_DRIVER_FILES[0], HOST_DRIVER_FILES[1], HOST_RUN_BACKUP_LOG, HOST_RUN_INSTALL_LOG):
        touch(root, path)
    uninstaller = root / HOST_UNINSTALLER.lstrip("/")
    uninstaller.parent.mkdir(parents=True, exist_ok=True)
    # What do_uninstall does to the files (backup.c), with a chatty stderr well past a pipe's 64 KiB.
    uninstaller.write_text(
        "#!/bin/sh\n"
        f'ROOT="{root}"\n'
        "i=0; while [ $i -lt 3000 ]; do echo 'WARNING: unable to restore a backed up file, continuing' >&2; "
        "i=$((i+1)); done\n"
        f'rm -f "$ROOT{HOST_DRIVER_FILES[0]}" "$ROOT{HOST_DRIVER_FILES[1]}" "$ROOT{HOST_UNINSTALLER}"\n'
        f'rm -rf "$ROOT/var/lib/nvidia"\n'
        f'echo uninstalled > "$ROOT/var/log/nvidia-uninstall.log"\n'
    )
    uninstaller.chmod(uninstaller.stat().st_mode | stat.S_IEXEC)


def test_a_run_install_is_known_by_the_installers_own_record(tmp_path: Path) -> None:
    run_install(tmp_path)
    facts = LocalHost(str(tmp_path)).inspect()
    assert (facts.install, facts.uninstaller, facts.files_remain) == ("run", True, True)


def test_finding_1_after_nvidia_uninstall_the_host_has_no_driver_although_the_install_log_stays(tmp_path: Path) -> None:
    run_install(tmp_path)
    host = LocalHost(str(tmp_path))
    rc, stderr = host.uninstall(timeout=60)
    assert rc == 0, stderr
    assert (tmp_path / HOST_RUN_INSTALL_LOG.lstrip("/")).exists()  # the uninstaller leaves it
    facts = host.inspect()
    assert (facts.install, facts.files_remain) == ("none", False)
    # The operator's driver container writes the host's /var/log/nvidia-installer.log again: still no host driver.
    touch(tmp_path, HOST_RUN_INSTALL_LOG, "operator driver container install log")
    assert host.inspect().install == "none"


def test_finding_7_an_uninstaller_with_more_stderr_than_a_pipe_holds_is_not_blocked(tmp_path: Path) -> None:
    run_install(tmp_path)
    rc, stderr = LocalHost(str(tmp_path)).uninstall(timeout=30)
    assert rc == 0  # 124 would mean it blocked on a full stderr pipe until the timeout
    assert "continuing" in stderr and len(stderr) <= 2000


def test_driver_files_without_the_installers_record_are_unknown_not_run(tmp_path: Path) -> None:
    touch(tmp_path, HOST_DRIVER_FILES[0])
    touch(tmp_path, HOST_RUN_INSTALL_LOG)
    assert LocalHost(str(tmp_path)).inspect().install == "unknown"


def _dpkg(owned: set[str], rc: int = 0) -> object:
    def runner(argv: Sequence[str]) -> Result:
        if rc:
            return Result(rc, "", "dpkg: error: parsing file '/var/lib/dpkg/status'")
        path = argv[-1]
        if path in owned:
            return Result(0, f"libnvidia-compute-580: {path}\n", "")
        return Result(1, "", f"dpkg-query: no path found matching pattern {path}")

    return runner


def test_package_owned_files_are_package_and_with_the_record_mixed(tmp_path: Path) -> None:
    touch(tmp_path, "/usr/bin/dpkg")
    touch(tmp_path, HOST_DRIVER_FILES[1])
    host = LocalHost(str(tmp_path), runner=_dpkg({HOST_DRIVER_FILES[1]}))  # type: ignore[arg-type]
    assert host.inspect().install == "package"
    touch(tmp_path, HOST_RUN_BACKUP_LOG)
    assert host.inspect().install == "mixed"


def test_a_dpkg_that_cannot_answer_is_an_exec_error_never_no_owner(tmp_path: Path) -> None:
    touch(tmp_path, "/usr/bin/dpkg")
    touch(tmp_path, HOST_DRIVER_FILES[0])
    host = LocalHost(str(tmp_path), runner=_dpkg(set(), rc=2))  # type: ignore[arg-type]
    facts = host.inspect()
    assert facts.install == "exec-error"
    assert "parsing file" in facts.detail


def test_a_process_holding_a_gpu_device_is_found(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "4242" / "fd").mkdir(parents=True)
    (proc / "4242" / "comm").write_text("python\n")
    os.symlink("/dev/nvidia0", proc / "4242" / "fd" / "7")
    (proc / "17" / "fd").mkdir(parents=True)
    os.symlink("/dev/null", proc / "17" / "fd" / "0")
    host = LocalHost(str(tmp_path / "root"), proc=str(proc))
    assert host.gpu_in_use() == "4242 python"


def test_the_marker_survives_and_boot_and_modules_come_from_proc(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel" / "random").mkdir(parents=True)
    (proc / "sys" / "kernel" / "random" / "boot_id").write_text("b-1\n")
    (proc / "modules").write_text("nvidia_uvm 1 0 - Live 0x0\n")
    host = LocalHost(str(tmp_path / "root"), proc=str(proc))
    host.write_marker({"id": "r1", "boot_before": "b-0"})
    assert host.read_marker() == {"id": "r1", "boot_before": "b-0"}
    facts = host.inspect()
    assert (facts.boot_id, facts.modules_loaded, facts.marker_ok) == ("b-1", True, True)
