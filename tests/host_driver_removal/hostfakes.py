"""Builders for the host-driver-removal tests: a fake host root, a fake Kubernetes API, and a runner.

The script under test is the real ``host-driver-removal.sh`` run by bash. Only its two boundaries are faked:
host binaries (``HOST_EXEC=direct`` + stubs from ``fakes/bin`` first on PATH, operating on a temp dir that plays
the host's ``/``) and ``kubectl`` (``fakes/fake_kubectl.py``, a JSON-file API server). ``chroot`` and ``nsenter``
stubs refuse to run, so a mistake in the test wiring cannot reach the machine running the tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from components.catalog import host_driver_removal as c
from components.host_driver_removal.component import SCRIPT_PATH

FAKES = Path(__file__).parent / "fakes"
LIB = "/usr/lib/x86_64-linux-gnu"
DRIVER_VERSION = "550.54.15"
NAMESPACE = "gpu-platform"
OPERATOR_NS = "gpu-operator"
HOST_MUTATIONS = {"modprobe", "rmmod", "nvidia-uninstall", "nvidia-installer"}


@dataclass
class FakeHost:
    """A temp dir laid out like a GPU node's root filesystem, plus knobs for the stub host binaries."""

    base: Path

    @property
    def root(self) -> Path:
        return self.base / "host"

    @property
    def ctl(self) -> Path:
        return self.base / "ctl"

    @property
    def bin(self) -> Path:
        return self.base / "bin"

    @property
    def calls_file(self) -> Path:
        return self.base / "host-calls.log"

    @classmethod
    def create(cls, base: Path) -> FakeHost:
        host = cls(base)
        for d in (host.root, host.ctl, host.bin):
            d.mkdir(parents=True)
        host.calls_file.touch()
        for stub in (FAKES / "bin").iterdir():
            target = host.bin / stub.name
            shutil.copyfile(stub, target)
            target.chmod(0o755)
        host.write("/proc/sys/kernel/random/boot_id", f"{uuid.uuid4()}\n")
        return host

    # -- layout -------------------------------------------------------------------------------------------------
    def path(self, host_path: str) -> Path:
        return self.root / host_path.lstrip("/")

    def write(self, host_path: str, content: str = "") -> None:
        p = self.path(host_path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)

    def exists(self, host_path: str) -> bool:
        return self.path(host_path).exists()

    def install_run_driver(self, version: str = DRIVER_VERSION) -> None:
        """What the NVIDIA .run installer leaves behind, with its kernel modules loaded."""
        self.write("/var/lib/nvidia/log", f"{version}\nNVIDIA Accelerated Graphics Driver\nINSTALLED_FILE: ...\n")
        self.write("/usr/bin/nvidia-uninstall", "#!/bin/sh\n")
        self.write("/usr/bin/nvidia-installer", "#!/bin/sh\n")
        self.write("/usr/bin/nvidia-smi", "#!/bin/sh\n")
        self.write(f"{LIB}/libnvidia-ml.so.{version}", "")
        self.path(f"{LIB}/libnvidia-ml.so.1").symlink_to(f"libnvidia-ml.so.{version}")
        self.load_modules(version)

    def install_package_driver(self, manager: str, version: str = DRIVER_VERSION) -> None:
        """A distro-packaged driver: same files, no .run backup log, owned by dpkg or rpm."""
        self.write("/usr/bin/nvidia-smi", "#!/bin/sh\n")
        self.write(f"{LIB}/libnvidia-ml.so.{version}", "")
        self.own_by(manager, "/usr/bin/nvidia-smi", f"{LIB}/libnvidia-ml.so.{version}")
        self.load_modules(version)

    def load_modules(self, version: str = DRIVER_VERSION, *names: str) -> None:
        for name in names or ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"):
            self.path(f"/sys/module/{name}").mkdir(parents=True, exist_ok=True)
        self.write("/sys/module/nvidia/version", f"{version}\n")
        self.write(
            "/proc/driver/nvidia/version",
            f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  Thu Feb 22 01:44:30 UTC 2024\n",
        )

    def module_loaded(self, name: str = "nvidia") -> bool:
        return self.path(f"/sys/module/{name}").is_dir()

    def driver_files(self) -> list[str]:
        paths = ["/usr/bin/nvidia-smi", f"{LIB}/libnvidia-ml.so.{DRIVER_VERSION}", "/var/lib/nvidia/log"]
        return [p for p in paths if self.exists(p)]

    # -- knobs for the stubs ------------------------------------------------------------------------------------
    def _ctl_lines(self, name: str, *lines: str) -> None:
        (self.ctl / name).write_text("".join(f"{line}\n" for line in lines))

    def stick_modules(self, *names: str) -> None:
        """Modules that refuse to unload (in use), like nvidia with a busy GPU."""
        self._ctl_lines("stuck_modules", *names)

    def fail_uninstall(self, rc: int = 1) -> None:
        (self.ctl / "uninstall_rc").write_text(str(rc))

    def own_by(self, manager: str, *paths: str) -> None:
        self._ctl_lines(f"{manager}_owned", *paths)

    def activate_services(self, *names: str) -> None:
        self._ctl_lines("active_services", *names)

    def active_services(self) -> list[str]:
        f = self.ctl / "active_services"
        return f.read_text().split() if f.exists() else []

    def boot_id(self) -> str:
        return self.path("/proc/sys/kernel/random/boot_id").read_text().strip()

    def reboot(self, module_survives: bool) -> None:
        """Simulate the reboot the script asked for: new boot id, modules gone unless they come back at boot."""
        self.write("/proc/sys/kernel/random/boot_id", f"{uuid.uuid4()}\n")
        (self.ctl / "reboot_requested").unlink(missing_ok=True)
        if not module_survives:
            shutil.rmtree(self.path("/sys/module"), ignore_errors=True)

    # -- observations -------------------------------------------------------------------------------------------
    def calls(self) -> list[list[str]]:
        return [line.split() for line in self.calls_file.read_text().splitlines() if line]

    def calls_of(self, name: str) -> list[list[str]]:
        return [call for call in self.calls() if call[0] == name]

    def mutating_calls(self) -> list[list[str]]:
        """Host commands that change the host (module unload, uninstall, service stop, reboot)."""
        return [
            call
            for call in self.calls()
            if call[0] in HOST_MUTATIONS or (call[0] == "systemctl" and call[1] in ("stop", "reboot"))
        ]

    def reboots(self) -> int:
        return len([call for call in self.calls_of("systemctl") if call[1] == "reboot"])

    def marker(self) -> dict[str, str]:
        p = self.path(c.HOST_MARKER_FILE)
        if not p.exists():
            return {}
        return dict(line.split("=", 1) for line in p.read_text().splitlines() if "=" in line)


