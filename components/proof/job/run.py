"""One pass of the proof of a step: which nodes of the step's pools are proven, and why the others lag.

A step is a driver step (the canaries, the rest) or, where the hosts own the driver, the MIG step of the pools
the program re-partitions; a driver step also closes the MIG layout of its re-partitioned pools.

Why not the NVIDIADriver's ``status.state``: it has no ``observedGeneration``, reads pods ready rather than new,
and says nothing about a node no resource selects (``components.catalog.nvidia_driver``). A node is proven
only by evidence that answers THIS request, re-read from the API on every pass (level-triggered: a pass that
dies between two writes is simply repeated):

1. the node is Ready and owned by the step's NVIDIADriver (``nvidia.com/gpu-operator.driver.owner``);
2. exactly one driver pod runs there, controlled by a DaemonSet (not the ClusterPolicy's orphan), Ready, current
   as the operator's upgrade controller judges it (its ``controller-revision-hash`` is the one of its DaemonSet's
   newest ControllerRevision: k8s-operator-libs ``podInSyncWithDS``, ``current_revisions`` below), with the
   declared image and version;
3. GPU Feature Discovery reports the declared version on the node (``nvidia.com/cuda.driver-version.full``);
   (1-3 only where the operator installs the driver)
4. on a re-partitioned pool: the declared ``nvidia.com/mig.config``, mig-manager's ``success``, and exactly the
   planned MIG resources in the node's allocatable;
5. a CUDA pod pinned to the node, holding one GPU of the pool, first waits for ``nvidia-smi`` to report the
   declared version on every GPU (where one is declared) and then runs the vectorAdd sample, and succeeded in
   this run.

The CUDA pods run with the proof's PriorityClass (they may preempt an ordinary GPU pod on a full node), tolerate
the pool's taints and a cordon (``node.kubernetes.io/unschedulable``: a cordoned node is proven too, and the
operator's upgrade controller keeps a node cordoned while it upgrades it). Every pass deletes the CUDA pods of
the step's other runs (an earlier pod of the Job, or a failed Job that ``pulumi up`` replaced): they would hold
the GPUs this run needs.

Nodes are listed by the pool's own selector on every pass, so a node the autoscaler adds during the step is
included, and a node without the driver-group label is caught instead of skipped. A pool with no node yet gets
one unpinned CUDA pod: the demand scales it up, and the node it lands on is then listed and checked.
The judging rules (1-4) and the settings are the catalog's (``components/catalog/proof.py``, shared with the
rollout controller's continuous proof); this module reads the cluster, runs the CUDA pods (5) and judges a pass.
Standard library only: it ships in a ConfigMap to the stock Python image with the node agent's API client.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Protocol

from components.catalog import gpu_operator_upgrade as upgrade
from components.catalog import nvidia_driver as crd
from components.catalog.node_agent import UNSCHEDULABLE_TAINT
from components.catalog.proof import (
    PROOF_NODE_ANNOTATION,
    PROOF_RUN_LABEL,
    PROOF_STEP_LABEL,
    PoolProof,
    ProofSettings,
    Verdict,
    driver_evidence,
    mig_evidence,
    selector_text,
)
from components.node_agent.agent import objects
from components.node_agent.agent.kube import ApiError


class ProofApi(Protocol):
    """The calls a proof makes (``ProofKube`` in the cluster, the tests' simulated API server)."""

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]: ...

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def list_controller_revisions(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def create_pod(self, namespace: str, pod: dict[str, Any]) -> None: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...


def current_revisions(api: ProofApi, namespace: str, daemon_sets: list[dict[str, Any]]) -> dict[str, str]:
    """DaemonSet name -> the ``controller-revision-hash`` its current pods carry ("" when it has no revision).

    As the operator's upgrade controller asks it (k8s-operator-libs ``pkg/upgrade/pod_manager.go``
    ``GetDaemonsetControllerRevisionHash``): the ControllerRevisions of the DaemonSet's namespace selected by its
    ``spec.selector.matchLabels``, then by the name prefix; the newest by ``.revision`` (``revision_hash``).
    Not ``pod-template-generation``: after a rollback (A, B, A) the DaemonSet controller makes the revision of A
    the newest again, so the pods of A are current, while the template's generation never matches them again.
    """
    hashes: dict[str, str] = {}
    for daemon_set in daemon_sets:
        match = ((daemon_set.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        revisions = api.list_controller_revisions(namespace, selector_text(match))
        found = [(objects.name(r), int(r.get("revision") or 0)) for r in revisions]
        hashes[objects.name(daemon_set)] = upgrade.revision_hash(objects.name(daemon_set), found)
    return hashes


def pod_name(step: str, run: str, node: str) -> str:
    """A valid, deterministic pod name per step, run and node (at most 63 characters)."""
    digest = hashlib.sha256(f"{step}/{run}/{node}".encode()).hexdigest()[:10]
    base = re.sub(r"[^a-z0-9-]", "-", f"gpu-proof-{step}-{node}".lower())[:52].rstrip("-")
    return f"{base}-{digest}"


def proof_pod(settings: ProofSettings, pool: PoolProof, run: str, owner: dict[str, str], node: str) -> dict[str, Any]:
    """The CUDA pod for ``node`` ("": the pool's demand pod, placed by the scheduler and the autoscaler).

    The init container holds the same GPU as the test (kubelet hands it on), waits for the declared driver
    on every GPU, then vectorAdd runs. Owned by the proof's own pod, so the garbage collector removes them.
    """
    limits = {pool.resource: "1"}
    # The pool's taints, and a cordon: kubelet admits the pod on a cordoned node and the scheduler's
    # NodeUnschedulable filter lets it through with this toleration (an upgrade or a person's cordon must not
    # keep a node from being proven).
    tolerations = [dict(t) for t in pool.tolerations]
    cordon = {"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}
    if cordon not in tolerations:
        tolerations.append(cordon)
    affinity: dict[str, Any] = {}
    if node:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    security = {"allowPrivilegeEscalation": False}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(pool.selector),
        "tolerations": tolerations,
        "containers": [
            {"name": "vectoradd", "image": settings.image, "resources": {"limits": limits}, "securityContext": security}
        ],
    }
    if pool.check_script:
        spec["initContainers"] = [
            {
                "name": "driver-version",
                "image": settings.image,
                "command": ["sh", "-c", pool.check_script],
                "env": [
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
                ],
                "resources": {"limits": limits},
                "securityContext": security,
            }
        ]
    if affinity:
        spec["affinity"] = affinity
    if settings.priority_class:
        spec["priorityClassName"] = settings.priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(settings.step, run, node or f"pool-{pool.pool}"),
            "labels": {
                PROOF_RUN_LABEL: run,
                PROOF_STEP_LABEL: settings.step,
                "app.kubernetes.io/managed-by": "gpu-platform",
            },
            "annotations": {PROOF_NODE_ANNOTATION: node},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", **owner}],
        },
        "spec": spec,
    }


class Proof:
    """The proof of one step; ``run`` names this attempt (the proof Job's pod), ``owner`` is that pod's name and uid."""

    def __init__(self, api: ProofApi, settings: ProofSettings, run: str, owner: dict[str, str]) -> None:
        self.api = api
        self.settings = settings
        self.run = run
        self.owner = owner
        self.log: list[str] = []

    def one_pass(self) -> Verdict:
        """Read everything, start the CUDA pods that are missing, and judge every node."""
        settings = self.settings
        key, value = crd.DRIVER_POD_COMPONENT
        revisions: dict[str, str] = {}
        if any(pool.driver_version for pool in settings.pools):
            driver_pods = self.api.list_namespaced_pods(settings.operator_namespace, f"{key}={value}")
            owners = {objects.owner_name(p) for p in driver_pods if objects.owner_kind(p) == "DaemonSet"}
            daemon_sets = self.api.list_daemon_sets(settings.operator_namespace, f"{key}={value}")
            revisions = current_revisions(
                self.api, settings.operator_namespace, [ds for ds in daemon_sets if objects.name(ds) in owners]
            )
        else:
            driver_pods = []
        step_pods = self.api.list_namespaced_pods(settings.namespace, f"{PROOF_STEP_LABEL}={settings.step}")
        self._delete_other_runs(step_pods)
        mine = [p for p in step_pods if objects.labels(p).get(PROOF_RUN_LABEL) == self.run]
        verdict = Verdict()
        for pool in settings.pools:
            nodes = sorted(self.api.list_nodes(selector_text(pool.selector)), key=objects.name)
            if not nodes:
                verdict.pools_without_nodes.append(pool.pool)
                self._ensure_pod(pool, "", mine)
                continue
            for node in nodes:
                name = objects.name(node)
                why = driver_evidence(node, driver_pods, revisions, pool) if pool.driver_version else ""
                why = why or mig_evidence(node, pool)
                verdict.nodes[name] = why or self._cuda_evidence(pool, name, mine)
        return verdict

    def _delete_other_runs(self, step_pods: list[dict[str, Any]]) -> None:
        """Delete the CUDA pods of the step's other runs: an earlier pod of this Job, or the Job a failed proof left
        (``pulumi up`` replaces a failed proof Job, and a failed run keeps its pods for their logs). Each holds a GPU
        of a node this run must prove, or waits for one. Every pass, so a failed delete is simply repeated."""
        for pod in step_pods:
            if objects.labels(pod).get(PROOF_RUN_LABEL) != self.run and not objects.terminating(pod):
                self._delete(objects.name(pod), "; it is of an earlier run of this step")

    def _cuda_evidence(self, pool: PoolProof, node: str, mine: list[dict[str, Any]]) -> str:
        """ "" once a CUDA pod of this run succeeded on ``node``; otherwise start one (or replace a failed one)."""
        here = [p for p in mine if (p.get("spec") or {}).get("nodeName") == node]
        if any((p.get("status") or {}).get("phase") == "Succeeded" for p in here):
            return ""
        pinned = [p for p in mine if objects.annotations_of(p).get(PROOF_NODE_ANNOTATION) == node]
        failed = [p for p in here + pinned if (p.get("status") or {}).get("phase") == "Failed"]
        for pod in failed:
            if not objects.terminating(pod):
                self._delete(objects.name(pod))
        live = [p for p in here + pinned if (p.get("status") or {}).get("phase") not in objects.FINISHED_PHASES]
        if live:
            phase = (live[0].get("status") or {}).get("phase") or "Pending"
            return f"CUDA proof pod {objects.name(live[0])} is {phase}"
        if failed:
            return f"CUDA proof pod {objects.name(failed[0])} failed; it runs again"
        self._ensure_pod(pool, node, mine)
        return "CUDA proof pod started"

    def _ensure_pod(self, pool: PoolProof, node: str, mine: list[dict[str, Any]]) -> None:
        pod = proof_pod(self.settings, pool, self.run, self.owner, node)
        name = pod["metadata"]["name"]
        if any(objects.name(p) == name for p in mine):
            return
        try:
            self.api.create_pod(self.settings.namespace, pod)
            self.log.append(f"started {name} for {node or 'pool ' + pool.pool}")
        except ApiError as error:  # any failed write is retried on the next pass (409: it exists already)
            self.log.append(f"could not start {name}: {error}")

    def clean_up(self) -> None:
        """Delete this run's CUDA pods once the step is proven (best effort: the garbage collector removes them
        with the proof's pod anyway). A failed proof keeps them, for their logs."""
        try:
            pods = self.api.list_namespaced_pods(self.settings.namespace, f"{PROOF_RUN_LABEL}={self.run}")
        except ApiError as error:
            self.log.append(f"could not list the CUDA pods to delete them: {error}")
            return
        for pod in pods:
            if not objects.terminating(pod):
                self._delete(objects.name(pod), "")

    def _delete(self, name: str, note: str = "; it is started again") -> None:
        try:
            self.api.delete_pod(self.settings.namespace, name)
            self.log.append(f"deleted {name}{note}")
        except ApiError as error:  # retried on the next pass
            self.log.append(f"could not delete {name}: {error}")
