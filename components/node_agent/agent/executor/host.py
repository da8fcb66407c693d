"""The host, seen from the privileged executor pod: ``chroot /host`` for files and packages, ``nsenter`` for systemd.

The install kind follows what NVIDIA's installer leaves and removes (NVIDIA/nvidia-installer backup.c): a
``.run`` install writes its own record ``/var/lib/nvidia/log`` and ``nvidia-uninstall`` removes that whole
directory. ``/var/log/nvidia-installer.log`` proves nothing: the uninstaller leaves it, and the operator's
driver container mounts the host's ``/var/log`` and writes it again. Driver files are looked for at the host's
own paths; the operator's driver lives under ``/run/nvidia/driver`` and never reads as a host driver.
No stderr is ever dropped or left unread: an exec failure of ``dpkg -S``/``rpm -qf`` is reported as
``exec-error``, and the uninstaller's stderr is drained while it runs (a full pipe would block it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from components.catalog.node_agent import (
    HOST_DRIVER_FILES,
    HOST_MARKER_FILE,
    HOST_REBOOT_SENTINEL,
    HOST_RUN_BACKUP_LOG,
    HOST_UNINSTALLER,
    NVIDIA_MODULES,
)

RUN, NONE, PACKAGE, MIXED, UNKNOWN, EXEC_ERROR = "run", "none", "package", "mixed", "unknown", "exec-error"
#: Character devices of NVIDIA GPUs a workload holds open (``/dev/nvidia0``..., ``/dev/nvidia-uvm``).
GPU_DEVICE = re.compile(r"^/dev/nvidia([0-9]+|-uvm)$")
STDERR_TAIL = 2000


@dataclass(frozen=True)
class HostFacts:
    """What one inspection of the host found (the ``facts`` of a report)."""

    install: str
    detail: str
    uninstaller: bool
    modules_loaded: bool
    files_remain: bool
    boot_id: str
    marker_ok: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


#: The host driver's services that hold GPU devices open (nvidia-persistenced: by design, to keep the driver
#: loaded; fabricmanager and DCGM: while they run). The executor stops them before it judges GPU use.
HOST_GPU_SERVICES = ("nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm")


class Host(Protocol):
    """What the executor needs from a host (the real one below, a simulated one in the tests)."""

    def inspect(self) -> HostFacts: ...

    def gpu_in_use(self) -> str: ...

    def stop_services(self) -> None: ...

    def unload_modules(self) -> None: ...

    def uninstall(self, timeout: float) -> tuple[int, str]: ...

    def reboot(self, allowed: bool) -> None: ...

    def read_marker(self) -> dict[str, Any]: ...

    def write_marker(self, data: dict[str, Any]) -> None: ...


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

    def __init__(self, root: str = "/host", runner: Runner = run_command, proc: str = "/proc") -> None:
        self.root = root
        self.run = runner
        self.proc = proc

    def _path(self, path: str) -> str:
        return self.root + path

    def exists(self, path: str) -> bool:
        """A path of the host (a dangling symlink counts: the file is still there to remove)."""
        return os.path.lexists(self._path(path))

    def _chroot(self, *argv: str) -> list[str]:
        return ["chroot", self.root, *argv]

    def _nsenter(self, *argv: str) -> list[str]:
        return ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--", *argv]

    def _owner(self, path: str) -> tuple[str, str]:
        """``(owner, error)``: the package owning ``path`` ("" if none), or why we cannot know."""
        for tool, argv, not_owned in (
            ("/usr/bin/dpkg", ("dpkg", "-S", path), "no path found matching pattern"),
            ("/usr/bin/rpm", ("rpm", "-qf", path), "is not owned by any package"),
        ):
            if not self.exists(tool):
                continue
            result = self.run(self._chroot(*argv))
            if result.rc == 0:
                return result.stdout.split(":")[0].strip() or result.stdout.strip(), ""
            if result.rc == 1 and not_owned in (result.stderr + result.stdout):
                continue
            return "", f"{' '.join(argv)} exited {result.rc}: {result.stderr.strip() or result.stdout.strip()}"
        return "", ""

    def inspect(self) -> HostFacts:
        present = [path for path in HOST_DRIVER_FILES if self.exists(path)]
        run_record = self.exists(HOST_RUN_BACKUP_LOG)
        owners: list[str] = []
        for path in present:
            owner, error = self._owner(path)
            if error:
                return self._facts(EXEC_ERROR, error, present)
            if owner:
                owners.append(f"{path}: {owner}")
        if owners and run_record:
            kind = MIXED
        elif owners:
            kind = PACKAGE
        elif run_record:
            kind = RUN
        elif present:
            kind = UNKNOWN
        else:
            kind = NONE
        return self._facts(kind, "; ".join(owners) or ", ".join(present), present)

    def _facts(self, kind: str, detail: str, present: list[str]) -> HostFacts:
        modules = self._read(f"{self.proc}/modules")
        loaded = any(line.split(" ", 1)[0] in NVIDIA_MODULES for line in modules.splitlines())
        return HostFacts(
            install=kind,
            detail=detail[:500],
            uninstaller=self.exists(HOST_UNINSTALLER),
            modules_loaded=loaded,
            files_remain=bool(present),
            boot_id=self._read(f"{self.proc}/sys/kernel/random/boot_id").strip(),
            marker_ok=self.marker_writable(),
        )

    def _read(self, path: str) -> str:
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError:
            return ""

    def gpu_in_use(self) -> str:
        """``"<pid> <comm>"`` of a host process holding a GPU device open ("" if none); /proc is the host's."""
        try:
            pids = [entry for entry in os.listdir(self.proc) if entry.isdigit()]
        except OSError:
            return ""
        for pid in pids:
            try:
                fds = os.listdir(f"{self.proc}/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink(f"{self.proc}/{pid}/fd/{fd}")
                except OSError:
                    continue
                if GPU_DEVICE.match(target):
                    return f"{pid} {self._read(f'{self.proc}/{pid}/comm').strip()}"
        return ""

    def stop_services(self) -> None:
        """Stop the host driver's own services: nvidia-persistenced keeps every GPU device open by design, so a
        GPU use is judged only after they are stopped (else the host's own daemon reads as a workload)."""
        for service in HOST_GPU_SERVICES:
            self.run(self._nsenter("systemctl", "stop", service))

    def unload_modules(self) -> None:
        for module in NVIDIA_MODULES:
            self.run(self._chroot("modprobe", "-r", module))

    def uninstall(self, timeout: float) -> tuple[int, str]:
        """Run nvidia-uninstall silently; ``(rc, stderr tail)``. 124: killed at the timeout.

        ``communicate`` (inside ``subprocess.run``) reads stderr while the process runs, so an uninstaller
        that writes more than a pipe holds (64 KiB) is never blocked on it.
        """
        argv = self._chroot(HOST_UNINSTALLER, "--silent")
        try:
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as error:
            tail = (error.stderr or b"")[-STDERR_TAIL:]
            return 124, tail.decode(errors="replace")
        except OSError as error:
            return 127, str(error)
        return done.returncode, done.stderr[-STDERR_TAIL:].decode(errors="replace")

    def reboot(self, allowed: bool) -> None:
        if not allowed:
            with open(self._path(HOST_REBOOT_SENTINEL), "w", encoding="utf-8") as handle:
                handle.write("gpu-platform node agent\n")
            return
        result = self.run(self._nsenter("systemctl", "reboot"))
        if result.rc != 0:
            raise OSError(f"systemctl reboot exited {result.rc}: {result.stderr.strip()}")

    def read_marker(self) -> dict[str, Any]:
        text = self._read(self._path(HOST_MARKER_FILE))
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

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
            self.write_marker(self.read_marker())
        except OSError:
            return False
        return True
