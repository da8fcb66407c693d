"""The agent's watched caches against a fake API server over real HTTP (``tests/node_agent/http_api.py``).

Every fault a watch meets in a real cluster ends with a cache equal to a fresh list of the same selectors; the
controller's decisions are pure functions of what it lists, so equal caches mean the same decisions.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from components.node_agent.agent import kube as kube_module
from components.node_agent.agent.kube import ApiError, Kube
from components.node_agent.agent.watch import CachedApi, Informer
from tests.node_agent.http_api import FakeApiServer

NODES = "/api/v1/nodes"
GPU = {"labelSelector": "gpu-platform.io/gpu=true"}


def node(name: str, gpu: bool = True, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"gpu-platform.io/gpu": "true" if gpu else "false", **labels}}}


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_every=0.2) as fake:
        yield fake


@pytest.fixture
def kube(server: FakeApiServer) -> Kube:
    return Kube(server.url, "token", timeout=5.0)


def fresh(kube: Kube) -> dict[str, str]:
    items, _ = kube.list_all(NODES, GPU)
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in items}


def cached(informer: Informer) -> dict[str, str]:
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in informer.items()}


def in_background(server: FakeApiServer, delay: float, action: Any) -> None:
    def run() -> None:
        time.sleep(delay)
        action()

    threading.Thread(target=run, daemon=True).start()


def test_a_list_is_read_in_pages_and_only_whole(server: FakeApiServer, kube: Kube) -> None:
    for index in range(1250):
        server.store.put(NODES, node(f"n{index:04d}"))
    informer = Informer(kube, NODES, GPU)
    informer.relist()
    assert len(informer.items()) == 1250
    assert server.counts[("list", "nodes")] == 3  # pages of 500


def test_a_list_that_fails_halfway_leaves_the_old_cache_whole(server: FakeApiServer, kube: Kube) -> None:
    for index in range(600):
        server.store.put(NODES, node(f"n{index:04d}"))
    informer = Informer(kube, NODES, GPU)
    informer.relist()
    server.store.put(NODES, node("n9999"))
    server.faults.fail_page = 2
    with pytest.raises(ApiError):
        informer.relist()
    assert len(informer.items()) == 600  # not half of the new list
    informer.relist()
    assert cached(informer) == fresh(kube)


def test_an_expired_continue_token_restarts_the_list(server: FakeApiServer, kube: Kube) -> None:
    for index in range(1100):
        server.store.put(NODES, node(f"n{index:04d}"))
    real = kube.request
    compacted: list[bool] = []

    def request(method: str, path: str, body: Any = None, query: dict[str, str] | None = None, **kw: Any) -> Any:
        if query and query.get("continue") and not compacted:
            compacted.append(True)
            server.store.compact()  # the token's version is gone: 410 Expired
        return real(method, path, body, query, **kw)

    kube.request = request  # type: ignore[method-assign,assignment]
    items, _ = kube.list_all(NODES, GPU)
    assert len(items) == 1100 and compacted


def test_a_watch_follows_changes_and_a_dropped_stream_resumes_without_a_relist(
    server: FakeApiServer, kube: Kube
) -> None:
    for index in range(3):
        server.store.put(NODES, node(f"n{index}"))
    informer = Informer(kube, NODES, GPU)
    informer.relist()
    server.faults.drop_after = 2
    in_background(server, 0.1, lambda: [server.store.put(NODES, node(f"m{i}")) for i in range(4)])
    with contextlib.suppress(ApiError):  # a drop reads as an error or as an early end, as the socket has it
        informer.watch_once(timeout_seconds=5)  # the connection drops after two events
    assert {"m0", "m1"} <= set(cached(informer))
    informer.watch_once(timeout_seconds=1)  # resumed from the last version: the other two arrive
    assert informer.relists == 1
    assert server.counts[("list", "nodes")] == 1  # no relist (the next line's list is the test's own)
    assert cached(informer) == fresh(kube)


def test_a_stalled_stream_is_given_up_and_resumed(
    server: FakeApiServer, kube: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube_module, "STALL_SECONDS", 0)
    server.store.put(NODES, node("n0"))
    informer = Informer(kube, NODES, GPU)
    informer.relist()
    server.faults.stall = True
    server.store.put(NODES, node("n1"))
    started = time.monotonic()
    with pytest.raises(ApiError):
        informer.watch_once(timeout_seconds=1)
    assert time.monotonic() - started < 5
    informer.watch_once(timeout_seconds=1)
    assert cached(informer) == fresh(kube)


def test_410_gone_relists(server: FakeApiServer, kube: Kube) -> None:
    server.store.put(NODES, node("n0"))
    informer = Informer(kube, NODES, GPU)
    informer.relist()
    server.store.put(NODES, node("n1"))
    server.store.delete(NODES, "/n0")
    server.store.compact()  # the informer's version is older than the server keeps
    assert informer.watch_once(timeout_seconds=1)
    assert informer.relists == 2
    assert cached(informer) == fresh(kube) == {"n1": fresh(kube)["n1"]}


def test_events_that_repeat_or_come_out_of_order_change_nothing_twice(server: FakeApiServer, kube: Kube) -> None:
    informer = Informer(kube, NODES, GPU)
    informer.relist()
    server.faults.duplicate = True
    server.faults.reorder = True
    server.store.put(NODES, node("n0", role="a"))
    server.store.put(NODES, node("n0", role="b"))
    server.store.put(NODES, node("n1"))
    informer.watch_once(timeout_seconds=1)
    assert cached(informer) == fresh(kube)
    assert informer.cache["/n0"]["metadata"]["labels"]["role"] == "b"  # the older event did not win


def test_a_deleted_object_is_not_revived_by_an_older_event(kube: Kube) -> None:
    informer = Informer(kube, NODES, GPU)
    informer.synced = True
    assert informer.apply({"type": "ADDED", "object": {"metadata": {"name": "n0", "resourceVersion": "5"}}})
    assert informer.apply({"type": "DELETED", "object": {"metadata": {"name": "n0", "resourceVersion": "7"}}})
    assert not informer.apply({"type": "MODIFIED", "object": {"metadata": {"name": "n0", "resourceVersion": "6"}}})
    assert informer.items() == []


def test_bookmarks_move_the_version_on_without_changing_the_cache(server: FakeApiServer, kube: Kube) -> None:
    informer = Informer(kube, NODES, GPU)
    informer.relist()
    before = informer.resource_version
    server.store.put("/api/v1/configmaps", {"metadata": {"name": "other", "namespace": "x"}})  # not watched
    assert not informer.watch_once(timeout_seconds=1)
    assert int(informer.resource_version) > int(before)


def test_the_cached_api_lists_once_then_serves_from_the_watch_and_wakes_its_loop(
    server: FakeApiServer, kube: Kube
) -> None:
    server.store.put(NODES, node("n0"))
    api = CachedApi(kube)
    try:
        assert [n["metadata"]["name"] for n in api.list_nodes("gpu-platform.io/gpu=true")] == ["n0"]
        api.changed.clear()
        server.store.put(NODES, node("n1"))
        assert api.changed.wait(5)
        for _ in range(5):
            api.list_nodes("gpu-platform.io/gpu=true")
        assert sorted(n["metadata"]["name"] for n in api.list_nodes("gpu-platform.io/gpu=true")) == ["n0", "n1"]
        assert server.counts[("list", "nodes")] == 1
    finally:
        api.close()
