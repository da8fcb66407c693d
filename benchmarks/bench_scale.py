"""Benchmark: registration at fleet scale against the SDK's own floor.

For bare-metal stacks of 3, 30, 150, 400 and 1,000 nodes (``benchmarks.fleet``: prod's three kinds of
node repeated) it runs the real program under the preview's mocks, each in a fresh interpreter, and
prints per fleet: resources registered, CPU seconds of the program run and the garbage collector's
share of them, peak memory, and CPU per resource against the **floor**: the same number of plain
resources (ConfigMaps, no dependencies) registered under the same mocks. Imports are excluded from both:
each child first runs a small instance of its measurement (a 3-node fleet, 10 ConfigMaps), which loads
the SDK's lazy API groups, the solver and the program's modules, then times the real one. Without that
the first-use imports (about 2 CPU-s for the program: ``pulumi_kubernetes`` API groups, the MIG solver,
our own modules) would be charged to the program's registrations and not to the floor's. Targets (issue:
linear at fleet scale): CPU per resource flat within 1.25x from 150 to 1,000 nodes, and within 1.5x of
the floor.

``python -m benchmarks.bench_scale [NODES ...]`` (default: every size); ``--one program|floor N`` is the
child process of one measurement.
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
import time
from typing import Any

from benchmarks.fleet import fleet_overrides
from components.stack.garbage_collection import collect_fully_rarely

SIZES = (3, 30, 150, 400, 1000)
FLAT_TARGET = 1.25  #: CPU per resource at 1,000 nodes over that at 150
FLOOR_TARGET = 1.5  #: CPU per resource over the floor's
WARM_UP_NODES = 3  #: the program's untimed first run
WARM_UP_RESOURCES = 10  #: the floor's untimed first run
FLOOR_KINDS = ("configmap", "command", "job")  #: the floor, then the program's two most numerous kinds
KIND_SAMPLE = 600  #: resources per kind measured


def _peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


class CollectorClock:
    """CPU seconds the garbage collector spends while installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, _: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started

    def __enter__(self) -> CollectorClock:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self)


def measure_program(nodes: int) -> dict[str, Any]:
    """The real program on a fleet of ``nodes`` hosts (in this process)."""
    from preview.run.runner import run_program

    overrides = fleet_overrides(nodes)
    with CollectorClock() as collector:
        start = time.process_time()
        run = run_program("prod", overrides=overrides)
        seconds = time.process_time() - start
    if run.config_error is not None:
        raise SystemExit(f"the {nodes}-node fleet is refused: {run.config_error}")
    return {"resources": len(run.registrations), "cpu": seconds, "gc": collector.seconds, "peak_mb": _peak_mb()}


