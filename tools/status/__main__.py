"""``python -m tools.status STACK [--kubeconfig PATH] [--context NAME] [--json]``: is the fleet as declared?

Exit codes: 0 every GPU node is conformant; 1 at least one is not (drift, failed, in-maintenance or unknown, a GPU
node of no declared pool, a declared bare-metal host missing from the cluster); 2 no comparison could be made: the
cluster cannot be read (no kubeconfig, credentials refused, the API server unreachable or failing), or the stack
cannot be planned (no such stack file, a refused config). Errors are one line on stderr (a refused stack: one
problem a line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from tools.status.declared import DeclarationError, load_declaration
from tools.status.document import document
from tools.status.live import ClusterUnreadable, api_client, read_cluster
from tools.status.table import DEFAULT_WIDTH, render
from tools.status.verdict import Verdict, judge_fleet

EXIT_CONFORMANT = 0
EXIT_NOT_CONFORMANT = 1
EXIT_UNREADABLE = 2
REPO_ROOT = Path(__file__).resolve().parents[2]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNREADABLE, f"error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m tools.status",
        description="Compare every GPU node of the live cluster with what the stack declares.",
        epilog="exit codes: 0 every GPU node is conformant; 1 at least one is not; 2 the cluster or the stack cannot be "
        "read. Each verdict and what to do: docs/operations.md, Is the fleet as declared?",
    )
    parser.add_argument("stack", help="the stack whose Pulumi.<stack>.yaml declares the fleet (dev, prod, ...)")
    parser.add_argument(
        "--kubeconfig",
        help="the kubeconfig to read the cluster with (default: KUBECONFIG, ~/.kube/config, in a pod its ServiceAccount)",
    )
    parser.add_argument("--context", help="the kubeconfig context (default: its current context)")
    parser.add_argument(
        "--json", action="store_true", help="print the versioned JSON document (docs/status.schema.json)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="every reason of each node, under its line")
    parser.add_argument("--problems", action="store_true", help="leave out the conformant nodes (they are counted)")
    parser.add_argument(
        "--width", type=int, help=f"the line width (default: COLUMNS, the terminal's, else {DEFAULT_WIDTH})"
    )
    return parser


def _colour(stream: object) -> bool:
    """ANSI colour only on a terminal, and never where ``NO_COLOR`` is set to anything (no-color.org)."""
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def _width(stream: object, asked: int | None) -> int:
    """``--width``, else ``COLUMNS``, else the terminal's, else (a file, a pipe) ``DEFAULT_WIDTH``."""
    if asked is not None:
        return asked
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if getattr(stream, "isatty", lambda: False)():
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return DEFAULT_WIDTH


def main(argv: Sequence[str] | None = None, root: Path = REPO_ROOT, now: datetime | None = None) -> int:
    args = _parser().parse_args(argv)
    now = now or datetime.now(UTC)
    try:
        declaration = load_declaration(args.stack, root)
    except DeclarationError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        live = read_cluster(api_client(args.kubeconfig, args.context), declaration.operator_namespace)
    except ClusterUnreadable as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_UNREADABLE
    statuses, others = judge_fleet(declaration, live.nodes, live.driver_pods, live.driver_pods_error)
    out = sys.stdout
    if args.json:
        out.write(json.dumps(document(declaration, live, statuses, others, now), indent=2) + "\n")
    else:
        lines = render(
            declaration,
            live,
            statuses,
            others,
            now,
            width=_width(out, args.width),
            colour=_colour(out),
            verbose=args.verbose,
            problems_only=args.problems,
        )
        out.write("\n".join(lines) + "\n")
    out.flush()
    conformant = all(status.verdict == Verdict.CONFORMANT for status in statuses)
    return EXIT_CONFORMANT if conformant else EXIT_NOT_CONFORMANT


if __name__ == "__main__":
    sys.exit(main())
