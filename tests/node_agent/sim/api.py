"""A simulated Kubernetes API server: the semantics the controller and the executors rely on, from the source.

- Optimistic concurrency: every write bumps a resourceVersion; a patch or update that carries
  ``metadata.resourceVersion`` is a precondition and a stale one is **409 Conflict**
  (k8s.io/apiserver pkg/registry/generic/registry/store.go ``Update``: "the object has been modified").
- JSON merge patch (RFC 7386): ``null`` deletes a key, a list replaces the whole list.
- Creating an existing object is 409 AlreadyExists; a delete with a stale ``preconditions.resourceVersion`` is 409.
- Pods are deleted gracefully: deletion sets ``deletionTimestamp``; kubelet removes the pod when its containers
  have stopped (pkg/registry/core/pod/strategy.go ``CheckGracefulDelete``; default grace 30 s).
- The Eviction API checks PodDisruptionBudgets and answers **429** when one would be violated
  (pkg/registry/core/pod/storage/eviction.go ``checkAndDecrement``: "Cannot evict pod as it would violate the
  pod's disruption budget"). A pod already terminating is evicted without a budget check (``canIgnorePDB``).
- RBAC and admission: RBAC as ``components.node_agent.rbac`` grants it, then the program's real
  ValidatingAdmissionPolicies (``components.node_agent.admission``), evaluated by a CEL runtime on the objects
  the API server would give them (``tests.node_agent.sim.admission``): an executor only its own Node's report, the
  controller only what its flows write where they apply, only smoke pods. A forbidden call is **403** and is
  counted.
- Watches: every write is delivered to subscribers (the other actors' informers) after it is stored.
- Faults: any call of the controller or an executor may fail (503, a timeout before or after the write, a 409)
  as the test's :class:`Faults` decide.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.node_agent.agent import objects
from components.node_agent.agent.kube import ApiError
from tests.node_agent.sim import admission

Obj = dict[str, Any]
Watcher = Callable[[str, str, "Obj | None", "Obj | None"], None]


#: RFC 7386 JSON merge patch (one definition, with the admission evaluator that needs it too).
merge_patch = admission.merge_patch


def clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clone(item) for item in value]
    return value


@dataclass
class Faults:
    """Which calls fail. ``rate``: each call fails with this probability; ``script``: call number -> kind.

    Kinds: ``503`` (not applied), ``timeout`` (not applied, no answer), ``timeout-after`` (applied, no
    answer: the caller cannot know it happened), ``409`` (a conflicting writer got in first: not applied), ``403``
    (refused: a quota, an admission webhook; only when a test asks for it).
    """

    rate: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    script: dict[int, str] = field(default_factory=dict)
    callers: tuple[str, ...] = ("controller", "executor")
    calls: int = 0
    injected: int = 0
    #: A targeted fault: ``hook(caller, method, argument) -> kind`` ("" for none).
    hook: Callable[[str, str, Any], str] | None = None

    def pick(self, caller: str, write: bool, method: str = "", argument: Any = None) -> str:
        if not caller.startswith(self.callers):
            return ""
        self.calls += 1
        kind = self.script.get(self.calls, "")
        if not kind and self.hook is not None:
            kind = self.hook(caller, method, argument)
        if not kind and self.rate and self.rng.random() < self.rate:
            kind = self.rng.choice(("503", "timeout", "timeout-after", "409") if write else ("503", "timeout"))
        if kind == "409" and not write:
            kind = "503"
        if kind == "timeout-after" and not write:
            kind = "timeout"
        if kind:
            self.injected += 1
        return kind


@dataclass
class Pdb:
    """A PodDisruptionBudget: pods with ``labels[key] == value``; at most ``max_unavailable`` disrupted."""

    namespace: str
    key: str
    value: str
    max_unavailable: int


class SimApi:
    """The store and its rules. ``now`` is the world's clock."""

    def __init__(self, now: Callable[[], float], faults: Faults) -> None:
        self.now = now
        self.faults = faults
        self.rv = 0
        self.store: dict[str, dict[str, Obj]] = {
            kind: {}
            for kind in (
                "nodes",
                "pods",
                "leases",
                "configmaps",
                "daemonsets",
                "controllerrevisions",
                "resourceclaims",
                "events",
            )
        }
        self.watchers: list[Watcher] = []
        self.pdbs: list[Pdb] = []
        self.forbidden: list[str] = []
        self.uids = 0
        self.names = 0
        #: Who is writing now ("" for the other actors, which write straight to the store).
        self.caller = ""
        #: Which controller replica is writing now ("" for anyone else).
        self.writer = ""

    # -- the store -------------------------------------------------------------------------------------
    def _bump(self, obj: Obj) -> Obj:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        return obj

    def new_uid(self) -> str:
        self.uids += 1
        return f"u{self.uids:05d}-0000-4000-8000-{self.uids:012d}"

    def put(self, kind: str, key: str, obj: Obj | None) -> None:
        """Store (or remove, with None) and tell the watchers."""
        old = self.store[kind].get(key)
        if obj is None:
            self.store[kind].pop(key, None)
        else:
            if "uid" not in obj["metadata"]:
                obj["metadata"]["uid"] = self.new_uid()
            obj["metadata"].setdefault("creationTimestamp", objects.format_time(self.now()))
            self.store[kind][key] = self._bump(obj)
        for watcher in list(self.watchers):
            watcher(kind, key, old, obj)

    def delete_pod_gracefully(self, namespace: str, name: str) -> None:
        """Graceful deletion: set ``deletionTimestamp``; an unbound or finished pod goes at once (strategy.go)."""
        key = f"{namespace}/{name}"
        pod = self.store["pods"].get(key)
        if pod is None or objects.terminating(pod):
            return
        finished = (pod.get("status") or {}).get("phase") in objects.FINISHED_PHASES
        if not (pod.get("spec") or {}).get("nodeName") or finished:
            self.put("pods", key, None)
            return
        body = clone(pod)
        grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        body["metadata"]["deletionTimestamp"] = objects.format_time(self.now() + grace)
        body["metadata"]["deletionGracePeriodSeconds"] = grace
        self.put("pods", key, body)

    def get(self, kind: str, key: str) -> Obj:
        obj = self.store[kind].get(key)
        if obj is None:
            raise ApiError(404, f"{kind} {key} not found")
        return obj


