"""What one decision reads besides the node: the settings, this replica's clock and observations, the pool."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.catalog.node_agent import (
    State,
)
from components.catalog.proof import PoolProof
from components.node_agent.agent.controller.view import PoolView
from components.node_agent.agent.settings import Settings

KNOWN_STATES = frozenset(state.value for state in State)


@dataclass(frozen=True)
class Context:
    """Everything one decision reads besides the node."""

    settings: Settings
    now: float
    namespace: str
    pool: PoolView | None
    #: The node may take a slot now (decided per pool, in name order, by the reconcile).
    granted: bool = False
    #: Seconds since this replica first saw each time mark of the node's record (``since``, ``step_at``,
    #: ``evicting_since``): every timeout is measured on this replica's own clock from what it observed, never by
    #: comparing a time another replica (or the API server) wrote with this one's clock.
    ages: dict[str, float] = field(default_factory=dict)
    #: The node may take a slot for its CUDA proof now (``decisions/cuda.py``, granted after the rollouts' nodes).
    proof: bool = False
    #: What the node's pool declares (``proving.declaration``); None: nothing, and no proof.
    declaration: PoolProof | None = None
    #: The node's pool is busy with the controller's rollout and the node is one the throttle holds the operator off
    #: (``pool_hold.holdable``): a CUDA proof starting on it carries the throttle's labels in its own write.
    hold_operator: bool = False

    def age(self, mark: str) -> float:
        """Seconds this replica has seen ``mark`` of the node's record (0 for a mark it has not seen yet)."""
        return self.ages.get(mark, 0.0)
