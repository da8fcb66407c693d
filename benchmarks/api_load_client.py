"""The controller side of ``bench_api_load``, run in its own process so that its CPU time and peak memory are its own.

``python -m benchmarks.api_load_client <mode> <url> [passes]`` prints one JSON object:

- ``watch``: today's controller (``CachedApi`` over ``Kube``) starts (its first pass lists and starts its watches),
  then lives one idle hour on the schedule of ``controller/main.py`` with a virtual clock: a leader renewal every
  ``RENEW_SECONDS``, a full pass every ``RESYNC_SECONDS`` (nothing changes, so nothing wakes it);
- ``poll``: the polling design (the controller as it was before the watches; the caller puts that checkout first
  on ``PYTHONPATH``) makes ``passes`` of its passes, one every 10 s of virtual time;
- ``react``: today's controller on its real loop; the caller changes the settings ConfigMap and reads the time of
  the first node write from the server.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

NAMESPACE = "gpu-platform-system"
IDENTITY = "controller-bench"


def _usage() -> dict[str, float]:
    """CPU seconds and peak RSS of this process. The peak is ``VmHWM`` (of this process's own memory since its
    exec): ``ru_maxrss`` would also count the benchmark process it was forked from (Linux keeps the larger)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_kb = 0.0
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                peak_kb = float(line.split()[1])
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": peak_kb / 1024}


def _watch(url: str) -> dict[str, Any]:
    from components.node_agent.agent.controller import main as controller_main
    from components.node_agent.agent.controller.reconcile import Controller
    from components.node_agent.agent.kube import Kube
    from components.node_agent.agent.watch import CachedApi

    clock = [1_800_000_000.0]
    api = CachedApi(Kube(url, "token", timeout=120.0))
    controller = Controller(api, NAMESPACE, IDENTITY, lambda: clock[0])
    started = time.process_time()
    ok = controller.reconcile()
    startup_cpu = time.process_time() - started
    print(json.dumps({"phase": "started", "ok": ok}), flush=True)
    sys.stdin.readline()  # the benchmark resets its counters, then lets the idle hour begin
    next_full = clock[0] + controller_main.RESYNC_SECONDS
    passes = renewals = 0
    idle_started = time.process_time()
    end = clock[0] + 3600.0
    while clock[0] < end:
        clock[0] += controller_main.RENEW_SECONDS
        if clock[0] >= next_full:
            controller.reconcile()
            passes += 1
            next_full = clock[0] + controller_main.RESYNC_SECONDS
        else:
            controller.renew()
            renewals += 1
    idle_cpu = time.process_time() - idle_started
    api.close()
    return {
        "phase": "done",
        "startup_cpu_s": startup_cpu,
        "idle_cpu_s": idle_cpu,
        "passes": passes,
        "renewals": renewals,
        "log": controller.log[-3:],
        **_usage(),
    }


def _poll(url: str, passes: int) -> dict[str, Any]:
    from components.node_agent.agent.controller.reconcile import Controller
    from components.node_agent.agent.kube import Kube

    clock = [1_800_000_000.0]
    controller = Controller(Kube(url, "token", timeout=600.0), NAMESPACE, IDENTITY, lambda: clock[0])
    cpu = []
    for _ in range(passes):
        started = time.process_time()
        controller.reconcile()
        cpu.append(time.process_time() - started)
        clock[0] += 10.0
    return {"phase": "done", "pass_cpu_s": cpu, "log": controller.log[-3:], **_usage()}


def _react(url: str) -> dict[str, Any]:
    import threading

    from components.node_agent.agent.controller.reconcile import Controller
    from components.node_agent.agent.kube import Kube
    from components.node_agent.agent.watch import CachedApi

    api = CachedApi(Kube(url, "token", timeout=120.0))
    controller = Controller(api, NAMESPACE, IDENTITY, time.time)
    controller.reconcile()
    print(json.dumps({"phase": "started"}), flush=True)
    stop = threading.Event()

    def loop() -> None:  # controller/main.py's loop, without its signal handling
        while not stop.is_set():
            if api.changed.wait(10.0) and not stop.is_set():
                time.sleep(0.5)
                api.changed.clear()
                controller.reconcile()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    sys.stdin.readline()  # the benchmark has changed the settings and timed the first write
    stop.set()
    api.close()
    return {"phase": "done", **_usage()}


def _rollout(url: str) -> dict[str, Any]:
    """Today's controller on the schedule of ``controller/main.py`` (woken by its watches, every 10 s while busy),
    until the benchmark says the rollout is over; its CPU and peak memory then."""
    import threading

    from components.node_agent.agent.controller import main as controller_main
    from components.node_agent.agent.controller.reconcile import Controller
    from components.node_agent.agent.kube import Kube
    from components.node_agent.agent.watch import CachedApi

    api = CachedApi(Kube(url, "token", timeout=120.0))
    controller = Controller(api, NAMESPACE, IDENTITY, time.time)
    stop = threading.Event()

    def loop() -> None:
        next_full = 0.0
        while not stop.is_set():
            woken = api.changed.is_set()
            api.changed.clear()
            if woken or controller.busy or time.monotonic() >= next_full:
                controller.reconcile()
                next_full = time.monotonic() + controller_main.RESYNC_SECONDS
            else:
                controller.renew()
            wait = controller_main.ACTIVE_SECONDS if controller.busy else controller_main.RENEW_SECONDS
            if api.changed.wait(wait) and not stop.is_set():
                stop.wait(controller_main.SETTLE_SECONDS)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    print(json.dumps({"phase": "started"}), flush=True)
    sys.stdin.readline()
    stop.set()
    thread.join(timeout=30)
    api.close()
    return {"phase": "done", **_usage()}


def main() -> int:
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "watch":
        result = _watch(url)
    elif mode == "poll":
        result = _poll(url, int(sys.argv[3]))
    elif mode == "rollout":
        result = _rollout(url)
    else:
        result = _react(url)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
