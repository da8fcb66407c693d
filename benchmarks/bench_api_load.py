"""API load of the rollout controller and the executors: an idle hour, a rollout, and the reaction to a change.

In the project's fake API server over HTTP (``tests/node_agent/http_api.py``) holding ``N`` GPU nodes (1,000 and
5,000) with 30 pods each (one of them the operator's driver pod) and, in a second run, 50,000 more pods on other
nodes. Each figure is measured for today's design (one list, then watches) and for the polling design it
replaced (the controller as of commit ``POLLING_COMMIT``, checked out into a temporary worktree), the same way:

- ``idle``: the controller's requests per verb and resource, bytes, CPU seconds and peak RSS over one idle hour of
  virtual time (today's: its start-up, then its schedule: a leader renewal every 10 s, a full pass every 10 min;
  the polling design: 360 passes, measured over ``POLL_PASSES`` and scaled to the hour, marked ``x``); the
  executors' requests per hour from their schedule, with one executor's start-up measured;
- ``react``: seconds from a change of the settings ConfigMap to the controller's first node write;
- ``rollout``: the controller's API requests for one MIG rollout of a 100-node pool with a budget of 10 (and of
  a 50-node pool, to show the cost per node touched), in the simulated world, counting the calls that reach the
  API server under ``CachedApi`` (its cached lists are served from watches).

Targets (issue #36): idle, at most one request per GPU node per ten minutes across controller and executors (open
watches not counted; re-opening one is counted here), no full pod list after start-up; the controller's RSS under
300 MB at 5,000 nodes; the 50,000 other pods change no figure by more than 10%; a rollout's requests proportional
to the nodes it touches; reaction within 2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.node_agent.http_api import FakeApiServer

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "benchmarks" / "api_load_client.py"
POLLING_COMMIT = "0c758e6"
POLL_PASSES = int(os.environ.get("API_LOAD_POLL_PASSES", "3"))
SIZES = tuple(int(n) for n in os.environ.get("API_LOAD_NODES", "1000,5000").split(","))
OTHER_PODS = 50_000
PODS_PER_NODE = 30
NAMESPACE = "gpu-platform-system"
OPERATOR = "gpu-operator"
#: Executors re-open their Node's watch every 1800-2100 s (watch.WATCH_SECONDS plus jitter): requests per hour.
EXECUTOR_WATCHES_PER_HOUR = 3600 / 1950
EXECUTOR_POLLS_PER_HOUR = 3600 / 5  # the polling design: a GET of its Node every 5 s


def _pod(name: str, namespace: str, node: str, labels: dict[str, str], owner: str) -> dict[str, Any]:
    """A pod of a realistic size (about 2 KB of JSON: containers, env, volumes, conditions)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [{"kind": owner, "name": f"{name}-owner", "controller": True}],
            "annotations": {"kubectl.kubernetes.io/default-container": "main"},
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com/team/trainer:2026.11.3",
                    "env": [{"name": f"SETTING_{i}", "value": f"value-{i}"} for i in range(12)],
                    "resources": {"limits": {"cpu": "4", "memory": "16Gi"}},
                    "volumeMounts": [{"name": f"v{i}", "mountPath": f"/data/{i}"} for i in range(4)],
                }
            ],
            "volumes": [{"name": f"v{i}", "emptyDir": {}} for i in range(4)],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": t, "status": "True"} for t in ("Initialized", "Ready", "ContainersReady")],
            "podIP": "10.1.2.3",
        },
    }


ROLLOUT_LAYOUT = "all-1g.10gb"
ROLLOUT_RESOURCES = {"nvidia.com/mig-1g.10gb": 56}


