"""Benchmark: the offline preview of each stack against the cost of importing the SDKs it must load.

Targets (issue: layered packages): the preview of ``dev`` (Yandex) costs at most 1.5x the import
floor of ``pulumi + pulumi_kubernetes + the Yandex SDK``; the preview of ``prod`` (bare metal) at
most 1.5x the floor of ``pulumi + pulumi_kubernetes``: a bare-metal stack never loads the Yandex
SDK. Each figure is the median of fresh interpreter runs, since imports are cached within one
process.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
TARGET = 1.5

# The import floor of each stack kind: the SDKs no program for it can avoid.
FLOORS = {
    "yandex": "import pulumi, pulumi_kubernetes, pulumi_yandex_marketmaker",
    "bare-metal": "import pulumi, pulumi_kubernetes",
}
FLOOR_NAMES = {"yandex": "pulumi + pulumi_kubernetes + the Yandex SDK", "bare-metal": "pulumi + pulumi_kubernetes"}
# For context: what the preview must load beyond that floor, whatever our code does: the Kubernetes
# kinds the stacks declare (pulumi_kubernetes loads each API group on first use), pulumi-command,
# pulumi-random and the policy SDK of the gate.
_KINDS = (
    "import pulumi_kubernetes as k, pulumi_command, pulumi_random, pulumi_policy; k.core.v1.Namespace; "
    "k.batch.v1.Job; k.apps.v1.DaemonSet; k.rbac.v1.Role; k.networking.v1.Ingress; k.helm.v3.Release; "
    "k.kustomize.v2.Directory"
)
DECLARED = {kind: f"{code}; {_KINDS}" for kind, code in FLOORS.items()}


def _median_seconds(code: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _stack_kind(stack: str) -> str:
    import yaml

    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    return str(document["config"]["gpu-platform:cluster"]["kind"])


def main() -> None:
    """Print each floor, then each stack's preview time and its ratio to its floor."""
    from preview.stack_file import available_stacks

    floors = {kind: _median_seconds(code) for kind, code in FLOORS.items()}
    declared = {kind: _median_seconds(code) for kind, code in DECLARED.items()}
    for kind, seconds in floors.items():
        print(
            f"import floor {kind} ({FLOOR_NAMES[kind]}): {seconds:.2f} s (median of {RUNS}); with the kinds, "
            f"command, random and policy SDKs every preview loads: {declared[kind]:.2f} s"
        )
    for stack in available_stacks(ROOT):
        kind = _stack_kind(stack)
        code = (
            "import sys, tempfile; from preview.__main__ import main; "
            f"sys.exit(main([{stack!r}, '--quiet', '--out', tempfile.mkdtemp()]))"
        )
        seconds = _median_seconds(code)
        ratio = seconds / floors[kind]
        verdict = "ok" if ratio <= TARGET else "OVER TARGET"
        print(
            f"preview {stack} ({kind}; program, files, policy gate): {seconds:.2f} s = {ratio:.2f}x "
            f"its floor (target <= {TARGET:.2f}x) {verdict}; {seconds / declared[kind]:.2f}x the SDKs it must load"
        )


if __name__ == "__main__":
    main()