def measure_floor(count: int, kind: str = "configmap") -> dict[str, Any]:
    """``count`` plain resources of one kind, no dependencies, registered under the preview's mocks (in this process).

    ``configmap`` is the floor the targets name. The other kinds are the program's own, built as the
    program builds them but without options (no parent, dependency, alias or timeout): ``command`` a
    host-preparation step (its real script, one shared secret connection), ``job`` a smoke-test Job (a
    pod spec with a node selector, a toleration, an init and a test container). What they cost over a
    ConfigMap is the SDK's price of those kinds, which no program that declares them avoids.
    """
    import pulumi
    import pulumi_command as command
    import pulumi_kubernetes as k8s

    from components.bare_metal.host_prep_steps import command_text
    from components.catalog.gpu_operator_chart import DEFAULT_DRIVER_VERSION
    from components.catalog.nvidia_driver import driver_check_script
    from components.smoke_test.config import DEFAULT_IMAGE
    from components.stack.config import PROJECT
    from preview.run.mocks import PlatformMocks, mocked_engine

    script = command_text("nouveau")

    def configmap(index: int, opts: pulumi.ResourceOptions, _: Any) -> None:
        k8s.core.v1.ConfigMap(
            f"plain-{index}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"plain-{index}", namespace="floor"),
            data={"index": str(index)},
            opts=opts,
        )

    def step(index: int, _: pulumi.ResourceOptions, connection: Any) -> None:
        command.remote.Command(
            f"step-{index}",
            connection=connection,
            create=script,
            triggers=[str(index)],
            logging=command.remote.Logging.STDOUT_AND_STDERR,
        )

    def job(index: int, opts: pulumi.ResourceOptions, _: Any) -> None:
        gpu = {"nvidia.com/gpu": "1"}
        container = k8s.core.v1.ContainerArgs(
            name="vectoradd",
            image=DEFAULT_IMAGE,
            resources=k8s.core.v1.ResourceRequirementsArgs(limits=gpu),
            security_context=k8s.core.v1.SecurityContextArgs(allow_privilege_escalation=False),
        )
        check = k8s.core.v1.ContainerArgs(
            name="driver-version",
            image=DEFAULT_IMAGE,
            command=["sh", "-c", driver_check_script(DEFAULT_DRIVER_VERSION)],
            env=[k8s.core.v1.EnvVarArgs(name="NVIDIA_DRIVER_CAPABILITIES", value="compute,utility")],
            resources=k8s.core.v1.ResourceRequirementsArgs(limits=gpu),
        )
        k8s.batch.v1.Job(
            f"job-{index}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"job-{index}", namespace="floor", labels={"pool": "floor"}),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=2,
                active_deadline_seconds=600,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    spec=k8s.core.v1.PodSpecArgs(
                        restart_policy="Never",
                        node_selector={"kubernetes.io/hostname": f"node-{index}"},
                        tolerations=[k8s.core.v1.TolerationArgs(key="nvidia.com/gpu", operator="Exists")],
                        init_containers=[check],
                        containers=[container],
                    )
                ),
            ),
            opts=opts,
        )

    build = {"configmap": configmap, "command": step, "job": job}[kind]

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        provider = k8s.Provider("floor", kubeconfig="{}")
        opts = pulumi.ResourceOptions(provider=provider)
        connection = pulumi.Output.secret(
            command.remote.ConnectionArgs(host="node", user="root", port=22, private_key="key")
        )
        for index in range(count - 1):
            build(index, opts, connection)
        return pulumi.Output.from_input(count)

    with mocked_engine(PlatformMocks(), project=PROJECT, stack="floor") as monitor, CollectorClock() as collector:
        start = time.process_time()
        program()
        seconds = time.process_time() - start
    return {"resources": len(monitor.registrations), "cpu": seconds, "gc": collector.seconds, "peak_mb": _peak_mb()}


def measure_warm(kind: str, size: int) -> dict[str, Any]:
    """One measurement after a small one of the same kind, so that no import is timed.

    Both run at the collector pace the program sets for itself (``__main__.py``), so that the floor
    is the SDK's price under the same process settings and the ratio compares registrations only.
    """
    collect_fully_rarely()
    if kind == "program":
        measure_program(WARM_UP_NODES)
        return measure_program(size)
    floor_kind = kind.removeprefix("floor-") if kind.startswith("floor-") else "configmap"
    measure_floor(WARM_UP_RESOURCES, floor_kind)
    return measure_floor(size, floor_kind)


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
            f"gc_s={program['gc']:.1f} "
            f"peak_mb={program['peak_mb']} cpu_ms_per_resource={per_resource[nodes] * 1000:.2f} "
            f"floor_ms_per_resource={floor_per_resource * 1000:.2f} vs_floor={ratios[nodes]:.2f}x",
            flush=True,
        )
    if 150 in per_resource and 1000 in per_resource:
        flat = per_resource[1000] / per_resource[150]
        verdict = "ok" if flat <= FLAT_TARGET else "OVER TARGET"
        print(f"scale: cpu per resource 1000 vs 150 nodes = {flat:.2f}x (target <= {FLAT_TARGET}x) {verdict}")
    kinds = {kind: _child(f"floor-{kind}", KIND_SAMPLE) for kind in FLOOR_KINDS}
    per_kind = {kind: result["cpu"] / result["resources"] for kind, result in kinds.items()}
    print(
        "scale: the program's own kinds registered plainly, per resource (the SDK's price of the kind): "
        + ", ".join(
            f"{kind} {seconds * 1000:.2f} ms = {seconds / per_kind['configmap']:.2f}x"
            for kind, seconds in per_kind.items()
        ),
        flush=True,
    )
    worst = max(ratios.values())
    verdict = "ok" if worst <= FLOOR_TARGET else "OVER TARGET"
    print(f"scale: worst cpu per resource vs the SDK floor = {worst:.2f}x (target <= {FLOOR_TARGET}x) {verdict}")


if __name__ == "__main__":
    main(sys.argv[1:])
