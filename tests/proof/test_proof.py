"""The proof Job of each driver step, as the program registers it: where it sits in the order, what it checks,
which rights it gets, and that its shipped code runs on the bare image."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime import MockResourceArgs

import preview.run.runner
from components.base.shipped_code import config_map_key
from components.catalog.kubernetes import Taint, parse_taint, tolerates
from components.catalog.names import NODE_GROUP_LABEL, NVIDIA_DRIVER_TYPE
from components.catalog.node_agent import UNSCHEDULABLE_TAINT
from components.catalog.proof import ProofSettings
from components.catalog.upstream import PULUMI_KUBERNETES_SOURCE
from components.proof.component import ACCOUNT, PRIORITY_CLASS, PROOF_FILES, proof_sources
from components.proof.job.run import proof_pod
from preview.run.mocks import PlatformMocks
from preview.run.runner import ProgramRun, run_program
from tests.helpers import ROOT, as_overrides, run_raw, set_path, stack_raw

JOB = "kubernetes:batch/v1:Job"


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    return run_program("dev")


def _settings(job: Any) -> ProofSettings:
    (container,) = job.inputs["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    return ProofSettings.from_json(json.loads(env["PROOF_SETTINGS"]))


def test_dev_proves_both_pools_on_their_own_nvidiadriver_and_version(dev: ProgramRun) -> None:
    proof = dev.one(JOB, "gpu-proof-main-job")
    settings = _settings(proof)
    by_pool = {pool.pool: pool for pool in settings.pools}
    assert set(by_pool) == {"v100", "a100"}
    assert (by_pool["v100"].driver_version, by_pool["v100"].owner) == ("580.95.05", "gpu-platform-v100")
    assert (by_pool["a100"].driver_version, by_pool["a100"].owner) == ("595.91.07", "gpu-platform-a100")
    assert by_pool["v100"].driver_image == "nvcr.io/nvidia/driver:580.95.05-"
    assert by_pool["v100"].selector == {NODE_GROUP_LABEL: "v100"}  # the pool's nodes, labelled for a driver or not
    assert by_pool["a100"].resource == "nvidia.com/mig-1g.10gb"  # a MIG pool's CUDA pod takes a slice
    assert 'want="595.91.07"' in by_pool["a100"].check_script
    assert (settings.namespace, settings.operator_namespace) == ("gpu-platform-proof", "gpu-operator")
    # gpuOperator.timeoutSeconds (a driver build on a node) per wave of the slowest budget: v100's 3 nodes, 1 at a time
    assert settings.deadline_seconds == 3 * 1800.0


def test_the_proof_runs_unprivileged_with_list_and_pod_rights_only_and_may_list_controllerrevisions(
    dev: ProgramRun,
) -> None:
    proof = dev.one(JOB, "gpu-proof-main-job")
    pod = proof.inputs["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == ACCOUNT
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    cluster_rules = dev.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "gpu-proof-access-cluster-role")
    assert cluster_rules.inputs["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]
    own = dev.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "gpu-proof-access-role")
    assert own.inputs["metadata"]["namespace"] == "gpu-platform-proof" == proof.inputs["metadata"]["namespace"]
    assert own.inputs["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "create", "delete"]}]
    operator = dev.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "gpu-proof-access-operator-role")
    assert operator.inputs["metadata"]["namespace"] == "gpu-operator"
    # What was there before, and one rule more: list the driver DaemonSets' ControllerRevisions (apps group).
    rule = functools.partial(json.dumps, sort_keys=True)
    assert sorted(map(rule, operator.inputs["rules"])) == sorted(
        map(
            rule,
            [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["list"]},
                {"apiGroups": ["apps"], "resources": ["controllerrevisions"], "verbs": ["list"]},
            ],
        )
    )
    rbac = [r.name for r in dev.registrations if r.type.startswith("kubernetes:rbac.authorization.k8s.io/v1:")]
    assert sorted(n for n in rbac if n.startswith("gpu-proof-")) == [
        "gpu-proof-access-cluster-role",
        "gpu-proof-access-cluster-role-binding",
        "gpu-proof-access-operator-role",
        "gpu-proof-access-operator-role-binding",
        "gpu-proof-access-role",
        "gpu-proof-access-role-binding",
    ]


def test_a_changed_driver_is_a_new_proof_job(dev: ProgramRun) -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver.version", "595.100.01")
    after = run_raw("dev", raw).one(JOB, "gpu-proof-main-job")
    before = dev.one(JOB, "gpu-proof-main-job")
    assert after.inputs["metadata"]["name"] != before.inputs["metadata"]["name"]
    assert after.inputs["metadata"]["name"].startswith("gpu-proof-main-")


def test_the_clusterpolicy_driver_is_one_step_without_an_owner() -> None:
    raw = set_path(stack_raw("dev"), "nodeGroups.a100.driver", {"cuda": "12.6"})
    run = run_raw("dev", raw)
    proof = run.one(JOB, "gpu-proof-main-job")
    assert {(p.pool, p.owner, p.driver_version) for p in _settings(proof).pools} == {
        ("v100", "", "580.95.05"),
        ("a100", "", "580.95.05"),
    }
    release = run.one("kubernetes:helm.sh/v3:Release", "gpu-operator-release")
    assert release.urn in proof.dependencies


def test_where_the_hosts_own_the_driver_the_proof_closes_every_re_partitioned_nodes_mig_layout() -> None:
    prod = run_program("prod")
    (proof,) = [r for r in prod.by_type(JOB) if r.name.startswith("gpu-proof-")]
    assert proof.name == "gpu-proof-mig-job"
    by_pool = {pool.pool: pool for pool in _settings(proof).pools}
    assert set(by_pool) == {"gpu-node-1", "gpu-node-2", "gpu-node-3"}
    node2 = by_pool["gpu-node-2"]
    assert node2.driver_version == "" and node2.owner == ""  # no operator driver to check
    assert node2.mig_config.startswith("gpu-platform-gpu-node-2-") or node2.mig_config.startswith("all-")
    assert node2.mig_resources == {
        "nvidia.com/mig-1g.10gb": node2.mig_resources["nvidia.com/mig-1g.10gb"],
        "nvidia.com/mig-2g.20gb": node2.mig_resources["nvidia.com/mig-2g.20gb"],
        "nvidia.com/mig-3g.40gb": node2.mig_resources["nvidia.com/mig-3g.40gb"],
    }
    assert 'want="580.95.05"' in node2.check_script  # the CUDA pod still waits for the hosts' declared driver
    # after every node's MIG label; each smoke Job then waits for the proof and its own node's label
    for patch in prod.by_type("kubernetes:core/v1:NodePatch"):
        if patch.name.startswith("mig-config-"):
            assert patch.urn in proof.dependencies
    smoke = [r for r in prod.by_type(JOB) if r is not proof]
    assert smoke and all(proof.urn in job.dependencies for job in smoke)


def test_every_module_of_the_proof_is_shipped() -> None:
    root = Path(__file__).resolve().parents[2]
    on_disk = {str(p.relative_to(root)) for p in (root / "components/proof/job").rglob("*.py")}
    assert on_disk <= set(PROOF_FILES)


def test_the_shipped_runner_runs_on_a_bare_python_with_the_standard_library_only(tmp_path: Path) -> None:
    for key, text in proof_sources().items():
        path = next(p for p in PROOF_FILES if config_map_key(p) == key)
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    module = "components.proof.job.main"
    result = subprocess.run(
        [sys.executable, "-S", "-E", "-m", module], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert "the proof needs the environment variable 'PROOF_SETTINGS'" in result.stderr


def _canary_dev() -> dict[str, Any]:
    """dev with the V100 group as the canary of a move of both groups to a new R580 driver."""
    raw = set_path(stack_raw("dev"), "gpuOperator.driver.version", "580.105.08")
    raw = set_path(raw, "nodeGroups.v100.driver", {"canary": True})
    return set_path(raw, "nodeGroups.a100.driver", {"version": "580.105.08", "cuda": "13.0"})


def test_a_failed_canary_proof_keeps_the_other_pools_driver_and_every_smoke_job_from_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The canary's proof Job fails (a canary node still on the old driver at the deadline), as a failed Job
    fails its resource operation in ``pulumi up``: nothing after it is sent, not even the canary's smoke Jobs."""
    sent: list[str] = []

    class _FailingCanaryProof(PlatformMocks):
        def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
            name = args.inputs.get("metadata", {}).get("name", "")
            if args.typ in (NVIDIA_DRIVER_TYPE, JOB):
                sent.append(name)
            if args.typ == JOB and name.startswith("gpu-proof-canary-"):
                raise RuntimeError("Job gpu-proof-canary failed: v100-2: driver pod ... is not Ready")
            return super().new_resource(args)

    monkeypatch.setattr(preview.run.runner, "PlatformMocks", _FailingCanaryProof)
    with pytest.raises(Exception, match="gpu-proof-canary failed"):
        run_program("dev", overrides=as_overrides(_canary_dev()))
    assert "gpu-platform-v100" in sent and "gpu-platform-a100" not in sent
    assert not [name for name in sent if name.startswith("gpu-smoke-")]
    assert not [name for name in sent if name.startswith("gpu-proof-main-")]


