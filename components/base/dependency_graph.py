"""The Pulumi Python SDK's dependency-cycle check, answered in constant time where the answer is certain.

Why this module exists: before it sends a resource to the engine, the SDK records every dependency
edge (``depends_on`` and every Output passed as an input) and refuses one that would close a cycle
(``pulumi.runtime.resource_cycle_breaker.declare_dependency``). It decides that by walking the *whole*
transitive closure of the dependency, through nested Python generators, for every new edge. A fleet
program has hundreds of resources (NodePatches, smoke Jobs, MIG labels) that wait for one resource
(the GPU Operator release) which itself waits for every host's preparation: each of those edges walks
thousands of resources, and registration grows with the square of the fleet (400 bare-metal hosts:
minutes of CPU before the engine starts, under the real ``pulumi up`` as under the offline preview).

The answer needs no walk in the common case. ``to`` can reach ``from`` only along recorded edges, and a
resource that no recorded edge points to yet (every resource while its own dependencies are being
declared, since nothing can depend on it before it exists) is reachable from nothing but itself. So:
mark each resource when the first edge to it is recorded; for an unmarked ``from`` (other than ``to``
itself) there is no cycle and the edge is recorded at once; otherwise the SDK's own walk decides. The
graph recorded and every decision are exactly the SDK's (``tests/stack/test_dependency_graph.py``
checks both against the original on random graphs).

This is our own code over SDK internals, so it is guarded: ``install`` checks that the pinned SDK still
has the functions it wraps, with the behaviour it expects, and leaves the SDK alone otherwise.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import pulumi.runtime.resource_cycle_breaker as cycle_breaker
import pulumi.runtime.rpc as rpc

if TYPE_CHECKING:
    import pulumi

#: Set on a resource once some recorded dependency edge points to it.
_DEPENDED_ON = "_gpu_platform_depended_on"
_ORIGINAL = cycle_breaker.declare_dependency


def declare_dependency(from_resource: pulumi.Resource, to_resource: pulumi.Resource) -> bool:
    """``cycle_breaker.declare_dependency`` with the same result, in O(1) when ``from_resource`` has no in-edge."""
    if from_resource is not to_resource and not getattr(from_resource, _DEPENDED_ON, False):
        record_edge(from_resource, to_resource)
        return True
    if cycle_breaker._reachable(from_resource=to_resource, to_resource=from_resource):
        return False
    record_edge(from_resource, to_resource)
    return True


def record_edge(from_resource: pulumi.Resource, to_resource: pulumi.Resource) -> None:
    """Record ``from -> to`` as the SDK does, and mark ``to`` as depended on."""
    setattr(to_resource, _DEPENDED_ON, True)
    cycle_breaker._add_dep(from_resource, to_resource)


def _sdk_matches() -> bool:
    """The SDK still calls ``declare_dependency`` from ``rpc`` and has the helpers this module relies on."""
    source = inspect.getsource(_ORIGINAL)
    return (
        getattr(rpc, "declare_dependency", None) in (_ORIGINAL, declare_dependency)
        and callable(getattr(cycle_breaker, "_reachable", None))
        and callable(getattr(cycle_breaker, "_add_dep", None))
        and "_reachable(from_resource=to_resource, to_resource=from_resource)" in source
        and "_add_dep(from_resource, to_resource)" in source
    )


def install() -> bool:
    """Use the constant-time check in the SDK's dependency expansion; False when the SDK no longer fits."""
    if not _sdk_matches():
        return False
    rpc.declare_dependency = declare_dependency
    return True
