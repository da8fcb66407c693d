"""The proof of a driver step against the simulated cluster: it passes only once every node of the step runs the
declared driver and CUDA on it, names each lagging node, includes nodes added during the step, and survives a
failed API call at any point (it re-reads everything on every pass)."""

from __future__ import annotations

from components.catalog import nvidia_driver as crd
from components.catalog.names import PROOF_RUN_LABEL as RUN_LABEL
from components.node_agent.agent.proof.check import Proof, proof_pod
from components.node_agent.agent.proof.main import prove
from tests.node_agent.proof_world import NEW, OLD, PROOF_NS, ProofClient, ProofWorld
from tests.node_agent.sim.api import Faults

RUN = "gpu-proof-canary-abcde"
OWNER = {"name": RUN, "uid": "u-proof"}


def _prove(world: ProofWorld, deadline: float) -> tuple[bool, str, list[str]]:
    lines: list[str] = []
    passed, summary = prove(
        ProofClient(world.api, PROOF_NS), world.settings(deadline), RUN, OWNER, world.clock, world.run, lines.append
    )
    return passed, summary, lines


def _lagging(summary: str) -> set[str]:
    tail = summary.split(": ", 1)[1] if summary.startswith("step ") else summary
    return {part.split(":", 1)[0].strip() for part in tail.split("; ")}


def test_the_canary_gate_fails_while_one_canary_node_still_runs_the_old_driver_and_passes_once_all_do() -> None:
    world = ProofWorld(nodes=3)
    world.never_ready.add("v100-2")  # its new driver never comes up: it keeps the old one loaded meanwhile
    world.change_driver(NEW)
    passed, summary, _ = _prove(world, deadline=3600.0)
    assert not passed
    assert _lagging(summary) == {"v100-2"}, summary
    assert "v100-2: driver pod" in summary and "is not Ready" in summary

    world.never_ready.clear()
    for pod in world.driver_pods("v100-2"):
        world.api.delete_pod_gracefully("gpu-operator", pod["metadata"]["name"])  # an operator's retry
    world.at(31.0, lambda: world._replace_driver("v100-2"))
    passed, summary, _ = _prove(world, deadline=3600.0)
    assert passed, summary
    assert all(world.loaded[node] == NEW for node in ("v100-0", "v100-1", "v100-2"))
    assert summary == "3 node(s) proven"
    world.run(60.0)
    assert not [p for p in world.api.store["pods"].values() if p["metadata"]["labels"].get(RUN_LABEL)]  # cleaned


def test_the_proof_does_not_pass_on_a_ready_status_while_the_pods_are_old() -> None:
    world = ProofWorld(nodes=2)
    world.change_driver(NEW)
    assert world.status_state() == "ready"  # what pulumi.com/waitFor reads: every (old) pod is Ready
    verdict = Proof(ProofClient(world.api, PROOF_NS), world.settings(), RUN, OWNER).one_pass()
    assert not verdict.passed
    assert set(verdict.lagging) == {"v100-0", "v100-1"}
    assert all(f"runs nvcr.io/nvidia/driver:{OLD}-ubuntu22.04, not {NEW}" in why for why in verdict.lagging.values())


def test_a_pass_needs_the_cuda_pod_of_this_run_on_every_node() -> None:
    world = ProofWorld(nodes=2)  # already on the declared driver: the operator's side is all in order
    proof = Proof(ProofClient(world.api, PROOF_NS), world.settings(), RUN, OWNER)
    first = proof.one_pass()
    assert not first.passed
    assert set(first.lagging.values()) == {"CUDA proof pod started"}
    pods = [p for p in world.api.store["pods"].values() if p["metadata"]["labels"].get(RUN_LABEL) == RUN]
    assert len(pods) == 2
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == "u-proof" for p in pods)
    world.run(60.0)
    assert proof.one_pass().passed


def test_a_node_added_by_the_autoscaler_during_the_step_is_proven_too_or_fails_the_step_by_name() -> None:
    world = ProofWorld(nodes=2)
    world.change_driver(NEW)
    world.at(300.0, lambda: world.add_node("v100-9", ready=False))  # joins mid-step and never turns Ready
    passed, summary, _ = _prove(world, deadline=3600.0)
    assert not passed
    assert _lagging(summary) == {"v100-9"}
    assert "v100-9: node is not Ready" in summary


