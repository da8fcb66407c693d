"""``python -m preview.diff --base REF [STACK ...]``: what a change does, offline, as reports (``make diff``).

Previews every stack (or the ones named) at the base revision (``preview.diff.baseline``: the base's own
code, cached by commit) and in the working tree (``build/preview/<stack>/``), compares them
(``preview.diff.changes``) and writes, per stack, ``build/diff/<stack>/``:

- ``diff.md``: the pull-request comment (``preview.diff.report_markdown``);
- ``diff.html``: one self-contained page with the GPUs drawn (``preview.diff.report_html``);
- ``diff.json``: the whole diff, for tools.

and prints each stack's ten-second summary. The base preview runs in the background while the
working tree is previewed. Same two previews, byte-identical reports.

A stack whose working-tree config is refused still gets its three reports: they say it is refused,
with every problem, so the pull-request comment never keeps showing an earlier, passing diff.

Exit codes: those of the working tree's preview (0; 2 invalid config; 3 a mandatory policy violated;
1 a bug), 3 also when a deleted and a created resource are one real object without an alias
(``preview.diff.moves``), or 2 when the base is not a commit of this repository.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.mig.recorded import record_file_name
from preview.__main__ import HEAD_LABEL, base_snapshot, preview_stack_guarded
from preview.diff.baseline import BaselineError, PendingBaseline
from preview.diff.changes import StackDiff, diff_snapshots, findings_of
from preview.diff.mig_plan import PLAN_FILE
from preview.diff.refused import EXIT_REFUSED, refused_diff
from preview.diff.rendered_diff import rendered_changes
from preview.diff.report_html import html_report
from preview.diff.report_markdown import markdown_report
from preview.diff.snapshot import load_snapshot
from preview.diff.summary import summary_lines
from preview.run.files import write_files
from preview.run.output_folder import EXIT_MANDATORY_VIOLATION
from preview.run.runner import REPO_ROOT
from preview.run.stack_file import available_stacks

REPORTS = ("diff.md", "diff.html", "diff.json")


def report_files(diff: StackDiff, where: str) -> dict[str, str]:
    """The three reports of one stack's diff (``where``: the folder they land in, named when a comment is cut)."""
    return {
        "diff.json": diff.to_json(),
        "diff.md": markdown_report(diff, full_report=f"{where}/diff.html"),
        "diff.html": html_report(diff),
    }


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, preview base and head, write and summarise each stack's diff."""
    parser = argparse.ArgumentParser(prog="python -m preview.diff", description=__doc__)
    parser.add_argument("stacks", nargs="*", help="stack names (default: every Pulumi.<stack>.yaml)")
    parser.add_argument("--base", required=True, help="git revision to compare with (a branch, tag or commit)")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the git checkout (default: this one)")
    parser.add_argument("--out", type=Path, default=None, help="report root (default: <root>/build/diff)")
    parser.add_argument("--preview-out", type=Path, default=None, help="head previews (default: <root>/build/preview)")
    args = parser.parse_args(argv)
    root: Path = args.root
    out: Path = args.out or root / "build" / "diff"
    preview_out: Path = args.preview_out or root / "build" / "preview"
    stacks = args.stacks or available_stacks(root)
    try:
        pending = PendingBaseline(root, args.base, stacks).start()
    except (BaselineError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    codes = {stack: preview_stack_guarded(stack, preview_out, True, root, baselines=pending) for stack in stacks}
    for stack in stacks:
        where = out / stack
        baseline = pending.get(stack)
        if codes[stack] == EXIT_REFUSED:
            diff = refused_diff(stack, root, baseline.label, HEAD_LABEL, baseline.folder)
            write_files(report_files(diff, _shown(where, root)), where)
            print("\n".join(summary_lines(diff)))
            print(f"reports: {', '.join(str(_shown(where, root) + '/' + name) for name in REPORTS)}")
            continue
        if not (preview_out / stack / "resources.json").exists() or codes[stack] == 1:
            print(f"error: stack {stack}: the working tree's preview failed; no diff written", file=sys.stderr)
            continue
        if baseline.missing:
            print(f"note: {baseline.missing}; every resource counts as new")
        head = load_snapshot(preview_out / stack, stack)
        diff = diff_snapshots(base_snapshot(baseline), head, baseline.label, HEAD_LABEL)
        diff.mig_plan = mig_plan_to_record(root, preview_out / stack, stack)
        diff.rendered = rendered_changes(baseline.folder, preview_out / stack)
        write_files(report_files(diff, _shown(where, root)), where)
        print("\n".join(summary_lines(diff, findings_of(head))))
        print(f"reports: {', '.join(str(_shown(where, root) + '/' + name) for name in REPORTS)}")
        if diff.mandatory_findings:
            codes[stack] = max(codes[stack], EXIT_MANDATORY_VIOLATION)
    return max(codes.values(), default=0)


def mig_plan_to_record(root: Path, stack_preview: Path, stack: str) -> str:
    """What to commit when the change plans other MIG layouts than ``mig-plans/<stack>.yaml`` records ('' if none)."""
    planned = stack_preview / PLAN_FILE
    if not planned.is_file():
        return ""
    recorded = root / record_file_name(stack)
    if recorded.is_file() and recorded.read_text(encoding="utf-8") == planned.read_text(encoding="utf-8"):
        return ""
    return (
        f"{record_file_name(stack)} must be committed with this change (pulumi up plans from it): "
        f"cp {_shown(planned, root)} {record_file_name(stack)}"
    )


def _shown(path: Path, root: Path) -> str:
    """``build/diff/dev``: a path relative to the checkout where it is inside it (no machine paths in reports)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


if __name__ == "__main__":
    sys.exit(main())
