"""Benchmark: registration at fleet scale against the SDK's own floor.

For bare-metal stacks of 3, 30, 150, 400 and 1,000 nodes (``benchmarks.fleet``: prod's three kinds of
node repeated) it runs the real program under the preview's mocks, each in a fresh interpreter, and
prints per fleet: resources registered, CPU seconds of the program run, peak memory, and CPU per
resource against the **floor**: the same number of plain resources (ConfigMaps, no dependencies)
registered under the same mocks. Imports are excluded from both: each child first runs a small
instance of its measurement (a 3-node fleet, 10 ConfigMaps), which loads the SDK's lazy API groups,
the solver and the program's modules, then times the real one. Without that the first-use imports
(about 2 CPU-s for the program: ``pulumi_kubernetes`` API groups, scipy, our own modules) would be
charged to the program's registrations and not to the floor's. Targets (issue: linear at fleet scale): CPU per
resource flat within 1.25x from 150 to 1,000 nodes, and within 1.5x of the floor.

``python -m benchmarks.bench_scale [NODES ...]`` (default: every size); ``--one program|floor N`` is the
child process of one measurement.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from typing import Any

from benchmarks.fleet import fleet_overrides

SIZES = (3, 30, 150, 400, 1000)
FLAT_TARGET = 1.25  #: CPU per resource at 1,000 nodes over that at 150
FLOOR_TARGET = 1.5  #: CPU per resource over the floor's
WARM_UP_NODES = 3  #: the program's untimed first run
WARM_UP_RESOURCES = 10  #: the floor's untimed first run


def _peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def measure_program(nodes: int) -> dict[str, Any]:
    """The real program on a fleet of ``nodes`` hosts (in this process)."""
    from preview.run.runner import run_program

    overrides = fleet_overrides(nodes)
    start = time.process_time()
    run = run_program("prod", overrides=overrides)
    seconds = time.process_time() - start
    if run.config_error is not None:
        raise SystemExit(f"the {nodes}-node fleet is refused: {run.config_error}")
    return {"resources": len(run.registrations), "cpu": seconds, "peak_mb": _peak_mb()}


def measure_floor(count: int) -> dict[str, Any]:
    """``count`` ConfigMaps with no dependencies, registered under the preview's mocks (in this process)."""
    import asyncio

    import pulumi
    import pulumi_kubernetes as k8s
    from pulumi.runtime import reset_options, set_mocks

    from components.stack.config import PROJECT
    from preview.run.mocks import PlatformMocks, RecordingMonitor

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    reset_options()
    mocks = PlatformMocks()
    monitor = RecordingMonitor(mocks)
    set_mocks(mocks, project=PROJECT, stack="floor", preview=True, monitor=monitor)

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        provider = k8s.Provider("floor", kubeconfig="{}")
        for index in range(count - 1):
            k8s.core.v1.ConfigMap(
                f"plain-{index}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"plain-{index}", namespace="floor"),
                data={"index": str(index)},
                opts=pulumi.ResourceOptions(provider=provider),
            )
        return pulumi.Output.from_input(count)

    start = time.process_time()
    program()
    seconds = time.process_time() - start
    return {"resources": len(monitor.registrations), "cpu": seconds, "peak_mb": _peak_mb()}


def measure_warm(kind: str, size: int) -> dict[str, Any]:
    """One measurement after a small one of the same kind, so that no import is timed."""
    if kind == "program":
        measure_program(WARM_UP_NODES)
        return measure_program(size)
    measure_floor(WARM_UP_RESOURCES)
    return measure_floor(size)


def _child(kind: str, size: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_scale", "--one", kind, str(size)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> None:
    """Print a scale line per fleet size, then the verdict on both targets."""
    if argv[:1] == ["--one"]:
        kind, size = argv[1], int(argv[2])
        print(json.dumps(measure_warm(kind, size)))
        return
    sizes = [int(a) for a in argv] or list(SIZES)
    per_resource: dict[int, float] = {}
    ratios: dict[int, float] = {}
    for nodes in sizes:
        program = _child("program", nodes)
        floor = _child("floor", program["resources"])
        per_resource[nodes] = program["cpu"] / program["resources"]
        floor_per_resource = floor["cpu"] / floor["resources"]
        ratios[nodes] = per_resource[nodes] / floor_per_resource
        print(
            f"scale: nodes={nodes} resources={program['resources']} cpu_s={program['cpu']:.1f} "
            f"peak_mb={program['peak_mb']} cpu_ms_per_resource={per_resource[nodes] * 1000:.2f} "
            f"floor_ms_per_resource={floor_per_resource * 1000:.2f} vs_floor={ratios[nodes]:.2f}x",
            flush=True,
        )
    if 150 in per_resource and 1000 in per_resource:
        flat = per_resource[1000] / per_resource[150]
        verdict = "ok" if flat <= FLAT_TARGET else "OVER TARGET"
        print(f"scale: cpu per resource 1000 vs 150 nodes = {flat:.2f}x (target <= {FLAT_TARGET}x) {verdict}")
    worst = max(ratios.values())
    verdict = "ok" if worst <= FLOOR_TARGET else "OVER TARGET"
    print(f"scale: worst cpu per resource vs the SDK floor = {worst:.2f}x (target <= {FLOOR_TARGET}x) {verdict}")


if __name__ == "__main__":
    main(sys.argv[1:])
