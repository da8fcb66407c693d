"""A fake Kubernetes API server over real HTTP: lists with ``limit``/``continue``, watches with bookmarks, 410 Gone,
and the faults a real connection has. For the informer's tests and the API-load benchmark.

What it imitates, from the Kubernetes API conventions ("Efficient detection of changes", "Retrieving large
results sets in chunks") and kube-apiserver's watch cache:

- every write bumps one global resourceVersion; a list answers with the collection's version; a paginated list
  hands out a ``continue`` token that expires (410) once the version it was taken at is compacted;
- a watch from version ``v`` streams every change after ``v`` of the objects its selectors match, one JSON event
  a line (``ADDED``/``MODIFIED``/``DELETED``), a ``BOOKMARK`` every ``bookmark_every`` seconds, and ends after
  ``timeoutSeconds``; from a version older than the history it keeps it sends an ``ERROR`` event with code 410;
- label selectors ``key=value``/``key``, field selectors ``metadata.name=`` and ``spec.nodeName=``.

Faults a test can ask for: drop a watch after ``n`` events, stall it (send nothing), send an event twice or
out of order, fail a list on its ``n``-th page. Every request is counted by verb, resource and bytes.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.node_agent.sim.api import merge_patch

Obj = dict[str, Any]


@dataclass
class Faults:
    drop_after: int | None = None  #: end the next watch after this many events (a dropped connection)
    stall: bool = False  #: the next watch sends nothing and never ends by itself
    duplicate: bool = False  #: each event of the next watch is sent twice
    reorder: bool = False  #: the next watch sends its first two events in the wrong order
    fail_page: int | None = None  #: the next paginated list answers 500 on this page (1-based)


@dataclass
class Store:
    """Objects by resource path prefix (``/api/v1/nodes``), with their history for watches."""

    objects: dict[str, dict[str, Obj]] = field(default_factory=dict)
    history: list[tuple[int, str, str, Obj]] = field(default_factory=list)  #: (version, collection, type, object)
    version: int = 1
    compacted: int = 0  #: versions at or below this are gone (410)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def put(self, collection: str, obj: Obj, kind: str = "") -> Obj:
        with self.lock:
            self.version += 1
            body = json.loads(json.dumps(obj))
            body.setdefault("metadata", {})["resourceVersion"] = str(self.version)
            key = _key(body)
            bucket = self.objects.setdefault(collection, {})
            kind = kind or ("MODIFIED" if key in bucket else "ADDED")
            bucket[key] = body
            self.history.append((self.version, collection, kind, body))
            self.lock.notify_all()
            return body

    def delete(self, collection: str, key: str) -> None:
        with self.lock:
            body = self.objects.get(collection, {}).pop(key, None)
            if body is None:
                return
            self.version += 1
            body = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.version)}}
            self.history.append((self.version, collection, "DELETED", body))
            self.lock.notify_all()

    def compact(self) -> None:
        """Forget the history (etcd compaction): watches and continue tokens from before now get 410."""
        with self.lock:
            self.compacted = self.version
            self.history = []


def _key(obj: Obj) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def _matches(obj: Obj, query: dict[str, str]) -> bool:
    for selector in filter(None, query.get("labelSelector", "").split(",")):
        key, has, value = selector.partition("=")
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if key not in labels or (has and labels[key] != value):
            return False
    for selector in filter(None, query.get("fieldSelector", "").split(",")):
        key, _, value = selector.partition("=")
        if key == "metadata.name" and (obj.get("metadata") or {}).get("name") != value:
            return False
        if key == "spec.nodeName" and (obj.get("spec") or {}).get("nodeName") != value:
            return False
    return True


def _collection(path: str) -> tuple[str, str, str]:
    """``(collection, namespace, name)`` of a request path: ``/api/v1/namespaces/ns/pods/x`` -> pods."""
    parts = [p for p in path.split("/") if p]
    namespace = ""
    if "namespaces" in parts:
        index = parts.index("namespaces")
        if len(parts) > index + 2:
            namespace = parts[index + 1]
            parts = parts[:index] + parts[index + 2 :]
    base = 2 if parts[0] == "api" else 3
    resource = parts[base] if len(parts) > base else ""
    name = parts[base + 1] if len(parts) > base + 1 else ""
    return resource, namespace, name


class FakeApiServer:
    """The server; ``url`` once started. ``counts``: (verb, resource) -> requests; ``bytes_out``/``bytes_in``."""

    def __init__(self, bookmark_every: float = 60.0) -> None:
        self.store = Store()
        self.faults = Faults()
        self.bookmark_every = bookmark_every
        self.counts: Counter[tuple[str, str]] = Counter()
        self.bytes_out = 0
        self.bytes_in = 0
        self.open_watches = 0
        #: (time.monotonic(), verb, resource) of every write, in order.
        self.writes: list[tuple[float, str, str]] = []
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        with self.store.lock:
            self.store.lock.notify_all()
        self.server.shutdown()
        self.server.server_close()

    def reset_counts(self) -> None:
        with self.lock:
            self.counts.clear()
            self.bytes_out = self.bytes_in = 0

    # -- serving ---------------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                return

            def _send(self, status: int, body: Obj) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                with api.lock:
                    api.bytes_out += len(data)

            def _count(self, verb: str, resource: str) -> None:
                with api.lock:
                    api.counts[(verb, resource)] += 1
                    if verb in ("create", "update", "patch", "delete"):
                        api.writes.append((time.monotonic(), verb, resource))

            def do_GET(self) -> None:
                parsed = urllib.parse.urlparse(self.path)
                query = dict(urllib.parse.parse_qsl(parsed.query))
                resource, namespace, name = _collection(parsed.path)
                collection = parsed.path if not name else parsed.path.rsplit("/", 1)[0]
                if namespace:
                    collection = collection.replace(f"/namespaces/{namespace}", "")
                if query.get("watch") in ("1", "true"):
                    self._count("watch", resource)
                    self._watch(collection, namespace, query)
                    return
                if name:
                    self._count("get", resource)
                    obj = api.store.objects.get(collection, {}).get(f"{namespace}/{name}")
                    self._send(200, obj) if obj else self._send(
                        404, {"kind": "Status", "code": 404, "message": "not found"}
                    )
                    return
                self._count("list", resource)
                self._list(collection, namespace, query)

            def _list(self, collection: str, namespace: str, query: dict[str, str]) -> None:
                with api.store.lock:
                    items = [
                        obj
                        for obj in api.store.objects.get(collection, {}).values()
                        if (not namespace or obj["metadata"].get("namespace") == namespace) and _matches(obj, query)
                    ]
                    version = api.store.version
                items.sort(key=_key)
                limit = int(query.get("limit") or 0)
                start, taken_at = 0, version
                if query.get("continue"):
                    token = json.loads(urllib.parse.unquote(query["continue"]))
                    start, taken_at = int(token["start"]), int(token["version"])
                    if taken_at < api.store.compacted:
                        self._send(410, {"kind": "Status", "code": 410, "reason": "Expired", "message": "expired"})
                        return
                page_number = (start // limit + 1) if limit else 1
                if api.faults.fail_page is not None and page_number == api.faults.fail_page:
                    api.faults.fail_page = None
                    self._send(500, {"kind": "Status", "code": 500, "message": "etcd timeout (injected)"})
                    return
                end = start + limit if limit else len(items)
                metadata: Obj = {"resourceVersion": str(taken_at)}
                if end < len(items):
                    metadata["continue"] = json.dumps({"start": end, "version": taken_at})
                self._send(200, {"kind": "List", "metadata": metadata, "items": items[start:end]})

            def _watch(self, collection: str, namespace: str, query: dict[str, str]) -> None:
                since = int(query.get("resourceVersion") or 0)
                timeout = float(query.get("timeoutSeconds") or 1800)
                faults, api.faults = api.faults, Faults(fail_page=api.faults.fail_page)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                with api.lock:
                    api.open_watches += 1
                try:
                    self._stream(collection, namespace, query, since, timeout, faults)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with api.lock:
                        api.open_watches -= 1

            def _chunk(self, event: Obj) -> None:
                data = (json.dumps(event) + "\n").encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                with api.lock:
                    api.bytes_out += len(data)

            def _end(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _stream(
                self, collection: str, namespace: str, query: dict[str, str], since: int, timeout: float, faults: Faults
            ) -> None:
                if since and since < api.store.compacted:
                    self._chunk({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}})
                    self._end()
                    return
                deadline = time.monotonic() + timeout
                last_bookmark = time.monotonic()
                sent = 0
                while not api.closing.is_set() and time.monotonic() < deadline:
                    with api.store.lock:
                        events: list[Obj] = [
                            {"type": kind, "object": obj}
                            for version, coll, kind, obj in api.store.history
                            if version > since
                            and coll == collection
                            and (not namespace or obj["metadata"].get("namespace") == namespace)
                            and _matches(obj, query)
                        ]
                        if events:
                            since = int(events[-1]["object"]["metadata"]["resourceVersion"])
                        elif not faults.stall:
                            api.store.lock.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                    if faults.stall:
                        time.sleep(0.05)
                        continue
                    if faults.reorder and len(events) >= 2:
                        events[0], events[1] = events[1], events[0]
                        faults.reorder = False
                    for event in events:
                        for _copy in range(2 if faults.duplicate else 1):
                            self._chunk(event)
                        sent += 1
                        if faults.drop_after is not None and sent >= faults.drop_after:
                            self.close_connection = True
                            self.wfile.flush()
                            self.connection.shutdown(2)
                            return
                    if time.monotonic() - last_bookmark >= api.bookmark_every:
                        last_bookmark = time.monotonic()
                        bookmark = {"kind": "Bookmark", "metadata": {"resourceVersion": str(api.store.version)}}
                        self._chunk({"type": "BOOKMARK", "object": bookmark})
                self._end()

            def _body(self) -> Obj:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                with api.lock:
                    api.bytes_in += len(raw)
                return json.loads(raw) if raw else {}

            def do_PUT(self) -> None:
                resource, namespace, name = _collection(urllib.parse.urlparse(self.path).path)
                self._count("update", resource)
                body = self._body()
                collection = (
                    urllib.parse.urlparse(self.path).path.rsplit("/", 1)[0].replace(f"/namespaces/{namespace}", "")
                )
                current = api.store.objects.get(collection, {}).get(f"{namespace}/{name}")
                wanted = (body.get("metadata") or {}).get("resourceVersion")
                if current is None or (wanted and wanted != current["metadata"]["resourceVersion"]):
                    self._send(409, {"kind": "Status", "code": 409, "message": "conflict"})
                    return
                body["metadata"]["namespace"] = namespace
                self._send(200, api.store.put(collection, body))

            def do_POST(self) -> None:
                path = urllib.parse.urlparse(self.path).path
                resource, namespace, _ = _collection(path)
                self._count("create", resource)
                body = self._body()
                body.setdefault("metadata", {})["namespace"] = namespace
                collection = path.replace(f"/namespaces/{namespace}", "")
                if _key(body) in api.store.objects.get(collection, {}):
                    self._send(409, {"kind": "Status", "code": 409, "message": "exists"})
                    return
                self._send(201, api.store.put(collection, body))

            def do_PATCH(self) -> None:
                resource, _, name = _collection(urllib.parse.urlparse(self.path).path)
                self._count("patch", resource)
                patch = self._body()
                collection = urllib.parse.urlparse(self.path).path.rsplit("/", 1)[0]
                current = api.store.objects.get(collection, {}).get(f"/{name}")
                if current is None:
                    self._send(404, {"kind": "Status", "code": 404, "message": "not found"})
                    return
                wanted = (patch.get("metadata") or {}).get("resourceVersion")
                if wanted and wanted != current["metadata"]["resourceVersion"]:
                    self._send(409, {"kind": "Status", "code": 409, "message": "conflict"})
                    return
                self._send(200, api.store.put(collection, merge_patch(current, patch)))

            def do_DELETE(self) -> None:
                path = urllib.parse.urlparse(self.path).path
                resource, namespace, name = _collection(path)
                self._count("delete", resource)
                self._body()
                collection = path.rsplit("/", 1)[0].replace(f"/namespaces/{namespace}", "")
                api.store.delete(collection, f"{namespace}/{name}")
                self._send(200, {"kind": "Status", "code": 200})

        return Handler
