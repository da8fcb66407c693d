"""The driver upgrade plan a ``pulumi up`` of this preview would run: which pools change driver, in which order.

Read from the ``drivers`` stack output (components.stack.outputs), compared with the base preview of the
same stack (its ``outputs.json``; ``preview.diff.baseline``: HEAD's by default, never leftovers in ``build/``):
a pool whose driver version changed is marked, the canary step first, each pool with the waves its
upgrade policy takes. Without a base preview every pool is shown as it will be installed. Stacks whose hosts own the driver have no plan (nothing is printed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _previous(previous_outputs: Path | None) -> Mapping[str, Any] | None:
    """The ``drivers`` output of the base preview; None when there is none (or it is unreadable)."""
    if previous_outputs is None:
        return None
    try:
        drivers = json.loads(previous_outputs.read_text())["drivers"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return drivers if isinstance(drivers, Mapping) and isinstance(drivers.get("pools"), Mapping) else None


def _previous_versions(previous: Mapping[str, Any] | None) -> dict[str, str] | None:
    """Pool -> driver version of the previous preview."""
    if previous is None:
        return None
    return {n: e.get("driverVersion", "") for n, e in previous["pools"].items() if isinstance(e, Mapping)}


#: Printed when a change leaves NVIDIADriver resources for the ClusterPolicy driver (docs/operations.md).
BACK_TO_CLUSTER_POLICY = (
    "WARNING: this change moves the driver from NVIDIADriver resources back to the ClusterPolicy. pulumi up updates "
    "the release first and deletes the NVIDIADriver resources last, and the operator does not remove a disabled "
    "NVIDIADriver's DaemonSet, so both drivers would be scheduled on the same nodes in between. Do it in two steps "
    "(docs/operations.md, Per-pool drivers and canary upgrades: Back to one driver)."
)


def _pool_line(name: str, entry: Mapping[str, Any], before: dict[str, str] | None, budgets: Mapping[str, Any]) -> str:
    version = entry["driverVersion"]
    if before is None:
        change = "installs"
    elif name not in before:
        change = "new pool"
    elif before[name] != version:
        change = f"CHANGES from {before[name]}"
    else:
        change = "unchanged"
    waves = entry["waves"]
    pace = "cannot progress (maxUnavailable allows no node)" if waves is None else f"{waves} wave(s)"
    resource = entry["driverResource"] or "ClusterPolicy"
    # Waves are counted per upgrade budget, as the operator counts them: per NVIDIADriver, over all its pools.
    budget = budgets.get(entry.get("budget") or "", {})
    shared = f", one budget with {budget['nodes']} node(s) of {resource}" if len(budget.get("pools", [])) > 1 else ""
    return (
        f"    {name}: driver {version} ({change}), runs CUDA up to {entry['maxCuda']} (needs {entry['cuda']}), "
        f"{resource}; {entry['nodes']} node(s){shared}, {pace} at maxParallelUpgrades "
        f"{entry['maxParallelUpgrades']}, maxUnavailable {entry['maxUnavailable']}"
    )


def driver_upgrade_plan(previous_outputs: Path | None, outputs: Mapping[str, Any]) -> list[str]:
    """The plan as lines to print (empty when the operator installs no driver)."""
    drivers = outputs.get("drivers")
    if not isinstance(drivers, Mapping) or drivers.get("mode") == "host" or not drivers.get("pools"):
        return []
    previous = _previous(previous_outputs)
    before = _previous_versions(previous)
    pools = drivers["pools"]
    lines = []
    if previous is not None and previous.get("mode") == "nvidiaDriver" and drivers.get("mode") == "clusterPolicy":
        lines.append(BACK_TO_CLUSTER_POLICY)
    lines += [
        f"Driver upgrade plan ({drivers['mode']}; a step starts once the previous step's proof and smoke Jobs pass):"
    ]
    canaries = any(entry["canary"] for entry in pools.values())
    for step, names in enumerate(drivers["order"], start=1):
        label = "canary" if canaries and step == 1 else "rest" if canaries else "all pools"
        lines.append(f"  step {step} ({label}):")
        lines.extend(_pool_line(name, pools[name], before, drivers.get("budgets") or {}) for name in names)
    return lines