def populate(
    server: FakeApiServer, nodes: int, other_pods: int, mig_layout: bool = False, rollout_pool: int | None = None
) -> None:
    """``rollout_pool``: only that pool's nodes want another MIG layout (the others already have theirs)."""
    store = server.store
    settings: dict[str, Any] = {"max_unavailable": "10", "mig_layout": mig_layout, "operator_namespace": OPERATOR}
    if rollout_pool is not None:
        settings["mig_resources"] = {f"pool-{rollout_pool:03d}": ROLLOUT_RESOURCES}
    store.put(
        "/api/v1/configmaps",
        {
            "metadata": {"name": "node-agent-settings", "namespace": NAMESPACE},
            "data": {"settings.json": json.dumps(settings)},
        },
    )
    ds = "nvidia-gpu-driver-ubuntu22.04-6c9f4d7b8"
    component = {"app.kubernetes.io/component": "nvidia-driver", "app": ds}
    store.put(
        "/apis/apps/v1/daemonsets",
        {
            "metadata": {"name": ds, "namespace": OPERATOR, "labels": component},
            "spec": {
                "selector": {"matchLabels": {"app": ds}},
                "template": {
                    "spec": {"containers": [{"name": "nvidia-driver-ctr", "image": "nvcr.io/nvidia/driver:580"}]}
                },
            },
        },
    )
    store.put(
        "/apis/apps/v1/controllerrevisions",
        {"metadata": {"name": f"{ds}-abc", "namespace": OPERATOR, "labels": {"app": ds}}, "revision": 1},
    )
    for index in range(nodes):
        name = f"gpu-{index:05d}"
        labels = {
            "gpu-platform.io/gpu": "true",
            "gpu-platform.io/node-group": f"pool-{index // 100:03d}",
            "nvidia.com/mig.config": "all-disabled",
            "nvidia.com/mig.config.state": "success",
            "gpu-platform.io/node-agent.mig-desired-config": (
                ROLLOUT_LAYOUT if rollout_pool is None or index // 100 == rollout_pool else "all-disabled"
            ),
        }
        store.put(
            "/api/v1/nodes",
            {
                "metadata": {"name": name, "uid": f"uid-{index}", "labels": labels},
                "spec": {},
                "status": {"allocatable": {"cpu": "64", "nvidia.com/gpu": "8"}},
            },
        )
        store.put(
            "/api/v1/pods",
            _pod(f"{ds}-{index}", OPERATOR, name, {**component, "controller-revision-hash": "abc"}, "DaemonSet"),
        )
        for pod in range(PODS_PER_NODE - 1):
            store.put(
                "/api/v1/pods", _pod(f"train-{index}-{pod}", f"team-{pod % 7}", name, {"app": "train"}, "ReplicaSet")
            )
    for index in range(other_pods):
        store.put("/api/v1/pods", _pod(f"web-{index}", "web", f"cpu-{index % 1000:04d}", {"app": "web"}, "ReplicaSet"))


