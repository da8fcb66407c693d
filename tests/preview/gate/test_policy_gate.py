"""The offline pull-request gate: every policy over the real program's registrations and what they render.

Every stack in the repository must pass; each seeded violation must fail the gate (and the
preview's exit code); the per-stack policy config is honoured and validated like the CLI would;
findings about rendered objects say which release or Directory they came from.
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy.proxy import unknown_checking_proxy

import preview.gate.evaluate as gate_evaluate
from components.catalog.kubeflow.v1_10_2.credentials import (
    DEFAULT_OIDC_CLIENT_SECRET,
    DEFAULT_PASSWORD_HASH,
    PUBLIC_DEFAULT_CREDENTIALS,
)
from components.catalog.mig import mig_gpu
from components.catalog.upstream import GPU_OPERATOR_CHART
from policies.gpu_policies import ALL_POLICIES
from policies.gpu_policies.names import DECLARED_TAINTS_ANNOTATION, GPU_NODE_LABEL, NODE_GROUP_TYPE, OPT_IN_LABEL
from preview.gate.config import PolicyConfigError, load_policy_config, parse_policy_config
from preview.gate.evaluate import RENDER_CHECK, GateResult, evaluate, run_gate
from preview.gate.report import verdict_table, write_report
from preview.render.rendered import HELM_RELEASE, render_registrations
from preview.run.output_folder import REPORT_NAME
from preview.run.registration import SECRET_MASK, Registration, secret_strings
from preview.run.runner import ProgramRun, run_program
from preview.run.stack_file import available_stacks
from tests.helpers import ROOT, one_driver, preview_cli
from tests.preview.support import (
    KUBEFLOW_KEY,
    OPERATOR_KEY,
    expected_exit,
    project_copy,
    real_stack,
    stack_config,
)

STACKS = available_stacks(ROOT)
RELEASE = "kubernetes:helm.sh/v3:Release"
SECRET = "kubernetes:core/v1:Secret"
PROFILE = "kubernetes:kubeflow.org/v1:Profile"
NVIDIA_DRIVER = "kubernetes:nvidia.com/v1alpha1:NVIDIADriver"
NODE_GROUPS_KEY = "gpu-platform:nodeGroups"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    run = run_program("dev")
    assert run.config_error is None, run.config_error
    return run


def _new(result: GateResult, dev: ProgramRun) -> list[tuple[str, str]]:
    """(policy, level) of the findings the unmodified dev program does not already have (its advisories)."""
    baseline = set(evaluate(dev.registrations).findings)
    return [(f.policy, f.enforcement) for f in result.findings if f not in baseline]


# ----------------------------------------------------------------------------------------------
# Every example stack passes


@pytest.mark.parametrize("stack", STACKS)
def test_every_example_stack_passes_the_gate(stack: str) -> None:
    # The stack as committed, rendered: its release with the pinned chart, its Directories with kustomize.
    run = run_program(stack)
    assert run.config_error is None, run.config_error
    result = run_gate(run)
    assert result.mandatory == [], verdict_table(result)
    assert set(result.levels) == {policy.name for policy in ALL_POLICIES}


@pytest.mark.parametrize("stack", STACKS)
def test_the_cuda_check_is_active_for_every_example_stack(stack: str) -> None:
    # Each stack's policy config names the workloads' CUDA level, so the check really runs.
    result = evaluate(run_program(stack).registrations, load_policy_config(stack), stack=stack)
    assert "driver-supports-cuda" not in result.not_applicable


# ----------------------------------------------------------------------------------------------
# Seeded violations: hand-modified registrations of the real dev program


def _edit(
    run: ProgramRun, resource_type: str, change: Callable[[dict[str, Any]], None], name: str | None = None
) -> list[Registration]:
    """The dev registrations with ``change`` applied to the inputs of the first ``resource_type`` (or ``name``)."""
    target = run.one(resource_type, name) if name else run.by_type(resource_type)[0]
    out = []
    for registration in run.registrations:
        if registration is target:
            inputs = copy.deepcopy(registration.inputs)
            change(inputs)
            registration = replace(registration, inputs=inputs, masked_inputs=copy.deepcopy(inputs))
        out.append(registration)
    return out


def _added(run: ProgramRun, resource_type: str, name: str, inputs: dict[str, Any]) -> list[Registration]:
    urn = f"urn:pulumi:dev::gpu-platform::{resource_type}::{name}"
    return [*run.registrations, Registration(resource_type, name, urn, "", True, inputs, copy.deepcopy(inputs))]


def _no_taints(inputs: dict[str, Any]) -> None:
    inputs["nodeTaints"] = []


def _preinstalled(inputs: dict[str, Any]) -> None:
    inputs["instanceTemplate"]["gpuSettings"]["gpuEnvironment"] = "runc_drivers_cuda"
    inputs["nodeLabels"].pop(OPT_IN_LABEL, None)


def _no_driver_owner(inputs: dict[str, Any]) -> None:
    """dev runs NVIDIADriver resources and no default one: a group without its driver label gets no driver."""
    inputs["nodeLabels"].pop("gpu-platform.io/driver")


def _extra_taint(inputs: dict[str, Any]) -> None:
    inputs["nodeTaints"].append("dedicated=gpu:NoExecute")


def _mirror_repo(inputs: dict[str, Any]) -> None:
    inputs["repositoryOpts"]["repo"] = "https://charts.example.com/mirror"


def _range_version(inputs: dict[str, Any]) -> None:
    inputs["version"] = "^26.7.0"


def _r595_driver(inputs: dict[str, Any]) -> None:
    """dev's V100 group has its own NVIDIADriver: give it an R595 driver."""
    inputs["spec"]["version"] = "595.45.04"


