"""The proof of a driver step against the simulated cluster: it passes only once every node of the step runs the
declared driver and CUDA on it, names each lagging node, includes nodes added during the step, and survives a
failed API call at any point (it re-reads everything on every pass)."""

from __future__ import annotations

from components.catalog import gpu_operator_upgrade as upgrade
from components.catalog import nvidia_driver as crd
from components.catalog.names import PROOF_RUN_LABEL as RUN_LABEL
from components.catalog.names import PROOF_STEP_LABEL as STEP_LABEL
from components.catalog.node_agent import UNSCHEDULABLE_TAINT
from components.catalog.upstream import GPU_OPERATOR_SOURCE
from components.node_agent.agent import objects
from components.proof.component import PRIORITY_CLASS
from components.proof.job.main import prove
from components.proof.job.run import Proof, proof_pod
from tests.helpers import ROOT
from tests.node_agent.proof_world import (
    NEW,
    OLD,
    POD_TEMPLATE_GENERATION_LABEL,
    PROOF_NS,
    ProofClient,
    ProofWorld,
    tolerated,
)
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


# -- which driver pod is current: the operator's ControllerRevision hash, not the template generation ----------


def _the_driver_pod(world: ProofWorld, node: str) -> dict:
    (pod,) = world.driver_pods(node)
    return pod


def test_a_rollback_of_the_driver_template_is_proven_current() -> None:
    """A -> B -> A: the DaemonSet controller makes A's revision the newest again; the pods still on A are current
    (the upgrade controller leaves them), although their pod-template-generation never matches the DaemonSet's."""
    world = ProofWorld(nodes=3)
    world.change_driver(NEW)  # B
    world.run(500.0)  # the upgrade controller has moved v100-0 to B
    assert world.driver_pods("v100-0")[0]["spec"]["containers"][0]["image"] == world.image(NEW)
    untouched = objects.name(_the_driver_pod(world, "v100-2"))  # not reached yet
    world.change_driver(OLD)  # the rollback: A's template again
    assert world.generation == 3
    pod = _the_driver_pod(world, "v100-2")
    assert pod["metadata"]["labels"][POD_TEMPLATE_GENERATION_LABEL] == "1"  # it lags, and always will
    assert pod["metadata"]["labels"][upgrade.CONTROLLER_REVISION_HASH_LABEL] == world.newest_hash()

    passed, summary, _ = _prove(world, deadline=3600.0)
    assert passed, summary
    assert summary == "3 node(s) proven"
    assert objects.name(_the_driver_pod(world, "v100-2")) == untouched  # proven as it is, never restarted


def test_a_lagging_template_generation_is_current_on_the_newest_hash_and_an_older_hash_is_named() -> None:
    world = ProofWorld(nodes=2)
    before = world.template_hash()
    world.change_template(EXTRA_OPTION="1")  # B: a re-render that keeps the image
    b_hash = world.template_hash()
    world.run(400.0)  # the upgrade controller took v100-0 and its B pod is Ready
    world.max_parallel = 0  # it takes no further node
    world.run(100.0)  # and hands v100-0 back (upgrade-done)
    on_b = _the_driver_pod(world, "v100-0")
    assert on_b["metadata"]["labels"][upgrade.CONTROLLER_REVISION_HASH_LABEL] == b_hash
    world.change_template()  # rollback to A: A's revision is renumbered above B's
    assert world.newest_hash() == before
    lagging = _the_driver_pod(world, "v100-1")
    assert lagging["metadata"]["labels"][POD_TEMPLATE_GENERATION_LABEL] == "1" != str(world.generation)

    verdict = Proof(ProofClient(world.api, PROOF_NS), world.settings(), RUN, OWNER).one_pass()
    assert verdict.lagging["v100-1"] == "CUDA proof pod started"  # its driver is in order: on to CUDA
    assert verdict.lagging["v100-0"] == (
        f"driver pod {objects.name(on_b)} is from revision {b_hash} of its DaemonSet, not the newest ({before})"
        " (upgrade state upgrade-done)"
    )