def micro_time(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class FakeCluster:
    """The Kubernetes API as a JSON file that the fake kubectl reads and writes."""

    path: Path

    @classmethod
    def create(cls, base: Path, host_root: Path) -> FakeCluster:
        cluster = cls(base / "kube-state.json")
        cluster.save(
            {
                "nodes": {},
                "pods": [],
                "leases": {},
                "events": [],
                "evictions": [],
                "evictions_refused": [],
                "patches": [],
                "calls": [],
                "rv": 100,
                "operator": {"host_root": str(host_root), "installs_driver": True, "removes_operand_pods": True},
            }
        )
        return cluster

    def load(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.path.read_text())
        return data

    def save(self, data: dict[str, Any]) -> None:
        self.path.write_text(json.dumps(data, indent=1))

    def update(self, fn: Any) -> None:
        data = self.load()
        fn(data)
        self.save(data)

    # -- setup --------------------------------------------------------------------------------------------------
    def add_node(
        self,
        name: str,
        *,
        unschedulable: bool = False,
        opted_in: bool = True,
        driver_label: str | None = c.GPU_DEPLOY_DRIVER_PRE_INSTALLED,
        operands: tuple[str, ...] = ("device-plugin", "dcgm-exporter", "operator-validator", "container-toolkit"),
        labels: dict[str, str] | None = None,
    ) -> None:
        all_labels = {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"}
        if opted_in:
            all_labels[c.OPT_IN_LABEL] = c.OPT_IN_VALUE
        if driver_label is not None:
            all_labels[c.GPU_DEPLOY_DRIVER_LABEL] = driver_label
        for operand in operands:
            all_labels[f"{c.OPERAND_LABEL_PREFIX}{operand}"] = "true"
        all_labels.update(labels or {})
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": str(uuid.uuid4()), "labels": all_labels, "annotations": {}},
            "spec": {"unschedulable": True} if unschedulable else {},
        }
        self.update(lambda d: d["nodes"].__setitem__(name, node))

    def add_pod(
        self,
        namespace: str,
        name: str,
        node: str,
        *,
        gpus: int = 0,
        resource: str = "nvidia.com/gpu",
        owner: str | None = "ReplicaSet",
        app: str | None = None,
        pdb_blocks_eviction: bool = False,
        phase: str = "Running",
    ) -> None:
        limits = {"cpu": "1"}
        if gpus:
            limits[resource] = str(gpus)
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "namespace": namespace,
                "name": name,
                "labels": {"app": app} if app else {},
                "ownerReferences": [{"kind": owner, "name": f"{name}-owner"}] if owner else [],
            },
            "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {"limits": limits}}]},
            "status": {"phase": phase},
            "x-fake": {"pdb_blocks_eviction": pdb_blocks_eviction},
        }
        self.update(lambda d: d["pods"].append(pod))

    def add_operand_pods(self, node: str) -> None:
        """GPU Operator DaemonSet pods, as they run on a node with a pre-installed driver."""
        for app in ("nvidia-device-plugin-daemonset", "nvidia-dcgm-exporter", "nvidia-operator-validator"):
            self.add_pod(OPERATOR_NS, f"{app}-{node}", node, owner="DaemonSet", app=app)

    def set_lease(self, holder: str, renewed_ago: timedelta, duration_s: int, halted_by: str | None = None) -> None:
        renew = datetime.now(UTC) - renewed_ago
        lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": c.LOCK_LEASE_NAME, "namespace": NAMESPACE, "resourceVersion": "7"},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": duration_s,
                "acquireTime": micro_time(renew),
                "renewTime": micro_time(renew),
                "leaseTransitions": 3,
            },
        }
        if halted_by:
            lease["metadata"]["annotations"] = {c.LOCK_HALTED_ANNOTATION: halted_by}
        self.update(lambda d: d["leases"].__setitem__(f"{NAMESPACE}/{c.LOCK_LEASE_NAME}", lease))

    def set_operator(self, **settings: Any) -> None:
        self.update(lambda d: d["operator"].update(settings))

    # -- observations -------------------------------------------------------------------------------------------
    def node(self, name: str) -> dict[str, Any]:
        node: dict[str, Any] = self.load()["nodes"][name]
        return node

    def labels(self, name: str) -> dict[str, str]:
        labels: dict[str, str] = self.node(name)["metadata"].get("labels", {})
        return labels

    def annotations(self, name: str) -> dict[str, str]:
        annotations: dict[str, str] = self.node(name)["metadata"].get("annotations", {})
        return annotations

    def unschedulable(self, name: str) -> bool:
        return bool(self.node(name).get("spec", {}).get("unschedulable", False))

    def state(self, name: str) -> str | None:
        return self.labels(name).get(c.STATE_LABEL)

    def reason(self, name: str) -> str | None:
        return self.labels(name).get(c.REASON_LABEL)

    def lease(self) -> dict[str, Any] | None:
        lease: dict[str, Any] | None = self.load()["leases"].get(f"{NAMESPACE}/{c.LOCK_LEASE_NAME}")
        return lease

    def lease_holder(self) -> str | None:
        lease = self.lease()
        return None if lease is None else lease["spec"].get("holderIdentity")

    def events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.load()["events"]
        return events

    def event_reasons(self) -> list[str]:
        return [e["reason"] for e in self.events()]

    def evictions(self) -> list[str]:
        evictions: list[str] = self.load()["evictions"]
        return evictions

    def pods_on(self, node: str) -> list[str]:
        return [
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in self.load()["pods"]
            if p["spec"].get("nodeName") == node
        ]

    def calls(self) -> list[list[str]]:
        calls: list[list[str]] = self.load()["calls"]
        return calls

    def write_calls(self) -> list[list[str]]:
        """kubectl calls that are not reads."""
        return [call for call in self.calls() if "get" not in call]

    def patches(self) -> list[dict[str, Any]]:
        patches: list[dict[str, Any]] = self.load()["patches"]
        return patches


