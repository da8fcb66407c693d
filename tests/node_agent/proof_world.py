"""A simulated cluster for the driver-step proof: the operator's driver DaemonSet and upgrade controller, the
DaemonSet controller's revision history, GPU Feature Discovery, kubelet, the scheduler and the cluster autoscaler,
over the node agent's simulated API.

The API server is the node agent's (``tests/node_agent/sim/api.py``: resourceVersions, graceful pod deletion,
injected faults); the proof is its one caller here, with the ServiceAccount's rights (RBAC denies the rest).
Each actor behaves as its source says, with its timing:

- The driver DaemonSet of an NVIDIADriver (gpu-operator v26.7.0 ``manifests/state-driver/0500_daemonset.yaml``):
  named ``nvidia-<driverType>-driver-<os>-<hash>`` (``internal/state/driver.go`` ``getDriverAppName``, the hash
  ``internal/utils/utils.go`` ``GetStringHash`` of the resource's UID), labelled ``app: <that name>`` and
  ``app.kubernetes.io/component: nvidia-driver``, selecting its pods by ``app`` only, ``OnDelete``; the image is
  ``<repository>/<image>:<version>-<os>`` (``api/nvidia/v1alpha1/nvidiadriver_types.go`` ``GetImagePath``); the
  driver container is Ready once its startup probe passes after the build (minutes).
- The DaemonSet controller (Kubernetes behaviour, not in ``.upstream/``: ``pkg/controller/daemon/update.go``
  ``constructHistory``, ``dedupCurHistories``, ``snapshot``; ``pkg/controller/history`` ``ControllerRevisionName``;
  ``pkg/controller/daemon/util`` ``CreatePodTemplate``): each template has a ControllerRevision named
  ``<daemonset>-<hash of the template>``, labelled with the template's labels and ``controller-revision-hash``;
  a new template gets a new revision numbered one above the others, and a template that returns (a rollback:
  A, B, A) reuses its old revision object, renumbered one above the others. A new pod carries the current
  ``controller-revision-hash`` and ``pod-template-generation`` (the template generation, which the API server's
  ``pkg/registry/apps/daemonset/strategy.go`` bumps on every template change, a rollback included, and keeps in
  the ``deprecated.daemonset.template.generation`` annotation; ``metadata.generation`` also moves on other spec
  changes). The controller acts within the same instant here.
- The upgrade controller (k8s-operator-libs ``pkg/upgrade``, gpu-operator v26.7.0
  ``controllers/upgrade_controller.go``): requeued every 2 minutes (``plannedRequeueInterval``), it takes at
  most ``maxParallelUpgrades`` nodes at once (bounded by ``maxUnavailable`` of the resource's managed nodes),
  judges a driver pod outdated when its ``controller-revision-hash`` is not its DaemonSet's newest revision's
  (``common_manager.go`` ``podInSyncWithDS``, ``pod_manager.go`` ``GetDaemonsetControllerRevisionHash``; the
  catalog's ``revision_hash``), cordons the node (noting ``node-initial-state.unschedulable`` when it already was:
  then it leaves it cordoned at the end), deletes its GPU pods, deletes its outdated driver pod and uncordons the
  node once the new one is Ready. A node whose new driver never gets Ready stays cordoned (``upgrade-failed``).
  The nodes it holds are those in its states (``OPERATOR_HOLDS_STATES``), not every cordoned node.
- The ClusterPolicy's orphaned driver pod after the move (``controllers/state_manager.go``: the DaemonSet is
  deleted with ``DeletePropagationOrphan``): no owner; the new pod stays Pending beside it (pod anti-affinity).
- GPU Feature Discovery (k8s-device-plugin v0.20.0, ``--sleep-interval`` default 60s): relabels
  ``nvidia.com/cuda.driver-version.full`` with the loaded driver on its next pass.
- kubelet runs a CUDA proof pod's init container (``driver_check_script``: polls ``nvidia-smi`` every 10 s until
  it reports the declared version), then vectorAdd; a terminating pod goes after its grace period (30 s).
- mig-manager (mig-parted's ``nvidia-mig-manager.sh``, as modelled in ``tests/node_agent/sim/actors.py``): on a
  changed ``nvidia.com/mig.config`` it runs its checks for a few seconds before it writes ``pending`` (until then
  the old ``success`` stays), applies the config (tens of seconds), restarts the device plugin (which then
  advertises the new resources) and writes ``success``, or ``failed``.
- The Priority admission plugin (Kubernetes ``plugin/pkg/admission/priority``): a pod naming a PriorityClass gets
  its value in ``spec.priority``; a class that does not exist is refused (403).
- The node lifecycle controller (Kubernetes ``pkg/controller/nodelifecycle``, ``TaintNodesByCondition``) taints a
  cordoned node ``node.kubernetes.io/unschedulable:NoSchedule``.
- The scheduler (kube-scheduler's filters, Kubernetes behaviour): binds a pod to a Ready node that passes
  ``NodeUnschedulable`` (``pkg/scheduler/framework/plugins/nodeunschedulable``: a node with
  ``spec.unschedulable`` only for a pod tolerating ``node.kubernetes.io/unschedulable:NoSchedule``),
  ``TaintToleration`` (every NoSchedule/NoExecute taint tolerated), its nodeSelector and node affinity, and
  ``NodeResourcesFit`` (the node's allocatable GPU resources minus those of the pods bound there, terminating
  ones included). Where only resources are missing, ``DefaultPreemption`` deletes (gracefully) the fewest pods of
  lower priority that make room, unless the pod's ``preemptionPolicy`` is Never; the pod is bound once they are
  gone. The cluster autoscaler adds a node for an unschedulable pod of a pool after a node's boot (a few minutes),
  and the node comes up with the DaemonSet's current template.
"""

