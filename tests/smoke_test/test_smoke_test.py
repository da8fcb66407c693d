"""The GPU smoke test: one awaited Job per pool and MIG profile, scheduled exactly where it must run."""

from __future__ import annotations

import pytest

from components.base.problems import StackConfigError
from preview.run.runner import ProgramRun, run_program
from tests.helpers import plan_raw, set_path, stack_raw

JOB = "kubernetes:batch/v1:Job"


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_program("prod")


def _smoke_jobs(run: ProgramRun) -> list:
    """The smoke Jobs (the driver steps' proof Jobs are Jobs too: tests/proof/test_proof.py)."""
    return [r for r in run.by_type(JOB) if r.inputs["metadata"]["name"].startswith("gpu-smoke-")]


def _limits(job: dict) -> dict:
    return job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def test_one_job_per_pool_and_mig_profile(prod: ProgramRun) -> None:
    jobs = {r.inputs["metadata"]["name"]: r.inputs for r in _smoke_jobs(prod)}
    assert set(jobs) == {
        "gpu-smoke-gpu-node-1-mig-1g-10gb",
        "gpu-smoke-gpu-node-2-mig-1g-10gb",
        "gpu-smoke-gpu-node-2-mig-2g-20gb",
        "gpu-smoke-gpu-node-2-mig-3g-40gb",
        "gpu-smoke-gpu-node-3-gpu",
        "gpu-smoke-gpu-node-3-mig-3g-40gb",
    }
    assert _limits(jobs["gpu-smoke-gpu-node-2-mig-2g-20gb"]) == {"nvidia.com/mig-2g.20gb": "1"}
    assert _limits(jobs["gpu-smoke-gpu-node-3-gpu"]) == {"nvidia.com/gpu": "1"}
    assert jobs["gpu-smoke-gpu-node-3-gpu"]["spec"]["template"]["spec"]["nodeSelector"] == {
        "kubernetes.io/hostname": "gpu-node-3"
    }


def test_bare_metal_jobs_wait_for_their_nodes_mig_label(prod: ProgramRun) -> None:
    """A Job that runs before its node is relabelled tests the old layout (or finds no MIG resource)."""
    jobs = _smoke_jobs(prod)
    assert jobs
    for job in jobs:
        node = job.inputs["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"]
        patch = prod.one("kubernetes:core/v1:NodePatch", f"gpu-nodes-{node}")
        assert patch.urn in job.dependencies, f"{job.name} does not wait for {patch.name}"


def test_jobs_tolerate_the_pool_and_use_the_pinned_sample() -> None:
    dev = run_program("dev")
    (registration,) = [r for r in dev.by_type(JOB) if r.name.startswith("gpu-smoke-test-gpu-smoke-v100-gpu-")]
    job = registration.inputs
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform.io/node-group": "v100"}
    assert {
        "key": "gpu-platform.io/workload",
        "operator": "Equal",
        "value": "notebooks",
        "effect": "NoSchedule",
    } in pod["tolerations"]
    assert pod["containers"][0]["image"] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    assert pod["restartPolicy"] == "Never"
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400.0
    assert job["spec"]["activeDeadlineSeconds"] == 1200.0


def test_jobs_wait_for_the_operator(prod: ProgramRun) -> None:
    release = prod.one("kubernetes:helm.sh/v3:Release", "gpu-operator-release")
    by_urn = {r.urn: r for r in prod.registrations}
    for job in prod.by_type(JOB):  # the proof Job directly, each smoke Job through it
        assert release.urn in job.dependencies or any(release.urn in by_urn[d].dependencies for d in job.dependencies)


def test_disabled_and_skipped_pools() -> None:
    run = run_program("dev", overrides={"gpu-platform:smokeTest": {"skipPools": ["a100"]}})
    names = [r.inputs["metadata"]["name"] for r in _smoke_jobs(run)]
    assert len(names) == 1 and names[0].startswith("gpu-smoke-v100-gpu-")
    (proof,) = [r for r in run.by_type(JOB) if r.inputs["metadata"]["name"].startswith("gpu-proof-")]
    settings = proof.inputs["spec"]["template"]["spec"]["containers"][0]["env"][2]["value"]
    assert '"pool": "v100"' in settings and '"pool": "a100"' not in settings  # a skipped pool runs no CUDA pod
    assert not run_program("dev", overrides={"gpu-platform:smokeTest": {"enabled": False}}).by_type(JOB)


def test_smoke_image_newer_than_the_driver_is_refused() -> None:
    with pytest.raises(StackConfigError) as caught:
        plan_raw(set_path(stack_raw("dev"), "smokeTest", {"image": "example/cuda13:1", "imageCuda": "13.2"}))
    assert "smokeTest.imageCuda: the smoke-test image cannot run: driver 580.95.05 is too old for CUDA 13.2" in str(
        caught.value
    )


def test_a_replaced_node_group_gets_a_new_smoke_job() -> None:
    """The Job is keyed to the group's replacement key, so it re-runs on the replacement nodes."""
    before = {r.inputs["metadata"]["name"] for r in _smoke_jobs(run_program("dev"))}
    raw = stack_raw("dev")
    raw["nodeGroups"]["v100"]["taints"] = ["nvidia.com/gpu=true:NoSchedule"]
    after = {
        r.inputs["metadata"]["name"]
        for r in _smoke_jobs(run_program("dev", overrides={"gpu-platform:nodeGroups": raw["nodeGroups"]}))
    }
    changed = before ^ after
    assert len(changed) == 2 and all(name.startswith("gpu-smoke-v100-gpu-") for name in changed)


def test_every_job_first_waits_for_the_declared_driver_on_its_node(prod: ProgramRun) -> None:
    """Host-owned prod: each Job checks hostDriver.version; the check holds the same GPU resource as the test."""
    for job in _smoke_jobs(prod):
        pod = job.inputs["spec"]["template"]["spec"]
        (check,) = pod["initContainers"]
        assert check["command"][:2] == ["sh", "-c"] and 'want="580.95.05"' in check["command"][2]
        assert check["resources"]["limits"] == pod["containers"][0]["resources"]["limits"]
        assert {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"} in check["env"]
        assert check["image"] == pod["containers"][0]["image"]  # no second image to pull or pin


def test_a_changed_driver_gives_the_job_a_new_spec() -> None:
    """Jobs are immutable and replaced on a spec change: a new declared driver runs the test again."""
    raw = set_path(stack_raw("prod"), "gpuOperator.hostDriver.version", "580.105.08")
    run = run_program("prod", overrides={f"gpu-platform:{k}": v for k, v in raw.items()})
    for job in _smoke_jobs(run):
        (check,) = job.inputs["spec"]["template"]["spec"]["initContainers"]
        assert 'want="580.105.08"' in check["command"][2]
