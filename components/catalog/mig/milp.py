"""The one call into the MILP solver (HiGHS through its own Python binding ``highspy``), silent and checked.

Both planners (``planner.plan_fleet``, ``pool_planner.plan_pools``) state their integer programs as a
cost vector, rows ``lb <= row . x <= ub`` and upper bounds, and ask ``solve``. Why one module:

- **Silence.** The planners' answers are printed by the CLI (``tools/mig.py``, ``--format yaml`` is
  pasted into a stack file) and run inside ``pulumi preview``; nothing of the solver may reach
  stdout. ``solve`` turns HiGHS's ``output_flag`` and ``log_to_console`` off, and HiGHS has printed
  straight to stdout with ``log_to_console`` false (ERGO-Code/HiGHS issue #2734, "Outputs to stdout even
  when log_to_console option is false"). So while HiGHS runs, file descriptor 1 points at stderr
  (flushing C stdio before giving it back), and whatever the native code prints lands on stderr.
- **Proof.** Every answer is re-checked in exact integer arithmetic; a status other than optimal or
  infeasible is an error (``MigPlanError``), never a heuristic answer.

Why ``highspy`` and not ``scipy.optimize.milp``, which wraps the same HiGHS: importing scipy's optimize
package costs about 0.8 CPU-s, ``highspy`` about 0.2, and every preview of a stack with ``mig.demand`` pays
it once. ``highspy`` is pinned at 1.12.0, the HiGHS that scipy 1.17.1 bundled, with the options scipy
passed (presolve on, ``mip_rel_gap`` 0). When the planner moved over, both solved the 1,742 programs that
``benchmarks/bench_mig_planner.py`` states and gave the same solution every time; what the tests keep
checking is that every answer is optimal (``tests/catalog``: against an exhaustive search). The solver
is imported only inside ``solve``, so a stack without ``mig.demand`` never loads it.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from components.catalog.mig.errors import MigPlanError

SOLVER = "HiGHS (highspy)"
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
    import highspy

    with stdout_to_stderr():  # some HiGHS builds print a banner when the solver object is made
        highs = highspy.Highs()
        for option, value in _OPTIONS.items():
            highs.setOptionValue(option, value)
        highs.passModel(_model(highspy, cost, rows, upper))
        highs.run()
    status = highs.getModelStatus()
    message = highs.modelStatusToString(status)
    if status == highspy.HighsModelStatus.kInfeasible:
        return None
    if status != highspy.HighsModelStatus.kOptimal:
        raise MigPlanError(f"the MILP solver ({SOLVER}) did not prove an optimum: status {int(status)}, {message}")
    values = highs.getSolution().col_value
    x = tuple(round(v) for v in values)
    exact = all(abs(v - r) < 1e-6 for v, r in zip(values, x, strict=True)) and all(
        0 <= v <= u for v, u in zip(x, upper, strict=True)
    )
    exact = exact and all(lb <= sum(a * v for a, v in zip(row, x, strict=True)) <= ub for row, lb, ub in rows)
    if not exact:
        raise MigPlanError(f"the MILP solver ({SOLVER}) returned a solution that fails the exact check: {message}")
    objective = sum(c * v for c, v in zip(cost, x, strict=True))
    bound = highs.getInfo().mip_dual_bound
    proven = objective if not math.isfinite(bound) else math.ceil(bound - 1e-6)
    # The wording stack outputs have carried since scipy.optimize.milp formatted it (``mig.demand[].solverStatus``).
    return Solution(
        x=x, objective=objective, bound=proven, status=f"{_SUCCESS} (HiGHS Status {int(status)}: {message})"
    )


#: HiGHS options: silent, proven optimal (no relative gap), bounded in time; presolve on as scipy ran it.
_OPTIONS: dict[str, object] = {
    "output_flag": False,
    "log_to_console": False,
    "mip_rel_gap": 0.0,
    "time_limit": TIME_LIMIT_S,
    "presolve": "on",
}
_SUCCESS = "Optimization terminated successfully."


def _model(highspy: Any, cost: Sequence[int], rows: Sequence[Row], upper: Sequence[float]) -> Any:
    """The integer program as a ``HighsLp``: all columns integer in ``[0, upper]``, the rows column-wise."""
    size = len(cost)
    model = highspy.HighsLp()
    model.num_col_ = size
    model.num_row_ = len(rows)
    model.col_cost_ = [float(c) for c in cost]
    model.col_lower_ = [0.0] * size
    model.col_upper_ = [float(u) for u in upper]
    model.row_lower_ = [float(lb) for _, lb, _ in rows]
    model.row_upper_ = [float(ub) for _, _, ub in rows]
    starts, indices, values = [0], [], []
    for column in range(size):
        for index, (row, _, _) in enumerate(rows):
            if row[column]:
                indices.append(index)
                values.append(float(row[column]))
        starts.append(len(indices))
    matrix = model.a_matrix_
    matrix.format_ = highspy.MatrixFormat.kColwise
    matrix.num_col_ = size
    matrix.num_row_ = len(rows)
    matrix.start_ = starts
    matrix.index_ = indices
    matrix.value_ = values
    model.integrality_ = [highspy.HighsVarType.kInteger] * size
    return model