def _unread_key(inputs: dict[str, Any]) -> None:
    inputs["values"]["daemonsets"]["nodeSelector"] = {"gpu": "true"}


def _bad_mig_layout(inputs: dict[str, Any]) -> None:
    layout = {"device-filter": list(mig_gpu("A100-40GB").pci_device_ids), "devices": "all", "mig-enabled": True}
    parted = {"version": "v1", "mig-configs": {"seven": [{**layout, "mig-devices": {"1g.10gb": 7}}]}}
    inputs["values"]["migManager"]["config"] = {"create": True, "data": {"config.yaml": yaml.safe_dump(parted)}}


def _default_password(inputs: dict[str, Any]) -> None:
    inputs["stringData"] = {"DEX_USER_PASSWORD": DEFAULT_PASSWORD_HASH}


def _no_tls(inputs: dict[str, Any]) -> None:
    inputs["spec"].pop("tls")


def _misspelt_mig_quota(inputs: dict[str, Any]) -> None:
    inputs["spec"]["resourceQuotaSpec"]["hard"]["requests.nvidia.com/mig-1g.10g"] = "7"


def _mirrored_driver(inputs: dict[str, Any]) -> None:
    inputs["values"]["driver"]["repository"] = "registry.example.com/nvidia"


def _host_network_exporter(inputs: dict[str, Any]) -> None:
    inputs["values"]["dcgmExporter"]["hostNetwork"] = True


_PRIVILEGED_DEBUG = {
    "metadata": {"name": "debug", "namespace": "team-a"},
    "spec": {
        "template": {
            "spec": {
                "hostPID": True,
                "containers": [{"name": "shell", "image": "busybox:1.36", "securityContext": {"privileged": True}}],
            }
        }
    },
}
_NODE_PORT = {
    "metadata": {"name": "centraldashboard", "namespace": "kubeflow"},
    "spec": {"type": "NodePort", "ports": [{"port": 80.0}], "selector": {"app": "centraldashboard"}},
}
_LATEST_JOB = {
    "metadata": {"name": "smoke", "namespace": "gpu-smoke"},
    "spec": {"template": {"spec": {"containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:latest"}]}}},
}

SEEDS: list[tuple[str, str, Callable[[ProgramRun], list[Registration]]]] = [
    ("gpu-node-group-noschedule-taint", "untainted", lambda run: _edit(run, NODE_GROUP_TYPE, _no_taints)),
    ("host-driver-removal-required", "preinstalled", lambda run: _edit(run, NODE_GROUP_TYPE, _preinstalled)),
    ("gpu-operator-tolerates-gpu-taints", "new-taint", lambda run: _edit(run, NODE_GROUP_TYPE, _extra_taint)),
    ("helm-repository-allowed", "mirror", lambda run: _edit(run, RELEASE, _mirror_repo)),
    ("helm-chart-version-pinned", "range", lambda run: _edit(run, RELEASE, _range_version)),
    (
        "driver-supports-gpu-architectures",
        "r595",
        lambda run: _edit(run, NVIDIA_DRIVER, _r595_driver, name="gpu-drivers-v100"),
    ),
    ("gpu-nodes-have-one-driver-owner", "unowned", lambda run: _edit(run, NODE_GROUP_TYPE, _no_driver_owner)),
    ("gpu-operator-values-contract", "unread-key", lambda run: _edit(run, RELEASE, _unread_key)),
    ("mig-layouts-placeable", "bad-layout", lambda run: _edit(run, RELEASE, _bad_mig_layout)),
    ("kubeflow-no-public-credentials", "default-hash", lambda run: _edit(run, SECRET, _default_password)),
    ("ingress-tls", "no-tls", lambda run: _edit(run, INGRESS, _no_tls)),
    ("kubeflow-profile-gpu-quotas", "misspelt-quota", lambda run: _edit(run, PROFILE, _misspelt_mig_quota)),
    (
        "privileged-workloads-allowlisted",
        "debug-pod",
        lambda run: _added(run, "kubernetes:apps/v1:DaemonSet", "debug", _PRIVILEGED_DEBUG),
    ),
    ("container-image-tag-pinned", "latest", lambda run: _added(run, "kubernetes:batch/v1:Job", "smoke", _LATEST_JOB)),
    ("gpu-operator-images-allowed-registries", "mirror", lambda run: _edit(run, RELEASE, _mirrored_driver)),
    ("host-network-allowlisted", "host-network", lambda run: _edit(run, RELEASE, _host_network_exporter)),
    (
        "external-services-allowlisted",
        "node-port",
        lambda run: _added(run, "kubernetes:core/v1:Service", "dashboard", _NODE_PORT),
    ),
]


