"""The Markdown report of one stack's diff, sized for a pull-request comment.

Summary table first (counts, replaced and deleted resources, re-partitioned GPUs, drained nodes,
drivers, policy verdict), then each section in a collapsed ``<details>``. The first line is a hidden
marker (``<!-- gpu-platform-diff:<stack> -->``) by which the pull-request workflow finds the comment
it posted before and updates it instead of adding another. GitHub refuses comments over 65,536
characters: past ``MAX_CHARS`` the details are cut and the report says where the whole one is.
"""

from __future__ import annotations

import re

from preview.diff.changes import CREATE, DELETE, REPLACE, UPDATE, Change, ResourceChange, StackDiff
from preview.diff.summary import finding_groups, gpu_ranges, rendered_counts

MARKER = "<!-- gpu-platform-diff:{stack} -->"
MAX_CHARS = 60_000
MAX_BODY_LINES = 120  # lines of a created resource's inputs shown in the comment (diff.json has them all)


def _cell(text: str) -> str:
    """Text safe inside a table cell or inline code: no pipes, no newlines, no backticks."""
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def _details(title: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{title}</summary>", "", *body, "", "</details>", ""]


def _change_rows(changes: tuple[Change, ...] | list[Change]) -> list[str]:
    rows = ["| path | before | after |", "| --- | --- | --- |"]
    rows += [f"| {_code(c.path)} | {_code(c.old)} | {_code(c.new)} |" for c in changes]
    for change in changes:
        if change.text_diff:
            rows += ["", f"{_code(change.path)}:", "", "```diff", *change.text_diff, "```"]
    return rows


def _fenced(text: str, language: str) -> list[str]:
    """A code block the text cannot close early: its fence is longer than any run of backticks in the text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", *text.rstrip("\n").split("\n"), fence]


def _open_fence(text: str) -> str:
    """The fence of the code block ``text`` ends inside ('' when it ends outside every block)."""
    fence = ""
    for line in text.split("\n"):
        run = re.match(r"`{3,}", line)
        if run is None:
            continue
        if not fence:
            fence = run.group(0)
        elif line.strip() == fence:
            fence = ""
    return fence


def _body(change: ResourceChange) -> list[str]:
    lines = change.body.rstrip("\n").split("\n")
    cut = len(lines) > MAX_BODY_LINES
    text = "\n".join(lines[:MAX_BODY_LINES])
    more = [f"*... {len(lines) - MAX_BODY_LINES} more lines in diff.json*"] if cut else []
    return ["", *_details(f"inputs ({len(lines)} lines)", [*_fenced(text, "yaml"), *more])]


def _resource_section(diff: StackDiff) -> list[str]:
    body: list[str] = []
    for change in diff.resources:
        body.append(f"#### {change.action}: {_code(change.name)} ({_code(change.type)})")
        if change.moved_from:
            body.append(f"Moved: its alias pairs it with {_code(change.moved_from)}, so pulumi up updates it in place.")
        if change.reasons:
            body.append(f"Replaced because: {'; '.join(_code(r) for r in change.reasons)}. {change.note}".rstrip())
        elif change.note:
            body.append(_cell(change.note))
        if change.changes:
            body += ["", *_change_rows(change.changes)]
        if change.body:
            body += _body(change)
        body.append("")
    return body


def _pool_section(diff: StackDiff) -> list[str]:
    body = ["| pool | GPU | before | after |", "| --- | --- | --- | --- |"]
    for pool in diff.repartitioned:
        for gpu in pool.gpus:
            if gpu.repartitioned:
                body.append(f"| {_code(pool.name)} | {gpu.index} | {_code(gpu.before)} | {_code(gpu.after)} |")
    body.append("")
    body += [f"- {_code(pool.name)}: {pool.drain}" for pool in diff.repartitioned]
    return body


def _names(changes: list[ResourceChange]) -> str:
    return ", ".join(_code(c.name) for c in changes) or "none"


def _summary_table(diff: StackDiff) -> list[str]:
    counts = diff.counts()
    replaced = "; ".join(f"{_code(c.name)}: " + "; ".join(_code(r) for r in c.reasons) for c in diff.of(REPLACE))
    gpus = "; ".join(f"{_code(p.name)}: GPUs {gpu_ranges(p.repartitioned)}" for p in diff.repartitioned)
    drivers = "; ".join(
        ", ".join(_code(name) for name in names) + f": {_code(before)} -> {_code(after)}"
        for names, before, after in diff.driver_groups()
    )
    drivers = "; ".join(
        [drivers] * bool(drivers) + [f"{_code(p.name)}: {_cell(p.driver_rollout)}" for p in diff.driver_rollouts]
    )
    verdict = diff.verdict_after.describe()
    if diff.verdict_before and diff.verdict_before != diff.verdict_after:
        verdict += f" (was {diff.verdict_before.describe()})"
    moves = (
        [f"| **same object, new URN, no alias: FAILED** ({len(diff.moves)}) | {_names_of_moves(diff)} |"]
        if diff.moves
        else []
    )
    plan = [f"| MIG plan to commit | {_cell(diff.mig_plan)} |"] if diff.mig_plan else []
    rendered = (
        [f"| rendered objects | {'; '.join(_cell(line) for line in rendered_counts(diff))} |"] if diff.rendered else []
    )
    rolls = "; ".join(f"{_code(c.kind + ' ' + c.name)} ({_cell(c.origin)})" for c in diff.rollouts)
    rendered += [f"| pods restarted (pod template changed) | {rolls} |"] if rolls else []
    return [
        "| | |",
        "| --- | --- |",
        f"| replaced ({counts[REPLACE]}) | {replaced or 'none'} |",
        f"| deleted ({counts[DELETE]}) | {_names(diff.of(DELETE))} |",
        f"| created ({counts[CREATE]}) | {_names(diff.of(CREATE))} |",
        f"| updated ({counts[UPDATE]}) | {_names(diff.of(UPDATE))} |",
        f"| GPUs re-partitioned | {gpus or 'none'} |",
        f"| nodes drained for MIG | {', '.join(_code(p.name) for p in diff.drained) or 'none'} |",
        f"| GPU nodes replaced | {'; '.join(f'{_code(p.name)}: {_cell(p.nodes_replaced)}' for p in diff.pools if p.nodes_replaced) or 'none'} |",
        f"| driver | {drivers or 'unchanged'} |",
        f"| policy gate | {verdict}; {len(diff.appeared)} finding(s) new, {len(diff.disappeared)} gone |",
        *rendered,
        *moves,
        *plan,
    ]


def _rendered_section(diff: StackDiff) -> list[str]:
    body: list[str] = []
    for change in diff.rendered:
        roll = " (pods restart)" if change.rolls else ""
        body.append(f"- {change.action}: {_code(change.kind + ' ' + change.name)} in {_code(change.origin)}{roll}")
    for change in diff.rendered:
        if change.changes:
            body += [
                "",
                f"{_code(change.kind + ' ' + change.name)} ({_cell(change.origin)}):",
                "",
                *_change_rows(change.changes),
            ]
    return body


def _names_of_moves(diff: StackDiff) -> str:
    return "; ".join(f"{_code(m.object)}: {_code(m.old_name)} -> {_code(m.new_name)}" for m in diff.moves)


def refused_report(diff: StackDiff) -> str:
    """The comment of a stack whose working-tree config is refused: every problem, nothing else."""
    lines = [
        MARKER.format(stack=diff.stack),
        f"### Stack `{diff.stack}`: REFUSED, {len(diff.refused)} problem(s)",
        "",
        f"The working tree's config is refused (against {_code(diff.base)}): `pulumi up` would stop before creating "
        "anything, and no preview was made. Every problem:",
        "",
        *(f"- {_cell(problem)}" for problem in diff.refused),
    ]
    return "\n".join(lines).rstrip() + "\n"


def markdown_report(diff: StackDiff, full_report: str = "") -> str:
    """The comment text (``full_report``: where the whole report is, named when the text is cut)."""
    if diff.refused:
        return refused_report(diff)
    counts = diff.counts()
    lines = [
        MARKER.format(stack=diff.stack),
        f"### Stack `{diff.stack}`: {counts[CREATE]} to create, {counts[UPDATE]} to update, "
        f"{counts[REPLACE]} to replace, {counts[DELETE]} to delete",
        "",
        f"Offline preview of {_code(diff.head)} against {_code(diff.base)} (the real program under mocks, no cloud "
        "credentials). Secret values are masked in both previews, so a changed secret does not show.",
        "",
        *_summary_table(diff),
        "",
    ]
    if diff.moves:
        lines += ["**The review refuses this change**: these resources get a new URN but manage the same object:", ""]
        lines += [f"- {_cell(m.describe())}" for m in diff.moves]
        lines.append("")
    if diff.platform_switch:
        lines += ["**The review refuses this change**: it switches the stack's platform and destroys resources:", ""]
        lines += [f"- {_cell(line)}" for line in diff.platform_switch]
        lines.append("")
    if diff.empty:
        lines += ["No change.", ""]
    if diff.resources:
        lines += _details(f"Resources ({len(diff.resources)} changed)", _resource_section(diff))
    if diff.rendered:
        lines += _details(f"Rendered objects ({len(diff.rendered)} changed)", _rendered_section(diff))
    if diff.repartitioned:
        lines += _details(
            f"MIG: {sum(len(p.repartitioned) for p in diff.repartitioned)} GPU(s) re-partitioned", _pool_section(diff)
        )
    if diff.outputs:
        lines += _details(f"Stack outputs ({len(diff.outputs)} changed)", _change_rows(diff.outputs))
    if diff.appeared or diff.disappeared:
        body = [f"- new: {_cell(line)}" for line in finding_groups(diff.appeared)]
        body += [f"- gone: {_cell(line)}" for line in finding_groups(diff.disappeared)]
        lines += _details("Policy findings that appear or disappear", body)
    if diff.findings_after:
        body = [f"- {_cell(line)}" for line in finding_groups(diff.findings_after)]
        lines += _details(f"Policy findings now ({len(diff.findings_after)}, one line per policy)", body)
    text = "\n".join(lines).rstrip() + "\n"
    if len(text) > MAX_CHARS:
        where = f" The whole report: {full_report}." if full_report else ""
        cut = text[:MAX_CHARS].rsplit("\n", 1)[0]
        fence = _open_fence(cut)
        if fence:  # inside a code block: close it with its own fence
            cut += "\n" + fence
        still_open = max(1, cut.count("<details>") - cut.count("</details>"))
        text = cut + "\n\n" + "</details>\n" * still_open + f"\n*Cut at {MAX_CHARS} characters.{where}*\n"
    return text