def test_the_proof_lists_only_the_revisions_of_the_driver_daemonsets_it_judges() -> None:
    """Per DaemonSet by its selector (``GetDaemonsetControllerRevisionHash``): another DaemonSet's newer revisions
    in the operator's namespace do not make a driver pod outdated."""
    world = ProofWorld(nodes=1)
    other = world.revisions()[0] | {"revision": 99}
    other["metadata"] = {
        **other["metadata"],
        "name": f"{world.ds_name}x-abc",  # a name with ours as its prefix, of another DaemonSet's selector
        "labels": {"app": f"{world.ds_name}x", upgrade.CONTROLLER_REVISION_HASH_LABEL: "abc"},
    }
    world.api.put("controllerrevisions", f"gpu-operator/{world.ds_name}x-abc", other)
    verdict = Proof(ProofClient(world.api, PROOF_NS), world.settings(), RUN, OWNER).one_pass()
    assert verdict.lagging == {"v100-0": "CUDA proof pod started"}


# -- the CUDA pods: a cordoned node, the pool's taints, a full node ----------------------------------------------


def test_a_cordoned_node_is_proven() -> None:
    world = ProofWorld(nodes=2)
    world.cordon("v100-1")  # a person's cordon (the operator's upgrade controller holds no node here)
    settings = world.settings(deadline=1200.0)
    untolerating = proof_pod(settings, settings.pools[0], RUN, OWNER, "v100-1")
    untolerating["spec"]["tolerations"] = list(settings.pools[0].tolerations)
    assert world._unresolvable(untolerating, world.node("v100-1")) == "unschedulable"  # NodeUnschedulable

    passed, summary, lines = _prove(world, deadline=1200.0)
    assert passed, summary
    assert any(line.startswith("started ") and line.endswith(" for v100-1") for line in lines)
    assert world.node("v100-1")["spec"]["unschedulable"] is True  # the proof leaves the cordon as it was


def test_the_proof_pod_carries_the_priority_class_and_tolerates_every_taint_of_the_pools_nodes() -> None:
    world = ProofWorld(nodes=1)
    world.cordon("v100-0")
    settings = world.settings()
    pod = proof_pod(settings, settings.pools[0], RUN, OWNER, "v100-0")
    assert pod["spec"]["priorityClassName"] == PRIORITY_CLASS
    taints = world.node("v100-0")["spec"]["taints"]
    assert {t["key"] for t in taints} == {"nvidia.com/gpu", "gpu-platform.io/workload", UNSCHEDULABLE_TAINT}
    assert all(tolerated(pod, taint) for taint in taints)
    assert world._unresolvable(pod, world.node("v100-0")) == ""


def test_on_a_full_node_the_cuda_pod_preempts_an_ordinary_gpu_pod_and_the_node_is_proven() -> None:
    world = ProofWorld(nodes=2)
    training = world.occupy("v100-1")  # priority 0, holding v100-1's only GPU
    passed, summary, _ = _prove(world, deadline=1200.0)
    assert passed, summary
    assert training not in world.api.store["pods"]  # preempted (it was deleted gracefully)


def test_a_cuda_pod_naming_a_missing_priority_class_is_refused() -> None:
    """The stand-in's admission really checks the class: without the component's PriorityClass no pod starts."""
    world = ProofWorld(nodes=1)
    world.api.store["priorityclasses"].clear()
    proof = Proof(ProofClient(world.api, PROOF_NS), world.settings(), RUN, OWNER)
    proof.one_pass()
    assert any("no PriorityClass with name gpu-platform-proof was found" in line for line in proof.log)


# -- a retried proof ---------------------------------------------------------------------------------------------