@pytest.mark.parametrize(("policy", "seed"), [(policy, seed) for policy, _, seed in SEEDS], ids=[s[1] for s in SEEDS])
def test_each_seeded_violation_fails_the_gate(
    dev: ProgramRun, policy: str, seed: Callable[[ProgramRun], list[Registration]]
) -> None:
    result = evaluate(seed(dev), load_policy_config("dev"), stack="dev")
    assert result.failed
    assert {finding.policy for finding in result.mandatory} == {policy}, verdict_table(result)


def test_the_seeds_cover_every_mandatory_policy_but_the_cuda_one() -> None:
    mandatory = {p.name for p in ALL_POLICIES if p.enforcement_level and p.enforcement_level.value == "mandatory"}
    seeded = {policy for policy, _, _ in SEEDS} | {BARE_METAL_TAINT}  # the bare-metal one: on prod, below
    assert mandatory - seeded == {"driver-supports-cuda"}  # seeded through config below


# Bare-metal GPU nodes (prod): the taints the config declares reach the policies through the NodePatch.
BARE_METAL_TAINT = "bare-metal-gpu-node-noschedule-taint"
NODE_PATCH = "kubernetes:core/v1:NodePatch"


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    run = run_program("prod")
    assert run.config_error is None, run.config_error
    return run


def _declared_taints(run: ProgramRun, change: Callable[[str], str]) -> list[Registration]:
    """The run's registrations with ``change`` applied to the first GPU node's declared taints."""
    target = next(r for r in run.by_type(NODE_PATCH) if r.inputs["metadata"]["labels"].get(GPU_NODE_LABEL) == "true")
    out = []
    for registration in run.registrations:
        if registration is target:
            inputs = copy.deepcopy(registration.inputs)
            annotations = inputs["metadata"]["annotations"]
            annotations[DECLARED_TAINTS_ANNOTATION] = change(annotations[DECLARED_TAINTS_ANNOTATION])
            registration = replace(registration, inputs=inputs, masked_inputs=copy.deepcopy(inputs))
        out.append(registration)
    return out


def test_every_bare_metal_gpu_node_records_the_taints_its_config_declares(prod: ProgramRun) -> None:
    nodes = stack_config("prod")["gpu-platform:bareMetal"]["nodes"]
    patches = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["annotations"]
        for r in prod.by_type(NODE_PATCH)
        if r.inputs["metadata"]["labels"].get(GPU_NODE_LABEL) == "true"
    }
    assert patches == {
        node["name"]: {**patches[node["name"]], DECLARED_TAINTS_ANNOTATION: ",".join(node["taints"])} for node in nodes
    }
    assert all("spec" not in r.inputs for r in prod.by_type(NODE_PATCH))  # taints are recorded, never patched


def test_a_bare_metal_gpu_node_declaring_no_noschedule_taint_fails_the_gate(prod: ProgramRun) -> None:
    result = evaluate(_declared_taints(prod, lambda _: ""), load_policy_config("prod"), stack="prod")
    assert {finding.policy for finding in result.mandatory} == {BARE_METAL_TAINT}, verdict_table(result)


def test_a_declared_bare_metal_taint_the_operator_does_not_tolerate_fails_the_gate(prod: ProgramRun) -> None:
    seeded = _declared_taints(prod, lambda taints: f"{taints},dedicated=gpu:NoExecute")
    result = evaluate(seeded, load_policy_config("prod"), stack="prod")
    assert {finding.policy for finding in result.mandatory} == {"gpu-operator-tolerates-gpu-taints"}
    assert "dedicated=gpu:NoExecute" in result.mandatory[0].message


def test_the_program_tolerates_an_extra_taint_a_bare_metal_node_declares() -> None:
    config = stack_config("prod")
    bare_metal = copy.deepcopy(config["gpu-platform:bareMetal"])
    bare_metal["nodes"][0]["taints"].append("dedicated=gpu:NoExecute")
    run = run_program("prod", overrides={"gpu-platform:bareMetal": bare_metal})
    assert run.config_error is None, run.config_error
    result = evaluate(run.registrations, load_policy_config("prod"), stack="prod")
    assert result.mandatory == [], verdict_table(result)