from __future__ import annotations

import functools
import heapq
import json
import re
from collections.abc import Callable
from typing import Any

from components.catalog import gpu_operator_upgrade as upgrade
from components.catalog import nvidia_driver as crd
from components.catalog.kubernetes import Taint, parse_taint, tolerates, tolerations_for
from components.catalog.names import NODE_GROUP_LABEL
from components.catalog.names import PROOF_NODE_ANNOTATION as NODE_ANNOTATION
from components.catalog.names import PROOF_RUN_LABEL as RUN_LABEL
from components.catalog.node_agent import (
    MIG_LABEL,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    MIG_STATE_PENDING,
    MIG_STATE_SUCCESS,
    UNSCHEDULABLE_TAINT,
)
from components.catalog.proof import PoolProof, ProofSettings
from components.node_agent.agent import objects
from components.node_agent.agent.kube import ApiError
from components.proof.component import PRIORITY_CLASS, PRIORITY_VALUE
from tests.node_agent.sim.api import Client, Faults, SimApi, clone

START = 1_800_000_000.0
OPERATOR_NS = "gpu-operator"
PROOF_NS = "gpu-platform-proof"
WORKLOAD_NS = "team-a"
REPOSITORY, IMAGE, OS_TAG = "nvcr.io/nvidia", "driver", "ubuntu22.04"
OLD, NEW = "580.95.05", "580.105.08"
CUDA_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
WANT = re.compile(r'want="([^"]+)"')
#: The pool's taints, as a node group declares them (Pulumi.dev.yaml's v100 carries these two).
TAINTS = ("nvidia.com/gpu=true:NoSchedule", "gpu-platform.io/workload=notebooks:NoSchedule")
#: Kubernetes ``pkg/apis/apps/v1`` keeps a DaemonSet's template generation in this annotation (apps/v1 has no
#: ``spec.templateGeneration``); the DaemonSet controller labels each pod with it.
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
POD_TEMPLATE_GENERATION_LABEL = "pod-template-generation"
#: ``system-node-critical``'s value (Kubernetes ``pkg/apis/scheduling`` ``SystemCriticalPriority`` + 1000).
SYSTEM_NODE_CRITICAL = 2_000_001_000
#: The effects the scheduler's TaintToleration filter honours (PreferNoSchedule only scores).
REPELLING = ("NoSchedule", "NoExecute")
#: k8s.io/apimachinery ``pkg/util/rand`` ``SafeEncodeString``'s alphabet (no vowels, no 0/1/3).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def safe_hash(text: str) -> str:
    """``rand.SafeEncodeString(fmt.Sprint(fnv32a(text)))``: gpu-operator ``utils.GetStringHash``, and the shape of
    Kubernetes' ``controller.ComputeHash`` (which hashes the template object; its JSON stands in here)."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in str(value))


def matches(obj: dict[str, Any], selector: str) -> bool:
    """An equality-based label selector (``k=v,k2=v2``; "" selects everything)."""
    wanted = dict(part.split("=", 1) for part in selector.split(",") if part)
    return all(objects.labels(obj).get(key) == value for key, value in wanted.items())


def gpu_demand(pod: dict[str, Any]) -> dict[str, int]:
    """The pod's effective request of each NVIDIA resource: the larger of its containers' sum and its largest init
    container (kube-scheduler ``computePodResourceRequest``)."""
    spec = pod.get("spec") or {}

    def of(container: dict[str, Any]) -> dict[str, int]:
        limits = (container.get("resources") or {}).get("limits") or {}
        return {k: int(v) for k, v in limits.items() if k.startswith(objects.GPU_RESOURCE_PREFIX)}

    demand: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for key, count in of(container).items():
            demand[key] = demand.get(key, 0) + count
    for container in spec.get("initContainers") or []:
        for key, count in of(container).items():
            demand[key] = max(demand.get(key, 0), count)
    return demand


def tolerated(pod: dict[str, Any], taint: dict[str, Any]) -> bool:
    wanted = Taint.from_object(taint)
    assert wanted is not None, taint
    return any(tolerates(t, wanted) for t in (pod.get("spec") or {}).get("tolerations") or [])


class ProofClient(Client):
    """The proof's ServiceAccount: list nodes; list pods, DaemonSets and ControllerRevisions in the operator's
    namespace; create, list and delete pods in its own (``components.proof.component`` grants exactly these)."""

    def __init__(self, api: SimApi, namespace: str) -> None:
        super().__init__(api, "proof", namespace)

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        return self._call(
            False, lambda: [clone(n) for n in self.api.store["nodes"].values() if matches(n, label_selector)]
        )

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        if namespace not in (OPERATOR_NS, self.namespace):
            self._deny(f"may not list pods in {namespace}")
        return self._namespaced("pods", namespace, label_selector)

    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        if namespace != OPERATOR_NS:
            self._deny(f"may not list daemonsets in {namespace}")
        return self._namespaced("daemonsets", namespace, label_selector)

    def list_controller_revisions(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        if namespace != OPERATOR_NS:
            self._deny(f"may not list controllerrevisions in {namespace}")
        return self._namespaced("controllerrevisions", namespace, label_selector)

    def _namespaced(self, kind: str, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self._call(
            False,
            lambda: [
                clone(o)
                for o in self.api.store[kind].values()
                if o["metadata"].get("namespace") == namespace and matches(o, label_selector)
            ],
        )

    def create_pod(self, namespace: str, pod: dict[str, Any]) -> None:
        """The Priority admission plugin first: the class's value in ``spec.priority``, or 403 without the class."""
        body = clone(pod)
        name = body["spec"].get("priorityClassName", "")
        if name:
            found = self.api.store["priorityclasses"].get(name)
            if found is None:
                raise ApiError(403, f"pods is forbidden: no PriorityClass with name {name} was found")
            body["spec"]["priority"] = found["value"]
            body["spec"]["preemptionPolicy"] = found.get("preemptionPolicy", "PreemptLowerPriority")
        super().create_pod(namespace, body)

    def _only_controller(self, what: str) -> None:
        """The proof creates and deletes pods (in its own namespace: ``Client`` checks that)."""


