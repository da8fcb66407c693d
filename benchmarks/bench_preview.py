"""Benchmark: the offline preview of each stack against the cost of importing the SDKs alone.

Target: the preview of ``dev`` costs at most 1.5x the import floor (importing pulumi,
pulumi_kubernetes and the Yandex SDK). Each figure is the median of fresh interpreter runs, since
imports are cached within one process. A second floor, every SDK module the preview really loads
(the Kubernetes kinds it declares, pulumi-command, pulumi-random, pulumi-policy, pydantic), shows
how much of the time is our code.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5

_IMPORTS = "import pulumi, pulumi_kubernetes, pulumi_yandex_marketmaker"
# Every SDK module the program and the policy gate load (the cost no code of ours can avoid).
_ALL_SDK_IMPORTS = (
    "import pulumi, pulumi_yandex_marketmaker, pulumi_command, pulumi_random, pulumi_policy, pydantic, yaml; "
    "import pulumi_kubernetes as k; k.core.v1.Namespace; k.batch.v1.Job; k.apps.v1.DaemonSet; k.rbac.v1.Role; "
    "k.networking.v1.Ingress; k.helm.v3.Release; k.kustomize.v2.Directory; k.apiextensions.CustomResource"
)


def _median_seconds(code: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Print the import floor and each stack's preview time."""
    from preview.stack_file import available_stacks

    floor = _median_seconds(_IMPORTS)
    sdk_floor = _median_seconds(_ALL_SDK_IMPORTS)
    print(f"import floor (pulumi + pulumi_kubernetes + yandex SDK): {floor:.2f} s (median of {RUNS})")
    print(f"every SDK module the preview loads (k8s kinds, command, random, policy, pydantic): {sdk_floor:.2f} s")
    for stack in available_stacks(ROOT):
        code = (
            "import sys, tempfile; from preview.__main__ import main; "
            f"sys.exit(main([{stack!r}, '--quiet', '--out', tempfile.mkdtemp()]))"
        )
        seconds = _median_seconds(code)
        verdict = "ok" if seconds <= 1.5 * floor else "OVER TARGET"
        print(
            f"preview {stack} (program, files, 16 policies): {seconds:.2f} s = {seconds / floor:.2f}x the floor "
            f"(target <= 1.50x) {verdict}; {seconds / sdk_floor:.2f}x the full SDK import cost"
        )


if __name__ == "__main__":
    main()
