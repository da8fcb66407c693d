"""One fault at every API call of a whole rollout: each call of the controller and the executor fails once.

A baseline run counts the calls a one-node rollout makes; then, for every call number, a run where that
call fails (the kind rotates through 503, a timeout before the write, a timeout after the write, a 409).
Every run must end done with no invariant violated (I1-I6): no call is one whose failure strands a node.
"""

from __future__ import annotations

import pytest

from components.catalog.node_agent import State
from tests.node_agent.invariants import assert_sound, proves
from tests.node_agent.sim.world import World

KINDS = ("503", "timeout", "timeout-after", "409")


def _calls(flow: str) -> int:
    world = World(nodes=1, flow=flow)
    world.settle()
    return world.faults.calls


@pytest.mark.parametrize("flow", ["driver", "mig"])
@proves("I1", "I2", "I3", "I4", "I5", "I6")
def test_a_failure_at_every_call_of_a_rollout_is_survived(flow: str) -> None:
    total = _calls(flow)
    assert total > 100
    stuck = []
    for call in range(1, total + 1):
        kind = KINDS[call % len(KINDS)]
        world = World(nodes=1, flow=flow, script={call: kind})
        world.settle()
        assert_sound(world)
        if world.state("node-000") != State.DONE:
            stuck.append((call, kind, world.state("node-000"), world.reason("node-000")))
    assert stuck == []
