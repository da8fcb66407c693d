"""Which labels each node must carry, from the pools' selectors: a pure function from nodes to merge patches.

On an existing cluster (``cluster.kind: existing``) someone else provisions the GPU nodes, and each pool picks its
nodes by labels they already carry (``existing.pools.<pool>.nodeSelector``, matchLabels). Everything above the nodes
selects on the program's own labels (``gpu-platform.io/gpu=true``, the pool label ``gpu-platform.io/node-group``, the
GPU model, the driver group, the MIG config or the node agent's desired-MIG label), which the program cannot put on
nodes it cannot know at preview time, nor on nodes that join later. The labeller puts them there; this module decides
what it writes, and the labeller's admission policy (``components.node_agent.admission.labeller_policy``) is built
from the same :func:`parse_memberships`, so the two cannot disagree.

The rules, node by node:

- **Its pool** is the first pool, by sorted pool name, whose selector its labels match (every key, with its value).
- **Set**: a node of a pool gets every label of the pool whose value differs (missing or another value); a node
  already labelled gets no write.
- **Moved**: a node labelled for pool A (its pool label says A) whose labels now pick pool B also loses the labels A
  declares and B does not (A's hand-over opt-in must not follow it into B).
- **Left**: a node labelled for a declared pool whose labels match no selector any more loses exactly the labels its
  pool declares.
- **Held**: a node the rollout controller holds (its state label says anything but idle, done or refused: a slot, a
  failure a person must look at, or a value this code does not know) keeps every label and its pool until released:
  it may only get the missing or changed labels of the pool it is in.
- **Not ours**: a node whose pool label names a pool that is not declared here (another stack's, a bare-metal pool
  labelled by its NodePatch) is never written; a node with no pool label that matches no selector (a control-plane
  node, a CPU node) neither.
- **Never a selector key**: a declared label whose key is any pool's selector key is neither written nor removed:
  the selector's labels are whoever provisions the nodes'.

Every patch carries the resourceVersion of the node it was computed from: a node that changed since answers 409,
and its change is the next watch event, which decides again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from components.catalog.names import NODE_GROUP_LABEL
from components.catalog.node_agent import AGENT_PREFIX, STATE_LABEL, State

#: The directory the labeller's ConfigMap is mounted at, and the key (file) that holds the memberships JSON.
MEMBERSHIPS_DIR: Final = "/etc/gpu-platform/labeller"
MEMBERSHIPS_KEY: Final = "memberships.json"
#: On the labeller's pod template: the digest of its memberships, so that a change of them rolls the pod.
MEMBERSHIPS_DIGEST_ANNOTATION: Final = f"{AGENT_PREFIX}labeller-memberships-sha256"
#: The rollout controller's states in which a node is released: it may leave its pool.
RELEASED_STATES: Final = frozenset({State.IDLE.value, State.DONE.value, State.REFUSED.value})


@dataclass(frozen=True)
class Pool:
    """One declared pool: the labels that pick its nodes and the labels the labeller puts on them."""

    name: str
    selector: Mapping[str, str]
    labels: Mapping[str, str]

    def picks(self, labels: Mapping[str, str]) -> bool:
        return all(key in labels and labels[key] == value for key, value in self.selector.items())


Memberships = tuple[Pool, ...]


def _string_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{what} must be a map of strings to strings")
    return dict(sorted(value.items()))


def parse_memberships(data: Mapping[str, Any]) -> Memberships:
    """The pools, sorted by name, from ``{pool: {"selector": {...}, "labels": {...}}}`` (``ExistingPlatform.memberships``).

    A declared label whose key is any pool's selector key is dropped (never written, never removed). Raises
    ``ValueError`` for another shape, or a pool with an empty selector (it would pick every node of the cluster)."""
    if not isinstance(data, Mapping):
        raise ValueError("memberships must be a map of pool names")
    parsed: list[tuple[str, dict[str, str], dict[str, str]]] = []
    for name, value in sorted(data.items()):
        if not isinstance(name, str) or not name or not isinstance(value, Mapping):
            raise ValueError(f"pool {name!r}: must be a named map with selector and labels")
        unknown = sorted(set(value) - {"selector", "labels"})
        if unknown:
            raise ValueError(f"pool {name}: unknown keys {', '.join(unknown)}")
        selector = _string_map(value.get("selector"), f"pool {name}: selector")
        if not selector:
            raise ValueError(f"pool {name}: an empty selector would pick every node of the cluster")
        parsed.append((name, selector, _string_map(value.get("labels", {}), f"pool {name}: labels")))
    selector_keys = {key for _, selector, _ in parsed for key in selector}
    return tuple(
        Pool(name, selector, {key: v for key, v in labels.items() if key not in selector_keys})
        for name, selector, labels in parsed
    )


def load_memberships(path: str) -> Memberships:
    """The memberships JSON file the labeller's ConfigMap mounts."""
    with open(path, encoding="utf-8") as handle:
        return parse_memberships(json.load(handle))


