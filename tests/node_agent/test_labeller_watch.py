"""The pool labeller over the fake API server over real HTTP (``tests/node_agent/http_api.py``): it lists the nodes of
its pools once, then follows the watches: a node added after it started is labelled through the watch, a node that
leaves its pool loses its labels, a conflict waits for the next event, an outage is tried again soon."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from components.catalog.names import GPU_MODEL_LABEL, GPU_NODE_LABEL, NODE_GROUP_LABEL
from components.node_agent.agent.kube import ApiError, Kube
from components.node_agent.agent.labeller import main as labeller_main
from components.node_agent.agent.labeller.main import FIELD_MANAGER, RESYNC_SECONDS, RETRY_SECONDS, Labeller
from components.node_agent.agent.labeller.membership import parse_memberships
from tests.node_agent.http_api import FakeApiServer

NODES = "/api/v1/nodes"
POOL_KEY = "node.example.com/pool"
TRAIN = {GPU_NODE_LABEL: "true", NODE_GROUP_LABEL: "train", GPU_MODEL_LABEL: "A100-80GB"}
INFER = {GPU_NODE_LABEL: "true", NODE_GROUP_LABEL: "infer", GPU_MODEL_LABEL: "H100-80GB"}
POOLS = parse_memberships(
    {
        "train": {"selector": {POOL_KEY: "train"}, "labels": TRAIN},
        "infer": {"selector": {POOL_KEY: "infer"}, "labels": INFER},
    }
)


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def labels_of(server: FakeApiServer, name: str) -> dict[str, str]:
    return dict(server.store.objects[NODES][f"/{name}"]["metadata"].get("labels") or {})


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_every=0.2) as fake:
        yield fake


class Running:
    """The labeller's loop in a thread (``run_until_stopped`` wants the main thread for its signal handlers): a pass
    when a cache changes, else every ``RESYNC_SECONDS``."""

    def __init__(self, labeller: Labeller) -> None:
        self.labeller = labeller
        self.done = threading.Event()
        self.passes = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.done.is_set():
            self.labeller.changed.clear()
            self.labeller.one_pass()
            self.passes += 1
            self.labeller.changed.wait(min(self.labeller.seconds(), 0.5))


@pytest.fixture
def running(server: FakeApiServer) -> Iterator[Running]:
    labeller = Labeller(Kube(server.url, "token", timeout=5.0), POOLS)
    loop = Running(labeller)
    labeller.start()
    loop.thread.start()
    yield loop
    loop.done.set()
    labeller.close()
    loop.thread.join(timeout=5)


def test_a_node_added_after_start_is_labelled_through_the_watch(server: FakeApiServer) -> None:
    server.store.put(NODES, node("gpu-1", **{POOL_KEY: "train"}))
    server.store.put(NODES, node("cp-1", **{"node-role.kubernetes.io/control-plane": ""}))
    labeller = Labeller(Kube(server.url, "token", timeout=5.0), POOLS)
    loop = Running(labeller)
    labeller.start()
    loop.thread.start()
    try:
        wait_for(lambda: labels_of(server, "gpu-1").get(NODE_GROUP_LABEL) == "train")
        lists = server.counts[("list", "nodes")]
        assert lists == 3  # one list per cache: train's selector, infer's, and the nodes with a pool label
        server.store.put(NODES, node("gpu-2", **{POOL_KEY: "infer"}))  # joins after the labeller started
        wait_for(lambda: labels_of(server, "gpu-2").get(NODE_GROUP_LABEL) == "infer")
        assert labels_of(server, "gpu-2") == {"kubernetes.io/hostname": "gpu-2", POOL_KEY: "infer", **INFER}
        assert server.counts[("list", "nodes")] == lists  # through the watch, not a relist
        assert server.counts[("patch", "nodes")] == 2
        assert labels_of(server, "cp-1") == {
            "kubernetes.io/hostname": "cp-1",
            "node-role.kubernetes.io/control-plane": "",
        }
        # Its own writes come back through the watches: they wake a pass that finds nothing to do.
        passes = loop.passes
        wait_for(lambda: loop.passes > passes)
        time.sleep(0.3)
        assert server.counts[("patch", "nodes")] == 2
        assert any(line.startswith("node gpu-2 (pool infer): set ") for line in labeller.log)
    finally:
        loop.done.set()
        labeller.close()
        loop.thread.join(timeout=5)


def test_a_node_that_leaves_its_pool_loses_its_labels_and_one_that_moves_changes_pool(
    server: FakeApiServer, running: Running
) -> None:
    server.store.put(NODES, node("gpu-1", **{POOL_KEY: "train"}))
    server.store.put(NODES, node("gpu-2", **{POOL_KEY: "train"}))
    wait_for(lambda: labels_of(server, "gpu-2").get(NODE_GROUP_LABEL) == "train")
    first = server.store.objects[NODES]["/gpu-1"]
    server.store.put(
        NODES,
        {**first, "metadata": {**first["metadata"], "labels": {**labels_of(server, "gpu-1"), POOL_KEY: "retired"}}},
    )
    second = server.store.objects[NODES]["/gpu-2"]
    server.store.put(
        NODES,
        {**second, "metadata": {**second["metadata"], "labels": {**labels_of(server, "gpu-2"), POOL_KEY: "infer"}}},
    )
    wait_for(lambda: NODE_GROUP_LABEL not in labels_of(server, "gpu-1"))
    assert labels_of(server, "gpu-1") == {"kubernetes.io/hostname": "gpu-1", POOL_KEY: "retired"}
    wait_for(lambda: labels_of(server, "gpu-2").get(NODE_GROUP_LABEL) == "infer")
    assert labels_of(server, "gpu-2") == {"kubernetes.io/hostname": "gpu-2", POOL_KEY: "infer", **INFER}


class Refusing:
    """The API, with every node PATCH answered ``status``."""

    def __init__(self, api: Kube, status: int) -> None:
        self.api = api
        self.status = status
        self.patches: list[tuple[str, dict[str, str]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def request(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None, **kw: Any) -> Any:
        if method == "PATCH":
            self.patches.append((path, dict(query or {})))
            raise ApiError(self.status, f"{method} {path}: refused (test)")
        return self.api.request(method, path, body, query, **kw)


@pytest.mark.parametrize(("status", "next_pass"), [(409, RESYNC_SECONDS), (503, RETRY_SECONDS), (0, RETRY_SECONDS)])
def test_a_conflict_waits_for_the_next_event_and_an_outage_is_tried_again_soon(
    server: FakeApiServer, status: int, next_pass: float
) -> None:
    server.store.put(NODES, node("gpu-1", **{POOL_KEY: "train"}))
    api = Refusing(Kube(server.url, "token", timeout=5.0), status)
    labeller = Labeller(api, POOLS)  # type: ignore[arg-type]
    for informer in labeller.informers:
        informer.relist()
    assert labeller.one_pass() == []
    assert labeller.seconds() == next_pass
    assert api.patches == [(f"{NODES}/gpu-1", {"fieldManager": FIELD_MANAGER})]  # its own field manager
    assert labels_of(server, "gpu-1").get(NODE_GROUP_LABEL) is None


def test_nothing_is_written_before_every_cache_holds_a_whole_list(server: FakeApiServer) -> None:
    server.store.put(NODES, node("gpu-1", **{POOL_KEY: "train"}))
    labeller = Labeller(Kube(server.url, "token", timeout=5.0), POOLS)
    labeller.informers[0].relist()
    assert labeller.one_pass() == []
    assert server.counts[("patch", "nodes")] == 0
    for informer in labeller.informers[1:]:
        informer.relist()
    assert [item.node for item in labeller.one_pass()] == ["gpu-1"]


def test_main_refuses_to_start_without_readable_memberships(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(labeller_main.ENV_MEMBERSHIPS, str(tmp_path / "missing.json"))
    assert labeller_main.main() == 2
    (tmp_path / "empty.json").write_text("{}")
    monkeypatch.setenv(labeller_main.ENV_MEMBERSHIPS, str(tmp_path / "empty.json"))
    assert labeller_main.main() == 2
    (tmp_path / "broken.json").write_text('{"train": {"selector": {}}}')
    monkeypatch.setenv(labeller_main.ENV_MEMBERSHIPS, str(tmp_path / "broken.json"))
    assert labeller_main.main() == 2
