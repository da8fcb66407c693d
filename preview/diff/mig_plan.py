"""Layouts from demand in the preview: the plan per pool and GPU, what it changes, the file to record.

The program reads the recorded plan (``mig-plans/<stack>.yaml``, components/mig/recorded.py)
as the planner's stability input. The preview shows the new plan per node, names the GPUs it
re-partitions against the recorded one, and writes the plan as ``mig-plan.yaml`` next to the other
preview files; when it differs from the recorded file, it says how to record it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.catalog.mig import count_text
from components.mig.recorded import record_file_name, render_recorded_plan
from preview.run.runner import ProgramRun

PLAN_FILE = "mig-plan.yaml"


def _planned_pools(run: ProgramRun) -> list[dict[str, Any]]:
    plans = (run.outputs.get("mig") or {}).get("layoutsFromDemand") or []
    return [pool for plan in plans for pool in plan["pools"]]


def mig_plan_files(run: ProgramRun) -> dict[str, str]:
    """``mig-plan.yaml`` when some pool is planned from demand, else nothing."""
    pools = _planned_pools(run)
    return {PLAN_FILE: render_recorded_plan(run.stack, pools)} if pools else {}


def _counts(layout: dict[str, int] | None) -> str:
    return count_text(layout or {}, empty="MIG disabled")


def _gpu_lines(pool: dict[str, Any]) -> list[str]:
    """One line per run of neighbouring GPUs with the same layout and change: ``GPU 2-7: MIG disabled``."""
    rows = [
        (_counts(layout), "" if layout is None else f"  ({placement})", index in pool["changedGpuIndexes"])
        for index, (layout, placement) in enumerate(zip(pool["gpuLayouts"], pool["placements"], strict=True))
    ]
    lines: list[str] = []
    start = 0
    for index in range(1, len(rows) + 1):
        if index < len(rows) and rows[index] == rows[start]:
            continue
        counts, placement, changed = rows[start]
        gpus = f"GPU {start}" if index - 1 == start else f"GPUs {start}-{index - 1}"
        lines.append(f"    {gpus}: {counts}{placement}{'  [re-partitioned]' if changed else ''}")
        start = index
    return lines


def mig_plan_lines(run: ProgramRun, out_dir: Path, files: dict[str, str] | None = None) -> list[str]:
    """What a reviewer reads: per planned model the proof, per pool each GPU's layout, the changes.

    ``files``: the preview's files when already made (else the plan file is made again).
    """
    plans = (run.outputs.get("mig") or {}).get("layoutsFromDemand") or []
    if not plans:
        return []
    record_name = record_file_name(run.stack)
    recorded = run.root / record_name
    lines: list[str] = []
    for plan in plans:
        proof = "proven optimal" if plan["optimal"] else "NOT proven optimal"
        lines.append(
            f"MIG layouts from demand ({_counts(plan['demand'])}): {plan['gpusUsed']} of {plan['fleetGpus']} GPUs "
            f"partitioned ({proof}, lower bound {plan['lowerBound']})"
        )
        for pool in plan["pools"]:
            each = "every node" if pool["nodes"] != 1 else "the node"
            lines.append(
                f"  {pool['pool']} ({pool['gpuModel']}, {pool['nodes']} node(s), {pool['migConfig']}), {each}:"
            )
            lines.extend(_gpu_lines(pool))
        against = record_name if plan["recordedPlanUsed"] else "nothing recorded: every partitioned GPU is new"
        lines.append(f"  re-partitions {plan['repartitionedGpus']} GPU(s) against {against}")
    written = (files if files is not None else mig_plan_files(run)).get(PLAN_FILE, "")
    current = recorded.read_text(encoding="utf-8") if recorded.is_file() else None
    if current != written:
        lines.append(
            f"notice: the MIG plan differs from {record_name}; record it with the change: "
            f"cp {_shown(out_dir / PLAN_FILE)} {_shown(recorded)}"
        )
    return lines


def _shown(path: Path) -> str:
    """``path`` relative to the working folder where it lies below it (what a person types), else as is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
