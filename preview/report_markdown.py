"""The Markdown report of one stack's diff, sized for a pull-request comment.

Summary table first (counts, replaced and deleted resources, re-partitioned GPUs, drained nodes,
drivers, policy verdict), then each section in a collapsed ``<details>``. The first line is a hidden
marker (``<!-- gpu-platform-diff:<stack> -->``) by which the pull-request workflow finds the comment
it posted before and updates it instead of adding another. GitHub refuses comments over 65,536
characters: past ``MAX_CHARS`` the details are cut and the report says where the whole one is.
"""

from __future__ import annotations

from preview.changes import CREATE, DELETE, REPLACE, UPDATE, Change, ResourceChange, StackDiff
from preview.summary import _gpus, finding_groups

MARKER = "<!-- gpu-platform-diff:{stack} -->"
MAX_CHARS = 60_000


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


def _resource_section(diff: StackDiff) -> list[str]:
    body: list[str] = []
    for change in diff.resources:
        body.append(f"#### {change.action}: {_code(change.name)} ({_code(change.type)})")
        if change.reasons:
            body.append(f"Replaced because: {'; '.join(_code(r) for r in change.reasons)}. {change.note}".rstrip())
        if change.changes:
            body += ["", *_change_rows(change.changes)]
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


def markdown_report(diff: StackDiff, full_report: str = "") -> str:
    """The comment text (``full_report``: where the whole report is, named when the text is cut)."""
    counts = diff.counts()
    lines = [
        MARKER.format(stack=diff.stack),
        f"### Stack `{diff.stack}`: {counts[CREATE]} to create, {counts[UPDATE]} to update, "
        f"{counts[REPLACE]} to replace, {counts[DELETE]} to delete",
        "",
        f"Offline preview of {_code(diff.head)} against {_code(diff.base)} (the real program under mocks, no cloud "
        "credentials). Secret values are masked in both previews, so a changed secret does not show.",
        "",
        "| | |",
        "| --- | --- |",
        f"| replaced | {'; '.join(f'{_code(c.name)}: ' + '; '.join(_code(r) for r in c.reasons) for c in diff.of(REPLACE)) or 'none'} |",
        f"| deleted ({counts[DELETE]}) | {_names(diff.of(DELETE))} |",
        f"| created ({counts[CREATE]}) | {_names(diff.of(CREATE))} |",
        f"| GPUs re-partitioned | {'; '.join(f'{_code(p.name)}: GPUs {_gpus(p.repartitioned)}' for p in diff.repartitioned) or 'none'} |",
        f"| nodes drained for MIG | {', '.join(_code(p.name) for p in diff.drained) or 'none'} |",
        f"| driver | {'; '.join(f'{_code(p.name)}: {_code(p.driver_before)} -> {_code(p.driver_after)}' for p in diff.driver_changes) or 'unchanged'} |",
        f"| policy gate | {diff.verdict_after.describe()}"
        + (
            f" (was {diff.verdict_before.describe()})"
            if diff.verdict_before and diff.verdict_before != diff.verdict_after
            else ""
        )
        + f"; {len(diff.appeared)} finding(s) new, {len(diff.disappeared)} gone |",
        "",
    ]
    if diff.empty:
        lines += ["No change.", ""]
    if diff.resources:
        lines += _details(f"Resources ({len(diff.resources)} changed)", _resource_section(diff))
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
    text = "\n".join(lines).rstrip() + "\n"
    if len(text) > MAX_CHARS:
        where = f" The whole report: {full_report}." if full_report else ""
        text = text[:MAX_CHARS].rsplit("\n", 1)[0] + f"\n\n</details>\n\n*Cut at {MAX_CHARS} characters.{where}*\n"
    return text