def _client(mode: str, url: str, pythonpath: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.Popen(
        [sys.executable, str(CLIENT), mode, url, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(pythonpath),
    )


def _requests(server: FakeApiServer) -> tuple[int, str, int]:
    """All requests, their breakdown by verb and resource, and how many were pod lists."""
    counts = Counter(server.counts)
    text = " ".join(f"{verb}:{resource}={n}" for (verb, resource), n in sorted(counts.items()))
    return sum(counts.values()), text, counts[("list", "pods")]


def idle_watch(nodes: int, other_pods: int) -> dict[str, Any]:
    with FakeApiServer(bookmark_every=60.0) as server:
        populate(server, nodes, other_pods)
        client = _client("watch", server.url, ROOT)
        assert client.stdout is not None and client.stdin is not None
        started = json.loads(client.stdout.readline())
        startup_requests, startup_text, _ = _requests(server)
        startup_bytes = server.bytes_out
        server.reset_counts()
        client.stdin.write("\n")
        client.stdin.flush()
        result = json.loads(client.stdout.readline())
        client.wait()
        idle_requests, idle_text, pod_lists = _requests(server)
        idle_out, idle_in = server.bytes_out, server.bytes_in
        executor = executor_startup(server)
        return {
            "started": started["ok"],
            "startup_requests": startup_requests,
            "startup": startup_text,
            "startup_mb": startup_bytes / 1e6,
            "idle_requests": idle_requests,
            "idle_pod_lists": pod_lists,
            "idle": idle_text,
            "idle_kb_out": idle_out / 1e3,
            "idle_kb_in": idle_in / 1e3,
            "executor_startup": executor,
            **result,
        }


def executor_startup(server: FakeApiServer) -> str:
    """One executor's start-up (a list of its own Node by name, then a watch), measured."""
    from components.node_agent.agent.executor.host import RealHost
    from components.node_agent.agent.executor.run import Executor
    from components.node_agent.agent.kube import Kube
    from components.node_agent.agent.watch import CachedApi

    server.reset_counts()
    api = CachedApi(Kube(server.url, "token"))
    Executor(api, RealHost("/nonexistent"), "gpu-00000").once()
    time.sleep(0.3)  # its watch opens
    api.close()
    return " ".join(f"{verb}:{resource}={n}" for (verb, resource), n in sorted(server.counts.items()))


def idle_poll(nodes: int, other_pods: int, checkout: Path) -> dict[str, Any]:
    with FakeApiServer() as server:
        populate(server, nodes, other_pods)
        client = _client("poll", server.url, checkout, str(POLL_PASSES))
        assert client.stdout is not None
        result = json.loads(client.stdout.readline())
        client.wait()
        requests, text, _ = _requests(server)
        return {
            "pass_requests": requests / POLL_PASSES,
            "per_pass": text,
            "pass_mb": server.bytes_out / 1e6 / POLL_PASSES,
            **result,
        }


def react(nodes: int) -> float:
    with FakeApiServer(bookmark_every=60.0) as server:
        populate(server, nodes, 0)
        client = _client("react", server.url, ROOT)
        assert client.stdout is not None and client.stdin is not None
        json.loads(client.stdout.readline())
        time.sleep(1.0)
        writes_before = len(server.writes)
        changed_at = time.monotonic()
        settings = {"max_unavailable": "10", "mig_layout": True, "operator_namespace": OPERATOR}
        server.store.put(
            "/api/v1/configmaps",
            {
                "metadata": {"name": "node-agent-settings", "namespace": NAMESPACE},
                "data": {"settings.json": json.dumps(settings)},
            },
        )
        deadline = changed_at + 30.0
        first = None
        while time.monotonic() < deadline and first is None:
            node_writes = [t for t, verb, resource in server.writes[writes_before:] if resource == "nodes"]
            first = node_writes[0] if node_writes else None
            time.sleep(0.02)
        client.stdin.write("\n")
        client.stdin.flush()
        client.wait()
        return (first - changed_at) if first is not None else float("inf")


def _mig_manager_and_kubelet(server: FakeApiServer, stop: Any) -> None:
    """The other actors of a MIG rollout, as the simulated world has them (tests/node_agent/sim/actors.py), on the
    HTTP server's store: mig-manager answers a new ``nvidia.com/mig.config`` (its state cleared by the controller)
    with ``success`` and the device plugin's allocatable; kubelet runs each smoke pod to ``Succeeded``."""
    store = server.store
    while not stop.is_set():
        with store.lock:
            nodes = list(store.objects.get("/api/v1/nodes", {}).values())
            pods = list(store.objects.get("/api/v1/pods", {}).values())
        for node in nodes:
            labels = node["metadata"].get("labels") or {}
            if labels.get("nvidia.com/mig.config") == ROLLOUT_LAYOUT and "nvidia.com/mig.config.state" not in labels:
                body = json.loads(json.dumps(node))
                body["metadata"]["labels"]["nvidia.com/mig.config.state"] = "success"
                body["status"]["allocatable"] = {"cpu": "64", **{k: str(v) for k, v in ROLLOUT_RESOURCES.items()}}
                store.put("/api/v1/nodes", body)
        for pod in pods:
            if pod["metadata"].get("namespace") == NAMESPACE and (pod.get("status") or {}).get("phase") != "Succeeded":
                body = json.loads(json.dumps(pod))
                body["status"] = {"phase": "Succeeded"}
                store.put("/api/v1/pods", body)
        stop.wait(0.2)


def rollout_http(nodes: int, pool: int = 0) -> dict[str, Any]:
    """One MIG rollout of the 100-node pool ``pool`` of ``nodes`` GPU nodes (budget 10), over HTTP."""
    import threading

    with FakeApiServer(bookmark_every=60.0) as server:
        populate(server, nodes, 0, mig_layout=True, rollout_pool=pool)
        client = _client("rollout", server.url, ROOT)
        assert client.stdout is not None and client.stdin is not None
        stop = threading.Event()
        actors = threading.Thread(target=_mig_manager_and_kubelet, args=(server, stop), daemon=True)
        actors.start()
        json.loads(client.stdout.readline())
        started = time.monotonic()
        wanted = {f"gpu-{index:05d}" for index in range(pool * 100, pool * 100 + 100)}

        def finished() -> int:
            with server.store.lock:
                return sum(
                    1
                    for node in server.store.objects["/api/v1/nodes"].values()
                    if node["metadata"]["name"] in wanted
                    and (node["metadata"].get("labels") or {}).get("gpu-platform.io/node-agent.state") == "done"
                )

        while finished() < len(wanted) and time.monotonic() - started < 900:
            time.sleep(0.5)
        done, seconds = finished(), time.monotonic() - started
        requests, text, _ = _requests(server)
        sent, received = server.bytes_out, server.bytes_in
        client.stdin.write("\n")
        client.stdin.flush()
        result = json.loads(client.stdout.readline())
        client.wait()
        stop.set()
        return {
            "done": done,
            "seconds": seconds,
            "requests": requests,
            "by_kind": text,
            "mb_out": sent / 1e6,
            "mb_in": received / 1e6,
            **result,
        }


CACHED_CALLS = frozenset(
    {
        "list_nodes",
        "list_leases",
        "get_config_map",
        "list_daemon_sets",
        "list_controller_revisions",
        "list_namespaced_pods",
    }
)


def rollout(nodes: int) -> tuple[int, Counter[str]]:
    """A MIG rollout of a ``nodes``-node pool, budget 10, in the simulated world: the controller's calls that reach
    the API server (``CachedApi`` serves the others from its watches)."""
    from tests.node_agent.sim.world import World

    world = World(nodes=nodes, flow="mig", budget="10", operator_budget=10, pods_per_node=1)
    calls: Counter[str] = Counter()
    client = world.controller.api
    for name in dir(client):
        if name.startswith("_") or not callable(getattr(client, name)):
            continue
        real = getattr(client, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            if _name not in CACHED_CALLS:
                calls[_name] += 1
            return _real(*args)

        setattr(client, name, counted)
    world.settle(limit=24 * 3600.0)
    done = sum(1 for state in world.states().values() if state == "done")
    return done, calls


def _checkout() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="polling-design-"))
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(folder), POLLING_COMMIT], cwd=ROOT, check=True, capture_output=True
    )
    return folder


