"""``python -m preview.diff.comment``: the pull-request comments, built by the base branch's code from ``diff.json``.

Why: the comment workflow (``.github/workflows/review-comment.yml``) holds a write token and must not
post text a pull request wrote. It checks out the base branch, and this module, from that checkout,

- takes only the stacks the base branch has (``Pulumi.<stack>.yaml``): a report for any other folder
  of the artifact is ignored, so an extra ``<dir>/diff.json`` cannot become another comment;
- reads each stack's ``diff.json`` against the schema (``preview.diff.diff_json``), with ``<`` and ``@``
  neutralised in every string (no raw HTML, no mentions), and renders the Markdown itself;
- writes a comment for every base stack: one whose report is missing or invalid says so for this
  commit, so an earlier comment never stays up as if it were current.

The numbers still come from the pull request's own run (a fork's code can change them); the comment
says so, and names the commit it reports on.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from preview.diff.diff_json import STACK_NAME, DiffJsonError, load_diff
from preview.diff.report_markdown import MARKER, markdown_report
from preview.run.stack_file import available_stacks

MAX_REPORT_BYTES = 5_000_000


def neutralised(value: Any) -> Any:
    """Every string with ``<`` shown as ``‹`` (no HTML tag can open) and ``@`` followed by a zero-width space."""
    if isinstance(value, str):
        return value.replace("<", "\u2039").replace("@", "@\u200b")
    if isinstance(value, list):
        return [neutralised(item) for item in value]
    if isinstance(value, dict):
        return {key: neutralised(item) for key, item in value.items()}
    return value


def provenance(commit: str) -> str:
    """The line that says where the numbers come from."""
    return (
        f"*Rendered by the base branch's code from the `diff.json` the pull request's run made for commit "
        f"`{commit[:12]}`; that run executes the pull request's own code.*"
    )


def missing_report(stack: str, commit: str, why: str) -> str:
    """The comment of a stack without a usable report: it replaces whatever was shown before."""
    return "\n".join(
        [
            MARKER.format(stack=stack),
            f"### Stack `{stack}`: no review for commit `{commit[:12]}`",
            "",
            f"{why} The previous report no longer applies; see the `review-diff` job's log.",
            "",
        ]
    )


def comment_for(stack: str, report: Path, commit: str) -> str:
    """The comment text of one stack of the base branch."""
    if not report.is_file():
        return missing_report(stack, commit, "The pull request's run wrote no report for this stack.")
    if report.stat().st_size > MAX_REPORT_BYTES:
        return missing_report(stack, commit, "Its report is larger than any report this project writes.")
    try:
        document = json.loads(report.read_text(encoding="utf-8"))
        diff = load_diff(json.dumps(neutralised(document)))
    except (UnicodeDecodeError, json.JSONDecodeError, DiffJsonError) as error:
        return missing_report(stack, commit, f"Its report was refused: {neutralised(str(error))[:300]}.")
    if diff.stack != stack:
        return missing_report(stack, commit, "Its report is about another stack.")
    marker, header, rest = markdown_report(diff, full_report="the `review-diff` artifact").split("\n", 2)
    return "\n".join([marker, header, "", provenance(commit), rest])


def main(argv: list[str] | None = None) -> int:
    """Write ``<out>/<stack>.md`` for every stack of the base checkout; print each stack's name."""
    parser = argparse.ArgumentParser(prog="python -m preview.diff.comment", description=__doc__)
    parser.add_argument("--artifact", type=Path, required=True, help="the downloaded review-diff artifact")
    parser.add_argument("--out", type=Path, required=True, help="where the comments are written")
    parser.add_argument("--commit", required=True, help="the pull request's commit the run tested")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the base branch's checkout")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        print(f"error: --commit {args.commit!r} is not a commit id", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for stack in available_stacks(args.root):
        if not re.fullmatch(STACK_NAME, stack):
            continue
        text = comment_for(stack, args.artifact / stack / "diff.json", args.commit)
        (args.out / f"{stack}.md").write_text(text, encoding="utf-8")
        print(stack)
    return 0


if __name__ == "__main__":
    sys.exit(main())
