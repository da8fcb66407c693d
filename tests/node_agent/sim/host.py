"""A simulated GPU host under the **real** executor host code: only the file system and processes are modelled.

:class:`SimHost` subclasses the shipped ``RealHost`` and replaces its window on the machine (which paths
exist, /proc, the commands it runs), so the install-kind rules under test are the shipped ones. What the
host holds follows NVIDIA's installer (NVIDIA/nvidia-installer, read at its default branch):

- a ``.run`` install leaves ``/var/lib/nvidia/log`` (backup.c ``init_backup``), ``/usr/bin/nvidia-uninstall``,
  the driver files and ``/var/log/nvidia-installer.log`` (nvidia-installer.h ``DEFAULT_LOG_FILE_NAME``);
- ``nvidia-uninstall`` removes the installed files and the whole ``/var/lib/nvidia`` directory
  (backup.c ``do_uninstall``: ``remove_directory(op, BACKUP_DIRECTORY)``), writes
  ``/var/log/nvidia-uninstall.log`` and leaves ``/var/log/nvidia-installer.log`` where it was; it runs
  ``rmmod nvidia`` but "don't abort if this fails" (a module in use stays loaded until a reboot);
- the operator's driver container mounts the host's ``/var/log`` and writes ``nvidia-installer.log`` there
  (gpu-operator v26.7.0 assets/state-driver/0500_daemonset.yaml, volume ``var-log``), and loads its modules
  (they show in ``/proc/modules``); its driver files live under ``/run/nvidia/driver``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from components.catalog.node_agent import (
    HOST_DRIVER_FILES,
    HOST_RUN_BACKUP_LOG,
    HOST_RUN_INSTALL_LOG,
    HOST_UNINSTALLER,
)
from components.node_agent.agent.executor.host import RealHost, Result

UNINSTALL_LOG = "/var/log/nvidia-uninstall.log"
RUN_FILES = (HOST_DRIVER_FILES[0], HOST_DRIVER_FILES[1], HOST_UNINSTALLER, HOST_RUN_BACKUP_LOG, HOST_RUN_INSTALL_LOG)


class SimHost(RealHost):
    """One node's host; ``world`` is asked whether GPU processes run (pods the kubelet runs on the node)."""

    def __init__(self, name: str, boot: int = 1, install: str = "run") -> None:
        super().__init__("/sim", runner=self._runner)
        self.name = name
        self.files: set[str] = set()
        self.owned: set[str] = set()  #: files a package owns (dpkg -S answers with a package)
        self.host_modules = False  #: the host driver's modules are loaded
        self.operator_modules = False  #: the operator's driver container loaded its modules
        self.modules_busy = False  #: rmmod fails (in use): only a reboot unloads them
        self.boot = boot
        self.marker: dict[str, Any] = {}
        self.disk_full = False
        self.dpkg_broken = False
        self.uninstall_rc = 0
        self.uninstall_stderr_bytes = 0
        self.gpu_busy: Callable[[], str] = lambda: ""
        self.on_reboot: Callable[[], None] = lambda: None
        self.uninstall_runs = 0
        self.reboots_requested = 0
        self.sentinel = False
        self.mig_layout = "all-disabled"  #: what nvidia-mig-parted last applied
        self.stuck_module = False  #: the module loads again at every boot (initramfs): module-stuck
        self.ignore_reboot = False  #: ``systemctl reboot`` returns 0 and nothing happens
        self.leave_files = False  #: the uninstaller leaves a driver file behind (files-remain)
        self.persistenced = False  #: the host driver's nvidia-persistenced runs (a .run install sets it up)
        self.install(install)

    def install(self, kind: str) -> None:
        """Put a driver on the host the way ``kind`` installs it."""
        if kind in ("run", "mixed"):
            self.files |= set(RUN_FILES)
            self.host_modules = True
            self.persistenced = True
        if kind in ("package", "mixed"):
            self.files |= {HOST_DRIVER_FILES[0], HOST_DRIVER_FILES[1]}
            self.owned |= {HOST_DRIVER_FILES[0], HOST_DRIVER_FILES[1]}
            self.host_modules = True
        if kind == "unknown":
            self.files |= {HOST_DRIVER_FILES[0]}
            self.host_modules = True
        if kind == "run-no-uninstaller":
            self.install("run")
            self.files.discard(HOST_UNINSTALLER)

    # -- the machine as RealHost sees it ----------------------------------------------------------------
    def exists(self, path: str) -> bool:
        if path in ("/usr/bin/dpkg",):
            return True
        return path in self.files

    def _runner(self, argv: Sequence[str]) -> Result:
        if "dpkg" in argv:
            if self.dpkg_broken:
                return Result(2, "", "dpkg: error: cannot access archive")
            path = argv[-1]
            if path in self.owned:
                return Result(0, f"nvidia-driver-580: {path}\n", "")
            return Result(1, "", f"dpkg-query: no path found matching pattern {path}")
        return Result(0, "", "")

    def _read(self, path: str) -> str:
        if path.endswith("/modules"):
            loaded = self.host_modules or self.operator_modules
            return "nvidia 1 0 - Live 0x0\n" if loaded else "ext4 1 0 - Live 0x0\n"
        if path.endswith("boot_id"):
            return f"boot-{self.name}-{self.boot}\n"
        return ""

    def gpu_in_use(self) -> str:
        """A process with a GPU device open: the host's nvidia-persistenced while it runs (it opens every device to
        keep the driver loaded, its ``--persistence-mode`` default), else a pod's process."""
        if self.persistenced:
            return "812 nvidia-persistenced"
        return self.gpu_busy()

    def stop_services(self) -> None:
        self.persistenced = False

    def unload_modules(self) -> None:
        if not self.modules_busy:
            self.host_modules = False

    def uninstall(self, timeout: float) -> tuple[int, str]:
        self.uninstall_runs += 1
        if HOST_UNINSTALLER not in self.files:
            return 127, "nvidia-uninstall: not found"
        if self.uninstall_rc:
            return self.uninstall_rc, "ERROR: Failed to remove the driver\n"
        # do_uninstall: installed files and /var/lib/nvidia go; the install log stays; the uninstall log is new.
        self.files -= {HOST_DRIVER_FILES[0], HOST_DRIVER_FILES[1], HOST_UNINSTALLER, HOST_RUN_BACKUP_LOG}
        if self.leave_files:
            self.files.add(HOST_DRIVER_FILES[1])
        self.files.add(UNINSTALL_LOG)
        if not self.modules_busy:
            self.host_modules = False
        return 0, ""

    def reboot(self, allowed: bool) -> None:
        self.reboots_requested += 1
        if not allowed:
            self.sentinel = True
            return
        if not self.ignore_reboot:
            self.on_reboot()

    def read_marker(self) -> dict[str, Any]:
        return dict(self.marker)

    def write_marker(self, data: dict[str, Any]) -> None:
        if self.disk_full:
            raise OSError(28, "No space left on device")
        self.marker = dict(data)

    def marker_writable(self) -> bool:
        return not self.disk_full

    def booted(self) -> None:
        """A new boot: a new boot id; the host driver's modules load again if its files are still there."""
        self.boot += 1
        self.operator_modules = False
        self.host_modules = (
            self.stuck_module or HOST_DRIVER_FILES[0] in self.files or HOST_DRIVER_FILES[1] in self.files
        )
        self.persistenced = HOST_DRIVER_FILES[0] in self.files  # its unit starts again with the driver's files
        self.modules_busy = self.stuck_module
