"""The HTML report of one stack's diff: one self-contained file (inline CSS and SVG, no script, no network).

Each pool shows its model, driver and MIG config, and each GPU of one node drawn as its memory slices
(8 on A100/H100-class GPUs) with every MIG instance as a box from its start slice to its end slice,
where the catalog's placer puts it: before and after, side by side, re-partitioned GPUs marked. Then
the resource changes (replacements with their reasons, every deletion), the changed outputs and the
policy findings that appear or disappear.

Elements carry ``data-*`` attributes (``data-pool``, ``data-gpu``, ``data-phase``, ``data-profile``,
``data-start``, ``data-slices``) so a browser test can check what is drawn, not only the text.
Deterministic: colours come from a fixed palette by profile name, nothing depends on time.
"""

from __future__ import annotations

from html import escape

from preview.diff.changes import CREATE, DELETE, REPLACE, UPDATE, PoolChange, ResourceChange, StackDiff
from preview.diff.snapshot import Gpu, Pool, memory_slices
from preview.diff.summary import finding_groups, gpu_ranges

SLICE_WIDTH = 34
GPU_HEIGHT = 34
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#e15759", "#9c755f")
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1f2328;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;
vertical-align:top;font-size:13px}th{background:#f6f8fa}code{font-size:12px;background:#f6f8fa;padding:1px 3px}
.pool{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:12px 0}
.phase{display:inline-block;vertical-align:top;margin-right:32px}.gpu{display:flex;align-items:center;gap:8px;margin:3px 0}
.gpu.changed .idx{color:#cf222e;font-weight:700}.idx{width:64px;font-size:12px}
.create{color:#1a7f37}.update{color:#9a6700}.replace{color:#cf222e;font-weight:700}.delete{color:#cf222e}
.legend{margin-right:12px;white-space:nowrap}.legend svg{vertical-align:middle}
.verdict-passed{color:#1a7f37}.verdict-failed{color:#cf222e;font-weight:700}.muted{color:#656d76;font-size:12px}
"""


def _colour(profile: str, profiles: list[str]) -> str:
    return _PALETTE[profiles.index(profile) % len(_PALETTE)] if profile in profiles else "#8c959f"


def _gpu_svg(pool: Pool, gpu: Gpu, phase: str, profiles: list[str]) -> str:
    slices = memory_slices(pool.model)
    width = slices * SLICE_WIDTH
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 2}" height="{GPU_HEIGHT + 2}" role="img" '
        f'aria-label="{escape(pool.name)} GPU {gpu.index} {phase}: {escape(gpu.describe())}">'
    ]
    for index in range(slices):  # the memory slices, as a grid under the instances
        parts.append(
            f'<rect class="slice" x="{1 + index * SLICE_WIDTH}" y="1" width="{SLICE_WIDTH}" height="{GPU_HEIGHT}" '
            'fill="#f6f8fa" stroke="#d0d7de"/>'
        )
    if not gpu.mig or gpu.problem:
        label = "whole GPU (MIG off)" if not gpu.problem else "layout cannot be placed"
        fill = "#d0d7de" if not gpu.problem else "#ffebe9"
        parts.append(
            f'<g class="instance whole" data-profile="whole" data-start="0" data-slices="{slices}">'
            f'<rect x="1" y="1" width="{width}" height="{GPU_HEIGHT}" fill="{fill}" stroke="#57606a"/>'
            f'<text x="{1 + width / 2}" y="{GPU_HEIGHT / 2 + 5}" text-anchor="middle" font-size="12">{label}</text></g>'
        )
    for item in gpu.slices:
        x, w = 1 + item.start * SLICE_WIDTH, item.memory_slices * SLICE_WIDTH
        parts.append(
            f'<g class="instance" data-profile="{escape(item.profile)}" data-start="{item.start}" '
            f'data-slices="{item.memory_slices}"><title>{escape(item.describe())}</title>'
            f'<rect x="{x + 1}" y="3" width="{w - 2}" height="{GPU_HEIGHT - 4}" rx="4" '
            f'fill="{_colour(item.profile, profiles)}" stroke="#24292f"/>'
            f'<text x="{x + w / 2}" y="{GPU_HEIGHT / 2 + 5}" text-anchor="middle" font-size="11" fill="#fff">'
            f"{escape(item.profile if item.memory_slices > 1 else item.profile.split('.')[0])}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _slice_numbers(pool: Pool) -> str:
    """A row of memory-slice numbers (0 .. 7) above a pool's GPUs."""
    slices = memory_slices(pool.model)
    numbers = "".join(
        f'<text x="{1 + i * SLICE_WIDTH + SLICE_WIDTH / 2}" y="11" text-anchor="middle" font-size="10" '
        f'fill="#656d76">{i}</text>'
        for i in range(slices)
    )
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{slices * SLICE_WIDTH + 2}" height="14">{numbers}</svg>'


def _legend(profiles: list[str]) -> str:
    """One coloured box per MIG profile drawn on the page."""
    items = "".join(
        f'<span class="legend"><svg xmlns="http://www.w3.org/2000/svg" width="14" height="14"><rect width="14" '
        f'height="14" rx="3" fill="{_colour(p, profiles)}"/></svg> {escape(p)}</span>'
        for p in profiles
    )
    return f'<p class="muted">MIG profiles: {items}</p>' if profiles else ""


def _phase(pool: Pool | None, phase: str, changed: set[int], profiles: list[str]) -> str:
    if pool is None:
        return f'<div class="phase" data-phase="{phase}"><b>{phase}</b><p class="muted">(not in this preview)</p></div>'
    rows = [
        f'<div class="phase" data-phase="{phase}"><b>{phase}</b> <span class="muted">mig.config '
        f"<code>{escape(pool.mig_config)}</code></span>",
        f'<div class="gpu"><span class="idx muted">slice</span>{_slice_numbers(pool)}</div>',
    ]
    for gpu in pool.gpus:
        css = "gpu changed" if gpu.index in changed else "gpu"
        rows.append(
            f'<div class="{css}" data-gpu="{gpu.index}" data-repartitioned="{str(gpu.index in changed).lower()}">'
            f'<span class="idx">GPU {gpu.index}</span>{_gpu_svg(pool, gpu, phase, profiles)}</div>'
        )
    rows.append("</div>")
    return "".join(rows)


def _pool(pool: PoolChange, profiles: list[str]) -> str:
    changed = set(pool.repartitioned)
    driver = (
        f"{escape(pool.driver_before)} &rarr; {escape(pool.driver_after)}"
        if pool.before and pool.after and pool.driver_before != pool.driver_after
        else escape(pool.driver_after or pool.driver_before)
    )
    nodes = f"up to {pool.nodes} nodes" if pool.nodes != 1 else "1 node"
    head = (
        f'<section class="pool" data-pool="{escape(pool.name)}" data-status="{pool.status}">'
        f'<h3>{escape(pool.name)} <span class="muted">{escape(pool.model)}, {nodes} '
        f"({escape(pool.status)})</span></h3><p>driver: <b>{driver}</b></p>"
    )
    if pool.nodes_replaced:
        head += f'<p class="replace" data-nodes-replaced="true">{escape(pool.nodes_replaced)}</p>'
    if pool.driver_rollout:
        head += f'<p class="update" data-driver-rollout="true">{escape(pool.driver_rollout)}</p>'
    if changed:
        head += f'<p class="replace">GPUs {gpu_ranges(changed)} re-partitioned; {escape(pool.drain)}</p>'
    drawn = _phase(pool.before, "before", changed, profiles) + _phase(pool.after, "after", changed, profiles)
    if pool.status == "unchanged":  # collapsed: the reader looks for what changes
        drawn = f"<details><summary>GPUs (unchanged)</summary>{drawn}</details>"
    return head + drawn + "</section>"


def _resource_row(change: ResourceChange) -> str:
    details = []
    if change.reasons:
        details.append("<b>replaced because:</b> " + "; ".join(f"<code>{escape(r)}</code>" for r in change.reasons))
    if change.note:
        details.append(escape(change.note))
    for item in change.changes[:40]:
        details.append(
            f"<code>{escape(item.path)}</code>: <code>{escape(item.old)}</code> &rarr; <code>{escape(item.new)}</code>"
        )
    if len(change.changes) > 40:
        details.append(f"... and {len(change.changes) - 40} more changed paths (diff.json has them all)")
    if change.moved_from:
        details.append(f"moved: its alias pairs it with <code>{escape(change.moved_from)}</code> (updated in place)")
    if change.body:
        details.append(f"<details><summary>inputs</summary><pre>{escape(change.body)}</pre></details>")
    return (
        f'<tr data-action="{change.action}"><td class="{change.action}">{change.action}</td>'
        f"<td><code>{escape(change.name)}</code></td><td><code>{escape(change.type)}</code></td>"
        f"<td>{'<br>'.join(details)}</td></tr>"
    )


def _refused_page(diff: StackDiff) -> str:
    items = "".join(f"<li>{escape(problem)}</li>" for problem in diff.refused)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>gpu-platform diff: stack {escape(diff.stack)} refused'
        f"</title><style>{_CSS}</style></head><body>\n"
        f'<h1>Stack {escape(diff.stack)}: <span class="verdict-failed">REFUSED</span></h1>\n'
        f"<p>The working tree's config is refused (against {escape(diff.base)}): pulumi up would stop before "
        f'creating anything, and no preview was made. {len(diff.refused)} problem(s):</p>\n<ul id="refused">{items}</ul>'
        "\n</body></html>\n"
    )


def _moves(diff: StackDiff) -> list[str]:
    if not diff.moves:
        return []
    items = "".join(f'<li data-move="{escape(m.object)}">{escape(m.describe())}</li>' for m in diff.moves)
    return [
        '<h2 id="moves" class="verdict-failed">Same object, new URN, no alias: the review refuses this change</h2>',
        f"<ul>{items}</ul>",
    ]


def _platform_switch(diff: StackDiff) -> list[str]:
    if not diff.platform_switch:
        return []
    items = "".join(f"<li>{escape(line)}</li>" for line in diff.platform_switch)
    return [
        '<h2 id="platform-switch" class="verdict-failed">Platform switch that destroys resources: the review refuses '
        "this change</h2>",
        f"<ul>{items}</ul>",
    ]


def html_report(diff: StackDiff) -> str:
    """The page, as one string."""
    if diff.refused:
        return _refused_page(diff)
    counts = diff.counts()
    profiles = sorted(
        {
            item.profile
            for pool in diff.pools
            for side in (pool.before, pool.after)
            if side
            for gpu in side.gpus
            for item in gpu.slices
        }
    )
    verdict = diff.verdict_after
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>gpu-platform diff: stack {escape(diff.stack)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Stack {escape(diff.stack)}: {escape(diff.head)} against {escape(diff.base)}</h1>",
        '<table id="summary"><tr><th>create</th><th>update</th><th>replace</th><th>delete</th><th>policy gate</th></tr>',
        f'<tr><td data-count="create">{counts[CREATE]}</td><td data-count="update">{counts[UPDATE]}</td>'
        f'<td data-count="replace">{counts[REPLACE]}</td><td data-count="delete">{counts[DELETE]}</td>'
        f'<td class="verdict-{"passed" if verdict.passed else "failed"}">{escape(verdict.describe())}</td></tr></table>',
        '<p class="muted">Offline preview (the real program under mocks). Secret values are masked in both '
        "previews, so a changed secret does not show.</p>",
        *_moves(diff),
        *_platform_switch(diff),
        *([f'<p class="replace" id="mig-plan">MIG plan: {escape(diff.mig_plan)}</p>'] if diff.mig_plan else []),
        '<h2 id="pools">GPU pools</h2>',
        '<p class="muted">Each GPU is drawn as its memory slices; a MIG instance covers the slices from its start '
        "to its end, where the placer puts it.</p>",
        _legend(profiles),
        *(_pool(pool, profiles) for pool in diff.pools),
    ]
    if not diff.pools:
        body.append("<p>No GPU pools.</p>")
    body.append(f'<h2 id="resources">Resources ({len(diff.resources)} changed)</h2>')
    if diff.resources:
        body.append("<table><tr><th>action</th><th>name</th><th>type</th><th>what</th></tr>")
        order = {REPLACE: 0, DELETE: 1, CREATE: 2, UPDATE: 3}
        body += [_resource_row(c) for c in sorted(diff.resources, key=lambda c: order[c.action])]
        body.append("</table>")
    else:
        body.append("<p>No resource changes.</p>")
    if diff.rendered:
        body.append(f'<h2 id="rendered">Rendered objects ({len(diff.rendered)} changed)</h2>')
        body.append("<table><tr><th>action</th><th>object</th><th>in</th><th>what</th></tr>")
        for item in diff.rendered:
            paths = "<br>".join(
                f"<code>{escape(c.path)}</code>: <code>{escape(c.old)}</code> &rarr; <code>{escape(c.new)}</code>"
                for c in item.changes[:40]
            )
            roll = '<b class="replace">pods restart</b><br>' if item.rolls else ""
            body.append(
                f'<tr data-rendered="{item.action}"><td class="{item.action}">{item.action}</td>'
                f"<td><code>{escape(item.kind)} {escape(item.name)}</code></td><td>{escape(item.origin)}</td>"
                f"<td>{roll}{paths}</td></tr>"
            )
        body.append("</table>")
    body.append(f'<h2 id="outputs">Stack outputs ({len(diff.outputs)} changed)</h2>')
    if diff.outputs:
        body.append("<table><tr><th>path</th><th>before</th><th>after</th></tr>")
        body += [
            f"<tr><td><code>{escape(c.path)}</code></td><td><code>{escape(c.old)}</code></td><td><code>{escape(c.new)}</code></td></tr>"
            for c in diff.outputs
        ]
        body.append("</table>")
    body.append('<h2 id="policies">Policy findings</h2>')
    was = f" (was {escape(diff.verdict_before.describe())})" if diff.verdict_before else ""
    body.append(f"<p>policy gate {escape(verdict.describe())}{was}</p><ul>")
    body += [f'<li data-finding="new">new: {escape(line)}</li>' for line in finding_groups(diff.appeared)]
    body += [f'<li data-finding="gone">gone: {escape(line)}</li>' for line in finding_groups(diff.disappeared)]
    if not (diff.appeared or diff.disappeared):
        body.append("<li>no finding appears or disappears</li>")
    body.append("</ul><h3>Findings now, one line per policy</h3><ul>")
    body += [f'<li data-finding="now">{escape(line)}</li>' for line in finding_groups(diff.findings_after)]
    if not diff.findings_after:
        body.append("<li>none</li>")
    body.append("</ul></body></html>")
    return "\n".join(body) + "\n"
