"""A fake Kubernetes API server over real HTTP(S), for ``python -m tools.status`` and the official client.

A stand-in (docs: TESTING.md): no API server runs on the build machines. It serves the read-only calls the status
command makes, over a socket, so the real ``kubernetes`` client (its kubeconfig loader, its exec credential
plugin, its TLS and client certificates, its pagination) talks to it as to a cluster. Each behaviour imitates the
documented semantics the client and the tool rely on:

- ``GET /version``, ``GET /api/v1/nodes``, ``GET /api/v1/namespaces/<ns>/pods``; anything else is a 404 Status,
  and any other method a 405 (the command only reads; every request is recorded so a test can say so).
- Errors are ``Status`` objects (``{"kind": "Status", "status": "Failure", "reason", "message", "code"}``,
  k8s.io/apimachinery pkg/apis/meta/v1 ``Status``), as the client's ``ApiException.body`` carries them.
- Authentication (k8s.io/apiserver pkg/endpoints/filters/authentication.go): a bearer token the server does not
  know is **401 Unauthorized**, whatever the path; a client certificate signed by the cluster's CA authenticates
  as its CN (x509 request authenticator). A request with no credentials is ``system:anonymous``, which the
  bootstrap RBAC lets read ``/version`` only (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go,
  ``system:public-info-viewer``): a list is **403 Forbidden**. So a test whose list succeeds proves that the
  credential (an exec plugin's token, a certificate) was sent.
- Lists honour ``limit`` and ``continue`` (API concepts, "Retrieving large results sets in chunks"): a page of at
  most ``limit`` items and an opaque ``metadata.continue`` while more remain; an expired token is **410 Gone**
  (reason ``Expired``), after which a client lists again from the start. ``labelSelector`` is equality-based
  (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, comma-separated: the only forms the command sends).
- Faults a test sets: a status code (with the API server's reason) for every request to a path, an expired
  continue token once, or the connection closed without an answer.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

Obj = dict[str, Any]

#: The reason the API server gives with each status code (k8s.io/apimachinery pkg/api/errors/errors.go).
REASONS = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


def status_object(code: int, message: str) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": REASONS.get(code, "Unknown"),
        "code": code,
    }


def matches(labels: dict[str, str], selector: str) -> bool:
    """Equality-based label selector (k8s.io/apimachinery pkg/labels/selector.go, the forms the command sends)."""
    for term in filter(None, (part.strip() for part in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


@dataclass
class FakeCluster:
    """What the fake API server holds and how it behaves; change it between requests from the test."""

    nodes: list[Obj] = field(default_factory=list)
    pods: dict[str, list[Obj]] = field(default_factory=dict)  #: namespace -> pods
    tokens: set[str] = field(default_factory=set)  #: bearer tokens the server accepts
    client_cns: set[str] = field(default_factory=set)  #: client certificate CNs the server accepts
    git_version: str = "v1.30.4"
    #: Path prefix -> status code every request to it gets (after authentication, as an authorizer or a failing
    #: backend would answer).
    faults: dict[str, int] = field(default_factory=dict)
    #: Path prefixes whose requests get no answer: the connection is closed.
    hang_up: set[str] = field(default_factory=set)
    #: Continue tokens answer 410 Expired this many times.
    expire_continue: int = 0
    #: Every request: (method, path with query, user or "" for anonymous, or "!" for a refused token).
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: a test reads ``cluster.requests``

    def _send(self, code: int, body: Obj) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _user(self) -> str | None:
        """The authenticated user; "" for anonymous; None when a presented token is refused (401)."""
        cluster = self.server.cluster
        header = self.headers.get("Authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() == "bearer" and token in cluster.tokens:
                return f"token:{token[:4]}"
            return None
        getpeercert = getattr(self.connection, "getpeercert", None)
        certificate = getpeercert() if getpeercert else None
        if certificate:
            subject = dict(item for rdn in certificate.get("subject", ()) for item in rdn)
            common_name = str(subject.get("commonName", ""))
            if common_name in cluster.client_cns:
                return f"cert:{common_name}"
        return ""

    def do_GET(self) -> None:
        cluster = self.server.cluster
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        user = self._user()
        with cluster.lock:
            cluster.requests.append(("GET", self.path, "!" if user is None else user))
        if any(url.path.startswith(prefix) for prefix in cluster.hang_up):
            self.close_connection = True
            self.connection.close()
            return
        if user is None:
            return self._send(401, status_object(401, "Unauthorized"))
        if url.path in ("/version", "/version/"):
            major, minor = cluster.git_version.lstrip("v").split(".")[:2]
            return self._send(200, {"major": major, "minor": minor, "gitVersion": cluster.git_version})
        if not user:
            what = "nodes" if url.path.endswith("/nodes") else "pods"
            return self._send(
                403,
                status_object(
                    403, f'{what} is forbidden: User "system:anonymous" cannot list resource "{what}" in API group ""'
                ),
            )
        for prefix, code in cluster.faults.items():
            if url.path.startswith(prefix):
                return self._send(code, status_object(code, f"fault injected by the test: {code} on {prefix}"))
        parts = url.path.strip("/").split("/")
        if parts == ["api", "v1", "nodes"]:
            return self._list("NodeList", cluster.nodes, query)
        if len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
            return self._list("PodList", cluster.pods.get(parts[3], []), query)
        return self._send(404, status_object(404, f"the server could not find the requested resource ({url.path})"))

    def _not_allowed(self) -> None:
        with self.server.cluster.lock:
            self.server.cluster.requests.append((self.command, self.path, ""))
        self._send(405, status_object(405, f"{self.command} is not served by this fake"))

    do_POST = do_PUT = do_PATCH = do_DELETE = _not_allowed

    def _list(self, kind: str, objects: list[Obj], query: dict[str, str]) -> None:
        cluster = self.server.cluster
        selector = query.get("labelSelector", "")
        items = [o for o in objects if matches((o.get("metadata") or {}).get("labels") or {}, selector)]
        start = 0
        if query.get("continue"):
            with cluster.lock:
                expired = cluster.expire_continue > 0
                cluster.expire_continue -= 1 if expired else 0
            if expired:
                return self._send(410, status_object(410, "The provided continue parameter is too old"))
            start = int(base64.urlsafe_b64decode(query["continue"]).decode())
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        metadata: Obj = {"resourceVersion": "4242"}
        if start + limit < len(items):
            metadata["continue"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            metadata["remainingItemCount"] = len(items) - start - limit
        self._send(200, {"kind": kind, "apiVersion": "v1", "metadata": metadata, "items": page})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, cluster: FakeCluster, context: ssl.SSLContext | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cluster = cluster
        if context is not None:
            self.socket = context.wrap_socket(self.socket, server_side=True)


@dataclass(frozen=True)
class Pki:
    """A cluster CA, the server's certificate for 127.0.0.1 and a client certificate, all PEM text and files."""

    folder: Path
    ca: str
    client_cn: str

    def text(self, name: str) -> str:
        return (self.folder / name).read_text()


