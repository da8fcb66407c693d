"""Benchmark: CrossGuard policy evaluation time per 1,000 resources (target: under 50 ms).

The dev stack's custom registrations are replicated (with distinct names and URNs) until there are
1,000, then the offline gate runs every policy over them exactly as a preview does: resource
policies per resource, stack policies over the whole set, props behind the analyzer's proxy. The
figure is the median of several runs, measured after one warm-up run.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import replace

from preview.gate.config import load_policy_config
from preview.gate.evaluate import evaluate
from preview.run.registration import Registration
from preview.run.runner import run_program

RESOURCES = 1_000
RUNS = 15
TARGET_MS = 50.0


def replicated(registrations: list[Registration], count: int) -> list[Registration]:
    """``count`` custom registrations cycling through ``registrations``, each with its own name and URN."""
    custom = [r for r in registrations if r.custom]
    out = []
    for index in range(count):
        source = custom[index % len(custom)]
        copy = index // len(custom)
        out.append(replace(source, name=f"{source.name}-{copy}", urn=f"{source.urn}-{copy}"))
    return out


def main() -> None:
    """Print the median milliseconds per 1,000 resources against the target."""
    run = run_program("dev")
    config = load_policy_config("dev")
    resources = replicated(run.registrations, RESOURCES)
    evaluate(resources, config, stack="dev")  # warm-up: imports, caches
    times = []
    for _ in range(RUNS):
        gc.collect()
        start = time.perf_counter()
        result = evaluate(resources, config, stack="dev")
        times.append((time.perf_counter() - start) * 1000)
    median = statistics.median(times)
    custom = sum(1 for r in run.registrations if r.custom)
    verdict = "ok" if median < TARGET_MS else "OVER TARGET"
    print(
        f"policy evaluation: {median:.1f} ms per {RESOURCES:,} resources ({len(result.levels)} policies; "
        f"dev's {custom} custom resources replicated; median of {RUNS}; target < {TARGET_MS:.0f} ms) {verdict}"
    )


if __name__ == "__main__":
    main()
