"""A small Kubernetes API client: JSON over HTTPS with the pod's service-account token.

Why not a library: the controller and the executors run air-gapped on the stock Python image with no image
to build and no pip, so they can use only the standard library. They need a dozen calls (nodes, pods,
evictions, Leases, Events, one ConfigMap) and nothing of client-go's machinery (informers, discovery): the
controller lists everything it needs at each reconcile. ``urllib`` with the cluster CA and a bearer token is
all of it. Every failure is an :class:`ApiError` carrying the HTTP status (0 for a timeout or a refused
connection: the write may or may not have happened), so a caller can tell a conflict from a PDB from an
outage.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Protocol

from components.catalog.node_agent import FIELD_MANAGER

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


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

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        return list(self.request("GET", "/api/v1/nodes", query={"labelSelector": label_selector}).get("items", []))

    def list_pods(self) -> list[dict[str, Any]]:
        """Every pod of the cluster (the controller's one pod list per reconcile)."""
        return list(self.request("GET", "/api/v1/pods").get("items", []))

    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        path = f"/apis/apps/v1/namespaces/{namespace}/daemonsets"
        return list(self.request("GET", path, query={"labelSelector": label_selector}).get("items", []))

    def list_controller_revisions(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        """The DaemonSets' history: the newest revision of a driver DaemonSet says which driver pods are current."""
        path = f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions"
        query = {"labelSelector": label_selector} if label_selector else None
        return list(self.request("GET", path, query=query).get("items", []))

    def list_resource_claims(self) -> list[dict[str, Any]]:
        """Every ResourceClaim (resource.k8s.io/v1): a pod holding one the NVIDIA DRA driver allocated is a GPU pod."""
        return list(self.request("GET", "/apis/resource.k8s.io/v1/resourceclaims").get("items", []))

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
        return list(self.request("GET", path, query={"labelSelector": label_selector}).get("items", []))

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

    def list_pods(self) -> list[dict[str, Any]]: ...

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