def test_a_retried_proof_deletes_the_cuda_pods_of_the_earlier_run_of_its_step() -> None:
    world = ProofWorld(nodes=2)
    world.never_ready.add("v100-1")
    world.change_driver(NEW)
    first, second = "gpu-proof-canary-first", "gpu-proof-canary-second"
    passed, summary = prove(
        ProofClient(world.api, PROOF_NS),
        world.settings(1500.0),
        first,
        {"name": first, "uid": "u-1"},
        world.clock,
        world.run,
        lambda line: None,
    )
    assert not passed and _lagging(summary) == {"v100-1"}
    left = [
        p["metadata"]["name"]
        for p in world.api.store["pods"].values()
        if p["metadata"]["labels"].get(RUN_LABEL) == first
    ]
    assert left  # a failed run keeps its CUDA pods, for their logs
    other_step = proof_pod(world.settings(), world.settings().pools[0], "gpu-proof-mig-x", OWNER, "v100-0")
    other_step["metadata"]["labels"][STEP_LABEL] = "mig"
    world.api.put(
        "pods", f"{PROOF_NS}/{other_step['metadata']['name']}", other_step | {"status": {"phase": "Succeeded"}}
    )

    world.never_ready.clear()  # the operator's retry on v100-1, then `pulumi up` runs the proof again
    for pod in world.driver_pods("v100-1"):
        world.api.delete_pod_gracefully("gpu-operator", pod["metadata"]["name"])
    world.at(31.0, lambda: world._replace_driver("v100-1"))
    lines: list[str] = []
    passed, summary = prove(
        ProofClient(world.api, PROOF_NS),
        world.settings(3600.0),
        second,
        {"name": second, "uid": "u-2"},
        world.clock,
        world.run,
        lines.append,
    )
    assert passed, summary
    world.run(60.0)
    runs = {p["metadata"]["labels"].get(RUN_LABEL) for p in world.api.store["pods"].values()}
    assert first not in runs  # nothing of the earlier run is left
    assert "gpu-proof-mig-x" in runs  # another step's pods are not this proof's to delete
    assert all(any(line == f"deleted {name}; it is of an earlier run of this step" for line in lines) for name in left)


def test_the_stand_in_driver_daemonset_has_the_pinned_manifests_shape() -> None:
    """The NVIDIADriver mode's DaemonSet as the pinned operator writes it: named by getDriverAppName, selecting its
    pods by ``app`` alone, OnDelete, the component label on the DaemonSet and its pods."""
    source = ROOT / GPU_OPERATOR_SOURCE.path
    manifest = (source / "manifests/state-driver/0500_daemonset.yaml").read_text()
    assert "  name: {{ .Driver.AppName }}\n" in manifest
    assert (
        "  selector:\n    matchLabels:\n      app: {{ .Driver.AppName }}\n  updateStrategy:\n    type: OnDelete"
        in manifest
    )
    assert manifest.count('app.kubernetes.io/component: "nvidia-driver"') == 2  # the DaemonSet and the template
    assert 'appNamePrefixFormat = "nvidia-%s-driver-%s"' in (source / "internal/state/driver.go").read_text()

    world = ProofWorld(nodes=1)
    ds = world.api.store["daemonsets"][f"gpu-operator/{world.ds_name}"]
    assert world.ds_name.startswith("nvidia-gpu-driver-ubuntu22.04-")
    assert ds["spec"]["selector"] == {"matchLabels": {"app": world.ds_name}}
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}
    pod = _the_driver_pod(world, "v100-0")
    for labels in (ds["metadata"]["labels"], pod["metadata"]["labels"]):
        assert labels["app"] == world.ds_name
        assert labels[upgrade.DRIVER_COMPONENT_LABEL] == upgrade.DRIVER_COMPONENT
    (revision,) = world.revisions()
    assert (
        objects.name(revision) == f"{world.ds_name}-{pod['metadata']['labels'][upgrade.CONTROLLER_REVISION_HASH_LABEL]}"
    )
