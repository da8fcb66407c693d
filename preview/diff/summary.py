"""The console summary of a preview or a diff: what a person reads in ten seconds.

Counts of create/update/replace/delete, every replaced resource with its reason, every deleted
resource by name, the pools whose GPUs get re-partitioned and whether their nodes are drained, driver
changes, and the policy verdict with each policy's findings on one line (56 Jobs without an image
digest are one line, not 56). The full tree and every finding: ``--verbose``, ``policy-report.json``.
"""

from __future__ import annotations

from collections.abc import Iterable

from preview.diff.changes import (
    CREATE,
    DELETE,
    REPLACE,
    UPDATE,
    Finding,
    PoolChange,
    RenderedChange,
    ResourceChange,
    StackDiff,
)

MAX_PATHS = 4  # changed input paths named per updated resource on the console


def gpu_ranges(indices: Iterable[int]) -> str:
    """``0-3, 6``: GPU indices as ranges."""
    items = sorted(indices)
    spans: list[str] = []
    start = previous = None
    for index in [*items, None]:
        if index is not None and previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            spans.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = index
    return ", ".join(spans)


def repartition_line(pool: PoolChange) -> str:
    """``gpu-node-2 (H100-80GB): GPUs 0-7 re-partitioned (3g.40gb@0-3 ... -> ...); drained by ...``."""
    changed = [g for g in pool.gpus if g.repartitioned]
    layouts = sorted({f"{g.before} -> {g.after}" for g in changed})
    shown = "; ".join(layouts[:2]) + (f"; {len(layouts) - 2} more layouts" if len(layouts) > 2 else "")
    nodes = f", each of up to {pool.nodes} nodes" if pool.nodes > 1 else ""
    return (
        f"{pool.name} ({pool.model}{nodes}): GPU{'s' if len(changed) > 1 else ''} {gpu_ranges(pool.repartitioned)} "
        f"re-partitioned ({shown}); {pool.drain}"
    )


def finding_groups(findings: Iterable[Finding]) -> list[str]:
    """One line per policy and level: how many resources, and one example message."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault((finding.enforcement, finding.policy), []).append(finding)
    lines = []
    for (enforcement, policy), items in sorted(groups.items(), key=lambda item: (item[0][0] != "mandatory", item[0])):
        if len(items) == 1:
            lines.append(f"[{enforcement}] {policy}: {items[0].message}")
        else:
            lines.append(f"[{enforcement}] {policy}: {len(items)} resources, e.g. {items[0].message}")
    return lines


def refused_lines(diff: StackDiff) -> list[str]:
    """A refused stack: nothing is previewed, every problem is listed."""
    return [
        f"Stack {diff.stack}: REFUSED, pulumi up would stop before creating anything; "
        f"{len(diff.refused)} problem(s) in the working tree's config (against {diff.base}):",
        *(f"  {problem}" for problem in diff.refused),
    ]


def update_line(change: ResourceChange) -> str:
    """``UPDATE name (type): path, path, ... and N more``: which inputs an in-place update changes."""
    paths = [c.path for c in change.changes]
    shown = ", ".join(paths[:MAX_PATHS]) + (f" and {len(paths) - MAX_PATHS} more" if len(paths) > MAX_PATHS else "")
    moved = " (moved, paired by its alias)" if change.moved_from else ""
    note = f". {change.note}" if change.note else ""
    return f"UPDATE {change.name} ({change.type}){moved}: {shown}{note}"


def rendered_counts(diff: StackDiff) -> list[str]:
    """``kubeflow-platform: 1 created, 2 changed, 1 deleted``: rendered objects per release or Directory."""
    lines = []
    for origin in sorted({c.origin for c in diff.rendered}):
        items = [c for c in diff.rendered if c.origin == origin]
        counts = {action: sum(1 for c in items if c.action == action) for action in (CREATE, UPDATE, DELETE)}
        lines.append(
            f"{origin}: {counts[CREATE]} created, {counts[UPDATE]} changed, {counts[DELETE]} deleted (rendered objects)"
        )
    return lines


def rollout_line(change: RenderedChange) -> str:
    """``Deployment kubeflow/jupyter-web-app-deployment (kubeflow-platform): pods restart; spec.template...``."""
    paths = [c.path for c in change.changes if c.path.startswith("spec.template")]
    shown = ", ".join(paths[:MAX_PATHS]) + (f" and {len(paths) - MAX_PATHS} more" if len(paths) > MAX_PATHS else "")
    return f"{change.kind} {change.name} ({change.origin}): pod template changed, its pods restart ({shown})"


def summary_lines(diff: StackDiff, findings: list[Finding] | None = None) -> list[str]:
    """The summary of one stack's diff (``findings``: the head's findings, grouped; default: the diff's changes)."""
    if diff.refused:
        return refused_lines(diff)
    counts = diff.counts()
    lines = [
        f"Stack {diff.stack}: {diff.resources_after} resources; against {diff.base}: "
        f"{counts[CREATE]} to create, {counts[UPDATE]} to update, {counts[REPLACE]} to replace, "
        f"{counts[DELETE]} to delete"
    ]
    for change in diff.of(REPLACE):
        note = f". {change.note}" if change.note else ""
        lines.append(f"  REPLACE {change.name} ({change.type}): {'; '.join(change.reasons)}{note}")
    for change in diff.of(UPDATE):
        lines.append(f"  {update_line(change)}")
    for change in diff.of(DELETE):
        lines.append(f"  DELETE {change.name} ({change.type})")
    for finding in diff.mandatory_findings:
        lines.append(f"  [mandatory] {finding}")
    for pool in diff.repartitioned:
        lines.append(f"  MIG {repartition_line(pool)}")
    for pools, before, after in diff.driver_groups():
        lines.append(f"  DRIVER {', '.join(pools)}: {before} -> {after}")
    for pool in diff.driver_rollouts:
        lines.append(f"  DRIVER {pool.name}: {pool.driver_rollout}")
    if diff.mig_plan:
        lines.append(f"  MIG PLAN {diff.mig_plan}")
    lines += [f"  RENDERED {line}" for line in rendered_counts(diff)]
    for rollout in diff.rollouts:
        lines.append(f"  ROLLS {rollout_line(rollout)}")
    if diff.appeared or diff.disappeared:
        lines.append(f"  policy findings: {len(diff.appeared)} new, {len(diff.disappeared)} gone")
        lines += [f"    + {line}" for line in finding_groups(diff.appeared)]
        lines += [f"    - {line}" for line in finding_groups(diff.disappeared)]
    if findings is not None:
        lines += [f"  {line}" for line in finding_groups(findings)]
    before = (
        f" (was {diff.verdict_before.describe()})"
        if diff.verdict_before and diff.verdict_before != diff.verdict_after
        else ""
    )
    lines.append(f"policy gate {diff.verdict_after.describe()}{before}")
    if diff.mandatory_findings:
        lines.append(f"review gate FAILED: {len(diff.mandatory_findings)} refusal(s) above ([mandatory])")
    return lines
