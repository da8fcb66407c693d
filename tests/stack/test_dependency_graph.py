"""Registration stays linear in the fleet and keeps every ordering the platform needs.

- The constant-time cycle check (``components.base.dependency_graph``) decides every edge exactly as the
  SDK's walk does, on random graphs with cycles.
- On real fleets of the prod stack, the dependency edges the engine receives grow linearly, a smoke Job
  or a node's labels wait for the release and their own node only, and a Job still waits, through the
  release, for every host's preparation, and for its own node's labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pulumi.runtime.resource_cycle_breaker as cycle_breaker
import pulumi.runtime.rpc as rpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.fleet import fleet_overrides
from components.base import dependency_graph
from components.catalog.names import HELM_RELEASE_TYPE
from preview.run.runner import ProgramRun, run_program
from tests.properties import examples

JOB = "kubernetes:batch/v1:Job"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
COMMAND = "command:remote:Command"


class _Node:
    """A stand-in resource: the cycle breaker only reads and sets attributes on it."""

    def __init__(self, index: int) -> None:
        self.index = index


def _edges(graph: list[Any]) -> set[tuple[int, int]]:
    deps: list[Any] = [(node, list(cycle_breaker._deps(node))) for node in graph]
    return {(node.index, dep.index) for node, targets in deps for dep in targets}


@settings(max_examples=examples(300))
@given(
    st.integers(2, 12).flatmap(lambda n: st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40))
)
def test_the_constant_time_check_decides_every_edge_as_the_sdks_walk(edges: list[tuple[int, int]]) -> None:
    size = 1 + max((max(edge) for edge in edges), default=0)
    # Stand-ins typed as Any: the SDK's helpers are annotated for Resources, and read only attributes.
    theirs: list[Any] = [_Node(i) for i in range(size)]
    ours: list[Any] = [_Node(i) for i in range(size)]
    for source, target in edges:
        expected = cycle_breaker.declare_dependency(theirs[source], theirs[target])
        assert dependency_graph.declare_dependency(ours[source], ours[target]) == expected, (source, target)
    assert _edges(ours) == _edges(theirs)


def test_install_leaves_an_sdk_that_changed_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rpc, "declare_dependency", cycle_breaker.declare_dependency)
    monkeypatch.delattr(cycle_breaker, "_add_dep")
    assert dependency_graph.install() is False
    assert rpc.declare_dependency is cycle_breaker.declare_dependency


def test_install_wraps_the_sdks_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rpc, "declare_dependency", cycle_breaker.declare_dependency)
    assert dependency_graph.install() is True
    assert rpc.declare_dependency is dependency_graph.declare_dependency


@pytest.fixture(scope="module")
def fleets() -> dict[int, ProgramRun]:
    runs = {nodes: run_program("prod", overrides=fleet_overrides(nodes)) for nodes in (12, 36)}
    for run in runs.values():
        assert run.config_error is None, run.config_error
    return runs


def _closure(run: ProgramRun, urn: str) -> set[str]:
    by_urn = {r.urn: r for r in run.registrations}
    seen: set[str] = set()
    stack = [urn]
    while stack:
        for dependency in by_urn[stack.pop()].dependencies:
            if dependency not in seen:
                seen.add(dependency)
                stack.append(dependency)
    return seen


def _jobs_and_mig_labels(run: ProgramRun) -> Iterator[str]:
    """The smoke Jobs and MIG labels (the proof Job, one per step, waits for every node's label: see below)."""
    for registration in run.registrations:
        if registration.type == JOB and registration.name.startswith("gpu-proof-"):
            continue
        if registration.type in (JOB, NODE_PATCH):
            yield registration.urn


def test_the_proof_job_waits_for_each_node_once(fleets: dict[int, ProgramRun]) -> None:
    """One proof Job per step with one edge per node's MIG label: linear, not one per Job and node."""
    for nodes, run in fleets.items():
        (proof,) = [r for r in run.by_type(JOB) if r.name.startswith("gpu-proof-")]
        assert len(proof.dependencies) <= nodes + 8, (nodes, len(proof.dependencies))


def test_dependency_edges_grow_linearly_with_the_fleet(fleets: dict[int, ProgramRun]) -> None:
    small, large = (sum(len(r.dependencies) for r in fleets[n].registrations) for n in (12, 36))
    resources = len(fleets[36].registrations) / len(fleets[12].registrations)
    assert large / small <= resources * 1.1, (small, large, resources)


def test_a_smoke_job_or_mig_label_waits_for_the_release_and_its_own_node_only(fleets: dict[int, ProgramRun]) -> None:
    run = fleets[36]
    (release,) = run.by_type(HELM_RELEASE_TYPE)
    by_urn = {r.urn: r for r in run.registrations}
    for urn in _jobs_and_mig_labels(run):
        dependencies = by_urn[urn].dependencies
        assert len(dependencies) <= 2, (urn, dependencies)
        assert release.urn in dependencies or any(release.urn in by_urn[d].dependencies for d in dependencies), (
            f"{urn} does not wait for the release"
        )


def test_every_job_still_waits_for_every_hosts_preparation_and_its_nodes_labels(fleets: dict[int, ProgramRun]) -> None:
    run = fleets[12]
    host_steps = {r.urn for r in run.by_type(COMMAND)}
    node_labels = {r.urn for r in run.by_type(NODE_PATCH) if r.name.startswith("gpu-nodes")}
    assert len(host_steps) >= 12 * 4 and len(node_labels) == 12
    patch_of = {r.inputs["metadata"]["name"]: r.urn for r in run.by_type(NODE_PATCH)}
    for job in run.by_type(JOB):
        waits_for = _closure(run, job.urn)
        assert host_steps <= waits_for, f"{job.name} may start before a host is prepared"
        if job.name.startswith("gpu-proof-"):  # the proof checks every node: it waits for every node's labels
            assert set(patch_of.values()) <= waits_for, f"{job.name} may start before every node is labelled"
            continue
        node = job.inputs["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"]
        assert patch_of[node] in waits_for, f"{job.name} may start before its node is labelled"
