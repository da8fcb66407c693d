"""A cache of the API kept by one paginated list and then a watch, as client-go's informers keep theirs.

Why: polling every object of a kind on a timer costs the API server (and the controller's memory) in proportion
to the fleet, whether anything changes or not; a list once and a watch from its resourceVersion costs in
proportion to what changes. Standard library only (it ships in the agent's ConfigMap); the rules are client-go's
reflector's (k8s.io/client-go tools/cache ``reflector.go``):

- one paginated list (``limit``/``continue``); a list that fails halfway replaces nothing (the old cache stays
  until a whole list succeeded), an expired ``continue`` token restarts it;
- a watch from the list's resourceVersion with bookmarks; when the stream ends or drops (a timeout, a broken
  connection, a stall) it is resumed from the last resourceVersion seen (a bookmark's included), never relisted;
- ``410 Gone`` (the version is older than the server keeps) relists;
- an event that repeats or comes out of order for one object (a resourceVersion not newer than the one cached)
  changes nothing, and a deleted object does not come back from an older event.

:class:`CachedApi` serves the agent's list and get calls from such caches, one per distinct call, started on its
first use; everything else (writes, per-node pod lists) goes to the API as before. Every change wakes the
caller's loop (``changed``).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from components.node_agent.agent.kube import ApiError

#: Seconds a watch asks the server to keep its stream open (kube-apiserver caps it with ``--min-request-timeout``,
#: 1800 s by default); a little jitter keeps a fleet of executors from reconnecting together.
WATCH_SECONDS = 1800
#: Seconds to wait after a failed list or watch before the next try (doubling up to the last).
BACKOFF_SECONDS = (1.0, 2.0, 5.0, 10.0, 30.0)


class Lister(Protocol):
    """What an informer needs from the API: a whole list and a watch (``components.node_agent.agent.kube.Kube``)."""

    def list_all(self, path: str, query: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], str]: ...

    def watch(
        self, path: str, query: dict[str, str] | None, resource_version: str, timeout_seconds: int
    ) -> Iterator[dict[str, Any]]: ...


class Gone(Exception):
    """The watch's resourceVersion is older than the server keeps (410): relist."""


def _newer(candidate: str, current: str) -> bool:
    """``candidate`` is a later version than ``current`` (etcd's versions are integers; anything else is taken as
    newer, as an opaque version must be)."""
    if candidate.isdigit() and current.isdigit():
        return int(candidate) > int(current)
    return candidate != current


def _key(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


@dataclass
class Informer:
    """The cache of one collection (``path`` with ``query``: label and field selectors)."""

    api: Lister
    path: str
    query: dict[str, str] = field(default_factory=dict)
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    resource_version: str = ""
    synced: bool = False
    relists: int = 0
    #: The version of each object deleted since the last list: an older ADDED or MODIFIED does not revive it.
    tombstones: dict[str, str] = field(default_factory=dict)
    #: Called after every change to the cache (a loop's wake-up), from the thread that applied it.
    on_change: Callable[[], None] = lambda: None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def items(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.cache.values())

    def relist(self) -> bool:
        """A whole list replaces the cache (or nothing does, if it fails); True when the cache changed."""
        items, version = self.api.list_all(self.path, self.query)
        fresh = {_key(item): item for item in items}
        with self.lock:
            changed = not self.synced or _versions(fresh) != _versions(self.cache)
            self.cache, self.resource_version, self.synced = fresh, version, True
            self.tombstones.clear()
            self.relists += 1
        return changed

    def apply(self, event: dict[str, Any]) -> bool:
        """One watch event; True when the cache changed. Raises :class:`Gone` on a 410 and ``ApiError`` on another
        error event."""
        kind, obj = event.get("type", ""), event.get("object") or {}
        version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise Gone(str(obj.get("message", "")))
            raise ApiError(code, f"watch {self.path}: {obj.get('message', '')}")
        with self.lock:
            if version and (not self.resource_version or _newer(version, self.resource_version)):
                self.resource_version = version
            if kind == "BOOKMARK":
                return False
            key = _key(obj)
            current = self.cache.get(key)
            known = current["metadata"].get("resourceVersion", "") if current else self.tombstones.get(key, "")
            if known and not _newer(version, str(known)):
                return False  # a repeat, or older than what is cached: changes nothing
            if kind == "DELETED":
                self.cache.pop(key, None)
                self.tombstones[key] = version
            elif kind in ("ADDED", "MODIFIED"):
                self.cache[key] = obj
                self.tombstones.pop(key, None)
            else:
                return False
        self.on_change()
        return True

    def watch_once(self, timeout_seconds: int = WATCH_SECONDS) -> bool:
        """Follow the watch from the cache's version until the stream ends; a 410 relists. True on any change.

        A dropped or stalled stream raises ``ApiError`` (status 0) after the events it delivered were applied:
        the next call resumes from the last version seen."""
        changed = False
        try:
            for event in self.api.watch(self.path, self.query, self.resource_version, timeout_seconds):
                changed = self.apply(event) or changed
        except Gone:
            return self.relist() or changed
        except ApiError as error:
            if error.status != 410:
                raise
            return self.relist() or changed
        return changed


def _versions(cache: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {key: str(obj["metadata"].get("resourceVersion", "")) for key, obj in cache.items()}


def run_informer(
    informer: Informer, stop: threading.Event, changed: threading.Event, log: Callable[[str], None]
) -> None:
    """Keep ``informer`` in sync until ``stop``: list once (again after 410), then watch and resume, with backoff."""
    informer.on_change = changed.set
    failures = 0
    while not stop.is_set():
        try:
            if not informer.synced:
                informer.relist()
                changed.set()
            if informer.watch_once(WATCH_SECONDS + random.randint(0, 300)):
                changed.set()
            failures = 0
        except ApiError as error:
            failures += 1
            log(f"watch {informer.path}: {error}; resuming")
            stop.wait(BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS)) - 1])


