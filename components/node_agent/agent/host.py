"""The host, seen from the privileged agent pod: ``chroot /host`` for files and packages, ``nsenter`` for systemd.

The container runs as root with the host's ``/`` mounted at ``/host`` and ``hostPID``. Package queries
and the uninstaller run with ``chroot /host`` (the host's own dpkg/rpm and libraries); ``systemctl``
runs in PID 1's namespaces through ``nsenter -t 1 -m -u -i -n -p`` (systemd ignores requests from a
chroot). No stderr is ever dropped: an exec failure of ``dpkg -S``/``rpm -qf`` is reported as
``exec-error`` with its message, never read as "no package owns the driver".
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from components.catalog.node_agent import (
    HOST_DRIVER_FILES,
    HOST_DRIVER_READY_FILE,
    HOST_MARKER_FILE,
    HOST_REBOOT_SENTINEL,
    HOST_RUN_INSTALL_LOG,
    HOST_UNINSTALLER,
    NVIDIA_MODULES,
)
from components.node_agent.agent.machine import Install


@dataclass(frozen=True)
class HostFacts:
    """What one inspection of the host found."""

    install: str
    detail: str
    uninstaller: bool
    modules_loaded: bool
    files_remain: bool
    boot_id: str
    driver_ready: bool


class Host(Protocol):
    """What the executor needs from a host (the real one below, a fake in the tests)."""

    def inspect(self) -> HostFacts: ...

    def uninstall(self, timeout: float, heartbeat: Callable[[], None]) -> int: ...

    def unload_modules(self) -> None: ...

    def reboot(self, allowed: bool) -> None: ...

    def read_marker(self) -> dict[str, Any] | None: ...

    def write_marker(self, data: dict[str, Any]) -> None: ...

    def marker_writable(self) -> bool: ...


@dataclass(frozen=True)
class Result:
    rc: int
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str]], Result]


def run_command(argv: Sequence[str]) -> Result:
    """Run ``argv``; an exec failure is rc 127 with the error as stderr, never a silent empty result."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Result(127, "", f"{argv[0]}: {error}")
    return Result(done.returncode, done.stdout, done.stderr)


class RealHost:
    """The host under ``root`` (``/host`` in the pod)."""

    def __init__(self, root: str = "/host", runner: Runner = run_command) -> None:
        self.root = root
        self.run = runner

    def _path(self, path: str) -> str:
        return self.root + path

    def _chroot(self, *argv: str) -> list[str]:
        return ["chroot", self.root, *argv]

    def _nsenter(self, *argv: str) -> list[str]:
        return ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", *argv]

    def _owner(self, path: str) -> tuple[str, str]:
        """``(owner, error)``: the package owning ``path`` ("" if none), or an error that says why we cannot know."""
        for tool, argv, not_owned in (
            ("/usr/bin/dpkg", ("dpkg", "-S", path), "no path found matching pattern"),
            ("/usr/bin/rpm", ("rpm", "-qf", path), "is not owned by any package"),
        ):
            if not os.path.exists(self._path(tool)):
                continue
            result = self.run(self._chroot(*argv))
            if result.rc == 0:
                return result.stdout.split(":")[0].strip() or result.stdout.strip(), ""
            if result.rc == 1 and not_owned in (result.stderr + result.stdout):
                continue
            return "", f"{' '.join(argv)} exited {result.rc}: {result.stderr.strip() or result.stdout.strip()}"
        return "", ""

    def inspect(self) -> HostFacts:
        present = [path for path in HOST_DRIVER_FILES if os.path.exists(self._path(path))]
        run_install = os.path.exists(self._path(HOST_RUN_INSTALL_LOG))
        owners: list[str] = []
        for path in present:
            owner, error = self._owner(path)
            if error:
                return self._facts(Install.EXEC_ERROR, error, present)
            if owner:
                owners.append(f"{path}: {owner}")
        if owners and run_install:
            kind = Install.MIXED
        elif owners:
            kind = Install.PACKAGE
        elif run_install:
            kind = Install.RUN
        elif present:
            kind = Install.UNKNOWN
        else:
            kind = Install.NONE
        return self._facts(kind, "; ".join(owners), present)

    def _facts(self, kind: str, detail: str, present: list[str]) -> HostFacts:
        modules = self._read("/proc/modules")
        loaded = any(line.split(" ", 1)[0] in NVIDIA_MODULES for line in modules.splitlines())
        ready = "IS_HOST_DRIVER=false" in self._read(HOST_DRIVER_READY_FILE)
        return HostFacts(
            install=kind,
            detail=detail,
            uninstaller=os.path.exists(self._path(HOST_UNINSTALLER)),
            modules_loaded=loaded,
            files_remain=bool(present),
            boot_id=self._read("/proc/sys/kernel/random/boot_id").strip(),
            driver_ready=ready,
        )

    def _read(self, path: str) -> str:
        # /proc is the container's view of the host kernel (hostPID): the same modules and boot id.
        source = path if path.startswith("/proc/") else self._path(path)
        try:
            with open(source, encoding="utf-8") as handle:
                return handle.read()
        except OSError:
            return ""

    def uninstall(self, timeout: float, heartbeat: Callable[[], None]) -> int:
        """Run nvidia-uninstall silently; renew the Lease every few seconds while it runs."""
        argv = self._chroot(HOST_UNINSTALLER, "--silent")
        try:
            process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError:
            return 127
        deadline = time.monotonic() + timeout
        while True:
            try:
                return process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                heartbeat()
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    return 124

    def unload_modules(self) -> None:
        for service in ("nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm"):
            self.run(self._nsenter("systemctl", "stop", service))
        for module in NVIDIA_MODULES:
            self.run(self._chroot("modprobe", "-r", module))

    def reboot(self, allowed: bool) -> None:
        if not allowed:
            with open(self._path(HOST_REBOOT_SENTINEL), "w", encoding="utf-8") as handle:
                handle.write("gpu-platform node agent\n")
            return
        result = self.run(self._nsenter("systemctl", "reboot"))
        if result.rc != 0:
            raise OSError(f"systemctl reboot exited {result.rc}: {result.stderr.strip()}")

    def read_marker(self) -> dict[str, Any] | None:
        text = self._read(HOST_MARKER_FILE)
        try:
            return dict(json.loads(text)) if text else None
        except ValueError:
            return None

    def write_marker(self, data: dict[str, Any]) -> None:
        path = self._path(HOST_MARKER_FILE)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(data, handle, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(path + ".tmp", path)

    def marker_writable(self) -> bool:
        try:
            self.write_marker(self.read_marker() or {})
        except OSError:
            return False
        return True
