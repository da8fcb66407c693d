"""NVIDIADriver facts: upgrade waves, and the smoke Jobs' driver check run against real nvidia-smi output.

The check script runs in ``sh`` with a stand-in ``nvidia-smi`` on PATH that prints what a real H200
printed for the same query (tests/fixtures/nvidia-smi/query-gpu-driver-version.csv); on that machine the
script itself passed with its real driver and kept waiting on a different one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components.catalog.nvidia_driver import (
    DRIVER_VERSION_QUERY,
    driver_check_script,
    max_unavailable_nodes,
    upgrade_waves,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi" / "query-gpu-driver-version.csv"
REAL_DRIVER = FIXTURE.read_text().strip()


@pytest.mark.parametrize(
    ("nodes", "parallel", "unavailable", "waves"),
    [
        (3, 1, "25%", 3),  # one node at a time
        (10, 0, "25%", 4),  # no parallel limit: 25% of 10 rounds up to 3 per wave
        (10, 4, 2, 5),  # maxUnavailable bounds maxParallelUpgrades
        (8, 0, "100%", 1),
        (5, 2, "100%", 3),
        (0, 1, "25%", 0),
        (4, 1, "0%", None),  # nothing may be unavailable: it cannot progress
        (4, 1, 0, None),
    ],
)
def test_upgrade_waves(nodes: int, parallel: int, unavailable: str | int, waves: int | None) -> None:
    assert upgrade_waves(nodes, parallel, unavailable) == waves


def test_percentages_round_up() -> None:
    assert max_unavailable_nodes("25%", 1) == 1 and max_unavailable_nodes("10%", 11) == 2
    assert max_unavailable_nodes("3", 10) == 3


def _fake_smi(tmp_path: Path, lines: list[str]) -> dict[str, str]:
    """PATH with an ``nvidia-smi`` that answers the smoke check's query with ``lines``."""
    smi = tmp_path / "nvidia-smi"
    expected = DRIVER_VERSION_QUERY.split(" ", 1)[1]
    smi.write_text(
        "#!/bin/sh\n"
        f'[ "$*" = "{expected}" ] || {{ echo "unexpected query: $*" >&2; exit 9; }}\n'
        + "".join(f"echo '{line}'\n" for line in lines)
    )
    smi.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "NODE_NAME": "gpu-node-1"}


def _run(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str] | None:
    """The script's result, or None when it was still waiting after 3 s (it never passed)."""
    try:
        return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=3)
    except subprocess.TimeoutExpired:
        return None


def test_the_declared_driver_passes(tmp_path: Path) -> None:
    result = _run(driver_check_script(REAL_DRIVER), _fake_smi(tmp_path, [REAL_DRIVER]))
    assert result is not None and result.returncode == 0, result
    assert result.stdout == f"driver {REAL_DRIVER} as declared\n"


def test_every_gpu_must_report_it(tmp_path: Path) -> None:
    ok = _run(driver_check_script(REAL_DRIVER), _fake_smi(tmp_path, [REAL_DRIVER] * 8))
    assert ok is not None and ok.returncode == 0
    mixed = _run(driver_check_script(REAL_DRIVER), _fake_smi(tmp_path, [REAL_DRIVER, "580.95.05"]))
    assert mixed is None  # half upgraded: still waiting


def test_a_node_on_another_driver_never_passes(tmp_path: Path) -> None:
    env = _fake_smi(tmp_path, [REAL_DRIVER])
    process = subprocess.Popen(
        ["sh", "-c", driver_check_script("595.91.07")], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        first = process.stdout.readline() if process.stdout else ""
        assert process.poll() is None  # still waiting, not passed
    finally:
        process.kill()
        process.wait()
    assert first == f"node gpu-node-1 runs driver {REAL_DRIVER}, the stack declares 595.91.07; waiting\n"