def test_a_required_cuda_level_the_driver_cannot_run_fails_the_gate(dev: ProgramRun) -> None:
    config = {"driver-supports-cuda": {"requiredCuda": "13.1"}}
    result = evaluate(dev.registrations, parse_policy_config(config), stack="dev")
    # dev's A100 group runs R595 (CUDA up to 13.2); only the V100 group's R580 NVIDIADriver falls short.
    assert [(f.policy, f.resource) for f in result.mandatory] == [
        ("driver-supports-cuda", f"{NVIDIA_DRIVER}::gpu-drivers-v100")
    ]
    assert "driver 580.95.05 is too old for CUDA 13.1 workloads" in result.mandatory[0].message


def test_a_production_stack_with_preemptible_gpus_passes_with_advisories() -> None:
    # The config allows preemptible production groups; only the advisory policy speaks up.
    environment = {"name": "dev", "production": True, "owner": "ml-platform"}
    run = run_program("dev", overrides={"gpu-platform:environment": environment})
    assert run.config_error is None
    result = evaluate(run.registrations, load_policy_config("dev"), stack="dev")
    assert not result.failed
    assert set(_new(result, run_program("dev"))) == {("production-gpu-nodes-not-preemptible", "advisory")}


# ----------------------------------------------------------------------------------------------
# Config: levels and settings as --policy-pack-config gives them


def test_a_policy_level_override_turns_a_violation_into_advice(dev: ProgramRun) -> None:
    registrations = _edit(dev, RELEASE, _mirror_repo)
    result = evaluate(registrations, parse_policy_config({"helm-repository-allowed": "advisory"}))
    assert not result.failed
    assert _new(result, dev) == [("helm-repository-allowed", "advisory")]


def test_all_sets_every_level_and_a_policy_entry_wins_over_it(dev: ProgramRun) -> None:
    registrations = _edit(dev, RELEASE, _mirror_repo)
    config = {"all": "advisory", "helm-repository-allowed": {"enforcementLevel": "mandatory"}}
    result = evaluate(registrations, parse_policy_config(config))
    assert result.failed and result.levels["gpu-node-group-noschedule-taint"] == "advisory"


def test_a_disabled_policy_does_not_run(dev: ProgramRun) -> None:
    result = evaluate(_edit(dev, RELEASE, _mirror_repo), parse_policy_config({"helm-repository-allowed": "disabled"}))
    assert _new(result, dev) == [] and "helm-repository-allowed" not in {f.policy for f in result.findings}
    assert "disabled" in verdict_table(result)


