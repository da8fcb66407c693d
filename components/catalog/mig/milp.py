"""The one call into the MILP solver (HiGHS through ``scipy.optimize.milp``), silent and checked.

Both planners (``planner.plan_fleet``, ``pool_planner.plan_pools``) state their integer programs as a
cost vector, rows ``lb <= row . x <= ub`` and upper bounds, and ask ``solve``. Why one module:

- **Silence.** The planners' answers are printed by the CLI (``tools/mig.py``, ``--format yaml`` is
  pasted into a stack file) and run inside ``pulumi preview``; nothing of the solver may reach
  stdout. ``scipy.optimize.milp`` turns off HiGHS's ``log_to_console`` only (scipy 1.17.1
  ``scipy/optimize/_milp.py`` ``_milp_iv``: ``'log_to_console': options.pop("disp", False)``) and
  leaves HiGHS's ``output_flag`` on, and HiGHS has printed straight to stdout with
  ``log_to_console`` false (ERGO-Code/HiGHS issue #2734, "Outputs to stdout even when log_to_console
  option is false"). So ``solve`` passes ``output_flag: False`` as well and, while HiGHS runs, points
  file descriptor 1 at stderr (flushing C stdio before giving it back), so whatever the native code
  prints lands on stderr.
- **Proof.** Every answer is re-checked in exact integer arithmetic; a status other than optimal or
  infeasible is an error (``MigPlanError``), never a heuristic answer.

The solver is imported only inside ``solve``, so a stack without ``mig.demand`` never loads scipy.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from components.catalog.mig.errors import MigPlanError

SOLVER = "HiGHS (scipy.optimize.milp)"
TIME_LIMIT_S = 30.0  # far above any solve seen (docs/mig.md); a solve that hits it is reported, not used
INF = float("inf")

Vector = tuple[int, ...]
Row = tuple[Sequence[int], float, float]  # (coefficients, lower bound, upper bound)


@dataclass(frozen=True)
class Solution:
    """An optimal integer point, its objective, the solver's proven bound and its status message."""

    x: tuple[int, ...]
    objective: int
    bound: int
    status: str


def _flush_c_stdio() -> None:
    """Flush the C library's stdout buffer (HiGHS's ``printf``), where the platform lets us reach it."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While the block runs, what native code writes to file descriptor 1 goes to descriptor 2.

    Python's own ``sys.stdout`` is flushed first so nothing printed before the block moves. Where the
    descriptors cannot be duplicated (a closed stdout), the block runs as it is.
    """
    with contextlib.suppress(ValueError, OSError):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    try:
        try:
            os.dup2(2, 1)
        except OSError:
            yield
            return
        try:
            yield
        finally:
            _flush_c_stdio()
            os.dup2(saved, 1)
    finally:
        os.close(saved)


def solve(cost: Sequence[int], rows: Sequence[Row], upper: Sequence[float]) -> Solution | None:
    """min cost . x over integers 0 <= x <= upper with lb <= row . x <= ub; None when infeasible.

    The solver's answer is re-checked in exact integer arithmetic before it is used, so a numerical
    slip of the floating-point solver is an error, not a wrong plan.
    """
    size = len(cost)
    if size == 0:  # a fleet of no GPUs: feasible only when nothing is needed
        feasible = all(lb <= 0 <= ub for _, lb, ub in rows)
        return Solution(x=(), objective=0, bound=0, status="no GPUs to choose from") if feasible else None
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    matrix = np.array([row for row, _, _ in rows], dtype=float).reshape(len(rows), size)
    with warnings.catch_warnings(), stdout_to_stderr():
        # scipy warns that ``output_flag`` is passed to HiGHS verbatim: that is what it is meant to do.
        warnings.filterwarnings("ignore", message="Unrecognized options detected", category=RuntimeWarning)
        result = milp(
            np.array(cost, dtype=float),
            integrality=np.ones(size),
            bounds=Bounds(np.zeros(size), np.array(upper, dtype=float)),
            constraints=[LinearConstraint(matrix, [lb for _, lb, _ in rows], [ub for _, _, ub in rows])]
            if rows
            else None,
            options={
                "disp": False,
                "output_flag": False,
                "mip_rel_gap": 0.0,
                "time_limit": TIME_LIMIT_S,
                "presolve": True,
            },
        )
    if result.status == 2:
        return None
    if result.status != 0 or result.x is None:
        raise MigPlanError(
            f"the MILP solver ({SOLVER}) did not prove an optimum: status {result.status}, {result.message}"
        )
    x = tuple(round(v) for v in result.x)
    exact = all(abs(v - r) < 1e-6 for v, r in zip(result.x, x, strict=True)) and all(
        0 <= v <= u for v, u in zip(x, upper, strict=True)
    )
    exact = exact and all(lb <= sum(a * v for a, v in zip(row, x, strict=True)) <= ub for row, lb, ub in rows)
    if not exact:
        raise MigPlanError(
            f"the MILP solver ({SOLVER}) returned a solution that fails the exact check: {result.message}"
        )
    objective = sum(c * v for c, v in zip(cost, x, strict=True))
    bound = getattr(result, "mip_dual_bound", None)
    proven = objective if bound is None else int(np.ceil(bound - 1e-6))
    return Solution(x=x, objective=objective, bound=proven, status=str(result.message))
