"""A fake Kubernetes API server for the node agent: the documented semantics of the calls the agent makes.

What it imitates (kubernetes.io/docs/reference/using-api/api-concepts): every write bumps a global
``resourceVersion``; a JSON merge patch (RFC 7386) carrying ``metadata.resourceVersion`` and a PUT whose
``resourceVersion`` is stale answer 409 Conflict; a create of an existing name answers 409
AlreadyExists; a DELETE with ``preconditions.resourceVersion`` that does not match answers 409; an
eviction of a pod that a PodDisruptionBudget protects answers 429 TooManyRequests (the Eviction API);
a missing object answers 404; list calls honour ``fieldSelector=spec.nodeName=`` and ``labelSelector=k=v``.
Faults: an outage (503 or a hung answer past the client's timeout), a count of failures for calls that
match, and the test may change objects directly (other controllers: mig-manager, the operator, kubelet).

:class:`FakeKubernetes` is the store and the semantics; :class:`FakeApiServer` serves it over real HTTP on
127.0.0.1 (the agent's real client talks to it); :class:`DirectKube` calls the store in-process for the
fleet simulation, where 200 nodes over real sockets would measure the loopback, not the agent.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from components.node_agent.agent.kube import ApiError, Kube

Answer = tuple[int, Any]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class _IndexedPods(dict[tuple[str, str], dict[str, Any]]):
    """The pod map, keeping the by-node index of its store current on every insert."""

    def __init__(self, store: FakeKubernetes) -> None:
        super().__init__()
        self.store = store

    def __setitem__(self, key: tuple[str, str], pod: dict[str, Any]) -> None:
        super().__setitem__(key, pod)
        self.store._by_node.setdefault(str(pod["spec"].get("nodeName", "")), set()).add(key)


def _status(code: int, reason: str, message: str) -> Answer:
    return code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message}


@dataclass
class Fault:
    """Answer ``status`` (0: hang past the client's timeout) to up to ``count`` calls that ``match``."""

    match: Callable[[str, str], bool]
    status: int
    count: int = 1_000_000


@dataclass
class FakeKubernetes:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    leases: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    pdb_blocked: set[tuple[str, str]] = field(default_factory=set)
    faults: list[Fault] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    hang_seconds: float = 0.5
    version: int = 1
    on_write: Callable[[str, str], None] | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    _by_node: dict[str, set[tuple[str, str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pods = _IndexedPods(self)

    # -- the test's side ------------------------------------------------------------------------------
    def add_node(self, name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> None:
        self.nodes[name] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels), "annotations": {}, "resourceVersion": self._bump()},
            "spec": {"taints": taints or []},
        }

    def add_pod(self, namespace: str, name: str, node: str, gpu: bool = True, daemonset: bool = False) -> None:
        resources = {"limits": {"nvidia.com/gpu": 1}} if gpu else {}
        owners = [{"kind": "DaemonSet", "name": "x"}] if daemonset else []
        self.pods[(namespace, name)] = {
            "metadata": {"name": name, "namespace": namespace, "ownerReferences": owners, "labels": {}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": resources}]},
            "status": {"phase": "Running"},
        }

    def pods_on(self, node: str) -> list[tuple[tuple[str, str], dict[str, Any]]]:
        """The pods bound to ``node`` (an index, so that a 200-node simulation does not scan every pod)."""
        keys = self._by_node.get(node, set())
        return sorted(
            (key, self.pods[key]) for key in keys if key in self.pods and self.pods[key]["spec"].get("nodeName") == node
        )

    def outage(self, status: int = 503) -> Fault:
        fault = Fault(lambda method, path: True, status)
        self.faults.append(fault)
        return fault

    def fail(self, method: str, path_part: str, status: int, count: int = 1) -> Fault:
        fault = Fault(lambda m, p: m == method and path_part in p, status, count)
        self.faults.append(fault)
        return fault

    def heal(self) -> None:
        self.faults.clear()

    def set_label(self, node: str, key: str, value: str | None) -> None:
        with self.lock:
            labels = self.nodes[node]["metadata"]["labels"]
            if value is None:
                labels.pop(key, None)
            else:
                labels[key] = value
            self.nodes[node]["metadata"]["resourceVersion"] = self._bump()

    def _bump(self) -> str:
        self.version += 1
        return str(self.version)

    # -- the API --------------------------------------------------------------------------------------
    def handle(self, method: str, url: str, body: Any) -> Answer:
        parsed = urllib.parse.urlparse(url)
        path = parsed.path
        query = dict(urllib.parse.parse_qsl(parsed.query))
        with self.lock:
            self.calls.append((method, path))
            for fault in self.faults:
                if fault.count > 0 and fault.match(method, path):
                    fault.count -= 1
                    return (0, None) if fault.status == 0 else _status(fault.status, "Fault", "injected")
            answer = self._route(method, path, query, body)
            if method != "GET" and answer[0] < 300 and self.on_write is not None:
                self.on_write(method, path)
            return answer

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Answer:
        parts = path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4:
            return self._node(method, parts[3], body)
        if parts[:3] == ["api", "v1", "pods"]:
            return 200, {"items": self._list_pods("", query)}
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) >= 5 and parts[4] == "pods":
            return self._pods(method, parts, query, body)
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5 and parts[4] == "events":
            self.events.append(body)
            return 201, body
        if parts[:2] == ["apis", "coordination.k8s.io"] and len(parts) >= 6 and parts[5] == "leases":
            return self._leases(method, parts[4], parts[6] if len(parts) > 6 else "", query, body)
        return _status(404, "NotFound", path)

    def _node(self, method: str, name: str, body: Any) -> Answer:
        node = self.nodes.get(name)
        if node is None:
            return _status(404, "NotFound", f'nodes "{name}" not found')
        if method == "GET":
            return 200, node
        if method == "PATCH":
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and wanted != node["metadata"]["resourceVersion"]:
                return _status(409, "Conflict", "the object has been modified; please apply your changes")
            updated = merge_patch(node, body)
            updated["metadata"]["resourceVersion"] = self._bump()
            self.nodes[name] = updated
            return 200, updated
        return _status(405, "MethodNotAllowed", method)

    def _list_pods(self, namespace: str, query: dict[str, str]) -> list[dict[str, Any]]:
        node = query.get("fieldSelector", "").removeprefix("spec.nodeName=")
        selector = dict(item.split("=", 1) for item in query.get("labelSelector", "").split(",") if "=" in item)
        found = []
        candidates = self.pods_on(node) if node else sorted(self.pods.items())
        for (ns, _), pod in candidates:
            if namespace and ns != namespace:
                continue
            if node and pod["spec"].get("nodeName") != node:
                continue
            labels = pod["metadata"].get("labels") or {}
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            found.append(pod)
        return found

    def _pods(self, method: str, parts: list[str], query: dict[str, str], body: Any) -> Answer:
        namespace = parts[3]
        if len(parts) == 5:
            if method == "GET":
                return 200, {"items": self._list_pods(namespace, query)}
            key = (namespace, body["metadata"]["name"])
            if key in self.pods:
                return _status(409, "AlreadyExists", "pod exists")
            pod = json.loads(json.dumps(body))
            pod["status"] = {"phase": "Pending"}
            self.pods[key] = pod
            return 201, pod
        key = (namespace, parts[5])
        if key not in self.pods:
            return _status(404, "NotFound", "pod not found")
        if len(parts) == 7 and parts[6] == "eviction":
            if key in self.pdb_blocked:
                return _status(
                    429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget."
                )
            del self.pods[key]
            return 201, {"kind": "Status", "status": "Success"}
        if method == "DELETE":
            del self.pods[key]
            return 200, {"kind": "Status", "status": "Success"}
        return 200, self.pods[key]

    def _leases(self, method: str, namespace: str, name: str, query: dict[str, str], body: Any) -> Answer:
        if not name and method == "GET":
            key, _, value = query.get("labelSelector", "").partition("=")
            items = [
                lease
                for (ns, _), lease in sorted(self.leases.items())
                if ns == namespace and (lease["metadata"].get("labels") or {}).get(key) == value
            ]
            return 200, {"items": items}
        if not name and method == "POST":
            name = body["metadata"]["name"]
            if (namespace, name) in self.leases:
                return _status(409, "AlreadyExists", f'leases "{name}" already exists')
            lease = json.loads(json.dumps(body))
            lease["metadata"]["resourceVersion"] = self._bump()
            self.leases[(namespace, name)] = lease
            return 201, lease
        current = self.leases.get((namespace, name))
        if current is None:
            return _status(404, "NotFound", f'leases "{name}" not found')
        if method == "GET":
            return 200, current
        if method == "PUT":
            wanted = body["metadata"].get("resourceVersion")
            if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
                return _status(409, "Conflict", "the object has been modified; please apply your changes")
            lease = json.loads(json.dumps(body))
            lease["metadata"]["resourceVersion"] = self._bump()
            self.leases[(namespace, name)] = lease
            return 200, lease
        if method == "DELETE":
            wanted = ((body or {}).get("preconditions") or {}).get("resourceVersion")
            if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
                return _status(409, "Conflict", "Precondition failed: ResourceVersion")
            del self.leases[(namespace, name)]
            return 200, {"kind": "Status", "status": "Success"}
        return _status(405, "MethodNotAllowed", method)


class FakeApiServer:
    """``FakeKubernetes`` over HTTP on 127.0.0.1 (an ephemeral port), in a thread."""

    def __init__(self, store: FakeKubernetes) -> None:
        self.store = store
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        store = self.store

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                if self.headers.get("Authorization") != "Bearer test-token":
                    status, answer = _status(401, "Unauthorized", "no token")
                else:
                    status, answer = store.handle(self.command, self.path, body)
                if status == 0:
                    time.sleep(store.hang_seconds)  # past the client's timeout
                    status, answer = _status(504, "Timeout", "hung")
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        return Handler


class DirectKube(Kube):
    """The agent's client with the transport replaced by an in-process call (same JSON round trip)."""

    def __init__(self, store: FakeKubernetes) -> None:
        super().__init__("http://direct", "test-token")
        self.store = store

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        url = path + ("?" + urllib.parse.urlencode(query) if query else "")
        sent = None if body is None else json.loads(json.dumps(body))
        status, answer = self.store.handle(method, url, sent)
        if status == 0:
            raise ApiError(0, f"{method} {path}: timed out")
        if status >= 400:
            raise ApiError(status, f"{method} {path}: {answer.get('message', '')}")
        return json.loads(json.dumps(answer)) if answer is not None else None
