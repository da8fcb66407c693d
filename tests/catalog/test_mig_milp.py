"""The MILP solver never writes to stdout: the CLI's YAML and the preview's output stay clean.

HiGHS is native code: what it prints goes to file descriptor 1 directly, past ``sys.stdout``, so these
tests capture at the descriptor level (``capfd``).
"""

from __future__ import annotations

import ctypes
import random
from collections.abc import Callable
from typing import Any

import highspy
import pytest

from components.catalog.mig import PoolShape, maximal_layouts, plan_fleet, plan_pools

_LIBC = ctypes.CDLL(None)


def _large_pools() -> list[PoolShape]:
    """40 pools of 8-GPU H100 nodes, most with recorded layouts: two solves of a few hundred columns each."""
    draw = random.Random(7)
    layouts = [dict(layout) for layout in maximal_layouts("H100-80GB")]
    pools = []
    for index in range(40):
        current = tuple(draw.choice(layouts) if draw.random() < 0.6 else None for _ in range(8))
        pools.append(PoolShape(f"pool-{index}", "H100-80GB", draw.randint(1, 6), 8, current if index % 4 else None))
    return pools


def test_large_plans_print_nothing_on_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    demand = {"1g.10gb": 700, "2g.20gb": 150, "3g.40gb": 120, "1g.20gb": 60, "7g.80gb": 10}
    planned = plan_pools(demand, _large_pools())
    fleet = plan_fleet(
        {"1g.10gb": 90_000, "2g.20gb": 30_000, "3g.40gb": 20_000}, {"H100-80GB": 100_000, "A100-80GB": 50_000}
    )
    out, _ = capfd.readouterr()
    assert planned.gpus_used > 100 and fleet.gpus_used > 10_000  # large problems really were solved
    assert out == ""


def test_what_the_native_solver_prints_goes_to_stderr_not_stdout(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in for HiGHS printing from C with log_to_console off (ERGO-Code/HiGHS issue #2734: "degeneracy?
    # not possible to find non-active constraint to leave basis" on stdout): a printf, flushed, around the
    # real solve.
    real: Callable[..., Any] = highspy.Highs.run

    def chatty_run(*args: Any, **kwargs: Any) -> Any:
        _LIBC.printf(b"degeneracy? not possible to find non-active constraint to leave basis\n")
        _LIBC.fflush(None)
        return real(*args, **kwargs)

    monkeypatch.setattr(highspy.Highs, "run", chatty_run)
    print("before the plan")
    planned = plan_pools({"3g.40gb": 2}, [PoolShape("a", "H100-80GB", 1, 2, ({"1g.10gb": 7}, None))])
    print("after the plan")
    out, err = capfd.readouterr()
    assert planned.repartitioned == 1
    assert out == "before the plan\nafter the plan\n"
    assert "degeneracy?" in err
