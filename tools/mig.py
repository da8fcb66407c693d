"""Command line for MIG: list a model's profiles, check one GPU's layout, plan a demand.

    python -m tools.mig profiles --model H100-80GB
    python -m tools.mig check --model A100-80GB 4g.40gb=1 3g.40gb=1
    python -m tools.mig plan --model H100-80GB --gpus 16 1g.10gb=10 3g.40gb=3
    python -m tools.mig plan --fleet A100-80GB=8 --fleet H100-80GB=16 1g.10gb=40 7g.80gb=4
    python -m tools.mig plan --model H100-80GB --gpus 16 --format yaml 1g.10gb=40 3g.40gb=12

A tool, not a fact: it asks the MIG catalog (``components.catalog.mig``) and prints stack config
through ``components.mig.plan_yaml``, and nothing in the product imports it. The solver prints
nothing on stdout (``components.catalog.mig.milp``), so ``--format yaml`` can be pasted as it is.

``--format yaml`` prints one ``mig`` block per node (``--gpus-per-node``, default 8), ready to paste
as a node's ``mig`` key, after the ``mig.demand`` block that makes the stack check the demand.

Exit codes: 0 done; 1 the answer is "no" (layout cannot be placed, fleet too small);
2 bad input (unknown model or profile, malformed PROFILE=COUNT). Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from components.catalog.mig import (
    MigError,
    MigLayoutError,
    MigPlan,
    MigPlanError,
    Placement,
    UnknownMigProfile,
    mig_gpu,
    place,
    plan_fleet,
)
from components.mig.plan_yaml import MIG_COMMAND, plan_yaml

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump), still with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"error: {message}\n")


class _BadInput(Exception):
    """Malformed command-line input that argparse itself cannot see."""


def _counts(items: Sequence[str], what: str = "PROFILE") -> dict[str, int]:
    """``["1g.10gb=10", "3g.40gb=3"]`` -> ``{"1g.10gb": 10, "3g.40gb": 3}``."""
    counts: dict[str, int] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name or not raw.isdigit():
            raise _BadInput(f"expected {what}=COUNT with COUNT a whole number >= 0, got {item!r}")
        if name in counts:
            raise _BadInput(f"{what.lower()} {name} given twice")
        counts[name] = int(raw)
    return counts


def _fleet_size(raw: str) -> int:
    if not raw.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of GPUs >= 0, got {raw!r}")
    return int(raw)


def _fleet(args: argparse.Namespace) -> dict[str, int]:
    """``--model M --gpus N`` or ``--fleet M=N`` (repeatable), not both."""
    if args.fleet:
        if args.model is not None or args.gpus is not None:
            raise _BadInput("give either --model with --gpus, or --fleet MODEL=GPUS, not both")
        return _counts(args.fleet, "MODEL")
    if args.model is None or args.gpus is None:
        raise _BadInput("give --model with --gpus, or --fleet MODEL=GPUS (repeatable)")
    return {args.model: args.gpus}


def _gpus_per_node(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of GPUs >= 1, got {raw!r}")
    return int(raw)


def _layout_text(gpu: Placement) -> str:
    return ", ".join(f"{n} x {name}" for name, n in gpu.layout.items()) or "(empty)"


def _profiles(args: argparse.Namespace) -> int:
    gpu = mig_gpu(args.model)
    g = gpu.geometry
    print(
        f"{gpu.model}: {g.name}, at most {g.max_gpu_instances} GPU instances; PCI ids {', '.join(gpu.pci_device_ids)}"
    )
    print(f"{'profile':<12} {'id':>3} {'compute':>7} {'memory':>6} {'max':>3}  starts")
    for p in gpu.profiles:
        starts = ",".join(map(str, p.starts))
        print(
            f"{p.name:<12} {p.gi_profile_id:>3} {p.compute_slices:>7} {p.memory_slices:>6} {p.max_instances:>3}  {starts}"
        )
    return 0


def _check(args: argparse.Namespace) -> int:
    placement = place(args.model, _counts(args.layout))
    print(f"{args.model}: fits: {placement.describe()}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    result: MigPlan = plan_fleet(_counts(args.demand), _fleet(args))
    if args.format == "yaml":
        print(plan_yaml(result, args.gpus_per_node), end="")
        return 0
    print(f"{result.model}: GPUs used {result.gpus_used} of {result.fleet_size}, proven optimal: {result.status}")
    for index, gpu in enumerate(result.gpus):
        model = f"{gpu.model} " if len(result.fleet) > 1 else ""
        print(f"gpu {index}: {model}{_layout_text(gpu)}  [{gpu.describe()}]")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=MIG_COMMAND, description="MIG profiles, placement and planning.")
    commands = parser.add_subparsers(dest="command", required=True)

    profiles = commands.add_parser("profiles", help="list a model's GPU-instance profiles")
    profiles.add_argument("--model", required=True)
    profiles.set_defaults(run=_profiles)

    check = commands.add_parser("check", help="place one GPU's layout, or say why it cannot be placed")
    check.add_argument("--model", required=True)
    check.add_argument("layout", nargs="*", metavar="PROFILE=COUNT")
    check.set_defaults(run=_check)

    planning = commands.add_parser("plan", help="pack a demand onto the fewest GPUs")
    planning.add_argument("--model", help="the fleet's GPU model (with --gpus)")
    planning.add_argument("--gpus", type=_fleet_size, help="GPUs in the fleet (with --model)")
    planning.add_argument(
        "--fleet", action="append", default=[], metavar="MODEL=GPUS", help="a mixed fleet: GPUs per model (repeatable)"
    )
    planning.add_argument("--format", choices=("text", "yaml"), default="text", help="yaml: per-node mig blocks")
    planning.add_argument("--gpus-per-node", type=_gpus_per_node, default=8, help="for --format yaml (default 8)")
    planning.add_argument("demand", nargs="+", metavar="PROFILE=COUNT")
    planning.set_defaults(run=_plan)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except (_BadInput, UnknownMigProfile) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (MigLayoutError, MigPlanError) as error:
        # A well-formed question whose answer is "no" (the CLI already refused malformed counts).
        print(f"error: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except MigError as error:  # unknown model, model without MIG
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return code


if __name__ == "__main__":
    sys.exit(main())