def pool_of(pools: Iterable[Pool], labels: Mapping[str, str]) -> Pool | None:
    """The first pool, by name, whose selector ``labels`` match (``pools`` as :func:`parse_memberships` sorts them)."""
    return next((pool for pool in pools if pool.picks(labels)), None)


def held(labels: Mapping[str, str]) -> bool:
    """The rollout controller holds the node: its state label says anything but idle, done or refused."""
    return STATE_LABEL in labels and labels[STATE_LABEL] not in RELEASED_STATES


def label_changes(pools: Sequence[Pool], labels: Mapping[str, str]) -> tuple[Pool | None, dict[str, str | None]]:
    """``(pool, changes)`` for a node with ``labels``: the pool its labels pick (None for none) and each label to set
    (a value) or remove (None); no change, no key."""
    by_name = {pool.name: pool for pool in pools}
    current = labels.get(NODE_GROUP_LABEL) or None  # an empty pool label names no pool
    if current is not None and current not in by_name:
        return None, {}  # a node of a pool this stack does not declare: not ours
    target = pool_of(pools, labels)
    previous = by_name.get(current) if current is not None else None
    if held(labels) and (target is None or target is not previous):
        return target, {}  # held: no pool left or changed until the rollout controller releases the node
    changes: dict[str, str | None] = {}
    if target is not None:
        changes.update({key: value for key, value in target.labels.items() if labels.get(key) != value})
    if previous is not None and previous is not target:
        kept = target.labels if target is not None else {}
        changes.update({key: None for key in previous.labels if key in labels and key not in kept})
    return target, dict(sorted(changes.items()))


@dataclass(frozen=True)
class LabelPatch:
    """One node's write: ``patch`` is a JSON merge patch carrying the node's resourceVersion."""

    node: str
    pool: str
    patch: dict[str, Any]

    @property
    def labels(self) -> dict[str, str | None]:
        return dict(self.patch["metadata"]["labels"])

    def describe(self) -> str:
        sets = [f"{key}={value}" for key, value in self.labels.items() if value is not None]
        removes = [key for key, value in self.labels.items() if value is None]
        parts = ([f"set {', '.join(sets)}"] if sets else []) + ([f"removed {', '.join(removes)}"] if removes else [])
        where = f"pool {self.pool}" if self.pool else "no pool"
        return f"node {self.node} ({where}): {'; '.join(parts)}"


def patches(nodes: Iterable[Mapping[str, Any]], pools: Memberships) -> list[LabelPatch]:
    """The writes that bring every node's labels to its pool's, by node name; none for a node already right.

    A node being deleted is left alone."""
    found: list[LabelPatch] = []
    for node in nodes:
        metadata = node.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            continue
        target, changes = label_changes(pools, dict(metadata.get("labels") or {}))
        if not changes:
            continue
        patch: dict[str, Any] = {"metadata": {"labels": changes}}
        version = str(metadata.get("resourceVersion") or "")
        if version:
            patch["metadata"]["resourceVersion"] = version
        found.append(LabelPatch(str(metadata.get("name", "")), target.name if target else "", patch))
    return sorted(found, key=lambda item: item.node)