class CachedApi:
    """The agent's ``Api`` with its lists and gets served from watched caches (one informer per distinct call).

    The first call of a kind lists synchronously (so it answers at once) and starts the watch in a thread; later
    calls read the cache. Writes, per-node pod lists and ResourceClaims go to the API (they are few, and only for
    the nodes being changed). ``changed`` is set whenever a cache changes: the loop wakes on it.
    """

    def __init__(self, api: Any, changed: threading.Event | None = None) -> None:
        self.api = api
        self.changed = changed or threading.Event()
        self.stop = threading.Event()
        self.informers: dict[tuple[str, tuple[tuple[str, str], ...]], Informer] = {}
        self.log: list[str] = []
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)  # writes and the calls not cached below

    def cached(self, path: str, query: dict[str, str]) -> list[dict[str, Any]]:
        key = (path, tuple(sorted((k, v) for k, v in query.items() if v)))
        with self.lock:
            informer = self.informers.get(key)
            if informer is None:
                informer = Informer(self.api, path, dict(key[1]))
                informer.relist()  # raises ApiError like a plain list: the caller's pass then does nothing
                self.informers[key] = informer
                thread = threading.Thread(
                    target=run_informer, args=(informer, self.stop, self.changed, self.log.append), daemon=True
                )
                thread.start()
        return informer.items()

    # -- the cached calls ------------------------------------------------------------------------------------
    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        return self.cached("/api/v1/nodes", {"labelSelector": label_selector})

    def get_node(self, name: str) -> dict[str, Any]:
        found = self.cached("/api/v1/nodes", {"fieldSelector": f"metadata.name={name}"})
        if not found:
            raise ApiError(404, f"node {name} not found")
        return found[0]

    def list_leases(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self.cached(
            f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", {"labelSelector": label_selector}
        )

    def get_config_map(self, namespace: str, name: str) -> dict[str, Any]:
        found = self.cached(f"/api/v1/namespaces/{namespace}/configmaps", {"fieldSelector": f"metadata.name={name}"})
        if not found:
            raise ApiError(404, f"configmap {namespace}/{name} not found")
        return found[0]

    def list_daemon_sets(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self.cached(f"/apis/apps/v1/namespaces/{namespace}/daemonsets", {"labelSelector": label_selector})

    def list_controller_revisions(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        path = f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions"
        return self.cached(path, {"labelSelector": label_selector})

    def list_namespaced_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self.cached(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": label_selector})

    def close(self) -> None:
        self.stop.set()
