"""``python -m preview [STACK ...]``: the offline preview of one or more stacks.

Exit codes: 0 preview written and no mandatory policy violated; 1 a bug (one line, the traceback in
``<out>/<stack>.error.log``) or a missing tool (``helm``/``kubectl``: run ``make tools``; the pinned
chart: run ``make upstream``); 2 invalid stack file or stack config (nothing is written) or invalid
``policies/config/<stack>.json``; 3 the preview was written but a mandatory policy is violated or a
Directory does not build (see ``build/preview/<stack>/policy-report.json``).

The console shows a short summary against a base preview (``--base REF``, default ``HEAD``: the
working tree's change; ``preview.diff.baseline`` makes and caches it): what gets created, updated,
replaced (and why), deleted, which GPUs get re-partitioned, and the policy verdict with each
policy's findings on one line. ``--verbose`` adds the resource tree and every finding.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Protocol

# The modules a preview read from the result cache needs: the standard library, the catalog, our own
# summary code. The program, the renderers and the gate (every SDK) are imported in ``_produce`` only.
from preview.diff.baseline import (
    NO_BASE_ENV,
    Baseline,
    BaselineError,
    FolderBaseline,
    PendingBaseline,
    is_checkout,
    seed,
)
from preview.diff.changes import diff_snapshots, findings_of, verdict_of
from preview.diff.driver_plan import driver_upgrade_plan
from preview.diff.snapshot import Snapshot, load_snapshot
from preview.diff.summary import finding_groups, summary_lines
from preview.render.tools import REPO_ROOT, RenderSetupError, find_tool, pinned_chart_dir
from preview.run.output_folder import EXIT_MANDATORY_VIOLATION, REPORT_NAME, write_files
from preview.run.result_cache import Produced, ResultCache

EXIT_BUG = 1
HEAD_LABEL = "working tree"


class BaselineSource(Protocol):
    """Where the base preview of a stack comes from (``preview.diff.baseline``)."""

    def get(self, stack: str) -> Baseline: ...


def base_snapshot(baseline: Baseline) -> Snapshot | None:
    """The base preview as a snapshot, or None where there is none (the stack is new, or failed there)."""
    return load_snapshot(baseline.folder, baseline.stack) if baseline.folder else None


def print_summary(stack: str, out_dir: Path, baseline: Baseline | None) -> None:
    """The ten-second summary: against the base when there is one, else the head alone."""
    head = load_snapshot(out_dir, stack)
    findings = findings_of(head)
    if baseline is None:
        verdict = verdict_of(findings).describe()
        print(f"Stack {stack}: {len(head.resources)} resources (no base preview to compare with)")
        print("\n".join([*(f"  {line}" for line in finding_groups(findings)), f"policy gate {verdict}"]))
        return
    if baseline.missing:
        print(f"note: {baseline.missing}; every resource counts as new")
    base = base_snapshot(baseline)
    print("\n".join(summary_lines(diff_snapshots(base, head, baseline.label, HEAD_LABEL), findings)))


def preview_stack(
    stack: str,
    out_root: Path,
    quiet: bool = False,
    root: Path = REPO_ROOT,
    baselines: BaselineSource | None = None,
    verbose: bool = False,
) -> int:
    """Preview one stack; returns the exit code.

    A preview whose inputs did not change is read from the result cache (``preview.run.result_cache``)
    instead of running the program again; the summary against the base is made anew either way.
    ``baselines``: where the base preview comes from (the console summary compares with it).
    """
    out_dir = out_root / stack
    cache = ResultCache(REPO_ROOT)
    key = _cache_key(cache, stack, root, out_dir)
    produced = cache.get(key)
    if produced is None:
        result = _produce(stack, root, out_dir)
        if isinstance(result, int):
            return result
        produced = result
        cache.put(key, produced)
    write_files(produced.files, out_dir)
    if baselines is not None:
        seed(root, out_dir, stack)  # a clean checkout's preview is HEAD's: the next diff against HEAD reuses it
    if produced.failed and quiet:
        print(produced.verdicts, file=sys.stderr)
    if not quiet:
        _report(stack, out_dir, produced, baselines, verbose)
    return EXIT_MANDATORY_VIOLATION if produced.failed else 0


def _cache_key(cache: ResultCache, stack: str, root: Path, out_dir: Path) -> str | None:
    """The result-cache key; None (run the preview) when a tool or the pinned chart is missing."""
    try:
        tools = [find_tool("helm", root), find_tool("kubectl", root)]
        pinned_chart_dir(root)
    except RenderSetupError:
        return None  # the preview itself reports what is missing
    return cache.key(stack, root, out_dir, tools)


def _produce(stack: str, root: Path, out_dir: Path) -> Produced | int:
    """Run the program, render, gate: what the preview writes and prints, or the exit code of a refusal."""
    from preview.diff.mig_plan import mig_plan_files, mig_plan_lines
    from preview.gate.config import PolicyConfigError
    from preview.gate.evaluate import run_gate
    from preview.gate.report import report_text, verdict_table
    from preview.render.rendered import render_program
    from preview.run.files import preview_files, resource_tree
    from preview.run.resource_options import option_files
    from preview.run.runner import run_program
    from preview.run.stack_file import StackFileError

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
    try:
        rendered = render_program(run)  # once: the files and the gate share it
    except RenderSetupError as error:
        print(f"error: stack {stack}: {error}", file=sys.stderr)
        return 1
    files = {**preview_files(run), **rendered.files(), **mig_plan_files(run), **option_files(run)}
    try:
        gate = run_gate(run, root, rendered)
    except PolicyConfigError as error:
        write_files(files, out_dir)
        print(f"error: stack {stack}: policy config {error}", file=sys.stderr)
        return 2
    files[REPORT_NAME] = report_text(gate)
    return Produced(
        files=files,
        notices=list(dict.fromkeys(run.notices)),  # each notice once
        tree=resource_tree(run.registrations),
        verdicts=verdict_table(gate),
        failed=gate.failed,
        mig_lines=mig_plan_lines(run, out_dir, files),
    )


def _report(stack: str, out_dir: Path, produced: Produced, baselines: BaselineSource | None, verbose: bool) -> None:
    """The console: notices, the summary against the base, the driver and MIG plans, where the files are."""
    print(f"Stack {stack} (offline preview: the real program under mocks, no cloud calls)")
    if verbose:
        print(produced.tree)
    for notice in produced.notices:
        print(notice if notice.startswith("warning: ") else f"notice: {notice}")
    baseline = baselines.get(stack) if baselines else None
    print_summary(stack, out_dir, baseline)
    previous = baseline.folder / "outputs.json" if baseline and baseline.folder else None
    outputs = json.loads(produced.files["outputs.json"])
    for line in [*driver_upgrade_plan(previous, outputs), *produced.mig_lines]:
        print(line)
    if verbose:
        print(produced.verdicts)
    more = "" if verbose else " (the resource tree and every finding: --verbose)"
    print(f"wrote {len(produced.files)} files to {out_dir}{more}")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and preview each stack."""
    parser = argparse.ArgumentParser(prog="python -m preview", description=__doc__)
    parser.add_argument("stacks", nargs="*", help="stack names (default: every Pulumi.<stack>.yaml)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "preview", help="output root")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument("--verbose", action="store_true", help="also print the resource tree and every finding")
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="project folder (Pulumi.<stack>.yaml, __main__.py)"
    )
    parser.add_argument("--base", default="HEAD", help="git revision the summary compares with (default: HEAD)")
    parser.add_argument("--base-dir", type=Path, help="compare with the previews in this folder (DIR/<stack>/)")
    parser.add_argument("--no-base", action="store_true", help="compare with nothing")
    args = parser.parse_args(argv)
    if args.stacks:
        stacks = args.stacks
    else:
        from preview.run.stack_file import available_stacks

        stacks = available_stacks(args.root)
    baselines = None if args.quiet else _baselines(args.root, args.base, args.base_dir, args.no_base, stacks)
    codes = [
        preview_stack_guarded(stack, args.out, args.quiet, args.root, baselines=baselines, verbose=args.verbose)
        for stack in stacks
    ]
    return max(codes, default=0)


def _baselines(root: Path, ref: str, folder: Path | None, none: bool, stacks: list[str]) -> BaselineSource | None:
    """The base previews the summary compares with: a folder, a git revision (started now), or none."""
    if folder is not None:
        return FolderBaseline(folder)
    if none or os.environ.get(NO_BASE_ENV) or not is_checkout(root):
        return None
    try:
        return PendingBaseline(root, ref, stacks).start()
    except (BaselineError, OSError) as error:
        print(f"note: no base preview to compare with: {error}", file=sys.stderr)
        return None


def preview_stack_guarded(
    stack: str,
    out_root: Path,
    quiet: bool,
    root: Path,
    baselines: BaselineSource | None = None,
    verbose: bool = False,
) -> int:
    """``preview_stack``, with a bug reported as one line and a log file instead of a traceback (exit 1).

    Public: ``make diff`` (``preview.diff.review``) previews its stacks through it too.
    """
    try:
        return preview_stack(stack, out_root, quiet, root, baselines, verbose)
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
