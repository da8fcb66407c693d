"""Scenarios for the transition table's rarer rows: the work going away, refusals that change, a new layout after a
node is done, a skip label someone else set, and the state label written back after a hand edit in every state.

Each asserts the row's effect on the node; together with the fault, stranding and cooperation scenarios they make
the controller take every row of the table (``test_transition_table.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import gpu_operator_upgrade as operator
from components.catalog.node_agent import (
    MIG_DESIRED_LABEL,
    STATE_LABEL,
    UPGRADE_SKIP_LABEL,
    Reason,
    State,
)
from tests.node_agent.invariants import done, proves
from tests.node_agent.sim.actors import LAYOUTS
from tests.node_agent.sim.world import World


def on_write_to(world: World, node: str, state: State, act: Any) -> None:
    """Run ``act`` once, right after the controller's write that moves ``node`` to ``state``."""
    fired: list[bool] = []

    def watch(kind: str, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if fired or kind != "nodes" or key != node or new is None or world.api.caller != "controller":
            return
        if (new["metadata"].get("labels") or {}).get(STATE_LABEL) == state.value:
            fired.append(True)
            world.at(0.1, act)

    world.api.watchers.append(watch)


@proves("I5")
def test_work_that_goes_away_while_cordoned_gives_the_node_back() -> None:
    """The desired layout is withdrawn right after the cordon: the node is given back untouched."""
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    on_write_to(world, "node-000", State.CORDONED, lambda: world.label("node-000", {MIG_DESIRED_LABEL: None}))
    done(world)
    assert world.state("node-000") == State.IDLE
    assert not world.node("node-000")["spec"].get("unschedulable")
    assert world.hosts["node-000"].mig_layout == "all-disabled"


@proves("I5")
def test_a_node_the_operator_takes_while_cordoned_is_released_to_it() -> None:
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    world.upgrades.running = True  # this test plays the operator
    world.queue = [item for item in world.queue if getattr(item[2], "__name__", "") != "reconcile"]
    held: dict[str, str | None] = {operator.UPGRADE_STATE_LABEL: operator.UpgradeState.CORDON_REQUIRED.value}
    on_write_to(world, "node-000", State.CORDONED, lambda: world.label("node-000", held))
    world.run(60.0)
    assert (world.state("node-000"), world.reason("node-000")) == (State.WAITING_SLOT, Reason.OPERATOR_UPGRADING)
    assert world.lease_of("node-000") is None
    world.label("node-000", {operator.UPGRADE_STATE_LABEL: operator.UpgradeState.DONE.value})
    world.human_patch("node-000", {"spec": {"unschedulable": False}})  # the operator's own uncordon
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5")
@pytest.mark.parametrize("foreign_skip_label", [False, True])
def test_a_new_layout_after_done_starts_again(foreign_skip_label: bool) -> None:
    world = World(nodes=1, flow="mig", budget="1", pods_per_node=0)
    if foreign_skip_label:
        world.label("node-000", {UPGRADE_SKIP_LABEL: "true"})  # set by someone else: no fencing pass needed
    done(world)
    assert world.state("node-000") == State.DONE
    world.label("node-000", {MIG_DESIRED_LABEL: "all-3g.40gb"})
    world.set_settings(mig_resources={"a100": LAYOUTS["all-3g.40gb"]})
    done(world)
    assert world.state("node-000") == State.DONE
    assert world.hosts["node-000"].mig_layout == "all-3g.40gb"


@proves("I5")
def test_a_waiting_node_whose_work_goes_away_is_idle() -> None:
    world = World(nodes=2, flow="mig", budget="1", pods_per_node=0)
    world.run(30.0)
    assert world.reason("node-001") == Reason.BUDGET_FULL
    world.label("node-001", {MIG_DESIRED_LABEL: None})  # the pool no longer wants a layout on it
    done(world)
    assert world.state("node-001") == State.IDLE
    assert world.hosts["node-001"].mig_layout == "all-disabled"


@proves("I5")
def test_a_waiting_node_a_new_inspection_refuses_is_refused() -> None:
    world = World(nodes=2, budget="1", settings={"recheck_seconds": 60})
    world.run(30.0)
    assert world.reason("node-001") == Reason.BUDGET_FULL
    host = world.hosts["node-001"]
    host.owned |= host.files & {"/usr/bin/nvidia-smi", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"}
    world.run(180.0)
    assert (world.state("node-001"), world.reason("node-001")) == (State.REFUSED, Reason.MIXED_INSTALL)
    assert not world.node("node-001")["spec"].get("unschedulable")


@proves("I5")
@pytest.mark.parametrize("foreign_skip_label", [False, True])
def test_a_refusal_that_no_longer_holds_lets_the_node_go_on(foreign_skip_label: bool) -> None:
    world = World(nodes=1, budget="1")
    if foreign_skip_label:
        world.label("node-000", {UPGRADE_SKIP_LABEL: "true"})
    world.hosts["node-000"].disk_full = True
    world.run(120.0)
    assert (world.state("node-000"), world.reason("node-000")) == (State.REFUSED, Reason.DISK_FULL)
    world.hosts["node-000"].disk_full = False
    world.set_settings(recheck_seconds=60)
    done(world)
    assert world.state("node-000") == State.DONE


@proves("I5")
def test_a_refused_node_whose_driver_is_gone_is_idle() -> None:
    world = World(nodes=1, budget="1")
    world.hosts["node-000"].disk_full = True
    world.run(120.0)
    assert world.state("node-000") == State.REFUSED
    world.hosts["node-000"].files.clear()  # someone removed the driver by hand
    world.hosts["node-000"].host_modules = False
    world.hosts["node-000"].persistenced = False
    world.hosts["node-000"].disk_full = False
    world.set_settings(recheck_seconds=60)
    done(world)
    assert world.state("node-000") == State.IDLE


HAND_EDITED = {
    State.CORDONED: ("mig", {}),
    State.EVICTING: ("mig", {}),
    State.MIG_APPLYING: ("mig", {}),
    State.MIG_RECOVERING: ("mig", {"fail_once": True}),
    State.SMOKE_TESTING: ("mig", {}),
    State.UNINSTALLING: ("driver", {}),
    State.VERIFYING: ("driver", {}),
    State.REBOOTING: ("driver", {"modules_busy": True}),
    State.HANDING_OVER: ("driver", {}),
}


@proves("I5")
@pytest.mark.parametrize("state", sorted(HAND_EDITED))
def test_a_state_label_removed_in_any_state_is_written_back_and_the_flow_ends_done(state: State) -> None:
    flow, options = HAND_EDITED[state]
    world = World(nodes=1, flow=flow, budget="1")
    host = world.hosts["node-000"]
    host.modules_busy = bool(options.get("modules_busy"))
    if options.get("fail_once"):
        world.mig.fail.add("node-000")
        on_write_to(world, "node-000", State.MIG_RECOVERING, lambda: world.mig.fail.discard("node-000"))
    on_write_to(
        world, "node-000", state, lambda: world.human_patch("node-000", {"metadata": {"labels": {STATE_LABEL: None}}})
    )
    done(world)
    assert world.state("node-000") == State.DONE
    assert not world.node("node-000")["spec"].get("unschedulable")
    assert (state.value and (State.IDLE.value, state.value)) in world.metrics.transitions
