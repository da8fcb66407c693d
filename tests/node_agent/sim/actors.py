"""The other actors of the cluster, each as its source says, with its timing and its leftovers.

Every actor reads and writes the store directly (its own writes are not the subject of the tests) and reacts
to writes through the API server's watch, as an informer-driven controller does.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.names import NODE_GROUP_LABEL
from components.catalog.node_agent import (
    DRIVER_CONTAINER,
    DRIVER_POD_LABEL,
    GPU_DEPLOY_DRIVER_LABEL,
    MIG_LABEL,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    MIG_STATE_PENDING,
    MIG_STATE_SUCCESS,
    OPERAND_DEPLOY_LABELS,
    PAUSED_FOR_MIG,
    SMOKE_LABEL,
    UNSCHEDULABLE_TAINT,
)
from components.catalog.nvidia_driver import GFD_DRIVER_VERSION_LABEL
from components.node_agent.agent import objects
from tests.node_agent.sim.api import clone

if TYPE_CHECKING:
    from tests.node_agent.sim.world import World

#: Allocatable NVIDIA resources of an 8 x A100-80GB node under each mig-parted config (mig-parted's default
#: config file: all-disabled = whole GPUs; all-1g.10gb = 7 per GPU; all-3g.40gb = 2 per GPU).
LAYOUTS: dict[str, dict[str, int]] = {
    "all-disabled": {"nvidia.com/gpu": 8},
    "all-1g.10gb": {"nvidia.com/mig-1g.10gb": 56},
    "all-3g.40gb": {"nvidia.com/mig-3g.40gb": 16},
}


def pod_key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{objects.name(pod)}"


def tolerates(pod: dict[str, Any], taint: dict[str, Any]) -> bool:
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if toleration.get("operator") == "Exists" and not toleration.get("key"):
            return True
        if toleration.get("key") == taint.get("key") and toleration.get("effect") in (None, "", taint.get("effect")):
            return True
    return False


class Kubelet:
    """Runs the pods bound to its node (pkg/kubelet): Pending -> Running and Ready after the start delay;
    a terminating pod goes after its grace period (``syncTerminatingPod``); a smoke pod runs ``nvidia-smi -L``
    and succeeds when the device plugin can allocate its resource, else admission fails it
    (pkg/kubelet/lifecycle/predicate.go: ``UnexpectedAdmissionError`` for an unavailable extended resource)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def on_pod(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            return
        node = (new.get("spec") or {}).get("nodeName")
        if not node:
            return
        phase = (new.get("status") or {}).get("phase")
        if objects.terminating(new) and not (old and objects.terminating(old)):
            grace = int(new["metadata"].get("deletionGracePeriodSeconds", 30))
            self.world.at(min(grace, self.world.timing.pod_stop), lambda: self._remove(key))
            return
        if phase == "Pending" and not (old and (old.get("spec") or {}).get("nodeName")):
            self.world.at(self.world.timing.pod_start, lambda: self._start(key))

    def _remove(self, key: str) -> None:
        if key in self.world.api.store["pods"]:
            self.world.api.put("pods", key, None)

    def _start(self, key: str) -> None:
        pod = self.world.api.store["pods"].get(key)
        if pod is None or objects.terminating(pod) or pod["status"].get("phase") != "Pending":
            return
        node = pod["spec"]["nodeName"]
        if not self.world.up(node):
            return
        body = clone(pod)
        if objects.labels(pod).get(SMOKE_LABEL):
            body["status"] = self._smoke(key, pod, node)
        elif objects.labels(pod).get(DRIVER_POD_LABEL[0]) == DRIVER_POD_LABEL[1]:
            self.world.driver.started(key, body)
            return
        else:
            body["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        self.world.api.put("pods", key, body)

    def _smoke(self, key: str, pod: dict[str, Any], node: str) -> dict[str, Any]:
        """A smoke pod's end. The kubelet admits a pod bound by ``nodeName`` only if the node has the resource free
        (pkg/kubelet/lifecycle/predicate.go ``generalFilter``: allocatable less what the running pods hold, else the
        pod fails with reason ``OutOf<resource>`` and "Pod was rejected: Node didn't have enough resource: ..."); then
        ``nvidia-smi -L`` exits 0, or 9 where the node's driver is broken (``smoke_fails``)."""
        resource = next(iter(pod["spec"]["containers"][0]["resources"]["limits"]))
        capacity = int(str(self.world.node(node)["status"]["allocatable"].get(resource, "0")))
        used = sum(
            int(str(((c.get("resources") or {}).get("limits") or {}).get(resource, 0)))
            for other in self.world.pods_on(node)
            if pod_key(other) != key and (other.get("status") or {}).get("phase") == "Running"
            for c in (other.get("spec") or {}).get("containers") or []
        )
        if capacity - used < 1:
            message = (
                f"Pod was rejected: Node didn't have enough resource: {resource}, requested: 1, used: {used}, "
                f"capacity: {capacity}"
            )
            return {"phase": "Failed", "reason": f"OutOf{resource}", "message": message}
        if self.world.smoke_fails(node):
            # nvidia-smi exits 9 when it cannot talk to the driver; with the default terminationMessagePolicy (File)
            # and nothing written to /dev/termination-log, the kubelet reports no message, only the code and "Error".
            ended = {"exitCode": 9, "reason": "Error"}
            return {"phase": "Failed", "containerStatuses": [{"name": "smoke", "state": {"terminated": ended}}]}
        return {"phase": "Succeeded"}


class Scheduler:
    """Binds unbound pods (kube-scheduler plugins NodeUnschedulable, TaintToleration, NodeResourcesFit,
    NodeAffinity/nodeSelector): a cordoned node takes only pods tolerating ``node.kubernetes.io/unschedulable``."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.queued = False

    def kick(self) -> None:
        if not self.queued:
            self.queued = True
            self.world.at(1.0, self.run)

    def run(self) -> None:
        self.queued = False
        pods = self.world.api.store["pods"]
        pending = [key for key in sorted(pods) if not (pods[key].get("spec") or {}).get("nodeName")]
        if not pending:
            return
        used: dict[str, dict[str, int]] = {}
        for pod in pods.values():
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                self._add(used.setdefault(node, {}), pod)
        nodes = sorted(self.world.api.store["nodes"].values(), key=objects.name)
        for key in pending:
            pod = pods[key]
            if objects.terminating(pod):
                continue
            for node in nodes:
                name = objects.name(node)
                if self.fits(pod, node, used.setdefault(name, {})):
                    body = clone(pod)
                    body["spec"]["nodeName"] = name
                    self.world.api.put("pods", key, body)
                    self._add(used[name], pod)
                    break

    @staticmethod
    def _limits(pod: dict[str, Any]) -> dict[str, int]:
        asked: dict[str, int] = {}
        for container in (pod.get("spec") or {}).get("containers") or []:
            for resource, count in ((container.get("resources") or {}).get("limits") or {}).items():
                asked[resource] = asked.get(resource, 0) + int(count)
        return asked

    def _add(self, used: dict[str, int], pod: dict[str, Any]) -> None:
        for resource, count in self._limits(pod).items():
            used[resource] = used.get(resource, 0) + count

    def fits(self, pod: dict[str, Any], node: dict[str, Any], used: dict[str, int]) -> bool:
        name = objects.name(node)
        allocatable = node["status"]["allocatable"]
        for resource, count in self._limits(pod).items():
            if int(str(allocatable.get(resource, "0"))) < used.get(resource, 0) + count:
                return False
        if not self.world.up(name):
            return False
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        if any(objects.labels(node).get(k) != v for k, v in selector.items()):
            return False
        spec = node.get("spec") or {}
        if spec.get("unschedulable") and not tolerates(pod, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}):
            return False
        return all(
            tolerates(pod, taint)
            for taint in spec.get("taints") or []
            if taint.get("effect") in ("NoSchedule", "NoExecute")
        )


@dataclass
class ReplicaSet:
    """Keeps ``replicas`` active pods (pkg/controller/replicaset ``manageReplicas``; ``FilterActivePods``
    leaves terminating pods out, so an evicted pod is replaced at once, before it is gone)."""

    namespace: str
    name: str
    replicas: int
    pool: str
    resource: str
    made: int = 0


class ReplicaSets:
    def __init__(self, world: World) -> None:
        self.world = world
        self.sets: dict[str, ReplicaSet] = {}

    def add(self, rs: ReplicaSet, node: str | None = None) -> None:
        self.sets[rs.name] = rs
        for _ in range(rs.replicas):
            self._create(rs, node)

    def _create(self, rs: ReplicaSet, node: str | None) -> None:
        rs.made += 1
        name = f"{rs.name}-{rs.made}"
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": rs.namespace,
                "labels": {"app": rs.name},
                "ownerReferences": [{"kind": "ReplicaSet", "name": rs.name, "controller": True}],
            },
            "spec": {
                "nodeSelector": {NODE_GROUP_LABEL: rs.pool},
                "containers": [{"name": "train", "resources": {"limits": {rs.resource: 1}}}],
            },
            "status": {"phase": "Running" if node else "Pending", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        if node:
            pod["spec"]["nodeName"] = node
        self.world.api.put("pods", f"{rs.namespace}/{name}", pod)
        if not node:
            self.world.scheduler.kick()

    def on_pod(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        pod = new or old
        if pod is None or objects.owner_kind(pod) != "ReplicaSet":
            return
        became_inactive = new is None or (objects.terminating(new) and not (old and objects.terminating(old)))
        if not became_inactive:
            return
        rs = self.sets.get(objects.owner_name(pod))
        if rs is None:
            return
        active = [
            p
            for p in self.world.api.store["pods"].values()
            if objects.owner_name(p) == rs.name and not objects.terminating(p)
        ]
        for _ in range(rs.replicas - len(active)):
            self.world.at(self.world.timing.refill, functools.partial(self._create, rs, None))


class DaemonSets:
    """A DaemonSet that asks for a GPU (a monitoring agent, say): one pod per pool node. The DaemonSet
    controller adds the ``node.kubernetes.io/unschedulable`` toleration to its pods
    (pkg/controller/daemon/util ``AddOrUpdateDaemonPodTolerations``), so an evicted pod comes back on a
    cordoned node."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.names: list[str] = []

    def add(self, name: str) -> None:
        self.names.append(name)
        for node in list(self.world.api.store["nodes"]):
            self._ensure(name, node)

    def _ensure(self, ds: str, node: str) -> None:
        key = f"monitoring/{ds}-{node}"
        if key in self.world.api.store["pods"] or not self.world.up(node) or node not in self.world.api.store["nodes"]:
            return
        self.world.api.put(
            "pods",
            key,
            {
                "metadata": {
                    "name": f"{ds}-{node}",
                    "namespace": "monitoring",
                    "ownerReferences": [{"kind": "DaemonSet", "name": ds, "controller": True}],
                },
                "spec": {
                    "nodeName": node,
                    "tolerations": [{"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "probe", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                },
                "status": {"phase": "Pending"},
            },
        )

    def on_pod(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is not None or old is None or objects.owner_kind(old) != "DaemonSet":
            return
        ds, node = objects.owner_name(old), old["spec"]["nodeName"]
        if ds in self.names:
            self.world.at(2.0, lambda: self._ensure(ds, node))

    def node_up(self, node: str) -> None:
        for ds in self.names:
            self._ensure(ds, node)


class OperatorDriver:
    """The GPU Operator's driver DaemonSet, in either mode, from the pinned source.

    ClusterPolicy mode (gpu-operator v26.7.0 ``assets/state-driver/0500_daemonset.yaml``): one DaemonSet
    ``nvidia-driver-daemonset``, label ``app=nvidia-driver-daemonset``. NVIDIADriver mode (the dev stack's;
    ``manifests/state-driver/0500_daemonset.yaml``, ``internal/state/driver.go`` ``getDriverAppName``,
    ``internal/state/nodepool.go``): one DaemonSet per resource and OS, named and labelled
    ``app=nvidia-gpu-driver-<os>-<hash>``, its nodeSelector carrying the node's owner label. Both carry
    ``app.kubernetes.io/component=nvidia-driver`` and run ``nvidia-driver-ctr``; both are ``OnDelete``: a template
    change replaces no pod until something deletes it (the upgrade controller below).

    Kubernetes' DaemonSet controller (not in ``.upstream/``: pkg/controller/daemon/update.go ``constructHistory``)
    keeps one ControllerRevision per template, named ``<daemonset>-<hash>`` and labelled with the template's labels
    plus ``controller-revision-hash``; a template that returns to an earlier one reuses that revision object and
    gives it the next ``.revision`` number; new pods are labelled with the current hash.

    Its pod's init container k8s-driver-manager finds a host driver with ``chroot /host nvidia-smi``, labels the
    node ``gpu.deploy.driver=pre-installed`` and exits 1 after 60 s (main.go ``disableContainerizedDriver``);
    otherwise the driver container installs into its own root, writes the host's ``/var/log/nvidia-installer.log``
    (the ``var-log`` hostPath), loads the modules and turns Ready when its startup probe passes
    (``initialDelaySeconds: 60``, ``periodSeconds: 10``)."""

    NAMESPACE = "gpu-operator"
    CLUSTER_POLICY_NAME = operator.CLUSTER_POLICY_DRIVER_APP
    NVIDIADRIVER_NAME = operator.NVIDIADRIVER_APP_FORMAT.format(driver_type="gpu", os="ubuntu22.04", hash="6c9f4d7b8")
    OWNER = "gpu-platform-a100"
    IMAGE = "nvcr.io/nvidia/driver:580.95.05-ubuntu22.04"

    def __init__(self, world: World, mode: str = "nvidiadriver") -> None:
        self.world = world
        self.mode = mode
        self.name = self.NVIDIADRIVER_NAME if mode == "nvidiadriver" else self.CLUSTER_POLICY_NAME
        self.never_ready: set[str] = set()
        self.pods = 0
        self.image = self.IMAGE
        self.revision = 0

    # -- the DaemonSet and its history ---------------------------------------------------------------------
    def template_labels(self) -> dict[str, str]:
        return {"app": self.name, operator.DRIVER_COMPONENT_LABEL: operator.DRIVER_COMPONENT}

    def node_selector(self) -> dict[str, str]:
        selector = {GPU_DEPLOY_DRIVER_LABEL: "true"}
        if self.mode == "nvidiadriver":
            selector[operator.DRIVER_OWNER_LABEL] = self.OWNER
        return selector

    def current_hash(self) -> str:
        return hashlib.sha256(self.image.encode()).hexdigest()[:10]

    def daemon_set(self) -> dict[str, Any]:
        return {
            "metadata": {"name": self.name, "namespace": self.NAMESPACE, "labels": self.template_labels()},
            "spec": {
                "selector": {"matchLabels": {"app": self.name}},
                "updateStrategy": {"type": "OnDelete"},
                "template": {
                    "metadata": {"labels": self.template_labels()},
                    "spec": {
                        "nodeSelector": self.node_selector(),
                        "containers": [{"name": DRIVER_CONTAINER, "image": self.image}],
                    },
                },
            },
        }

    def install(self) -> None:
        """The DaemonSet and the ControllerRevision of its template."""
        self.world.api.put("daemonsets", f"{self.NAMESPACE}/{self.name}", self.daemon_set())
        digest = self.current_hash()
        key = f"{self.NAMESPACE}/{self.name}-{digest}"
        self.revision += 1
        existing = self.world.api.store["controllerrevisions"].get(key)
        body = (
            clone(existing)
            if existing
            else {
                "metadata": {
                    "name": f"{self.name}-{digest}",
                    "namespace": self.NAMESPACE,
                    "labels": {**self.template_labels(), operator.CONTROLLER_REVISION_HASH_LABEL: digest},
                },
            }
        )
        body["revision"] = self.revision
        self.world.api.put("controllerrevisions", key, body)

    def set_image(self, image: str) -> None:
        """A new template (a driver upgrade, or a rollback to an earlier image): no pod is replaced (OnDelete)."""
        self.image = image
        self.install()

    # -- pods ------------------------------------------------------------------------------------------
    def on_node(self, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            return
        wanted = self.selects(new)
        was = old is not None and self.selects(old)
        if wanted and not was:
            self.world.at(2.0, lambda: self.ensure(name))
        if was and not wanted:
            for pod in self.pods_on(name):
                self.world.api.delete_pod_gracefully(self.NAMESPACE, objects.name(pod))

    def selects(self, node: dict[str, Any]) -> bool:
        return all(objects.labels(node).get(key) == value for key, value in self.node_selector().items())

    def pods_on(self, node: str) -> list[dict[str, Any]]:
        return [
            pod
            for pod in self.world.pods_on(node)
            if objects.labels(pod).get(operator.DRIVER_COMPONENT_LABEL) == operator.DRIVER_COMPONENT
        ]

    def on_pod(self, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """A deleted driver pod is recreated from the current template (the DaemonSet controller)."""
        if new is None and old is not None and objects.owner_name(old) == self.name:
            node = (old.get("spec") or {}).get("nodeName")
            if node:
                self.world.at(2.0, lambda: self.ensure(node))

    def ensure(self, node: str) -> None:
        current = self.world.api.store["nodes"].get(node)
        if current is None or not self.selects(current) or self.pods_on(node):
            return
        if not self.world.up(node):
            return
        self.pods += 1
        ds = self.world.api.store["daemonsets"][f"{self.NAMESPACE}/{self.name}"]
        self.world.api.put(
            "pods",
            f"{self.NAMESPACE}/{self.name}-{self.pods}",
            {
                "metadata": {
                    "name": f"{self.name}-{self.pods}",
                    "namespace": self.NAMESPACE,
                    "labels": {**self.template_labels(), operator.CONTROLLER_REVISION_HASH_LABEL: self.current_hash()},
                    "ownerReferences": [
                        {"kind": "DaemonSet", "name": self.name, "uid": objects.uid(ds), "controller": True}
                    ],
                },
                "spec": {"nodeName": node, "containers": [{"name": DRIVER_CONTAINER, "image": self.image}]},
                "status": {"phase": "Pending"},
            },
        )

    def started(self, key: str, body: dict[str, Any]) -> None:
        node = body["spec"]["nodeName"]
        host = self.world.hosts[node]
        if host.exists("/usr/bin/nvidia-smi"):
            # k8s-driver-manager: a host driver -> pre-installed, then exit 1 after 60 s.
            self.world.label(node, {GPU_DEPLOY_DRIVER_LABEL: "pre-installed"})
            body["status"] = {"phase": "Running"}
            self.world.api.put("pods", key, body)
            self.world.at(60.0, lambda: self._fail(key))
            return
        body["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
        self.world.api.put("pods", key, body)
        host.files.add("/var/log/nvidia-installer.log")
        host.operator_modules = True
        if node in self.never_ready:
            return
        delay = 60.0 + 10.0 * self.world.rng.randint(3, 12)
        self.world.at(delay, lambda: self._ready(key))

    def _fail(self, key: str) -> None:
        pod = self.world.api.store["pods"].get(key)
        if pod is not None:
            body = clone(pod)
            body["status"] = {"phase": "Failed"}
            self.world.api.put("pods", key, body)

    def _ready(self, key: str) -> None:
        pod = self.world.api.store["pods"].get(key)
        if pod is None or objects.terminating(pod):
            return
        body = clone(pod)
        body["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        self.world.api.put("pods", key, body)
        if self.world.declared:
            # GPU Feature Discovery labels the version of the driver now loaded (gpu-feature-discovery
            # ``nvidia.com/cuda.driver-version.full``): the image's tag, ``<version>-<os>``.
            version = str(body["spec"]["containers"][0]["image"]).rsplit(":", 1)[-1].split("-")[0]
            self.world.label(body["spec"]["nodeName"], {GFD_DRIVER_VERSION_LABEL: version})


def is_operator_gpu_pod(pod: dict[str, Any]) -> bool:
    """gpu-operator v26.7.0 ``cmd/gpu-operator/main.go`` ``gpuPodSpecFilter`` (without DRA claims): Running or
    Pending, a container asking for ``nvidia.com/gpu*`` or ``nvidia.com/mig-*``."""
    if (pod.get("status") or {}).get("phase") not in ("Running", "Pending"):
        return False
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for resource in {**(resources.get("limits") or {}), **(resources.get("requests") or {})}:
            if resource.startswith(operator.GPU_POD_RESOURCE_PREFIXES):
                return True
    return False


class UpgradeController:
    """The GPU Operator's upgrade controller, in-place mode, as vendored k8s-operator-libs ``pkg/upgrade`` runs it
    (gpu-operator v26.7.0): ``ApplyState`` on a snapshot of every managed node each reconcile.

    - ``ProcessDoneOrUnknownNodes``: a pod whose ``controller-revision-hash`` is not the newest revision's ->
      ``upgrade-required`` (a cordoned node gets the initial-state note first); otherwise ``upgrade-done``.
    - ``ProcessUpgradeRequiredNodes`` (``upgrade_inplace.go``): the skip label keeps a node; slots are
      ``min(maxParallel - in progress, maxUnavailable)``, none when cordoned/NotReady nodes (+ ``cordon-required``)
      reach ``maxUnavailable`` (``GetUpgradesAvailable``); a node already cordoned goes on without a slot.
    - cordon -> wait-for-jobs (no selector) -> pod deletion (every ``gpuPodSpecFilter`` pod on the node, the
      deletion deleting them gracefully) -> drain off -> pod restart (the driver pod deleted; the DaemonSet makes a
      new one) -> once it is in sync and Ready: validation (modelled as passed with the driver pod Ready) ->
      ``uncordon-required`` (or ``upgrade-done`` without uncordon when the initial-state note is there, which it
      removes, ``updateNodeToUncordonOrDoneState``) -> uncordon -> ``upgrade-done``.
    """

    CALLER = "gpu-operator"

    def __init__(self, world: World, max_unavailable: int = 1, max_parallel: int = 1, period: float = 5.0) -> None:
        self.world = world
        self.max_unavailable = max_unavailable
        self.max_parallel = max_parallel
        self.period = period
        self.deleted_pods: list[str] = []  #: every pod its pod-deletion step deleted
        self.running = False

    def start(self) -> None:
        if not self.running:
            self.running = True
            self.world.at(self.period, self.reconcile)

    def _state(self, node: dict[str, Any]) -> str:
        return objects.labels(node).get(operator.UPGRADE_STATE_LABEL, "")

    def _set(self, name: str, state: str) -> None:
        self.world.label(name, {operator.UPGRADE_STATE_LABEL: state})

    def _annotate(self, name: str, key: str, value: str | None) -> None:
        node = self.world.api.store["nodes"].get(name)
        if node is None:
            return
        body = clone(node)
        notes = dict(body["metadata"].get("annotations") or {})
        if value is None:
            notes.pop(key, None)
        else:
            notes[key] = value
        body["metadata"]["annotations"] = notes
        self.world.api.put("nodes", name, body)

    def _cordon(self, name: str, unschedulable: bool) -> None:
        node = self.world.api.store["nodes"].get(name)
        if node is None:
            return
        body = clone(node)
        body.setdefault("spec", {})["unschedulable"] = unschedulable
        self.world.api.put("nodes", name, body)

    def _driver_pod(self, name: str) -> dict[str, Any] | None:
        pods = [pod for pod in self.world.driver.pods_on(name) if not objects.terminating(pod)]
        return pods[0] if pods else None

    def _in_sync(self, pod: dict[str, Any]) -> bool:
        return objects.labels(pod).get(operator.CONTROLLER_REVISION_HASH_LABEL) == self.world.driver.current_hash()

    def reconcile(self) -> None:
        self.world.api.caller = self.CALLER  # its writes are told apart by the invariants
        try:
            self._apply()
        finally:
            self.world.api.caller = ""
            self.world.at(self.period, self.reconcile)

    def _apply(self) -> None:
        driver = self.world.driver
        selected = [node for node in self.world.api.store["nodes"].values() if driver.selects(node)]
        owned = [pod for pod in self.world.api.store["pods"].values() if objects.owner_name(pod) == driver.name]
        if len(owned) != len(selected):
            # BuildState (upgrade_state.go): "driver DaemonSet should not have Unscheduled pods": the whole
            # reconcile stops while a selected node has no driver pod, or an old one still terminates beside its new
            # one (DesiredNumberScheduled != the DaemonSet's pods).
            return
        snapshot = {objects.name(node): clone(node) for node in selected}
        by_state: dict[str, list[str]] = {}
        for name, node in sorted(snapshot.items()):
            by_state.setdefault(self._state(node), []).append(name)
        total = len(snapshot)
        unavailable = sum(
            1
            for node in snapshot.values()
            if (node.get("spec") or {}).get("unschedulable") or not self.world.node_ready(objects.name(node))
        )
        for name in by_state.get("", []) + by_state.get(operator.UpgradeState.DONE, []):
            pod = self._driver_pod(name)
            if pod is not None and not self._in_sync(pod):
                if (snapshot[name].get("spec") or {}).get("unschedulable"):
                    self._annotate(name, operator.UPGRADE_INITIAL_STATE_ANNOTATION, "true")
                self._set(name, operator.UpgradeState.UPGRADE_REQUIRED)
            elif self._state(snapshot[name]) == "":
                self._set(name, operator.UpgradeState.DONE)
        for name in by_state.get(operator.UpgradeState.CORDON_REQUIRED, []):
            self._cordon(name, True)
            self._set(name, operator.UpgradeState.WAIT_FOR_JOBS_REQUIRED)
        for name in by_state.get(operator.UpgradeState.WAIT_FOR_JOBS_REQUIRED, []):
            self._set(name, operator.UpgradeState.POD_DELETION_REQUIRED)
        for name in by_state.get(operator.UpgradeState.POD_DELETION_REQUIRED, []):
            for pod in self.world.pods_on(name):
                if is_operator_gpu_pod(pod) and not objects.terminating(pod):
                    self.deleted_pods.append(f"{pod['metadata'].get('namespace', '')}/{objects.name(pod)}")
                    self.world.api.delete_pod_gracefully(pod["metadata"].get("namespace", ""), objects.name(pod))
            self._set(name, operator.UpgradeState.POD_RESTART_REQUIRED)
        for name in by_state.get(operator.UpgradeState.POD_RESTART_REQUIRED, []):
            pod = self._driver_pod(name)
            if pod is None:
                continue
            if not self._in_sync(pod):
                self.world.api.delete_pod_gracefully(driver.NAMESPACE, objects.name(pod))
            elif objects.pod_ready(pod):
                self._uncordon_or_done(name, snapshot[name])
        for name in by_state.get(operator.UpgradeState.UNCORDON_REQUIRED, []):
            self._cordon(name, False)
            self._set(name, operator.UpgradeState.DONE)
        self._upgrade_required(snapshot, by_state, total, unavailable)

    def _uncordon_or_done(self, name: str, node: dict[str, Any]) -> None:
        if operator.UPGRADE_INITIAL_STATE_ANNOTATION in objects.annotations_of(node):
            self._set(name, operator.UpgradeState.DONE)
            self._annotate(name, operator.UPGRADE_INITIAL_STATE_ANNOTATION, None)
        else:
            self._set(name, operator.UpgradeState.UNCORDON_REQUIRED)

    def _upgrade_required(
        self, snapshot: dict[str, dict[str, Any]], by_state: dict[str, list[str]], total: int, unavailable: int
    ) -> None:
        idle = {"", operator.UpgradeState.DONE, operator.UpgradeState.UPGRADE_REQUIRED}
        in_progress = sum(len(names) for state, names in by_state.items() if state not in idle)
        available = (
            len(by_state.get(operator.UpgradeState.UPGRADE_REQUIRED, []))
            if self.max_parallel == 0
            else (self.max_parallel - in_progress)
        )
        unavailable += len(by_state.get(operator.UpgradeState.CORDON_REQUIRED, []))
        available = min(available, self.max_unavailable)
        if unavailable >= self.max_unavailable:
            available = 0
        elif self.max_unavailable < total and unavailable + available > self.max_unavailable:
            available = self.max_unavailable - unavailable
        for name in by_state.get(operator.UpgradeState.UPGRADE_REQUIRED, []):
            node = snapshot[name]
            if objects.labels(node).get(operator.UPGRADE_SKIP_LABEL) == operator.UPGRADE_SKIP_VALUE:
                continue
            if available <= 0 and not (node.get("spec") or {}).get("unschedulable"):
                continue
            self._set(name, operator.UpgradeState.CORDON_REQUIRED)
            available -= 1


@dataclass
class MigManagerPod:
    """One node's mig-manager pod: its queue and the package variable that outlives a run."""

    busy: bool = False
    queued: bool = False
    #: reconfigure.go ``NoRestartK8sDaemonsetsOnExit``: set by ``restartKubernetesGPUClients`` on the first
    #: success, never reset while the pod lives.
    no_restart: bool = False
    generation: int = 0  #: bumped when the pod restarts (a run in progress is lost)


class MigManager:
    """mig-manager (mig-parted v0.15.0 cmd/nvidia-mig-manager + pkg/mig/reconfigure/reconfigure.go).

    On a change of ``nvidia.com/mig.config`` it runs ``Run()``: ``getCurrentNodeLabels`` (a ``kubectl get``),
    ``validateMigConfig`` and ``isConfigAlreadyApplied`` (two ``nvidia-mig-parted assert`` calls) **before** it
    writes anything; an applied config is ``success`` at once; otherwise ``pending``, the operands set to
    ``paused-for-mig-change``, the change applied (it fails on GPUs in use), the operands restored, then
    ``success`` or ``failed``. One run at a time; a change during a run is picked up after it. A pod that
    restarts mid-run leaves ``pending`` behind (NVIDIA/gpu-operator#2833).
    """

    def __init__(self, world: World) -> None:
        self.world = world
        self.pods: dict[str, MigManagerPod] = {}
        self.fail: set[str] = set()  #: nodes where nvidia-mig-parted apply fails
        self.stall: set[str] = set()  #: nodes whose mig-manager never gets to write anything
        self.runs = 0

    def pod(self, node: str) -> MigManagerPod:
        return self.pods.setdefault(node, MigManagerPod())

    def on_node(self, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None or old is None:
            return
        if objects.labels(new).get(MIG_LABEL) == objects.labels(old).get(MIG_LABEL):
            return
        pod = self.pod(name)
        if pod.busy:
            pod.queued = True
            return
        self._start(name)

    def _start(self, node: str) -> None:
        pod = self.pod(node)
        if not self.world.up(node) or node in self.stall:
            return
        pod.busy, pod.queued = True, False
        generation = pod.generation
        lo, hi = self.world.timing.mig_checks
        self.world.at(self.world.rng.uniform(lo, hi), lambda: self._checked(node, generation))

    def _alive(self, node: str, generation: int) -> bool:
        return self.pod(node).generation == generation and node in self.world.api.store["nodes"]

    def _checked(self, node: str, generation: int) -> None:
        if not self._alive(node, generation):
            return
        self.runs += 1
        labels = objects.labels(self.world.node(node))
        config = labels.get(MIG_LABEL, "")
        captured = {key: labels.get(key, "") for key in OPERAND_DEPLOY_LABELS}
        host = self.world.hosts[node]
        if host.mig_layout == config:
            self._finish(node, generation, MIG_STATE_SUCCESS, captured)
            return
        paused = {key: ("false" if value == "false" else PAUSED_FOR_MIG) for key, value in captured.items()}
        self.world.label(node, {MIG_STATE_LABEL: MIG_STATE_PENDING, **paused})
        lo, hi = self.world.timing.mig_apply
        self.world.at(self.world.rng.uniform(lo, hi), lambda: self._apply(node, generation, config, captured))

    def _apply(self, node: str, generation: int, config: str, captured: dict[str, str]) -> None:
        if not self._alive(node, generation):
            return
        busy = self.world.gpu_pods_running(node)
        if node in self.fail or busy or config not in LAYOUTS:
            self._finish(node, generation, MIG_STATE_FAILED, captured)
            return
        self.world.hosts[node].mig_layout = config
        self.world.record_mig_change(node)
        pod = self.pod(node)
        pod.no_restart = True  # restartKubernetesGPUClients
        self.world.label(node, {key: ("false" if v == "false" else "true") for key, v in captured.items()})
        self._finish(node, generation, MIG_STATE_SUCCESS, captured)

    def _finish(self, node: str, generation: int, state: str, captured: dict[str, str]) -> None:
        pod = self.pod(node)
        labels: dict[str, str | None] = {}
        if not pod.no_restart:  # setState: restores the operands only while the flag is unset
            labels.update({key: ("false" if v == "false" else "true") for key, v in captured.items()})
        labels[MIG_STATE_LABEL] = state
        self.world.label(node, labels)
        pod.busy = False
        if pod.queued:
            self._start(node)

    def restarted(self, node: str) -> None:
        pod = self.pod(node)
        pod.generation += 1
        pod.busy = pod.queued = False
        pod.no_restart = False


class DevicePlugin:
    """The device plugin and kubelet's device manager: the node's allocatable NVIDIA resources follow the MIG
    layout while ``nvidia.com/gpu.deploy.device-plugin`` is ``true``; paused, the plugin's pod is gone and
    kubelet reports 0 for its resources (pkg/kubelet/cm/devicemanager: an unregistered endpoint's devices
    are unhealthy). A restarted plugin registers after a few seconds."""

    LABEL = OPERAND_DEPLOY_LABELS[0]

    def __init__(self, world: World) -> None:
        self.world = world

    def on_node(self, name: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            return
        before = objects.labels(old or {}).get(self.LABEL)
        after = objects.labels(new).get(self.LABEL)
        if before != after:
            self.world.at(self.world.timing.plugin, lambda: self.publish(name))

    def publish(self, node: str) -> None:
        current = self.world.api.store["nodes"].get(node)
        if current is None or not self.world.up(node):
            return
        running = objects.labels(current).get(self.LABEL, "true") == "true"
        layout = LAYOUTS.get(self.world.hosts[node].mig_layout, {})
        allocatable = {
            k: v for k, v in current["status"].get("allocatable", {}).items() if not k.startswith("nvidia.com/")
        }
        if running:
            allocatable.update({k: str(v) for k, v in layout.items()})
        else:
            allocatable.update(
                {k: "0" for k in current["status"].get("allocatable", {}) if k.startswith("nvidia.com/")}
            )
        if allocatable != current["status"].get("allocatable"):
            body = clone(current)
            body["status"]["allocatable"] = allocatable
            self.world.api.put("nodes", node, body)


@dataclass
class Human:
    """What an operator does by hand, scripted by a test."""

    actions: list[str] = field(default_factory=list)