def test_a_pool_with_no_node_yet_gets_a_demand_pod_and_is_proven_on_the_node_it_brings() -> None:
    world = ProofWorld(nodes=0)
    passed, summary, lines = _prove(world, deadline=1800.0)
    assert passed, summary
    assert summary == "1 node(s) proven"
    assert any("for pool v100" in line for line in lines)


def test_a_node_owned_by_no_nvidiadriver_lags_with_the_reason() -> None:
    world = ProofWorld(nodes=2)
    body = world.node("v100-1")
    del body["metadata"]["labels"][crd.OWNER_LABEL]
    verdict = Proof(ProofClient(world.api, PROOF_NS), world.settings(), RUN, OWNER).one_pass()
    assert verdict.lagging["v100-1"] == f"owned by no NVIDIADriver ({crd.OWNER_LABEL}), not gpu-platform-v100"


def test_the_clusterpolicys_orphaned_driver_pod_is_not_evidence() -> None:
    world = ProofWorld(nodes=1)
    world.change_driver(NEW)
    world.orphan_driver("v100-0")  # the move from the ClusterPolicy left its pod; with autoUpgrade false it stays
    world.max_parallel = 0  # no upgrade controller for this resource (autoUpgrade: false)
    passed, summary, _ = _prove(world, deadline=1200.0)
    assert not passed
    assert "that no DaemonSet owns (the ClusterPolicy's, not replaced)" in summary


def test_a_failed_api_call_at_any_point_only_delays_the_proof() -> None:
    # One run without faults counts the proof's calls; then each call in turn fails (503 / a timeout after the write).
    base = ProofWorld(nodes=2)
    base.change_driver(NEW)
    assert _prove(base, deadline=7200.0)[0]
    calls = base.faults.calls
    assert calls > 20
    for index in range(1, calls + 1, max(1, calls // 25)):
        for kind in ("503", "timeout-after"):
            world = ProofWorld(nodes=2, faults=Faults(callers=("proof",), script={index: kind}))
            world.change_driver(NEW)
            passed, summary, _ = _prove(world, deadline=7200.0)
            assert passed, (index, kind, summary)
            assert world.faults.injected == 1


MIG = ("all-1g.10gb", {"nvidia.com/mig-1g.10gb": 7})


def test_a_mig_change_is_not_closed_by_the_old_success_label() -> None:
    """Right after the label change mig-manager has not answered: its old success is no evidence."""
    world = ProofWorld(nodes=2)
    world.set_mig(*MIG)
    verdict = Proof(ProofClient(world.api, PROOF_NS), world.settings(mig=MIG), RUN, OWNER).one_pass()
    assert not verdict.passed
    assert verdict.lagging["v100-0"] == "advertises {'nvidia.com/gpu': '1'}, not {'nvidia.com/mig-1g.10gb': 7}"


def test_a_mig_change_passes_once_every_node_advertises_the_layout_and_fails_naming_the_node_that_does_not() -> None:
    world = ProofWorld(nodes=3)
    world.mig_failing.add("v100-1")
    world.set_mig(*MIG)
    lines: list[str] = []
    settings = world.settings(deadline=1200.0, mig=MIG)
    passed, summary = prove(
        ProofClient(world.api, PROOF_NS), settings, RUN, OWNER, world.clock, world.run, lines.append
    )
    assert not passed
    assert _lagging(summary) == {"v100-1"}
    assert "v100-1: mig-manager reports failed (nvidia.com/mig.config.state)" in summary

    healthy = ProofWorld(nodes=3)
    healthy.set_mig(*MIG)
    settings = healthy.settings(deadline=1200.0, mig=MIG)
    healthy_lines: list[str] = []
    passed, summary = prove(
        ProofClient(healthy.api, PROOF_NS), settings, RUN, OWNER, healthy.clock, healthy.run, healthy_lines.append
    )
    assert passed, summary
    assert len([line for line in healthy_lines if line.startswith("started gpu-proof-mig-")]) == 3  # one per node
    assert len([line for line in healthy_lines if line.startswith("deleted gpu-proof-mig-")]) == 3  # cleaned up
    pod = proof_pod(settings, settings.pools[0], RUN, OWNER, "v100-0")
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "1"}
