"""What the controller does to the cluster: one small object per API call, performed in order.

A reconcile turns observations into a list of these per node; the list stops at the first call that
fails, and the next reconcile computes it again from what it then observes (level-triggered). Every
action is idempotent: a Node patch carries the ``resourceVersion`` it was computed from (a stale one is a
409, never a blind overwrite), a Lease create that finds the Lease is a success, a delete that finds
nothing is a success.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Action:
    """One API call."""


@dataclass(frozen=True)
class PatchNode(Action):
    """A JSON merge patch of the Node, with ``metadata.resourceVersion`` (optimistic concurrency)."""

    node: str
    patch: dict[str, Any]
    #: What this write does, in words (for the Events and the log).
    why: str = ""


@dataclass(frozen=True)
class CreateLease(Action):
    """Create the node's Lease (named by its UID); an existing one is fine."""

    name: str
    pool: str
    node: str
    annotations: dict[str, str] = field(default_factory=dict)
    #: Written on the node when the API refuses the Lease (a quota, a webhook), with the refusal appended to its
    #: detail: a slot that could not be taken leaves its trace where people look.
    on_refused: PatchNode | None = None


@dataclass(frozen=True)
class AnnotateLease(Action):
    """Set annotations on a Lease (read, change, write with its resourceVersion)."""

    name: str
    annotations: dict[str, str]


@dataclass(frozen=True)
class DeleteLease(Action):
    """Delete a Lease, with its resourceVersion as a precondition."""

    name: str
    resource_version: str


@dataclass(frozen=True)
class Evict(Action):
    """The Eviction API for one pod on a node the controller holds (PodDisruptionBudgets respected)."""

    namespace: str
    pod: str
    node: str


@dataclass(frozen=True)
class CreatePod(Action):
    pod: dict[str, Any]


@dataclass(frozen=True)
class DeletePod(Action):
    namespace: str
    pod: str


@dataclass(frozen=True)
class Event(Action):
    """An Event about a Node (best effort: a failed Event stops nothing)."""

    node: str
    uid: str
    reason: str
    message: str
    warning: bool = False