class Client:
    """The API as one caller sees it: its permissions, and the faults injected into its calls."""

    def __init__(self, api: SimApi, caller: str, namespace: str, identity: str = "") -> None:
        self.api = api
        self.caller = caller
        self.namespace = namespace
        #: Which replica of the controller calls (its leader-election identity), for the leadership invariant.
        self.identity = identity

    # -- plumbing --------------------------------------------------------------------------------------
    def _call(self, write: bool, apply: Callable[[], Any], method: str = "", argument: Any = None) -> Any:
        kind = self.api.faults.pick(self.caller, write, method, argument)
        if kind == "503":
            raise ApiError(503, "service unavailable (injected)")
        if kind == "timeout":
            raise ApiError(0, "timed out (injected)")
        if kind == "409":
            raise ApiError(409, "the object has been modified (injected)")
        if kind == "403":
            raise ApiError(403, "admission webhook denied the request: quota exceeded (injected)")
        self.api.caller, self.api.writer = self.caller, self.identity
        try:
            result = apply()
        finally:
            self.api.caller, self.api.writer = "", ""
        if kind == "timeout-after":
            raise ApiError(0, "timed out after the write (injected)")
        return result

    def _deny(self, message: str) -> None:
        self.api.forbidden.append(f"{self.caller}: {message}")
        raise ApiError(403, f"{self.caller}: {message}")

    @property
    def _executor_node(self) -> str:
        return self.caller.split(":", 1)[1] if self.caller.startswith("executor:") else ""

    def _only_controller(self, what: str) -> None:
        if self.caller != "controller":
            self._deny(f"may not {what}")

    # -- nodes ----------------------------------------------------------------------------------------
    def get_node(self, name: str) -> Obj:
        return self._call(False, lambda: clone(self.api.get("nodes", name)))

    def list_nodes(self, label_selector: str) -> list[Obj]:
        self._only_controller("list nodes")
        key, _, value = label_selector.partition("=")
        return self._call(
            False, lambda: [obj for obj in self.api.store["nodes"].values() if objects.labels(obj).get(key) == value]
        )

    def patch_node(self, name: str, patch: Obj) -> Obj:
        def apply() -> Obj:
            node = self.api.get("nodes", name)
            self._admit_node_patch(node, patch)
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != node["metadata"]["resourceVersion"]:
                raise ApiError(409, f"node {name}: the object has been modified")
            body = merge_patch(node, patch)
            body["metadata"]["uid"] = node["metadata"]["uid"]
            self.api.put("nodes", name, body)
            return body

        return self._call(True, apply, "patch_node", (name, patch))

    def _admit_node_patch(self, node: Obj, patch: Obj) -> None:
        """RBAC, then the real ValidatingAdmissionPolicies (``components.node_agent.admission``) evaluated by CEL as
        the API server does (``tests.node_agent.sim.admission``). A stale resourceVersion is left to the 409 that
        the API server answers before validating admission (generic/registry/store.go ``Update``)."""
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != node["metadata"]["resourceVersion"]:
            return
        if self._executor_node:
            user = admission.service_account_user(
                self.namespace, admission.EXECUTOR_ACCOUNT, f"{admission.EXECUTOR_ACCOUNT}-x", self._executor_node
            )
        elif self.caller == "controller":
            user = admission.service_account_user(
                self.namespace, admission.CONTROLLER_ACCOUNT, f"{admission.CONTROLLER_ACCOUNT}-x", "control-node"
            )
        else:
            self._deny("may not patch nodes")
        decision = admission.policies(self.namespace).decide(admission.node_update(node, patch, user))
        if not decision.allowed:
            self._deny("; ".join(decision.denials))

    def _admit_pod_create(self, namespace: str, pod: Obj) -> None:
        """The controller's pods through the smoke-pod policy, as the API server admits a pod (defaults, the default
        mutating plugins, then the policy). Other tokens that create pods (the proof's) have no policy."""
        if self.caller != "controller":
            return
        user = admission.service_account_user(
            namespace, admission.CONTROLLER_ACCOUNT, f"{admission.CONTROLLER_ACCOUNT}-x", "control-node"
        )
        try:
            request = admission.pod_create(pod, namespace, user, admission.PROGRAM_PRIORITY_CLASSES)
        except LookupError as refused:  # the Priority admission plugin
            self._deny(f"pods is forbidden: {refused}")
        decision = admission.policies(self.namespace).decide(request)
        if not decision.allowed:
            self._deny("; ".join(decision.denials))

    # -- pods ------------------------------------------------------------------------------------------
    def list_pods_on(self, node: str) -> list[Obj]:
        self._only_controller("list pods")
        return self._call(
            False, lambda: [p for p in self.api.store["pods"].values() if (p.get("spec") or {}).get("nodeName") == node]
        )

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        """``label_selector``: ``key=value`` or ``key`` (the label exists), as the API server parses them."""
        self._only_controller("list pods")
        key, has_value, value = label_selector.partition("=")
        return self._call(
            False,
            lambda: [
                p
                for p in self.api.store["pods"].values()
                if p["metadata"].get("namespace") == namespace
                and key in objects.labels(p)
                and (not has_value or objects.labels(p)[key] == value)
            ],
        )

    def evict(self, namespace: str, name: str) -> None:
        self._only_controller("evict")

        def apply() -> None:
            pod = self.api.get("pods", f"{namespace}/{name}")
            if objects.terminating(pod):
                return
            for pdb in self.api.pdbs:
                if pdb.namespace != namespace or objects.labels(pod).get(pdb.key) != pdb.value:
                    continue
                covered = [
                    other
                    for other in self.api.store["pods"].values()
                    if other["metadata"].get("namespace") == namespace
                    and objects.labels(other).get(pdb.key) == pdb.value
                ]
                disrupted = sum(1 for other in covered if objects.terminating(other) or not objects.pod_ready(other))
                if disrupted + 1 > pdb.max_unavailable:
                    raise ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.")
            self.api.delete_pod_gracefully(namespace, name)

        self._call(True, apply, "evict", name)

    def create_pod(self, namespace: str, pod: Obj) -> None:
        self._only_controller("create pods")
        if namespace != self.namespace:
            self._deny("may create pods only in its namespace")

        def apply() -> None:
            self._admit_pod_create(namespace, pod)  # validating admission runs before the store's AlreadyExists
            key = f"{namespace}/{pod['metadata']['name']}"
            if key in self.api.store["pods"]:
                raise ApiError(409, f"pod {key} already exists")
            body = clone(pod)
            body["metadata"]["namespace"] = namespace
            body["status"] = {"phase": "Pending"}
            self.api.put("pods", key, body)

        self._call(True, apply)

    def delete_pod(self, namespace: str, name: str) -> None:
        self._only_controller("delete pods")
        if namespace != self.namespace:
            self._deny("may delete pods only in its namespace")

        def apply() -> None:
            self.api.get("pods", f"{namespace}/{name}")
            self.api.delete_pod_gracefully(namespace, name)

        self._call(True, apply)

    # -- the rest ---------------------------------------------------------------------------------------
    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[Obj]:
        self._only_controller("list daemonsets")
        key, _, value = label_selector.partition("=")
        return self._call(
            False,
            lambda: [
                obj
                for obj in self.api.store["daemonsets"].values()
                if obj["metadata"].get("namespace") == namespace and objects.labels(obj).get(key) == value
            ],
        )

    def list_controller_revisions(self, namespace: str, label_selector: str) -> list[Obj]:
        self._only_controller("list controllerrevisions")
        key, _, value = label_selector.partition("=")
        return self._call(
            False,
            lambda: [
                obj
                for obj in self.api.store["controllerrevisions"].values()
                if obj["metadata"].get("namespace") == namespace and (not key or objects.labels(obj).get(key) == value)
            ],
        )

    def list_resource_claims(self) -> list[Obj]:
        self._only_controller("list resourceclaims")
        return self._call(False, lambda: list(self.api.store["resourceclaims"].values()))

    def get_config_map(self, namespace: str, name: str) -> Obj:
        self._only_controller("read configmaps")
        return self._call(False, lambda: clone(self.api.get("configmaps", f"{namespace}/{name}")))

    def _lease_guard(self, namespace: str) -> None:
        self._only_controller("use leases")
        if namespace != self.namespace:
            self._deny("may use Leases only in its namespace")

    def get_lease(self, namespace: str, name: str) -> Obj:
        self._lease_guard(namespace)
        return self._call(False, lambda: clone(self.api.get("leases", f"{namespace}/{name}")))

    def list_leases(self, namespace: str, label_selector: str) -> list[Obj]:
        self._lease_guard(namespace)
        return self._call(
            False,
            lambda: [
                obj
                for obj in self.api.store["leases"].values()
                if obj["metadata"].get("namespace") == namespace and label_selector in objects.labels(obj)
            ],
        )

    def create_lease(self, namespace: str, lease: Obj) -> Obj:
        self._lease_guard(namespace)

        def apply() -> Obj:
            key = f"{namespace}/{lease['metadata']['name']}"
            if key in self.api.store["leases"]:
                raise ApiError(409, f"lease {key} already exists")
            body = clone(lease)
            self.api.put("leases", key, body)
            return body

        return self._call(True, apply, "create_lease", lease)

    def replace_lease(self, namespace: str, lease: Obj) -> Obj:
        self._lease_guard(namespace)

        def apply() -> Obj:
            key = f"{namespace}/{lease['metadata']['name']}"
            current = self.api.get("leases", key)
            if lease["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise ApiError(409, f"lease {key}: the object has been modified")
            body = clone(lease)
            body["metadata"]["uid"] = current["metadata"]["uid"]
            self.api.put("leases", key, body)
            return body

        return self._call(True, apply, "replace_lease", lease)

    def delete_lease(self, namespace: str, name: str, resource_version: str) -> None:
        self._lease_guard(namespace)

        def apply() -> None:
            key = f"{namespace}/{name}"
            current = self.api.get("leases", key)
            if resource_version and resource_version != current["metadata"]["resourceVersion"]:
                raise ApiError(409, f"lease {key}: precondition failed")
            self.api.put("leases", key, None)

        self._call(True, apply, "delete_lease", name)

    def create_event(self, namespace: str, event: Obj) -> None:
        self._only_controller("create events")

        def apply() -> None:
            self.api.names += 1
            body = clone(event)
            body["metadata"]["name"] = f"{event['metadata'].get('generateName', 'event.')}{self.api.names}"
            self.api.put("events", f"{namespace}/{body['metadata']['name']}", body)

        self._call(True, apply)