def main() -> int:
    ok = True
    checkout = _checkout()
    try:
        for nodes in SIZES:
            for other in (0, OTHER_PODS):
                watch = idle_watch(nodes, other)
                executor_hour = nodes * EXECUTOR_WATCHES_PER_HOUR
                per_node_10min = (watch["idle_requests"] + executor_hour) / 6 / nodes
                print(
                    f"idle watch: nodes={nodes} other_pods={other} controller_requests_hour={watch['idle_requests']} "
                    f"({watch['idle']}) controller_kb_out={watch['idle_kb_out']:.0f} kb_in={watch['idle_kb_in']:.0f} "
                    f"executor_requests_hour={executor_hour:.0f} requests_per_node_per_10min={per_node_10min:.3f} "
                    f"cpu_s={watch['startup_cpu_s'] + watch['idle_cpu_s']:.2f} (start-up {watch['startup_cpu_s']:.2f}) "
                    f"peak_rss_mb={watch['peak_rss_mb']:.0f}"
                )
                print(
                    f"  start-up: requests={watch['startup_requests']} ({watch['startup']}) mb={watch['startup_mb']:.1f}; "
                    f"one executor: {watch['executor_startup']}"
                )
                poll = idle_poll(nodes, other, checkout)
                hour = 360
                print(
                    f"idle poll (commit {POLLING_COMMIT}): nodes={nodes} other_pods={other} "
                    f"controller_requests_hour={poll['pass_requests'] * hour:.0f}x ({poll['per_pass']} in {POLL_PASSES} passes) "
                    f"controller_mb_out_hour={poll['pass_mb'] * hour:.0f}x "
                    f"executor_requests_hour={nodes * EXECUTOR_POLLS_PER_HOUR:.0f} "
                    f"requests_per_node_per_10min={(poll['pass_requests'] * hour + nodes * EXECUTOR_POLLS_PER_HOUR) / 6 / nodes:.1f} "
                    f"cpu_s_hour={sum(poll['pass_cpu_s']) / POLL_PASSES * hour:.0f}x peak_rss_mb={poll['peak_rss_mb']:.0f}"
                )
                ok = ok and per_node_10min <= 1.0 and watch["started"] and watch["idle_pod_lists"] == 0
                if nodes == max(SIZES):
                    ok = ok and watch["peak_rss_mb"] < 300
            seconds = react(nodes)
            print(f"react: nodes={nodes} settings change -> first node write {seconds:.2f} s")
            ok = ok and seconds <= 2.0
        for nodes in SIZES:
            run = rollout_http(nodes)
            print(
                f"rollout over HTTP: nodes={nodes} pool=100 budget=10 done={run['done']} in {run['seconds']:.0f} s "
                f"requests={run['requests']} ({run['by_kind']}) mb_out={run['mb_out']:.1f} mb_in={run['mb_in']:.1f} "
                f"controller_cpu_s={run['cpu_s']:.1f} peak_rss_mb={run['peak_rss_mb']:.0f}"
            )
            ok = ok and run["done"] == 100
        for pool in (50, 100):
            done, calls = rollout(pool)
            total = sum(calls.values())
            print(
                f"rollout: pool={pool} budget=10 done={done} controller_api_requests={total} "
                f"per_node={total / pool:.1f} ({' '.join(f'{k}={v}' for k, v in sorted(calls.items()))})"
            )
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(checkout)], cwd=ROOT, capture_output=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
