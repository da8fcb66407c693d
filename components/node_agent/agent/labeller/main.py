"""Entry point of the labeller pod: ``python3 -m components.node_agent.agent.labeller.main``.

Event-driven, as the rollout controller is: one watched cache of nodes per pool selector (``labelSelector`` the
selector's labels) and one of the nodes that carry a pool label (``gpu-platform.io/node-group``: the nodes that may
have to lose their labels), each a paginated list and then a watch (``components.node_agent.agent.watch.Informer``).
So the labeller never lists every node of the cluster, only those of its pools and those it labelled. A pass
(:func:`~components.node_agent.agent.labeller.membership.patches` over the merged caches) runs when a cache changes,
and every ``RESYNC_SECONDS`` otherwise (every ``RETRY_SECONDS`` after a write failed for another reason than a
conflict). A conflict (409: the node changed since it was read) is not retried: the change is the next watch event,
and the pass it wakes decides again from the node as it is.

Why a program of its own, not a part of the rollout controller: containment. The labeller has its own ServiceAccount
(nodes get, list, watch and patch, nothing else) and its own ValidatingAdmissionPolicy, which allows exactly the
declared pools' labels, at the declared values, on the nodes the pools' selectors pick (and their removal from nodes
that left); the rollout controller's policy allows none of these labels. So the rollout controller cannot move a node
into a pool (or opt it in to the driver hand-over), and the labeller cannot cordon, evict, or write any state.

The memberships (``{pool: {"selector": {...}, "labels": {...}}}``) are read at start from the file its ConfigMap mounts
(``MEMBERSHIPS_DIR``/``MEMBERSHIPS_KEY``, or the path in ``LABELLER_MEMBERSHIPS``); the Deployment's pod template
carries their digest, so a change rolls the pod. One replica: two would only make the same writes (each carries the
node's resourceVersion), so no leader election. SIGTERM ends the loop after the pass in progress.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, Final, Protocol

from components.catalog.names import NODE_GROUP_LABEL
from components.node_agent.agent.kube import ApiError, Kube
from components.node_agent.agent.labeller.membership import (
    MEMBERSHIPS_DIR,
    MEMBERSHIPS_KEY,
    LabelPatch,
    Memberships,
    load_memberships,
    patches,
)
from components.node_agent.agent.loop import run_until_stopped
from components.node_agent.agent.watch import Informer, run_informer

NODES: Final = "/api/v1/nodes"
#: A pass at least this often when nothing changes (a resync from the caches as they are).
RESYNC_SECONDS: Final = 600.0
#: The next pass this soon after a write failed for another reason than a conflict (an outage, a refusal).
RETRY_SECONDS: Final = 10.0
#: The labeller's own field manager: ``managedFields`` tell its labels from the rollout controller's writes.
FIELD_MANAGER: Final = "gpu-platform-node-agent-labeller"
#: A path to the memberships JSON other than the mounted one (tests, a run by hand).
ENV_MEMBERSHIPS: Final = "LABELLER_MEMBERSHIPS"


class LabellerApi(Protocol):
    """What the labeller calls (``components.node_agent.agent.kube.Kube``): lists, watches, one PATCH per node."""

    def list_all(self, path: str, query: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], str]: ...

    def watch(
        self, path: str, query: dict[str, str] | None, resource_version: str, timeout_seconds: int
    ) -> Iterator[dict[str, Any]]: ...

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any: ...


def _later(version: str, than: str) -> bool:
    """``version`` is newer than ``than`` (etcd's versions are integers; two opaque ones: keep the first seen)."""
    return version.isdigit() and than.isdigit() and int(version) > int(than)


def selectors(pools: Memberships) -> list[str]:
    """The label selectors of the caches: each pool's selector, and every node that carries a pool label."""
    found = [",".join(f"{key}={value}" for key, value in sorted(pool.selector.items())) for pool in pools]
    return [*sorted(set(found)), NODE_GROUP_LABEL]


class Labeller:
    """The caches, one pass, and when the next one is due."""

    def __init__(self, api: LabellerApi, pools: Memberships) -> None:
        self.api = api
        self.pools = pools
        self.changed = threading.Event()
        self.stop = threading.Event()
        self.log: list[str] = []
        self.informers = [Informer(api, NODES, {"labelSelector": selector}) for selector in selectors(pools)]
        self.failed = False
        self.writes = 0

    def start(self) -> None:
        """One thread per cache: list, then watch and resume (each change sets ``changed``)."""
        for informer in self.informers:
            threading.Thread(
                target=run_informer, args=(informer, self.stop, self.changed, self.log.append), daemon=True
            ).start()

    def close(self) -> None:
        self.stop.set()

    def nodes(self) -> list[dict[str, Any]]:
        """Every node of the caches, once (the newest copy where two caches hold it)."""
        merged: dict[str, dict[str, Any]] = {}
        for informer in self.informers:
            for node in informer.items():
                name = str(node["metadata"].get("name", ""))
                known = merged.get(name)
                version = str(node["metadata"].get("resourceVersion", ""))
                if known is None or _later(version, str(known["metadata"].get("resourceVersion", ""))):
                    merged[name] = node
        return list(merged.values())

    def one_pass(self) -> list[LabelPatch]:
        """Write every patch the caches call for; nothing until every cache holds a whole list. Returns the writes
        made."""
        self.failed = False
        if not all(informer.synced for informer in self.informers):
            return []  # a partial view: wait for the lists (each sets ``changed`` when it lands)
        made: list[LabelPatch] = []
        for item in patches(self.nodes(), self.pools):
            try:
                self.api.request(
                    "PATCH",
                    f"{NODES}/{item.node}",
                    item.patch,
                    query={"fieldManager": FIELD_MANAGER},
                    content_type="application/merge-patch+json",
                )
            except ApiError as error:
                if error.status == 409:
                    self.log.append(f"node {item.node} changed since it was read: deciding again at its next event")
                elif error.status == 404:
                    self.log.append(f"node {item.node} is gone")
                else:
                    self.failed = True
                    self.log.append(f"{item.describe()}: not written ({error}); again in {RETRY_SECONDS:.0f} s")
                continue
            made.append(item)
            self.writes += 1
            self.log.append(item.describe())
        return made

    def seconds(self) -> float:
        return RETRY_SECONDS if self.failed else RESYNC_SECONDS


def main() -> int:
    path = os.environ.get(ENV_MEMBERSHIPS) or f"{MEMBERSHIPS_DIR}/{MEMBERSHIPS_KEY}"
    try:
        pools = load_memberships(path)
    except (OSError, ValueError) as error:
        print(f"the memberships ({path}) cannot be read: {error}", file=sys.stderr)
        return 2
    if not pools:
        print(f"the memberships ({path}) declare no pool: nothing to label", file=sys.stderr)
        return 2
    labeller = Labeller(Kube.in_cluster(), pools)
    labeller.start()
    try:
        return run_until_stopped(labeller.one_pass, labeller.log, labeller.seconds, wake=labeller.changed)
    finally:
        labeller.close()


if __name__ == "__main__":
    sys.exit(main())
