"""Benchmark: the offline preview of each stack, warm and cold, against the import floor of its kind.

Targets (issue: a preview in seconds), in CPU seconds (the process and its children: helm, kustomize):
- **warm**: a preview whose inputs did not change (read from the result cache) costs at most 2x the
  import floor of its stack kind;
- **cold**: a preview with both caches off costs at most the render time (helm and kustomize, run alone
  on the same stack) plus 2x that floor. What the target bounds, the cost beyond the renders, is measured
  directly: the preview with its renders read from their cache and the whole-preview cache off
  (``GPU_PLATFORM_RESULT_CACHE=off``: the program, the gate and the files run again). The difference of the
  cold preview and the renders alone is printed too, but two medians of about 16 CPU-s that vary by a
  second from run to run cannot resolve a difference of one.

The floors are the SDKs no program of the kind can avoid: Yandex (dev) ``pulumi``, ``pulumi_kubernetes``
and the Yandex SDK; bare metal (prod) ``pulumi``, ``pulumi_kubernetes`` and ``pulumi_command``. Each
figure is the median of fresh interpreter runs (imports are cached within one process); CPU rather than
wall time, so a loaded machine gives comparable ratios.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from preview.run.result_cache import RESULT_CACHE_ENV

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3
FLOOR_RUNS = 7  #: the floors are a few tenths of a second each, and vary the most from run to run
WARM_TARGET = 2.0

FLOORS = {
    "yandex": "import pulumi, pulumi_kubernetes, pulumi_yandex_marketmaker",
    "bare-metal": "import pulumi, pulumi_kubernetes, pulumi_command",
}
# The renders of a stack alone: the program runs untimed, then only render_program is measured.
RENDERS = """
import resource, sys, time
from preview.run.runner import run_program
from preview.render.rendered import render_program
run = run_program(sys.argv[1])
before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time()
render_program(run)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.process_time() - start + after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
"""
# The SDK modules a stack's program loads (``pulumi_kubernetes`` loads its API groups lazily: a program that
# declares a Namespace loads ``core.v1``, thousands of input classes no program of the kind avoids). Only
# modules really executed count: an API group's package registers every version lazily (a placeholder in
# ``sys.modules`` that is loaded on first attribute access), and importing those placeholders by name would
# load versions the program never touches.
SDK_MODULES = """
import sys, types
from preview.run.runner import run_program
run_program(sys.argv[1])
prefixes = ("pulumi_kubernetes.", "pulumi_command.", "pulumi_yandex_marketmaker", "pulumi_random")
loaded = (m for m, module in list(sys.modules.items()) if type(module) is types.ModuleType)
print(" ".join(sorted(m for m in loaded if m.startswith(prefixes) and not m.split(".")[-1].startswith("_"))))
"""


def _sdk_floor(stack: str) -> tuple[float, int]:
    """CPU seconds of importing, alone, every SDK module the stack's program loads; and how many there are."""
    done = subprocess.run(
        [sys.executable, "-c", SDK_MODULES, stack], cwd=ROOT, check=True, capture_output=True, text=True
    )
    modules = done.stdout.split()
    return _median([sys.executable, "-c", "import pulumi, " + ", ".join(modules)]), len(modules)


def _cpu(command: list[str], env: dict[str, str] | None = None) -> float:
    """CPU seconds of one run of ``command`` and everything it started."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _median(command: list[str], env: dict[str, str] | None = None, runs: int = RUNS) -> float:
    return statistics.median(_cpu(command, env) for _ in range(runs))


def _render_seconds(stack: str) -> float:
    env = {**os.environ, "GPU_PLATFORM_RENDER_CACHE": "off"}
    runs = []
    for _ in range(RUNS):
        done = subprocess.run(
            [sys.executable, "-c", RENDERS, stack], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        )
        runs.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(runs)


def _stack_kind(stack: str) -> str:
    import yaml

    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    return str(document["config"]["gpu-platform:cluster"]["kind"])


def main() -> None:
    """Print each floor, then each stack's warm and cold preview against its targets."""
    from preview.run.stack_file import available_stacks

    floors = {kind: _median([sys.executable, "-c", code], runs=FLOOR_RUNS) for kind, code in FLOORS.items()}
    for kind, seconds in floors.items():
        print(
            f"import floor {kind} ({FLOORS[kind].removeprefix('import ')}): {seconds:.2f} CPU-s "
            f"(median of {FLOOR_RUNS})"
        )
    out = tempfile.mkdtemp(prefix="bench-preview-")
    for stack in available_stacks(ROOT):
        floor = floors[_stack_kind(stack)]
        preview = [sys.executable, "-m", "preview", stack, "--quiet", "--no-base", "--out", out]
        cold = _median(preview, {**os.environ, "GPU_PLATFORM_RENDER_CACHE": "off"})
        _cpu(preview)  # fills the caches
        warm = _median(preview)
        beyond = _median(preview, {**os.environ, RESULT_CACHE_ENV: "off"})
        render = _render_seconds(stack)
        warm_verdict = "ok" if warm <= WARM_TARGET * floor else "OVER TARGET"
        cold_verdict = "ok" if beyond <= WARM_TARGET * floor else "OVER TARGET"
        print(
            f"preview {stack} warm (inputs unchanged): {warm:.2f} CPU-s = {warm / floor:.2f}x its floor "
            f"(target <= {WARM_TARGET:.1f}x) {warm_verdict}"
        )
        print(
            f"preview {stack} cold (caches off): {cold:.2f} CPU-s; renders alone {render:.2f} CPU-s; "
            f"beyond the renders (renders cached, the rest run): {beyond:.2f} CPU-s = {beyond / floor:.2f}x its "
            f"floor (target <= {WARM_TARGET:.1f}x) {cold_verdict}"
        )
        sdk, count = _sdk_floor(stack)
        print(
            f"  of which the {count} SDK modules {stack}'s program loads cost {sdk:.2f} CPU-s imported alone; "
            f"beyond the renders and those = {beyond - sdk:.2f} CPU-s (our code, the mocks, the gate, the files)"
        )


if __name__ == "__main__":
    main()