class ProofWorld:
    """GPU nodes of one pool under one NVIDIADriver, on the old driver, and the actors that move them."""

    def __init__(
        self,
        nodes: int = 3,
        pool: str = "v100",
        owner: str = "gpu-platform-v100",
        max_parallel: int = 1,
        faults: Faults | None = None,
        autoscale: bool = True,
    ) -> None:
        self.t = START
        self.seq = 0
        self.queue: list[tuple[float, int, Callable[[], None]]] = []
        self.faults = faults or Faults(callers=("proof",))
        self.api = SimApi(lambda: self.t, self.faults)
        for kind in ("controllerrevisions", "priorityclasses"):
            self.api.store.setdefault(kind, {})
        self.pool, self.owner, self.max_parallel, self.autoscale = pool, owner, max_parallel, autoscale
        self.taints = [parse_taint(text) for text in TAINTS]
        # getDriverAppName: nvidia-<driverType>-driver-<os>-<GetStringHash(the NVIDIADriver's UID)>.
        self.ds_name = crd_app_name(f"uid-{owner}")
        self.version = OLD
        self.template_extra: dict[str, str] = {}  # other template fields an operator re-render may change
        self.loaded: dict[str, str] = {}  # node -> the driver its kernel has loaded
        self.never_ready: set[str] = set()  # nodes whose new driver build fails
        self.mig_failing: set[str] = set()  # nodes where mig-manager fails to apply a config
        self.scale_up_pending = False
        self.started: dict[str, float] = {}  # proof pod -> when kubelet started it
        self.pods = 0
        # GpuProofAccess registers the PriorityClass before any proof Job (the Job waits for it).
        self.api.put(
            "priorityclasses",
            PRIORITY_CLASS,
            {
                "metadata": {"name": PRIORITY_CLASS},
                "value": PRIORITY_VALUE,
                "preemptionPolicy": "PreemptLowerPriority",
            },
        )
        self._render(template_generation=1)
        for index in range(nodes):
            self.add_node(f"{pool}-{index}")
        self.at(120.0, self._upgrade_controller)
        self.at(60.0, self._gfd)
        self.at(1.0, self._scheduler)

    # -- the clock ----------------------------------------------------------------------------------------
    def at(self, delay: float, fn: Callable[[], None]) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (self.t + delay, self.seq, fn))

    def run(self, seconds: float) -> None:
        end = self.t + seconds
        while self.queue and self.queue[0][0] <= end:
            when, _, fn = heapq.heappop(self.queue)
            self.t = max(self.t, when)
            fn()
        self.t = max(self.t, end)

    def clock(self) -> float:
        return self.t

    # -- the driver DaemonSet and its revisions -----------------------------------------------------------
    def image(self, version: str) -> str:
        return f"{REPOSITORY}/{IMAGE}:{version}-{OS_TAG}"

    def _labels(self) -> dict[str, str]:
        """The DaemonSet's and its pod template's labels (0500_daemonset.yaml, driverType gpu, not precompiled)."""
        return {
            "app": self.ds_name,
            "nvidia.com/node.os-version": OS_TAG,
            "nvidia.com/precompiled": "false",
            upgrade.DRIVER_COMPONENT_LABEL: upgrade.DRIVER_COMPONENT,
        }

    def _template(self) -> dict[str, Any]:
        env = [{"name": key, "value": value} for key, value in sorted(self.template_extra.items())]
        container = {"name": upgrade.DRIVER_CONTAINER, "image": self.image(self.version), "env": env}
        return {"metadata": {"labels": self._labels()}, "spec": {"containers": [container]}}

    def _render(self, template_generation: int) -> None:
        """The operator writes the DaemonSet; the DaemonSet controller brings its history up to date."""
        ds = {
            "metadata": {
                "name": self.ds_name,
                "namespace": OPERATOR_NS,
                "labels": self._labels(),
                # A spec change outside the template moves metadata.generation only (strategy.go): +10 here.
                "generation": template_generation + 10,
                "annotations": {TEMPLATE_GENERATION_ANNOTATION: str(template_generation)},
            },
            "spec": {
                "selector": {"matchLabels": {"app": self.ds_name}},
                "updateStrategy": {"type": "OnDelete"},
                "template": self._template(),
            },
        }
        self.api.put("daemonsets", f"{OPERATOR_NS}/{self.ds_name}", ds)
        self._construct_history()

    def template_hash(self) -> str:
        return safe_hash(json.dumps(self._template(), sort_keys=True))

    def revisions(self) -> list[dict[str, Any]]:
        """The DaemonSet's ControllerRevisions (by its selector, as the controller lists them)."""
        return [r for r in self.api.store["controllerrevisions"].values() if matches(r, f"app={self.ds_name}")]

    def _construct_history(self) -> None:
        """``constructHistory``: the current template's revision is renumbered one above the others, or made."""
        current = self.template_hash()
        history = self.revisions()
        cur = [r for r in history if objects.labels(r).get(upgrade.CONTROLLER_REVISION_HASH_LABEL) == current]
        old = [r for r in history if r not in cur]
        number = max((int(r["revision"]) for r in old), default=0) + 1
        if cur:
            keep = clone(max(cur, key=lambda r: int(r["revision"])))  # dedupCurHistories keeps the newest
            if int(keep["revision"]) < number:
                keep["revision"] = number
                self.api.put("controllerrevisions", f"{OPERATOR_NS}/{objects.name(keep)}", keep)
            return
        name = f"{self.ds_name}-{current}"
        labels = {**self._labels(), upgrade.CONTROLLER_REVISION_HASH_LABEL: current}
        revision = {
            "metadata": {
                "name": name,
                "namespace": OPERATOR_NS,
                "labels": labels,
                "ownerReferences": [{"kind": "DaemonSet", "name": self.ds_name, "controller": True}],
            },
            "data": self._template(),
            "revision": number,
        }
        self.api.put("controllerrevisions", f"{OPERATOR_NS}/{name}", revision)

    def newest_hash(self) -> str:
        """What the upgrade controller calls current (``GetDaemonsetControllerRevisionHash``)."""
        found = [(objects.name(r), int(r["revision"])) for r in self.revisions()]
        return upgrade.revision_hash(self.ds_name, found)

    @property
    def generation(self) -> int:
        """The template generation (what new pods are labelled with)."""
        ds = self.api.store["daemonsets"][f"{OPERATOR_NS}/{self.ds_name}"]
        return int(ds["metadata"]["annotations"][TEMPLATE_GENERATION_ANNOTATION])

    # -- nodes and pods -----------------------------------------------------------------------------------
    def add_node(self, name: str, ready: bool = True) -> None:
        """A node as its group template makes it; the DaemonSet's current template installs its driver."""
        labels = {
            NODE_GROUP_LABEL: self.pool,
            crd.GPU_PRESENT_LABEL: "true",
            crd.OWNER_LABEL: self.owner,
            crd.GFD_DRIVER_VERSION_LABEL: self.version,
            MIG_LABEL: "all-disabled",
            MIG_STATE_LABEL: MIG_STATE_SUCCESS,
        }
        status: dict[str, Any] = {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "allocatable": {"nvidia.com/gpu": "1"},
        }
        taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in self.taints]
        body = {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}, "status": status}
        self.api.put("nodes", name, body)
        self.loaded[name] = self.version
        self._driver_pod(name, ready=True)

    def _driver_pod(self, node: str, ready: bool) -> str:
        self.pods += 1
        name = f"{self.ds_name}-{self.pods}"
        conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
        labels = {
            **self._labels(),
            upgrade.CONTROLLER_REVISION_HASH_LABEL: self.template_hash(),
            POD_TEMPLATE_GENERATION_LABEL: str(self.generation),
        }
        self.api.put(
            "pods",
            f"{OPERATOR_NS}/{name}",
            {
                "metadata": {
                    "name": name,
                    "namespace": OPERATOR_NS,
                    "labels": labels,
                    "ownerReferences": [{"kind": "DaemonSet", "name": self.ds_name, "controller": True}],
                },
                # The operator's daemonsets run as system-node-critical (gpuOperator.priorityClassName's default).
                "spec": {"nodeName": node, "priority": SYSTEM_NODE_CRITICAL, **clone(self._template()["spec"])},
                "status": {"phase": "Running", "conditions": conditions},
            },
        )
        return name

    def orphan_driver(self, node: str) -> None:
        """The ClusterPolicy's driver pod left on ``node`` by the move (no owner), holding the node."""
        for pod in self.driver_pods(node):
            body = clone(pod)
            body["metadata"]["ownerReferences"] = []
            body["spec"]["containers"][0]["image"] = self.image(OLD)
            self.api.put("pods", f"{OPERATOR_NS}/{objects.name(pod)}", body)

    def driver_pods(self, node: str) -> list[dict[str, Any]]:
        key, value = crd.DRIVER_POD_COMPONENT
        return [
            p
            for p in self.api.store["pods"].values()
            if objects.labels(p).get(key) == value and p["spec"].get("nodeName") == node
        ]

    def node(self, name: str) -> dict[str, Any]:
        return self.api.store["nodes"][name]

    def status_state(self) -> str:
        """What the NVIDIADriver's status says: ``ready`` when every driver pod is Ready (``isDaemonSetReady``)."""
        key, value = crd.DRIVER_POD_COMPONENT
        pods = [p for p in self.api.store["pods"].values() if objects.labels(p).get(key) == value]
        return "ready" if pods and all(objects.pod_ready(p) for p in pods) else "notReady"

    def cordon(self, name: str) -> None:
        """A person's ``kubectl cordon``; the node lifecycle controller adds the unschedulable taint."""
        body = clone(self.node(name))
        body["spec"]["unschedulable"] = True
        self._cordon_taint(body)
        self.api.put("nodes", name, body)

    @staticmethod
    def _cordon_taint(body: dict[str, Any]) -> None:
        taints = [t for t in body["spec"].get("taints") or [] if t["key"] != UNSCHEDULABLE_TAINT]
        if body["spec"].get("unschedulable"):
            taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
        body["spec"]["taints"] = taints

    def occupy(self, node: str, name: str = "training-0") -> str:
        """A workload pod of no PriorityClass (priority 0) holding the node's GPU, bound and running."""
        key = f"{WORKLOAD_NS}/{name}"
        limits = {"nvidia.com/gpu": "1"}
        pod = {
            "metadata": {"name": name, "namespace": WORKLOAD_NS, "labels": {"app": "training"}},
            "spec": {
                "nodeName": node,
                "priority": 0,
                "containers": [{"name": "train", "image": CUDA_IMAGE, "resources": {"limits": limits}}],
            },
            "status": {"phase": "Running"},
        }
        self.api.put("pods", key, pod)
        return key

    # -- the spec change ------------------------------------------------------------------------------------
    def change_driver(self, version: str) -> None:
        """``pulumi up`` updates the NVIDIADriver: the operator re-renders its DaemonSet (a new template)."""
        self.version = version
        self._render(self.generation + 1)

    def change_template(self, **extra: str) -> None:
        """A re-render that changes the template but not the image (an NVIDIADriver's ``env``, an operator
        upgrade); ``change_template()`` with nothing restores the template without them (a rollback)."""
        self.template_extra = dict(extra)
        self._render(self.generation + 1)

    def settings(self, deadline: float = 3600.0, mig: tuple[str, dict[str, int]] | None = None) -> ProofSettings:
        """The step's settings; with ``mig`` the MIG step of a host-owned driver (no driver evidence)."""
        pool = pool_proof(self.pool, self.owner, self.version)
        if mig is not None:
            pool = PoolProof(
                pool=pool.pool,
                selector=pool.selector,
                tolerations=pool.tolerations,
                resource=next(iter(mig[1])),
                check_script=pool.check_script,
                mig_config=mig[0],
                mig_resources=mig[1],
            )
        return ProofSettings(
            step="mig" if mig else "canary",
            namespace=PROOF_NS,
            operator_namespace=OPERATOR_NS,
            image=CUDA_IMAGE,
            pools=(pool,),
            deadline_seconds=deadline,
            poll_seconds=15.0,
            priority_class=PRIORITY_CLASS,
        )

    # -- MIG ------------------------------------------------------------------------------------------------
    def set_mig(self, config: str, resources: dict[str, int]) -> None:
        """The program's label change on every node (a NodePatch); mig-manager takes it from there."""
        for name in sorted(self.api.store["nodes"]):
            body = clone(self.node(name))
            body["metadata"]["labels"][MIG_LABEL] = config
            self.api.put("nodes", name, body)
            self.at(5.0, functools.partial(self._mig_state, name, MIG_STATE_PENDING, None))
            outcome = MIG_STATE_FAILED if name in self.mig_failing else MIG_STATE_SUCCESS
            self.at(50.0, functools.partial(self._mig_state, name, outcome, resources))

    def _mig_state(self, name: str, state: str, resources: dict[str, int] | None) -> None:
        body = clone(self.node(name))
        body["metadata"]["labels"][MIG_STATE_LABEL] = state
        if resources is not None and state == MIG_STATE_SUCCESS:
            body["status"]["allocatable"] = {key: str(count) for key, count in resources.items()}
        self.api.put("nodes", name, body)

    # -- the upgrade controller -----------------------------------------------------------------------------
    def _outdated(self, node: str) -> bool:
        """``podInSyncWithDS``: an orphan, or a pod whose hash is not the DaemonSet's newest revision's."""
        newest = self.newest_hash()
        return any(
            objects.owner_kind(p) != "DaemonSet"
            or objects.labels(p).get(upgrade.CONTROLLER_REVISION_HASH_LABEL) != newest
            for p in self.driver_pods(node)
        )

    def _holds(self, name: str) -> bool:
        return upgrade.operator_holds(objects.labels(self.node(name)))

    def _upgrade_controller(self) -> None:
        self.at(120.0, self._upgrade_controller)
        nodes = sorted(self.api.store["nodes"])
        for name in [n for n in nodes if self._holds(n)]:
            pods = self.driver_pods(name)
            if pods and not self._outdated(name) and all(objects.pod_ready(p) for p in pods):
                self._finish(name)
            elif self._outdated(name):  # ProcessPodRestartNodes: a pod out of sync is restarted, unless terminating
                self._restart_driver(name)
        budget = self.max_parallel - sum(1 for n in nodes if self._holds(n))
        for name in nodes:
            if budget <= 0:
                break
            if self._outdated(name) and not self._holds(name):
                budget -= 1
                self._take(name)
                for pod in list(self.api.store["pods"].values()):
                    if pod["spec"].get("nodeName") == name and objects.requests_gpu(pod):
                        self.api.delete_pod_gracefully(pod["metadata"]["namespace"], objects.name(pod))
                self._restart_driver(name)

    def _restart_driver(self, name: str) -> None:
        """Delete the node's DaemonSet driver pod (the orphan is replaced only with autoUpgrade); the DaemonSet
        controller makes the new one once it is gone."""
        restarted = False
        for pod in self.driver_pods(name):
            if objects.owner_kind(pod) == "DaemonSet" and not objects.terminating(pod):
                self.api.delete_pod_gracefully(OPERATOR_NS, objects.name(pod))
                restarted = True
        if restarted:
            self.at(31.0, functools.partial(self._replace_driver, name))

    def _take(self, name: str) -> None:
        """Cordon for the upgrade; a node already unschedulable is noted (``UpgradeInitialStateAnnotation``)."""
        body = clone(self.node(name))
        if body["spec"].get("unschedulable"):
            body["metadata"].setdefault("annotations", {})[upgrade.UPGRADE_INITIAL_STATE_ANNOTATION] = "true"
        body["spec"]["unschedulable"] = True
        self._cordon_taint(body)
        body["metadata"]["labels"][crd.UPGRADE_STATE_LABEL] = upgrade.UpgradeState.POD_RESTART_REQUIRED.value
        self.api.put("nodes", name, body)

    def _finish(self, name: str) -> None:
        """Uncordon, unless the node was unschedulable before the upgrade (``updateNodeToUncordonOrDoneState``)."""
        body = clone(self.node(name))
        annotations = body["metadata"].setdefault("annotations", {})
        if annotations.pop(upgrade.UPGRADE_INITIAL_STATE_ANNOTATION, None) is None:
            body["spec"].pop("unschedulable", None)
            self._cordon_taint(body)
        body["metadata"]["labels"][crd.UPGRADE_STATE_LABEL] = upgrade.UpgradeState.DONE.value
        self.api.put("nodes", name, body)

    def _replace_driver(self, node: str) -> None:
        if node not in self.api.store["nodes"] or self.driver_pods(node):
            return
        name = self._driver_pod(node, ready=False)
        self.loaded[node] = ""  # the old modules are unloaded while the new driver builds
        if node not in self.never_ready:
            self.at(240.0, lambda: self._driver_ready(node, name))

    def _driver_ready(self, node: str, name: str) -> None:
        key = f"{OPERATOR_NS}/{name}"
        pod = self.api.store["pods"].get(key)
        if pod is None:
            return
        body = clone(pod)
        body["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        self.api.put("pods", key, body)
        self.loaded[node] = body["spec"]["containers"][0]["image"].split(":", 1)[1].rsplit("-", 1)[0]

    # -- GPU Feature Discovery, kubelet, the scheduler, the autoscaler -------------------------------------
    def _gfd(self) -> None:
        self.at(60.0, self._gfd)
        for name, version in self.loaded.items():
            node = self.api.store["nodes"].get(name)
            if node is not None and version and objects.labels(node).get(crd.GFD_DRIVER_VERSION_LABEL) != version:
                body = clone(node)
                body["metadata"]["labels"][crd.GFD_DRIVER_VERSION_LABEL] = version
                self.api.put("nodes", name, body)

    def _bound(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """The pods the scheduler counts on the node: bound and not finished (terminating ones too)."""
        return [
            p
            for p in self.api.store["pods"].values()
            if p["spec"].get("nodeName") == objects.name(node)
            and p["status"].get("phase") not in objects.FINISHED_PHASES
        ]

    def _unresolvable(self, pod: dict[str, Any], node: dict[str, Any]) -> str:
        """Why the node can never take the pod, whatever is preempted ("" when only resources may be missing)."""
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in node["status"]["conditions"])
        if not ready:
            return "not ready"
        if node["spec"].get("unschedulable") and not tolerated(
            pod, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
        ):
            return "unschedulable"  # NodeUnschedulable
        for taint in node["spec"].get("taints") or []:
            if taint["effect"] in REPELLING and not tolerated(pod, taint):
                return f"taint {taint['key']}"  # TaintToleration
        if any(objects.labels(node).get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
            return "node selector"
        if objects.annotations_of(pod).get(NODE_ANNOTATION) not in ("", objects.name(node)):
            return "node affinity"
        return ""

    def _missing(self, pod: dict[str, Any], node: dict[str, Any], without: list[dict[str, Any]]) -> bool:
        """NodeResourcesFit: the pod's GPU demand exceeds what is free with the ``without`` pods gone."""
        allocatable = node["status"].get("allocatable") or {}
        gone = {id(p) for p in without}
        for resource, count in gpu_demand(pod).items():
            used = sum(gpu_demand(p).get(resource, 0) for p in self._bound(node) if id(p) not in gone)
            if used + count > int(allocatable.get(resource, 0)):
                return True
        return False

    def _preempt(self, pod: dict[str, Any], node: dict[str, Any]) -> bool:
        """DefaultPreemption on one node (``selectVictimsOnNode``): remove every pod of lower priority; if the pod
        then fits, reprieve them one by one, highest priority first, while it still fits; delete the rest."""
        if pod["spec"].get("preemptionPolicy") == "Never":
            return False
        priority = int(pod["spec"].get("priority") or 0)
        lower = [p for p in self._bound(node) if int(p["spec"].get("priority") or 0) < priority]
        if not lower or self._missing(pod, node, lower):
            return False
        victims = list(lower)
        for candidate in sorted(lower, key=lambda p: -int(p["spec"].get("priority") or 0)):
            kept = [v for v in victims if v is not candidate]
            if not self._missing(pod, node, kept):
                victims = kept
        for victim in victims:
            self.api.delete_pod_gracefully(victim["metadata"]["namespace"], objects.name(victim))
        return True

    def _scheduler(self) -> None:
        self.at(1.0, self._scheduler)
        for key, pod in sorted(self.api.store["pods"].items()):
            if objects.terminating(pod):
                if objects.parse_time(pod["metadata"]["deletionTimestamp"]) <= self.t:
                    self.api.put("pods", key, None)
                continue
            if not objects.labels(pod).get(RUN_LABEL):
                continue
            if pod["spec"].get("nodeName"):
                self._kubelet(key, pod)
                continue
            nodes = sorted(self.api.store["nodes"].values(), key=objects.name)
            feasible = [n for n in nodes if not self._unresolvable(pod, n)]
            fits = [n for n in feasible if not self._missing(pod, n, [])]
            if fits:
                body = clone(pod)
                body["spec"]["nodeName"] = objects.name(fits[0])
                body["status"] = {"phase": "Running"}
                self.started[key] = self.t
                self.api.put("pods", key, body)
                continue
            if any(self._preempt(pod, n) for n in feasible):
                continue  # bound on a later pass, once the victims are gone
            if self.autoscale and not self.scale_up_pending and not objects.annotations_of(pod).get(NODE_ANNOTATION):
                self.scale_up_pending = True
                self.at(180.0, self._scaled_up)

    def _scaled_up(self) -> None:
        self.scale_up_pending = False
        self.add_node(f"{self.pool}-{len(self.api.store['nodes'])}")

    def _kubelet(self, key: str, pod: dict[str, Any]) -> None:
        """The init container's loop: passes when nvidia-smi reports the wanted version; then vectorAdd."""
        if pod["status"].get("phase") != "Running":
            return
        script = pod["spec"]["initContainers"][0]["command"][2]
        match = WANT.search(script)
        node = pod["spec"]["nodeName"]
        if match and self.loaded.get(node) == match.group(1) and self.t - self.started[key] >= 12.0:
            body = clone(pod)
            body["status"] = {"phase": "Succeeded"}
            self.api.put("pods", key, body)


def crd_app_name(uid: str, driver_type: str = crd.DRIVER_TYPE, os_tag: str = OS_TAG) -> str:
    """``getDriverAppName`` for a pool without a kernel or RHCOS suffix (not precompiled)."""
    return upgrade.NVIDIADRIVER_APP_FORMAT.format(driver_type=driver_type, os=os_tag, hash=safe_hash(uid))


def pool_proof(pool: str, owner: str, version: str) -> PoolProof:
    """One pool's settings, built as the program builds them (``components/proof/steps.py``: the pool's
    tolerations from its taints, the catalog's image prefix and script)."""
    return PoolProof(
        pool=pool,
        selector={NODE_GROUP_LABEL: pool},
        tolerations=tolerations_for(parse_taint(text) for text in TAINTS),
        resource="nvidia.com/gpu",
        driver_version=version,
        driver_image=crd.driver_image_prefix(REPOSITORY, IMAGE, version),
        owner=owner,
        check_script=crd.driver_check_script(version),
    )
