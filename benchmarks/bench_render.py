"""Benchmark: what rendering adds to every ``make preview``, per stack.

The policy gate renders each registered Helm release (``helm template`` of the pinned chart) and
each kustomize Directory (``kubectl kustomize`` over the kubeflow/manifests tree) once per preview,
all at once (``preview/render/rendered.py``). This prints, per stack: the program under mocks alone (what the
preview cost before rendering), all renders together (wall time, and the CPU time of the tools),
each render on its own, and the policies over the rendered objects. Nothing is cached between
runs, so every figure is what each preview pays. The Kubeflow checkout is the pinned tree in
``.upstream/`` (``make upstream``), whatever the stack file names, so the Directories render the real
thing. The totals are the median of several runs (after a warm-up run); each render alone is one run.
On a shared machine the wall times follow the load; the tools' CPU time does not.
"""

from __future__ import annotations

import copy
import functools
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import yaml

from components.catalog.upstream import KUBEFLOW_MANIFESTS
from preview.gate.config import load_policy_config
from preview.gate.evaluate import evaluate
from preview.render.rendered import render_registrations
from preview.run.runner import REPO_ROOT, run_program
from preview.run.stack_file import available_stacks

RUNS = 3
KUBEFLOW_KEY = "gpu-platform:kubeflow"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _median(action: Callable[[], Any], runs: int = RUNS, warm_up: bool = False) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of child processes) of ``runs`` runs of ``action``."""
    if warm_up:
        action()  # imports, the SDK's caches
    walls, cpus = [], []
    for _ in range(runs):
        cpu, start = _children_cpu(), time.perf_counter()
        action()
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def _overrides(stack: str) -> dict[str, Any]:
    config = yaml.safe_load((REPO_ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    if KUBEFLOW_KEY not in config:
        return {}
    kubeflow = copy.deepcopy(config[KUBEFLOW_KEY])
    kubeflow["manifestsPath"] = KUBEFLOW_MANIFESTS.path
    return {KUBEFLOW_KEY: kubeflow}


def bench_stack(stack: str) -> None:
    """Print the figures of one stack."""
    overrides = _overrides(stack)
    program, _ = _median(lambda: run_program(stack, overrides=overrides), warm_up=True)
    run = run_program(stack, overrides=overrides)
    rendered = render_registrations(run.registrations, run.root)  # also warms the file cache
    wall, cpu = _median(lambda: render_registrations(run.registrations, run.root))
    config = load_policy_config(stack)
    start = time.perf_counter()
    evaluate(run.registrations, config, stack=stack, rendered=rendered)
    with_rendered = time.perf_counter() - start
    start = time.perf_counter()
    evaluate(run.registrations, config, stack=stack)
    registered_only = time.perf_counter() - start
    print(
        f"{stack}: program under mocks {program:.2f} s (in-process, warm); renders {wall:.2f} s wall, {cpu:.2f} s tool CPU "
        f"({len(rendered.renders)} renders at once, {len(rendered.objects)} objects; median of {RUNS}); "
        f"policies {registered_only * 1000:.0f} ms registered only, {with_rendered * 1000:.0f} ms with the rendered "
        "objects"
    )
    for render in rendered.renders:
        alone, alone_cpu = _median(functools.partial(render_registrations, [render.origin], run.root), runs=1)
        outcome = f"{len(render.objects)} objects" if render.problem is None else "fails (see the gate's finding)"
        print(f"  {render.origin_label}: {alone:.2f} s alone ({alone_cpu:.2f} s CPU, one run), {outcome}")


def main() -> None:
    """Print every stack's figures."""
    for stack in available_stacks(REPO_ROOT):
        bench_stack(stack)


if __name__ == "__main__":
    main()