# -- a failed proof runs again; its pods get a GPU wherever the pool's nodes are ---------------------------------

PROVIDER_SOURCE = ROOT / PULUMI_KUBERNETES_SOURCE.path / "provider/pkg"


def _proof_jobs(run: ProgramRun) -> list[Any]:
    return [job for job in run.by_type(JOB) if job.name.startswith("gpu-proof-")]


def test_a_failed_proof_job_is_replaced_on_the_next_up(dev: ProgramRun) -> None:
    """A Job keeps its name while its step is unchanged; the provider replaces it when it has not completed."""
    jobs = [*_proof_jobs(dev), *_proof_jobs(run_program("prod"))]
    assert {job.name for job in jobs} == {"gpu-proof-main-job", "gpu-proof-mig-job"}
    for job in jobs:
        annotations = job.inputs["metadata"].get("annotations") or {}
        assert annotations.get("pulumi.com/replaceUnready") == "true", job.name
        assert "pulumi.com/skipAwait" not in annotations  # still awaited: the gate
        assert "pulumi.com/deletionPropagationPolicy" not in annotations  # foreground: its pods go with it
    # The pinned provider reads exactly that annotation, and for a Job replaces it when it is not Ready.
    annotations_go = (PROVIDER_SOURCE / "metadata/annotations.go").read_text()
    assert 'AnnotationPrefix = "pulumi.com/"' in annotations_go
    assert 'AnnotationReplaceUnready = AnnotationPrefix + "replaceUnready"' in annotations_go
    diff = (PROVIDER_SOURCE / "provider/provider.go").read_text()
    branch = diff[diff.index("if metadata.ReplaceUnready(newInputs) {") :]
    branch = branch[: branch.index("deleteBeforeReplace :=")]
    assert 'case newInputs.GetKind() == "Job":' in branch
    assert "if !jobChecker.Ready(job) {" in branch
    assert "replaces = append(replaces," in branch


