"""A simulated cluster for the driver-step proof: the operator's driver DaemonSet and upgrade controller,
GPU Feature Discovery, kubelet, the scheduler and the cluster autoscaler, over the node agent's simulated API.

The API server is the node agent's (``tests/node_agent/sim/api.py``: resourceVersions, graceful pod deletion,
injected faults); the proof is its one caller here, with the ServiceAccount's rights (RBAC denies the rest).
Each actor behaves as its source says, with its timing:

- The driver DaemonSet (gpu-operator v26.7.0 ``manifests/state-driver/0500_daemonset.yaml``): ``OnDelete``, so a
  spec change bumps ``metadata.generation`` and replaces no pod; a new pod carries ``pod-template-generation``
  (Kubernetes ``pkg/controller/daemon``) and the image ``<repository>/<image>:<version>-<os>``
  (``api/nvidia/v1alpha1/nvidiadriver_types.go`` ``GetImagePath``); the driver container is Ready once its
  startup probe passes after the build (minutes).
- The upgrade controller (k8s-operator-libs ``pkg/upgrade``, gpu-operator v26.7.0
  ``controllers/upgrade_controller.go``): requeued every 2 minutes (``plannedRequeueInterval``), it takes at
  most ``maxParallelUpgrades`` nodes at once (bounded by ``maxUnavailable`` of the resource's managed nodes),
  cordons a node, deletes its GPU pods, deletes its outdated driver pod and uncordons the node once the new one
  is Ready. A node whose new driver never gets Ready stays cordoned (``upgrade-failed``).
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
- The scheduler binds a pod to a Ready, schedulable node matching its nodeSelector and node affinity; the
  cluster autoscaler adds a node for an unschedulable pod of a pool after a node's boot (a few minutes), and the
  node comes up with the DaemonSet's current template.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Callable
from typing import Any

from components.catalog import nvidia_driver as crd
from components.catalog.names import NODE_GROUP_LABEL
from components.catalog.names import PROOF_NODE_ANNOTATION as NODE_ANNOTATION
from components.catalog.names import PROOF_RUN_LABEL as RUN_LABEL
from components.catalog.node_agent import (
    MIG_LABEL,
    MIG_STATE_FAILED,
    MIG_STATE_LABEL,
    MIG_STATE_PENDING,
    MIG_STATE_SUCCESS,
)
from components.node_agent.agent import objects
from components.node_agent.agent.proof.check import PoolProof, ProofSettings
from tests.node_agent.sim.api import Client, Faults, SimApi, clone

START = 1_800_000_000.0
OPERATOR_NS = "gpu-operator"
PROOF_NS = "gpu-platform-proof"
REPOSITORY, IMAGE, OS_TAG = "nvcr.io/nvidia", "driver", "ubuntu22.04"
OLD, NEW = "580.95.05", "580.105.08"
CUDA_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
WANT = re.compile(r'want="([^"]+)"')


class ProofClient(Client):
    """The proof's ServiceAccount: list nodes; list pods and DaemonSets in the operator's namespace; create,
    list and delete pods in its own (``components.smoke_test.proof`` grants exactly these)."""

    def __init__(self, api: SimApi, namespace: str) -> None:
        super().__init__(api, "proof", namespace)

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        wanted = dict(part.split("=", 1) for part in label_selector.split(",") if part)
        return self._call(
            False,
            lambda: [
                clone(n)
                for n in self.api.store["nodes"].values()
                if all(objects.labels(n).get(k) == v for k, v in wanted.items())
            ],
        )

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        if namespace not in (OPERATOR_NS, self.namespace):
            self._deny(f"may not list pods in {namespace}")
        key, _, value = label_selector.partition("=")
        return self._call(
            False,
            lambda: [
                clone(p)
                for p in self.api.store["pods"].values()
                if p["metadata"].get("namespace") == namespace and objects.labels(p).get(key) == value
            ],
        )

    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        if namespace != OPERATOR_NS:
            self._deny(f"may not list daemonsets in {namespace}")
        key, _, value = label_selector.partition("=")
        return self._call(
            False,
            lambda: [
                clone(d)
                for d in self.api.store["daemonsets"].values()
                if d["metadata"].get("namespace") == namespace and objects.labels(d).get(key) == value
            ],
        )

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
        self.pool, self.owner, self.max_parallel, self.autoscale = pool, owner, max_parallel, autoscale
        self.ds_name = f"nvidia-{owner}-{OS_TAG}"
        self.version = OLD
        self.loaded: dict[str, str] = {}  # node -> the driver its kernel has loaded
        self.never_ready: set[str] = set()  # nodes whose new driver build fails
        self.mig_failing: set[str] = set()  # nodes where mig-manager fails to apply a config
        self.scale_up_pending = False
        self.started: dict[str, float] = {}  # proof pod -> when kubelet started it
        self.pods = 0
        self.api.put("daemonsets", f"{OPERATOR_NS}/{self.ds_name}", self._daemon_set(1))
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

    # -- objects ------------------------------------------------------------------------------------------
    def image(self, version: str) -> str:
        return f"{REPOSITORY}/{IMAGE}:{version}-{OS_TAG}"

    def _daemon_set(self, generation: int) -> dict[str, Any]:
        key, value = crd.DRIVER_POD_COMPONENT
        return {
            "metadata": {
                "name": self.ds_name,
                "namespace": OPERATOR_NS,
                "labels": {key: value},
                # A spec change outside the template moves metadata.generation only (strategy.go): +10 here.
                "generation": generation + 10,
                "annotations": {crd.TEMPLATE_GENERATION_ANNOTATION: str(generation)},
            },
            "spec": {"updateStrategy": {"type": "OnDelete"}},
        }

    @property
    def generation(self) -> int:
        """The template generation (what new pods are labelled with)."""
        ds = self.api.store["daemonsets"][f"{OPERATOR_NS}/{self.ds_name}"]
        return int(ds["metadata"]["annotations"][crd.TEMPLATE_GENERATION_ANNOTATION])

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
        self.api.put("nodes", name, {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": status})
        self.loaded[name] = self.version
        self._driver_pod(name, ready=True)

    def _driver_pod(self, node: str, ready: bool) -> str:
        self.pods += 1
        key, value = crd.DRIVER_POD_COMPONENT
        name = f"{self.ds_name}-{self.pods}"
        conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
        self.api.put(
            "pods",
            f"{OPERATOR_NS}/{name}",
            {
                "metadata": {
                    "name": name,
                    "namespace": OPERATOR_NS,
                    "labels": {key: value, crd.POD_TEMPLATE_GENERATION_LABEL: str(self.generation)},
                    "ownerReferences": [{"kind": "DaemonSet", "name": self.ds_name, "controller": True}],
                },
                "spec": {
                    "nodeName": node,
                    "containers": [{"name": crd.DRIVER_CONTAINER, "image": self.image(self.version)}],
                },
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

    # -- the spec change ------------------------------------------------------------------------------------
    def change_driver(self, version: str) -> None:
        """``pulumi up`` updates the NVIDIADriver: the operator re-renders its DaemonSet (a new generation)."""
        self.version = version
        self.api.put("daemonsets", f"{OPERATOR_NS}/{self.ds_name}", self._daemon_set(self.generation + 1))

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
        return any(
            objects.owner_kind(p) != "DaemonSet"
            or objects.labels(p).get(crd.POD_TEMPLATE_GENERATION_LABEL) != str(self.generation)
            for p in self.driver_pods(node)
        )

    def _upgrade_controller(self) -> None:
        self.at(120.0, self._upgrade_controller)
        nodes = sorted(self.api.store["nodes"])
        in_progress = [n for n in nodes if self.node(n).get("spec", {}).get("unschedulable")]
        for name in in_progress:
            pods = self.driver_pods(name)
            if pods and not self._outdated(name) and all(objects.pod_ready(p) for p in pods):
                self._set_node(name, unschedulable=None, state="upgrade-done")
        budget = self.max_parallel - sum(1 for n in nodes if self.node(n).get("spec", {}).get("unschedulable"))
        for name in nodes:
            if budget <= 0:
                break
            if self._outdated(name) and not self.node(name).get("spec", {}).get("unschedulable"):
                budget -= 1
                self._set_node(name, unschedulable=True, state="pod-restart-required")
                for pod in list(self.api.store["pods"].values()):
                    if pod["spec"].get("nodeName") == name and objects.labels(pod).get(RUN_LABEL):
                        self.api.delete_pod_gracefully(pod["metadata"]["namespace"], objects.name(pod))
                for pod in self.driver_pods(name):
                    if objects.owner_kind(pod) == "DaemonSet":  # the orphan is replaced only with autoUpgrade
                        self.api.delete_pod_gracefully(OPERATOR_NS, objects.name(pod))
                self.at(31.0, functools.partial(self._replace_driver, name))

    def _set_node(self, name: str, unschedulable: bool | None, state: str) -> None:
        body = clone(self.node(name))
        if unschedulable:
            body["spec"]["unschedulable"] = True
        else:
            body["spec"].pop("unschedulable", None)
        body["metadata"]["labels"][crd.UPGRADE_STATE_LABEL] = state
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

    def _fits(self, pod: dict[str, Any], node: dict[str, Any]) -> bool:
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in node["status"]["conditions"])
        if not ready or node["spec"].get("unschedulable"):
            return False
        if any(objects.labels(node).get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
            return False
        if objects.annotations_of(pod).get(NODE_ANNOTATION) not in ("", objects.name(node)):
            return False
        busy = [
            p
            for p in self.api.store["pods"].values()
            if p["spec"].get("nodeName") == objects.name(node)
            and objects.labels(p).get(RUN_LABEL)
            and p["status"].get("phase") not in objects.FINISHED_PHASES
        ]
        return not busy  # one GPU per node

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
            for node in sorted(self.api.store["nodes"].values(), key=objects.name):
                if self._fits(pod, node):
                    body = clone(pod)
                    body["spec"]["nodeName"] = objects.name(node)
                    body["status"] = {"phase": "Running"}
                    self.started[key] = self.t
                    self.api.put("pods", key, body)
                    break
            else:
                if (
                    self.autoscale
                    and not self.scale_up_pending
                    and not objects.annotations_of(pod).get(NODE_ANNOTATION)
                ):
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


def pool_proof(pool: str, owner: str, version: str) -> PoolProof:
    """One pool's settings, built as the component builds them (the catalog's image prefix and script)."""
    return PoolProof(
        pool=pool,
        selector={NODE_GROUP_LABEL: pool},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        resource="nvidia.com/gpu",
        driver_version=version,
        driver_image=crd.driver_image_prefix(REPOSITORY, IMAGE, version),
        owner=owner,
        check_script=crd.driver_check_script(version),
    )
