"""The diff of a stack whose working-tree config is refused: what the review says instead of nothing.

Why: when the head's stack file or config is refused (``python -m preview`` exits 2), no preview is
written, so there is nothing to compare; writing no report at all left the pull request showing the
previous comment as if it were current. The refused stack gets a ``StackDiff`` with every problem
instead, and its reports say that ``pulumi up`` would stop before creating anything.
"""

from __future__ import annotations

from pathlib import Path

from preview.diff.changes import StackDiff
from preview.gate.config import PolicyConfigError, config_path, load_policy_config
from preview.run.runner import run_program
from preview.run.stack_file import StackFileError

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


def refused_diff(stack: str, root: Path, base_label: str, head_label: str) -> StackDiff:
    """A diff that holds only the refusal: nothing is created, updated or deleted, and why."""
    return StackDiff(stack=stack, base=base_label, head=head_label, refused=refusal_problems(stack, root))
