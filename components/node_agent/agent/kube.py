"""A small Kubernetes API client: JSON over HTTPS with the pod's service-account token.

Why not a library: the controller and the executors run air-gapped on the stock Python image with no image
to build and no pip, so they can use only the standard library. They need a dozen calls (nodes, pods,
evictions, Leases, Events, one ConfigMap), paginated lists and watch streams (``components.node_agent.agent.watch``
keeps a cache from them, as client-go's informers do); ``urllib`` with the cluster CA and a bearer token is all of
it. Every failure is an :class:`ApiError` carrying the HTTP status (0 for a timeout or a refused
connection: the write may or may not have happened), so a caller can tell a conflict from a PDB from an
outage.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any, Protocol

from components.catalog.node_agent import FIELD_MANAGER

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
#: Items per page of a list (the API server's own default page for kubectl is 500).
PAGE_SIZE = 500
#: Seconds of silence, beyond a watch's own timeout, after which a stream counts as stalled.
STALL_SECONDS = 90


class ApiError(Exception):
    """An API call failed: ``status`` is the HTTP status, 0 when no answer came (timeout, refused)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Kube:
    """Calls the API at ``base_url`` with ``token``; ``ca_file`` None means plain HTTP (the tests' server)."""

    def __init__(self, base_url: str, token: str, ca_file: str | None = None, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else None

    @classmethod
    def in_cluster(cls) -> Kube:
        """The API server of the cluster the pod runs in, with the projected token and CA."""
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        with open(f"{SA_DIR}/token", encoding="utf-8") as handle:
            token = handle.read().strip()
        return cls(f"https://{host}:{port}", token, ca_file=f"{SA_DIR}/ca.crt")

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """One call; returns the decoded JSON answer (None for an empty body)."""
        url = self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.context) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = json.loads(detail).get("message", detail)
            raise ApiError(error.code, f"{method} {path}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as error:
            raise ApiError(0, f"{method} {path}: {error}") from None
        return json.loads(raw) if raw else None

    # -- the calls the controller and the executors make -------------------------------------------------
    def get_node(self, name: str) -> dict[str, Any]:
        return self.request("GET", f"/api/v1/nodes/{name}")

    def list_all(self, path: str, query: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], str]:
        """Every item of a collection, in pages of ``PAGE_SIZE`` (``limit``/``continue``), and the list's
        resourceVersion (a watch resumes from it). A ``continue`` token that expired (410) restarts the list:
        half a list is never returned."""
        query = {key: value for key, value in (query or {}).items() if value}
        for _attempt in range(3):
            items: list[dict[str, Any]] = []
            token = ""
            try:
                while True:
                    page = self.request(
                        "GET", path, query={**query, "limit": str(PAGE_SIZE), **({"continue": token} if token else {})}
                    )
                    items.extend(page.get("items") or [])
                    metadata = page.get("metadata") or {}
                    token = str(metadata.get("continue") or "")
                    if not token:
                        return items, str(metadata.get("resourceVersion", ""))
            except ApiError as error:
                if error.status != 410 or not token:
                    raise
        raise ApiError(410, f"GET {path}: the list expired three times while it was read")

    def watch(
        self, path: str, query: dict[str, str] | None, resource_version: str, timeout_seconds: int
    ) -> Iterator[dict[str, Any]]:
        """The events of a watch from ``resource_version`` (``allowWatchBookmarks``), one JSON object a line, until
        the server ends it (``timeoutSeconds``) or the connection drops (an ``ApiError`` with status 0)."""
        parameters = {key: value for key, value in (query or {}).items() if value}
        parameters.update(
            {
                "watch": "1",
                "resourceVersion": resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(timeout_seconds),
            }
        )
        url = self.base_url + path + "?" + urllib.parse.urlencode(parameters)
        req = urllib.request.Request(url, method="GET")
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        try:
            # No data for this long is a stalled stream (the server sends bookmarks): resume from the last version.
            answer = urllib.request.urlopen(req, timeout=timeout_seconds + STALL_SECONDS, context=self.context)
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, f"WATCH {path}: {error.read().decode(errors='replace')}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as error:
            raise ApiError(0, f"WATCH {path}: {error}") from None
        with answer:
            while True:
                try:
                    line = answer.readline()
                except (TimeoutError, ConnectionError, OSError, http.client.HTTPException) as error:
                    raise ApiError(0, f"WATCH {path}: {error}") from None
                if not line:
                    return
                if line.strip():
                    try:
                        yield json.loads(line)
                    except ValueError:
                        raise ApiError(0, f"WATCH {path}: a broken event") from None

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        return self.list_all("/api/v1/nodes", {"labelSelector": label_selector})[0]

    def list_pods_on(self, node: str) -> list[dict[str, Any]]:
        """The pods bound to one node (``fieldSelector=spec.nodeName``): the controller reads pods only of the
        nodes it holds, never every pod of the cluster."""
        return self.list_all("/api/v1/pods", {"fieldSelector": f"spec.nodeName={node}"})[0]

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self.list_all(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": label_selector})[0]

    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self.list_all(f"/apis/apps/v1/namespaces/{namespace}/daemonsets", {"labelSelector": label_selector})[0]

    def list_controller_revisions(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        """The DaemonSets' history: the newest revision of a driver DaemonSet says which driver pods are current."""
        path = f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions"
        return self.list_all(path, {"labelSelector": label_selector})[0]

    def list_resource_claims(self) -> list[dict[str, Any]]:
        """Every ResourceClaim (resource.k8s.io/v1): a pod holding one the NVIDIA DRA driver allocated is a GPU pod."""
        return self.list_all("/apis/resource.k8s.io/v1/resourceclaims")[0]

    def get_config_map(self, namespace: str, name: str) -> dict[str, Any]:
        return self.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")

    def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch; with ``metadata.resourceVersion`` in it the API answers 409 on a conflict.

        Under the agent's own field manager, so ``managedFields`` tells its writes (the skip label, the cordon)
        from the GPU Operator's and from people's."""
        return self.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            patch,
            query={"fieldManager": FIELD_MANAGER},
            content_type="application/merge-patch+json",
        )

    def evict(self, namespace: str, name: str) -> None:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body)

    def create_pod(self, namespace: str, pod: dict[str, Any]) -> None:
        self.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)

    def delete_pod(self, namespace: str, name: str) -> None:
        self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")

    def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        return self.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")

    def list_leases(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        return self.list_all(path, {"labelSelector": label_selector})[0]

    def create_lease(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        return self.request("POST", path, lease)

    def replace_lease(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        """PUT with ``metadata.resourceVersion``: 409 if someone wrote in between (optimistic concurrency)."""
        name = lease["metadata"]["name"]
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        return self.request("PUT", path, lease)

    def delete_lease(self, namespace: str, name: str, resource_version: str) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        self.request("DELETE", path, {"preconditions": {"resourceVersion": resource_version}})

    def create_event(self, namespace: str, event: dict[str, Any]) -> None:
        self.request("POST", f"/api/v1/namespaces/{namespace}/events", event)


class Api(Protocol):
    """The calls the controller and the executors make (:class:`Kube`, or the tests' simulated API server)."""

    def get_node(self, name: str) -> dict[str, Any]: ...

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]: ...

    def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]: ...

    def list_pods_on(self, node: str) -> list[dict[str, Any]]: ...

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def list_controller_revisions(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def list_resource_claims(self) -> list[dict[str, Any]]: ...

    def get_config_map(self, namespace: str, name: str) -> dict[str, Any]: ...

    def evict(self, namespace: str, name: str) -> None: ...

    def create_pod(self, namespace: str, pod: dict[str, Any]) -> None: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...

    def get_lease(self, namespace: str, name: str) -> dict[str, Any]: ...

    def list_leases(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def create_lease(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]: ...

    def replace_lease(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]: ...

    def delete_lease(self, namespace: str, name: str, resource_version: str) -> None: ...

    def create_event(self, namespace: str, event: dict[str, Any]) -> None: ...
