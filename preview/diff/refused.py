"""The diff of a stack whose working-tree config is refused: what the review says instead of nothing.

Why: when the head's stack file or config is refused (``python -m preview`` exits 2), no preview is
written, so there is nothing to compare; writing no report at all left the pull request showing the
previous comment as if it were current. The refused stack gets a ``StackDiff`` with every problem
instead, and its reports say that ``pulumi up`` would stop before creating anything.
"""

from __future__ import annotations

import json
from pathlib import Path

from preview.diff.changes import StackDiff
from preview.gate.config import PolicyConfigError, config_path, load_policy_config
from preview.run.runner import run_program
from preview.run.stack_file import StackFileError, load_stack_file

EXIT_REFUSED = 2


def refusal_problems(stack: str, root: Path) -> list[str]:
    """Every problem of the stack's file or config, one line each (the program refuses before any resource)."""
    try:
        run = run_program(stack, root)
    except (FileNotFoundError, StackFileError) as error:
        return [str(error)]
    if run.config_error is None:
        try:
            load_policy_config(stack, root)
        except PolicyConfigError as error:
            return [f"{config_path(stack, root).relative_to(root).as_posix()}: {error}"]
        return ["the preview was refused, but running the program again found no problem (see the log above)"]
    problems = getattr(run.config_error, "problems", None)
    return [str(p) for p in problems] if problems else [str(run.config_error)]


def removed_pools(stack: str, root: Path, base_folder: Path | None) -> list[str]:
    """GPU pools of the base preview (its ``gpuPools`` output) that the working tree's stack file no longer
    declares (in any platform's section): a refusal about quotas, MIG demand or a profile often follows
    from one, and the config check alone cannot see what the file was before."""
    outputs = base_folder / "outputs.json" if base_folder is not None else None
    if outputs is None or not outputs.is_file():
        return []
    try:
        before = set(json.loads(outputs.read_text()).get("gpuPools") or {})
        config = load_stack_file(root, stack).config
    except (OSError, ValueError):  # an unreadable base, or a stack file refused before its keys are known
        return []
    from components.stack.platforms.registry import PLATFORMS  # the platforms load the SDK: only for a refusal

    now = {name for platform in PLATFORMS.values() for name in platform.written_pool_names(config)}
    return sorted(before - now)


def refused_diff(
    stack: str, root: Path, base_label: str, head_label: str, base_folder: Path | None = None
) -> StackDiff:
    """A diff that holds only the refusal: nothing is created, updated or deleted, and why; and, when the
    change removed GPU pools that the base preview had, that too (the last line)."""
    problems = refusal_problems(stack, root)
    gone = removed_pools(stack, root, base_folder)
    if gone:
        problems.append(
            f"what changed since {base_label}: GPU pool(s) {', '.join(gone)} removed from the stack file; a problem "
            "above about a quota, MIG demand or a profile may follow from that"
        )
    return StackDiff(stack=stack, base=base_label, head=head_label, refused=problems)
