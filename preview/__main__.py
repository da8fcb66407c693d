"""``python -m preview [STACK ...]``: the offline preview of one or more stacks.

Exit codes: 0 preview written and no mandatory policy violated; 1 a bug (one line, the traceback in
``<out>/<stack>.error.log``) or a missing tool (``helm``/``kubectl``: run ``make tools``; the pinned
chart: run ``make upstream``); 2 invalid stack file or stack config (nothing is written) or invalid
``policies/config/<stack>.json``; 3 the preview was written but a mandatory policy is violated or a
Directory does not build (see ``build/preview/<stack>/policy-report.json``).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections import Counter
from pathlib import Path

from preview.driver_plan import driver_upgrade_plan
from preview.policy_gate import EXIT_MANDATORY_VIOLATION, PolicyConfigError, run_gate, verdict_table
from preview.policy_gate import write_report as write_policy_report
from preview.render import preview_files, resource_tree, write_files
from preview.rendered import RenderMemo, RenderSetupError, render_program
from preview.replacements import planned_replacements
from preview.runner import REPO_ROOT, run_program
from preview.stack_file import StackFileError, available_stacks

EXIT_BUG = 1


def preview_stack(
    stack: str, out_root: Path, quiet: bool = False, root: Path = REPO_ROOT, render_memo: RenderMemo | None = None
) -> int:
    """Preview one stack; returns the exit code (``render_memo``: see ``preview.rendered.render_registrations``)."""
    try:
        run = run_program(stack, root)
    except (FileNotFoundError, StackFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        print("nothing was created and no preview was written", file=sys.stderr)
        return 2
    if run.config_error is not None:
        print(f"error: stack {stack}: {run.config_error}", file=sys.stderr)
        print("nothing was created and no preview was written", file=sys.stderr)
        return 2
    out_dir = out_root / stack
    replacements = planned_replacements(out_dir / "resources.json", run.registrations)
    replacements += driver_upgrade_plan(out_dir / "outputs.json", run.outputs)  # printed with the replacements
    try:
        rendered = render_program(run, render_memo)  # once: the files and the gate share it
    except RenderSetupError as error:
        print(f"error: stack {stack}: {error}", file=sys.stderr)
        return 1
    files = {**preview_files(run), **rendered.files()}
    write_files(files, out_dir)
    try:
        gate = run_gate(run, root, rendered)
    except PolicyConfigError as error:
        print(f"error: stack {stack}: policy config {error}", file=sys.stderr)
        return 2
    write_policy_report(gate, out_dir)
    if gate.failed and quiet:
        print(verdict_table(gate), file=sys.stderr)
    if not quiet:
        print(f"Stack {stack} (offline preview: the real program under mocks, no cloud calls)")
        print(resource_tree(run.registrations))
        for notice in run.notices:
            print(notice if notice.startswith("warning: ") else f"notice: {notice}")
        for line in replacements:
            print(line)
        counts = Counter(r.type for r in run.registrations if r.custom)
        summary = ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items()))
        print(f"{len(run.registrations)} resources ({summary})")
        print(f"wrote {len(files) + 1} files to {out_dir}")
        print(verdict_table(gate))
    return EXIT_MANDATORY_VIOLATION if gate.failed else 0


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and preview each stack."""
    parser = argparse.ArgumentParser(prog="python -m preview", description=__doc__)
    parser.add_argument("stacks", nargs="*", help="stack names (default: every Pulumi.<stack>.yaml)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "preview", help="output root")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="project folder (Pulumi.<stack>.yaml, __main__.py)"
    )
    args = parser.parse_args(argv)
    stacks = args.stacks or available_stacks(args.root)
    codes = [_guarded(stack, args.out, args.quiet, args.root) for stack in stacks]
    return max(codes, default=0)


def _guarded(stack: str, out_root: Path, quiet: bool, root: Path, render_memo: RenderMemo | None = None) -> int:
    """``preview_stack``, with a bug reported as one line and a log file instead of a traceback (exit 1)."""
    try:
        return preview_stack(stack, out_root, quiet, root, render_memo)
    except Exception as error:  # a bug in the program or the preview, never a config problem
        log = out_root / f"{stack}.error.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        print(
            f"error: stack {stack}: internal error ({type(error).__name__}: {error}); details in {log}", file=sys.stderr
        )
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