def test_the_proofs_pods_have_the_proof_priority_class_and_tolerate_every_taint_of_their_pools_nodes(
    dev: ProgramRun,
) -> None:
    (priority,) = dev.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert priority.inputs["metadata"]["name"] == PRIORITY_CLASS
    assert priority.inputs["preemptionPolicy"] == "PreemptLowerPriority"
    assert priority.inputs["globalDefault"] is False
    # Above ordinary pods, at most what the API server takes for a class that is not a system class.
    assert 1_000_000 < priority.inputs["value"] <= 1_000_000_000
    # Both are immutable in the API: a change replaces the class, delete first (it keeps its name).
    assert set(priority.replace_on_changes) == {"value", "preemptionPolicy"} and priority.delete_before_replace
    job = dev.one(JOB, "gpu-proof-main-job")
    assert job.inputs["spec"]["template"]["spec"]["priorityClassName"] == PRIORITY_CLASS
    assert priority.urn in job.dependencies  # the Priority admission plugin refuses a pod naming a missing class
    settings = _settings(job)
    assert settings.priority_class == PRIORITY_CLASS
    groups = {
        r.inputs["nodeLabels"][NODE_GROUP_LABEL]: r.inputs["nodeTaints"]
        for r in dev.by_type("yandex:index/kubernetesNodeGroup:KubernetesNodeGroup")
    }
    cordon = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")
    for pool in settings.pools:
        for node in ("", f"{pool.pool}-node"):  # the pool's demand pod and a pinned one
            pod = proof_pod(settings, pool, "run", {"name": "run", "uid": "u"}, node)
            assert pod["spec"]["priorityClassName"] == PRIORITY_CLASS
            taints = [parse_taint(text) for text in groups[pool.pool]] + [cordon]
            untolerated = [t for t in taints if not any(tolerates(tol, t) for tol in pod["spec"]["tolerations"])]
            assert not untolerated, (pool.pool, untolerated)
    assert len(groups["v100"]) == 2  # the pool with a taint besides the GPU one is among them


def test_on_bare_metal_the_proofs_pods_tolerate_every_taint_the_nodes_are_registered_with() -> None:
    prod = run_program("prod")
    (job,) = _proof_jobs(prod)
    settings = _settings(job)
    registered = {node["name"]: node["taints"] for node in stack_raw("prod")["bareMetal"]["nodes"]}
    for pool in settings.pools:
        pod = proof_pod(settings, pool, "run", {"name": "run", "uid": "u"}, pool.pool)
        taints = [parse_taint(text) for text in registered[pool.pool]] + [Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")]
        assert all(any(tolerates(tol, t) for tol in pod["spec"]["tolerations"]) for t in taints), pool.pool
        assert pod["spec"]["priorityClassName"] == PRIORITY_CLASS
