"""The shipped API client over real HTTP: the paths, verbs and content types it sends, and how errors surface.

A small HTTP server records each request and answers as the API server would for the cases the controller
and the executors rely on: a JSON body, 409 Conflict with a Status message, 429 from an eviction, no answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from components.node_agent.agent.kube import ApiError, Kube


class Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str, Any]]] = []
    answers: ClassVar[dict[str, tuple[int, Any]]] = {}

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        Recorder.seen.append((self.command, self.path, self.headers.get("Content-Type", ""), body))
        status, answer = Recorder.answers.get(self.path.split("?")[0], (200, {"items": []}))
        raw = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def kube() -> Iterator[Kube]:
    Recorder.seen, Recorder.answers = [], {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Kube(f"http://127.0.0.1:{server.server_address[1]}", "token", timeout=5.0)
    server.shutdown()


def test_every_call_goes_to_its_api_path(kube: Kube) -> None:
    kube.get_node("n1")
    kube.list_nodes("gpu-platform.io/gpu=true")
    kube.patch_node("n1", {"metadata": {"resourceVersion": "7"}})
    kube.list_pods_on("n1")
    kube.list_daemon_sets("gpu-operator", "app=nvidia-driver-daemonset")
    kube.get_config_map("ns", "node-agent-settings")
    kube.evict("team", "p1")
    kube.create_lease("ns", {"metadata": {"name": "node-agent-u1"}})
    kube.replace_lease("ns", {"metadata": {"name": "node-agent-u1", "resourceVersion": "3"}})
    kube.delete_lease("ns", "node-agent-u1", "3")
    kube.create_event("default", {"metadata": {}})
    kube.list_controller_revisions("gpu-operator", "")
    kube.list_resource_claims()
    got = [(method, path, ctype) for method, path, ctype, _ in Recorder.seen]
    assert got == [
        ("GET", "/api/v1/nodes/n1", ""),
        ("GET", "/api/v1/nodes?labelSelector=gpu-platform.io%2Fgpu%3Dtrue&limit=500", ""),
        ("PATCH", "/api/v1/nodes/n1?fieldManager=gpu-platform-node-agent", "application/merge-patch+json"),
        ("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500", ""),
        (
            "GET",
            "/apis/apps/v1/namespaces/gpu-operator/daemonsets?labelSelector=app%3Dnvidia-driver-daemonset&limit=500",
            "",
        ),
        ("GET", "/api/v1/namespaces/ns/configmaps/node-agent-settings", ""),
        ("POST", "/api/v1/namespaces/team/pods/p1/eviction", "application/json"),
        ("POST", "/apis/coordination.k8s.io/v1/namespaces/ns/leases", "application/json"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/node-agent-u1", "application/json"),
        ("DELETE", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/node-agent-u1", "application/json"),
        ("POST", "/api/v1/namespaces/default/events", "application/json"),
        ("GET", "/apis/apps/v1/namespaces/gpu-operator/controllerrevisions?limit=500", ""),
        ("GET", "/apis/resource.k8s.io/v1/resourceclaims?limit=500", ""),
    ]
    assert Recorder.seen[6][3]["kind"] == "Eviction"  # policy/v1 Eviction body
    assert Recorder.seen[9][3] == {"preconditions": {"resourceVersion": "3"}}


def test_a_conflict_and_a_pdb_surface_with_their_status(kube: Kube) -> None:
    Recorder.answers["/api/v1/nodes/n1"] = (409, {"kind": "Status", "message": "the object has been modified"})
    Recorder.answers["/api/v1/namespaces/team/pods/p1/eviction"] = (429, {"message": "disruption budget"})
    with pytest.raises(ApiError) as conflict:
        kube.patch_node("n1", {"metadata": {"resourceVersion": "1"}})
    assert conflict.value.status == 409 and "modified" in conflict.value.message
    with pytest.raises(ApiError) as blocked:
        kube.evict("team", "p1")
    assert blocked.value.status == 429


def test_no_answer_is_status_zero() -> None:
    with pytest.raises(ApiError) as caught:
        Kube("http://127.0.0.1:9", "token", timeout=1.0).get_node("n1")  # discard port: refused
    assert caught.value.status == 0