def test_settings_override_the_schema_defaults(dev: ProgramRun) -> None:
    config = {"helm-repository-allowed": {"allowedRepositories": ["https://charts.example.com/mirror"]}}
    assert not evaluate(_edit(dev, RELEASE, _mirror_repo), parse_policy_config(config)).failed


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"helm-repo-allowed": "advisory"}, "helm-repo-allowed: no such policy"),
        ({"ingress-tls": "warn"}, "ingress-tls: enforcement level must be one of advisory, mandatory"),
        (
            {"ingress-tls": {"exempt": []}},
            "ingress-tls.exempt: not a setting of this policy; settings: exemptIngresses",
        ),
        ({"driver-supports-cuda": {"cudaCheck": "lenient"}}, "driver-supports-cuda.cudaCheck must be one of strict"),
        ({"driver-supports-cuda": {"requiredCuda": "12"}}, "driver-supports-cuda.requiredCuda '12' does not match"),
        ({"helm-repository-allowed": {"allowedRepositories": "https://x"}}, "allowedRepositories must be a JSON array"),
        ({"helm-repository-allowed": {"allowedRepositories": [1]}}, "allowedRepositories[0] must be a JSON string"),
    ],
)
def test_an_invalid_policy_config_is_refused_with_the_reason(document: dict[str, Any], problem: str) -> None:
    with pytest.raises(PolicyConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_policy_config(document)


@pytest.mark.parametrize("path", sorted((ROOT / "policies" / "config").glob("*.json")), ids=lambda p: p.name)
def test_every_committed_policy_config_is_valid_and_names_a_stack(path: Path) -> None:
    assert path.stem in STACKS
    assert parse_policy_config(json.loads(path.read_text()))


# ----------------------------------------------------------------------------------------------
# The report


def test_the_report_is_sorted_deterministic_and_has_five_fields(dev: ProgramRun, tmp_path: Path) -> None:
    registrations = _edit(_as_run(_edit(dev, NODE_GROUP_TYPE, _no_taints)), RELEASE, _range_version)
    rendered = render_registrations(dev.by_type(HELM_RELEASE), ROOT)  # the pinned release (^26.7.0 is not rendered)
    first = write_report(evaluate(registrations, rendered=rendered), tmp_path / "a").read_text()
    second = write_report(evaluate(list(reversed(registrations)), rendered=rendered), tmp_path / "b").read_text()
    assert first == second
    report = json.loads(first)
    assert all(set(entry) == {"policy", "enforcement", "resource", "message", "origin"} for entry in report)
    order = ("policy", "enforcement", "resource", "message", "origin")
    assert report == sorted(report, key=lambda e: tuple(e[key] for key in order))
    assert {entry["policy"] for entry in report} >= {"gpu-node-group-noschedule-taint", "helm-chart-version-pinned"}
    assert {entry["origin"] for entry in report} == {
        "registered",
        "rendered from kubernetes:helm.sh/v3:Release::gpu-operator-release",  # the operator's own pods (advisory)
    }


def _as_run(registrations: list[Registration]) -> ProgramRun:
    return ProgramRun(stack="dev", registrations=registrations)


def test_secret_values_never_reach_the_report(dev: ProgramRun) -> None:
    leaked = "s3cr3t-driver-flag"

    def secret_value(inputs: dict[str, Any]) -> None:
        inputs["values"]["driver"]["enabled"] = leaked  # a wrong type: the contract message quotes the value

    registrations = _edit(dev, RELEASE, secret_value)
    index = next(i for i, r in enumerate(registrations) if r.type == RELEASE)
    masked = copy.deepcopy(registrations[index].inputs)
    masked["values"]["driver"]["enabled"] = SECRET_MASK
    registrations[index] = replace(registrations[index], masked_inputs=masked)
    result = evaluate(registrations)
    assert result.failed
    assert leaked not in json.dumps(result.report())
    assert SECRET_MASK in result.mandatory[0].message


def test_secret_strings_follow_the_masked_copy() -> None:
    plain = {"a": {"b": ["x-secret", "y"]}, "c": "visible"}
    masked = {"a": {"b": [SECRET_MASK, "y"]}, "c": "visible"}
    assert secret_strings(plain, masked) == {"x-secret"}


def test_an_unknown_value_makes_the_policy_advisory_as_in_a_real_preview(dev: ProgramRun) -> None:
    def unknown_client_secret(inputs: dict[str, Any]) -> None:
        inputs["spec"]["tls"] = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown-string sentinel

    result = evaluate(_edit(dev, INGRESS, unknown_client_secret))
    assert not result.failed
    assert _new(result, dev) == [("ingress-tls", "advisory")]
    (finding,) = [f for f in result.findings if f.policy == "ingress-tls"]
    assert "can't run policy 'ingress-tls' during preview: string value at .spec.tls can't be known" in finding.message


def test_the_public_oidc_secret_in_the_oauth2_proxy_secret_is_caught_in_the_real_shape(dev: ProgramRun) -> None:
    proxy = next(r for r in dev.by_type(SECRET) if "client-secret" in r.inputs.get("stringData", {}))

    def public(inputs: dict[str, Any]) -> None:
        inputs["stringData"]["client-secret"] = DEFAULT_OIDC_CLIENT_SECRET

    registrations = [replace(r, inputs=_changed(r.inputs, public)) if r is proxy else r for r in dev.registrations]
    assert [f.policy for f in evaluate(registrations).mandatory] == ["kubeflow-no-public-credentials"]


def _changed(inputs: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = copy.deepcopy(inputs)
    change(copied)
    return copied


# ----------------------------------------------------------------------------------------------
# The preview CLI: report file, verdict table, exit codes


def _without_kubeflow(stack: str = "dev") -> dict[str, Any]:
    """The committed stack config with Kubeflow switched off: its Directories cannot fail these tests."""
    config = stack_config(stack)
    config[KUBEFLOW_KEY] = {**config[KUBEFLOW_KEY], "enabled": False}
    return config


def _project(tmp_path: Path, policy_config: Any) -> Path:
    """A copy of the project (program and dev stack without Kubeflow) with its own ``policies/config/dev.json``."""
    return project_copy(tmp_path, "dev", _without_kubeflow(), policy_config)


def test_the_preview_writes_the_report_the_rendered_objects_and_prints_the_verdicts(tmp_path: Path) -> None:
    result = preview_cli("dev", "--out", str(tmp_path), "--verbose", "--no-base")  # the verdict table: --verbose
    out = tmp_path / "dev"
    assert result.returncode == expected_exit(out), result.stderr  # 3 exactly when the report has a mandatory finding
    report = json.loads((out / REPORT_NAME).read_text())
    assert f"Policies ({len(ALL_POLICIES)}) for stack dev:" in result.stdout
    mandatory = sum(entry["enforcement"] == "mandatory" for entry in report)
    verdict = "FAILED" if mandatory else "passed"
    assert (
        f"policy gate {verdict}: {mandatory} mandatory, {len(report) - mandatory} advisory violation(s)"
        in result.stdout
    )
    assert "Rendered by the offline gate (rendered-output: " in result.stdout
    rendered_release = len(list((out / "rendered" / "gpu-operator-release").glob("*.yaml")))
    assert (
        f"kubernetes:helm.sh/v3:Release::gpu-operator-release: {rendered_release} objects (helm template gpu-operator "
        in result.stdout
    )
    cluster_policy = yaml.safe_load(
        (out / "rendered" / "gpu-operator-release" / "clusterpolicy-cluster-policy.yaml").read_text()
    )
    assert cluster_policy["kind"] == "ClusterPolicy"
    # dev runs two driver branches: the plan is printed, and each NVIDIADriver is written for review
    assert (
        "Driver upgrade plan (nvidiaDriver; a step starts once the previous step's proof and smoke Jobs pass):"
        in result.stdout
    )
    assert "    v100: driver 580.95.05 (" in result.stdout and "    a100: driver 595.91.07 (" in result.stdout
    for group in ("a100", "v100"):
        assert (out / "manifests" / f"nvidiadriver-gpu-platform-{group}.yaml").exists()
    for entry in report:
        if entry["origin"] != "registered":
            assert entry["origin"].startswith("rendered from kubernetes:"), entry
            assert f"{entry['resource']} ({entry['origin']}): " in result.stdout


def test_a_mandatory_violation_makes_the_preview_exit_3(tmp_path: Path) -> None:
    # The policy config makes the (advisory) digest-pinning rule mandatory; the dev images carry tags only.
    project = _project(tmp_path, {"container-image-digest-pinned": "mandatory"})
    result = preview_cli("dev", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet")
    assert result.returncode == 3, result.stdout + result.stderr
    report = json.loads((tmp_path / "out" / "dev" / REPORT_NAME).read_text())
    mandatory = {entry["policy"] for entry in report if entry["enforcement"] == "mandatory"}
    assert mandatory == {"container-image-digest-pinned"}
    count = sum(entry["enforcement"] == "mandatory" for entry in report)
    assert f"policy gate FAILED: {count} mandatory, {len(report) - count} advisory violation(s)" in result.stderr
    assert (tmp_path / "out" / "dev" / "resources.json").exists(), "the preview itself is still written"


def _moved_driver(repository: str | None) -> dict[str, Any]:
    """dev with one driver (so the ClusterPolicy renders it) and ``extraValues`` moving its repository."""
    config = _without_kubeflow()
    config[NODE_GROUPS_KEY] = one_driver({"nodeGroups": config[NODE_GROUPS_KEY]})["nodeGroups"]
    if repository is not None:
        config[OPERATOR_KEY] = {**config[OPERATOR_KEY], "extraValues": {"driver": {"repository": repository}}}
    return config


def test_extra_values_that_move_the_driver_to_another_registry_fail_the_preview(tmp_path: Path) -> None:
    project = project_copy(tmp_path, "dev", _moved_driver("registry.example.com/nvidia"))
    result = preview_cli("dev", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet")
    assert result.returncode == 3, result.stdout + result.stderr
    report = json.loads((tmp_path / "out" / "dev" / REPORT_NAME).read_text())
    mandatory = [entry for entry in report if entry["enforcement"] == "mandatory"]
    assert {entry["policy"] for entry in mandatory} == {"gpu-operator-images-allowed-registries"}
    # The rendered ClusterPolicy (only the offline gate sees it) and the release's values (the CLI sees those too).
    assert [(e["resource"], e["origin"]) for e in mandatory] == [
        ("kubernetes:helm.sh/v3:Release::gpu-operator-release", "registered"),
        (
            "kubernetes:nvidia.com/v1:ClusterPolicy::cluster-policy",
            "rendered from kubernetes:helm.sh/v3:Release::gpu-operator-release",
        ),
    ]
    assert mandatory[1]["message"].startswith(
        "ClusterPolicy cluster-policy spec.driver pulls registry.example.com/nvidia/driver:580.95.05, which is not "
        "from an allowed registry (nvcr.io, registry.k8s.io)"
    )
    rendered = tmp_path / "out" / "dev" / "rendered" / "gpu-operator-release" / "clusterpolicy-cluster-policy.yaml"
    assert yaml.safe_load(rendered.read_text())["spec"]["driver"]["repository"] == "registry.example.com/nvidia"


def test_the_same_stack_with_the_driver_where_the_chart_puts_it_passes(tmp_path: Path) -> None:
    for name, repository in (("default", None), ("explicit", "nvcr.io/nvidia")):
        project = project_copy(tmp_path / name, "dev", _moved_driver(repository))
        result = preview_cli("dev", "--root", str(project), "--out", str(tmp_path / name / "out"), "--quiet")
        assert result.returncode == 0, result.stdout + result.stderr


def test_an_invalid_policy_config_makes_the_preview_exit_2(tmp_path: Path) -> None:
    project = _project(tmp_path, {"no-such-policy": "mandatory"})
    result = preview_cli("dev", "--root", str(project), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "error: stack dev: policy config dev.json: no-such-policy: no such policy" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_tool_stops_the_preview_with_exit_1_and_says_make_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import preview.__main__ as cli
    import preview.render.tools as render_tools

    monkeypatch.setattr(render_tools, "REPO_ROOT", tmp_path)  # no .tools/bin there
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    project = _project(tmp_path, {})
    (project / ".upstream").symlink_to(ROOT / ".upstream")
    assert cli.main(["dev", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "error: stack dev: helm is not in .tools/bin nor on PATH" in err and "run `make tools`" in err
    assert "Traceback" not in err


def test_each_render_runs_once_per_preview(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import preview.__main__ as cli
    import preview.render.rendered as rendered_module

    commands: list[str] = []
    real_run = subprocess.run

    def counting(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        commands.append(f"{Path(command[0]).name} {command[1]}")
        return real_run(command, **kwargs)

    monkeypatch.setattr(rendered_module.subprocess, "run", counting)
    monkeypatch.setenv("GPU_PLATFORM_RENDER_CACHE", "off")  # every render runs: none comes from the caches
    project = project_copy(tmp_path, "dev", stack_config("dev"))  # Kubeflow on: two Directories and the release
    code = cli.main(["dev", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet"])
    assert code == expected_exit(tmp_path / "out" / "dev")
    assert sorted(commands) == ["helm template", "kubectl kustomize", "kubectl kustomize"]


@pytest.mark.parametrize("stack", STACKS)
def test_plain_props_and_the_analyzer_proxy_give_the_same_findings(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The gate hands plain inputs to policies unless a value is unknown; under the CLI every resource is proxied.

    registrations = run_program(stack).registrations
    plain = evaluate(registrations, load_policy_config(stack))
    monkeypatch.setattr(gate_evaluate, "analyzer_props", unknown_checking_proxy)
    proxied = evaluate(registrations, load_policy_config(stack))
    assert proxied.findings == plain.findings and proxied.not_applicable == plain.not_applicable


def test_the_programs_host_driver_hand_over_satisfies_the_policies() -> None:
    # A preinstalled group with hostDriverRemoval: the program labels the nodes and runs a privileged
    # DaemonSet in its system namespace; the hand-over and privilege policies both accept that.
    groups = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]["gpu-platform:nodeGroups"]
    name = next(iter(groups))
    groups[name].update(gpuEnvironment="runc_drivers_cuda", hostDriverRemoval=True)
    groups[name]["maintenance"] = {**groups[name].get("maintenance", {}), "autoUpgrade": False}
    run = run_program("dev", overrides={"gpu-platform:nodeGroups": groups})
    assert run.config_error is None, run.config_error
    assert any(r.type == "kubernetes:apps/v1:DaemonSet" for r in run.registrations)
    # The operator release rendered too (its values change with the hand-over); Kubeflow's Directories do not.
    rendered = render_registrations(run.by_type(HELM_RELEASE), ROOT)
    result = evaluate(run.registrations, load_policy_config("dev"), stack="dev", rendered=rendered)
    assert result.mandatory == [], verdict_table(result)
    assert "host-driver-removal-required" not in result.not_applicable


def test_a_policy_that_does_not_apply_is_reported_with_its_reason(dev: ProgramRun) -> None:
    # The seam with pulumi-policy: policies call the public args.not_applicable(reason); the gate
    # overrides that method (no private SDK import) and must still record the policy and its reason.
    result = evaluate(dev.registrations)
    assert result.not_applicable["host-driver-removal-required"] == (
        "no node group with a preinstalled driver under an operator that installs one"
    )


# ----------------------------------------------------------------------------------------------
# The real program's renders (Kubeflow on the pinned tree)


@pytest.mark.parametrize("stack", STACKS)
def test_the_gate_reports_exactly_the_public_credentials_the_real_kubeflow_render_holds(stack: str) -> None:
    # Whatever the overlay still ships from upstream is found, and nothing else; once the program replaces
    # every upstream default, the expectation (and the finding list) is empty.
    run, rendered = real_stack(stack)
    result = evaluate(run.registrations, load_policy_config(stack), stack=stack, rendered=rendered)
    secrets = [o for o in rendered.objects if o.manifest["kind"] == "Secret" and o.name.startswith("kubeflow/")]
    assert secrets, "the render holds Kubeflow's Secrets, so the check is not vacuous"
    expected = set()
    for obj in secrets:
        values = {key: base64.b64decode(value).decode() for key, value in (obj.manifest.get("data") or {}).items()}
        values.update(obj.manifest.get("stringData") or {})
        for credential in PUBLIC_DEFAULT_CREDENTIALS:
            if obj.manifest["metadata"]["name"] == credential.secret and values.get(credential.key) == credential.value:
                expected.add((f"kubernetes:core/v1:Secret::{obj.name}", credential.key))
    found = {
        (f.resource, f.message.split(" is ")[0].rsplit(".", 1)[1])
        for f in result.findings
        if f.policy == "kubeflow-no-public-credentials"
        and f.origin == "rendered from kubernetes:kustomize/v2:Directory::kubeflow-platform"
    }
    assert found == expected


@pytest.mark.parametrize("stack", STACKS)
def test_the_real_renders_break_no_rule_but_the_known_upstream_ones(stack: str) -> None:
    # The new rules hold for what the real chart and the real Kubeflow tree render: only the public
    # credentials (until the program replaces them) and the overlay that does not build yet are mandatory.
    run, rendered = real_stack(stack)
    result = evaluate(run.registrations, load_policy_config(stack), stack=stack, rendered=rendered)
    kinds = {(f.policy, f.resource if f.policy == RENDER_CHECK else "") for f in result.mandatory}
    assert kinds <= {
        ("kubeflow-no-public-credentials", ""),
        (RENDER_CHECK, "kubernetes:kustomize/v2:Directory::kubeflow-crds-and-namespaces"),
    }, verdict_table(result)


def test_a_policy_config_whose_cuda_level_drifts_from_the_stack_is_refused(dev: ProgramRun) -> None:
    from preview.gate.config import cuda_drift

    cuda = dev.outputs["cuda"]
    assert (
        cuda_drift({"driver-supports-cuda": {"requiredCuda": cuda["version"], "cudaCheck": cuda["check"]}}, cuda)
        is None
    )
    drift = cuda_drift({"driver-supports-cuda": {"requiredCuda": "12.4"}}, cuda)
    assert drift == (
        f"driver-supports-cuda.requiredCuda is '12.4' but the stack's cuda.version is {cuda['version']!r}; "
        "set them equal (the CLI policy run reads this file)"
    )


def test_the_preview_exits_2_when_the_policy_config_drifts(tmp_path: Path) -> None:
    for name in ("__main__.py", "Pulumi.yaml", "Pulumi.dev.yaml", ".upstream"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "policies" / "config").mkdir(parents=True)
    (tmp_path / "policies" / "config" / "dev.json").write_text('{"driver-supports-cuda": {"requiredCuda": "12.4"}}')
    result = preview_cli("dev", "--root", str(tmp_path), "--out", str(tmp_path / "out"), "--quiet")
    assert result.returncode == 2, result.stderr
    assert (
        "dev.json: driver-supports-cuda.requiredCuda is '12.4' but the stack's cuda.version is '12.6'" in result.stderr
    )


@pytest.mark.parametrize("form", ["folder", "archive"])
def test_a_mirrored_pinned_chart_passes_the_gate_end_to_end(form: str, tmp_path: Path) -> None:
    """gpuOperator.chartPath to the pinned chart (docs/operations.md, Air-gapped install): exit 0, no helm finding."""
    pinned = ROOT / GPU_OPERATOR_CHART.path
    config = _without_kubeflow()
    if form == "folder":
        chart = GPU_OPERATOR_CHART.path  # relative to the project folder, as the docs write it
    else:
        chart = str(tmp_path / GPU_OPERATOR_CHART.archive)
        with tarfile.open(chart, "w:gz") as tar:
            tar.add(pinned, arcname=GPU_OPERATOR_CHART.strip_prefix)
    config[OPERATOR_KEY] = {**config[OPERATOR_KEY], "chartPath": chart}
    project = project_copy(tmp_path, "dev", config)
    (project / GPU_OPERATOR_CHART.path).parent.mkdir(parents=True)
    (project / GPU_OPERATOR_CHART.path).symlink_to(pinned, target_is_directory=True)
    out = tmp_path / "out"
    result = preview_cli("dev", "--root", str(project), "--out", str(out), "--quiet", "--no-base")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / "dev" / REPORT_NAME).read_text())
    assert [entry for entry in report if entry["policy"].startswith("helm-")] == []
    assert [entry for entry in report if entry["enforcement"] == "mandatory"] == []
    release = json.loads((out / "dev" / "resources.json").read_text())
    assert chart in json.dumps(release), "the release installs from the mirrored chart"
