"""Naming the invariant each fault test proves, and checking all of them after every test.

Every fault test carries ``@proves(...)`` with the invariants it is about; the world checks all nine after
every write anyway, so a test fails on any violation, named or not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tests.node_agent.sim.world import World

INVARIANTS = {
    "I1": "never more than the budget in maintenance",
    "I2": "no node cordoned without a state and a reason; no finished node holding a slot",
    "I3": "no driver or MIG change while a GPU pod runs on the node",
    "I4": "a holder that touched its node is never taken over",
    "I5": "every flow ends done, or failed/waiting with a reason",
    "I6": "a failure halts the pool",
    "I7": "one budget per pool, shared with the GPU Operator and everything else that takes a node away",
    "I8": "no write without leadership",
    "I9": "a CUDA proof takes a slot of the budget: never beyond it, never in a halted pool, never with a cordon",
}
#: test name -> the invariants it names.
PROVES: dict[str, tuple[str, ...]] = {}

F = TypeVar("F", bound=Callable[..., Any])


def proves(*invariants: str) -> Callable[[F], F]:
    unknown = set(invariants) - set(INVARIANTS)
    assert not unknown, unknown

    def mark(test: F) -> F:
        PROVES[test.__name__] = invariants
        return test

    return mark


def assert_sound(world: World) -> None:
    """No invariant violated, no forbidden call made, no transition outside the documented table."""
    assert world.metrics.details == [], world.metrics.details
    assert world.api.forbidden == [], world.api.forbidden
    undeclared = [line for replica in world.replicas for line in replica.log if "UndeclaredTransition" in line]
    assert undeclared == [], undeclared


def done(world: World) -> None:
    """Run the world until every node is settled, then check every invariant."""
    world.settle()
    assert_sound(world)


def until_state(world: World, node: str, state: str, limit: float = 3600.0) -> None:
    """Run the world until ``node`` is in ``state`` (and fail if it never gets there)."""
    world.run(limit, until=lambda: world.state(node) == state)
    assert world.state(node) == state