def make_pki(folder: Path, client_cn: str = "status-reader") -> Pki:
    """Generate the PKI with the ``openssl`` command (Debian's ``openssl``, part of the build machines' image):
    P-256 keys, a CA, a server certificate for IP 127.0.0.1 and a client certificate, valid for a day."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the TLS tests need the openssl command (Debian package openssl)")
    folder.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=folder, check=True, capture_output=True)

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=fake-cluster-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    extensions = {
        "server": "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n",
        "client": "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n",
    }
    for name, subject in (("server", "/CN=127.0.0.1"), ("client", f"/CN={client_cn}/O=gpu-platform-readers")):
        (folder / f"{name}.ext").write_text(extensions[name])
        run("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "1", "-extfile", f"{name}.ext")  # fmt: skip
    return Pki(folder, (folder / "ca.crt").read_text(), client_cn)


@contextmanager
def serve(cluster: FakeCluster, pki: Pki | None = None) -> Iterator[str]:
    """Run the fake API server in a thread; yields its URL (``https://`` with ``pki``, else ``http://``)."""
    context = None
    if pki is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.folder / "server.crt", pki.folder / "server.key")
        context.load_verify_locations(pki.folder / "ca.crt")
        context.verify_mode = ssl.CERT_OPTIONAL  # a client certificate is one way to authenticate, not required
    server = _Server(cluster, context)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if pki else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def kubeconfig(server: str, user: Obj, ca: str | None = None, name: str = "fake") -> str:
    """A kubeconfig for ``server`` with one context, ``name``, whose user is ``user`` (a token, a client
    certificate, an exec plugin: the ``users[].user`` object)."""
    cluster: Obj = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = b64(ca)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
    return json.dumps(document, indent=2)