@dataclass
class Env:
    """One fake node: host + cluster + the name the script runs as."""

    host: FakeHost
    cluster: FakeCluster
    node: str

    def run(self, node: str | None = None, host: FakeHost | None = None, **overrides: str) -> Result:
        return run_script(host or self.host, self.cluster, node or self.node, **overrides)


@dataclass
class Result:
    returncode: int
    output: str


FAST_ENV = {
    "IDLE_AFTER_DONE": "false",
    "POLL_INTERVAL_SECONDS": "0.05",
    "LOCK_WAIT_TIMEOUT_SECONDS": "0",  # one attempt, then exit 75 (the wait loop is bounded by this)
    # Generous: waits end as soon as the condition holds (polled every 0.05 s); a short limit here made
    # happy paths flaky on a loaded 2-core machine. Timeout tests pass their own 1 s.
    "EVICTION_TIMEOUT_SECONDS": "30",
    "OPERAND_WAIT_TIMEOUT_SECONDS": "30",
    "DRIVER_READY_TIMEOUT_SECONDS": "30",
    "UNINSTALL_TIMEOUT_SECONDS": "20",
    "REBOOT_WAIT_SECONDS": "0",
}


def script_env(host: FakeHost, cluster: FakeCluster, node: str, **overrides: str) -> dict[str, str]:
    """Environment for the real script: production defaults except fake wiring and speed knobs."""
    return {
        "PATH": f"{host.bin}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(host.base),
        "LC_ALL": "C",
        "NODE_NAME": node,
        "POD_NAMESPACE": NAMESPACE,
        "HOST_ROOT": str(host.root),
        "HOST_EXEC": "direct",
        "SYSTEMCTL_EXEC": "direct",
        "FAKE_HOST_ROOT": str(host.root),
        "FAKE_HOST_CTL": str(host.ctl),
        "FAKE_HOST_CALLS": str(host.calls_file),
        "FAKE_KUBE_STATE": str(cluster.path),
        "FAKE_PYTHON": sys.executable,
        "FAKE_KUBECTL_PY": str(FAKES / "fake_kubectl.py"),
        **FAST_ENV,
        **overrides,
    }


def script_process(env: Env, **overrides: str) -> subprocess.Popen[str]:
    """Start the script in the background (for tests that signal it); output merged into stdout."""
    return subprocess.Popen(
        ["bash", str(SCRIPT_PATH)],
        env=script_env(env.host, env.cluster, env.node, **overrides),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_script(host: FakeHost, cluster: FakeCluster, node: str, **overrides: str) -> Result:
    """Run the real script with bash against the fakes and wait for it."""
    proc = subprocess.run(
        ["bash", str(SCRIPT_PATH)],
        env=script_env(host, cluster, node, **overrides),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert "fake kubectl: unsupported" not in output, output
    assert "refusing to run in tests" not in output, output
    return Result(proc.returncode, output)
