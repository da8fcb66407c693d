"""The offline pull-request gate: every policy over the real program's registrations.

Every stack in the repository must pass; each seeded violation must fail the gate (and the
preview's exit code); the per-stack policy config is honoured and validated like the CLI would.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy.proxy import unknown_checking_proxy

import preview.policy_gate as gate
from components.catalog.kubeflow_manifests import DEFAULT_OIDC_CLIENT_SECRET, DEFAULT_PASSWORD_HASH
from components.catalog.mig import mig_gpu
from policies.gpu_policies import ALL_POLICIES
from policies.gpu_policies.names import NODE_GROUP_TYPE, OPT_IN_LABEL
from preview.mocks import SECRET_MASK, Registration
from preview.policy_gate import (
    REPORT_NAME,
    GateResult,
    PolicyConfigError,
    evaluate,
    load_policy_config,
    parse_policy_config,
    run_gate,
    secret_strings,
    verdict_table,
    write_report,
)
from preview.runner import ProgramRun, run_program
from preview.stack_file import available_stacks
from tests.helpers import ROOT

STACKS = available_stacks(ROOT)
RELEASE = "kubernetes:helm.sh/v3:Release"
SECRET = "kubernetes:core/v1:Secret"
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
    run = run_program(stack)
    assert run.config_error is None, run.config_error
    result = run_gate(run)
    assert result.mandatory == [], verdict_table(result)
    assert set(result.levels) == {policy.name for policy in ALL_POLICIES}


@pytest.mark.parametrize("stack", STACKS)
def test_the_cuda_check_is_active_for_every_example_stack(stack: str) -> None:
    # Each stack's policy config names the workloads' CUDA level, so the check really runs.
    result = run_gate(run_program(stack))
    assert "driver-supports-cuda" not in result.not_applicable


# ----------------------------------------------------------------------------------------------
# Seeded violations: hand-modified registrations of the real dev program


def _edit(run: ProgramRun, resource_type: str, change: Callable[[dict[str, Any]], None]) -> list[Registration]:
    """The dev registrations with ``change`` applied to the inputs of the first ``resource_type``."""
    target = run.by_type(resource_type)[0]
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


def _extra_taint(inputs: dict[str, Any]) -> None:
    inputs["nodeTaints"].append("dedicated=gpu:NoExecute")


def _mirror_repo(inputs: dict[str, Any]) -> None:
    inputs["repositoryOpts"]["repo"] = "https://charts.example.com/mirror"


def _range_version(inputs: dict[str, Any]) -> None:
    inputs["version"] = "^26.7.0"


def _r595_driver(inputs: dict[str, Any]) -> None:
    inputs["values"]["driver"]["version"] = "595.45.04"


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
    ("driver-supports-gpu-architectures", "r595", lambda run: _edit(run, RELEASE, _r595_driver)),
    ("gpu-operator-values-contract", "unread-key", lambda run: _edit(run, RELEASE, _unread_key)),
    ("mig-layouts-placeable", "bad-layout", lambda run: _edit(run, RELEASE, _bad_mig_layout)),
    ("kubeflow-no-public-credentials", "default-hash", lambda run: _edit(run, SECRET, _default_password)),
    ("ingress-tls", "no-tls", lambda run: _edit(run, INGRESS, _no_tls)),
    (
        "privileged-workloads-allowlisted",
        "debug-pod",
        lambda run: _added(run, "kubernetes:apps/v1:DaemonSet", "debug", _PRIVILEGED_DEBUG),
    ),
    ("container-image-tag-pinned", "latest", lambda run: _added(run, "kubernetes:batch/v1:Job", "smoke", _LATEST_JOB)),
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
    assert mandatory - {policy for policy, _, _ in SEEDS} == {"driver-supports-cuda"}  # seeded through config below


def test_a_required_cuda_level_the_driver_cannot_run_fails_the_gate(dev: ProgramRun) -> None:
    config = {"driver-supports-cuda": {"requiredCuda": "13.1"}}
    result = evaluate(dev.registrations, parse_policy_config(config), stack="dev")
    assert [(f.policy, f.resource) for f in result.mandatory] == [
        ("driver-supports-cuda", f"{RELEASE}::{dev.by_type(RELEASE)[0].name}")
    ]
    assert "driver 580.95.05 is too old for CUDA 13.1 workloads" in result.mandatory[0].message


def test_a_production_stack_with_preemptible_gpus_passes_with_advisories() -> None:
    # The config allows preemptible production groups; only the advisory policy speaks up.
    environment = {"name": "dev", "production": True, "owner": "ml-platform"}
    run = run_program("dev", overrides={"gpu-platform:environment": environment})
    assert run.config_error is None
    result = run_gate(run)
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


def test_the_report_is_sorted_deterministic_and_has_four_fields(dev: ProgramRun, tmp_path: Path) -> None:
    registrations = _edit(_as_run(_edit(dev, NODE_GROUP_TYPE, _no_taints)), RELEASE, _range_version)
    first = write_report(evaluate(registrations), tmp_path / "a").read_text()
    second = write_report(evaluate(list(reversed(registrations))), tmp_path / "b").read_text()
    assert first == second
    report = json.loads(first)
    assert all(set(entry) == {"policy", "enforcement", "resource", "message"} for entry in report)
    assert report == sorted(report, key=lambda e: (e["policy"], e["enforcement"], e["resource"], e["message"]))
    assert {entry["policy"] for entry in report} >= {"gpu-node-group-noschedule-taint", "helm-chart-version-pinned"}


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


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "preview", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _project(tmp_path: Path, policy_config: Any) -> Path:
    """A copy of the project (program and dev stack) with its own ``policies/config/dev.json``."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("__main__.py", "Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy(ROOT / name, project / name)
    (project / "policies" / "config").mkdir(parents=True)
    (project / "policies" / "config" / "dev.json").write_text(json.dumps(policy_config))
    return project


def test_the_preview_writes_the_report_and_prints_the_verdicts(tmp_path: Path) -> None:
    result = _cli("dev", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "dev" / REPORT_NAME).read_text())
    assert [entry for entry in report if entry["enforcement"] == "mandatory"] == []
    assert "Policies (16) for stack dev:" in result.stdout
    assert f"policy gate passed: 0 mandatory, {len(report)} advisory violation(s)" in result.stdout


def test_a_mandatory_violation_makes_the_preview_exit_3(tmp_path: Path) -> None:
    project = _project(tmp_path, {"driver-supports-cuda": {"requiredCuda": "13.1"}})
    result = _cli("dev", "--root", str(project), "--out", str(tmp_path / "out"), "--quiet")
    assert result.returncode == 3, result.stdout + result.stderr
    report = json.loads((tmp_path / "out" / "dev" / REPORT_NAME).read_text())
    mandatory = [entry["policy"] for entry in report if entry["enforcement"] == "mandatory"]
    assert mandatory == ["driver-supports-cuda"]
    assert f"policy gate FAILED: 1 mandatory, {len(report) - 1} advisory violation(s)" in result.stderr
    assert (tmp_path / "out" / "dev" / "resources.json").exists(), "the preview itself is still written"


def test_an_invalid_policy_config_makes_the_preview_exit_2(tmp_path: Path) -> None:
    project = _project(tmp_path, {"no-such-policy": "mandatory"})
    result = _cli("dev", "--root", str(project), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "error: stack dev: policy config dev.json: no-such-policy: no such policy" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("stack", STACKS)
def test_plain_props_and_the_analyzer_proxy_give_the_same_findings(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The gate hands plain inputs to policies unless a value is unknown; under the CLI every resource is proxied.

    registrations = run_program(stack).registrations
    plain = evaluate(registrations, load_policy_config(stack))
    monkeypatch.setattr(gate, "analyzer_props", unknown_checking_proxy)
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
    result = run_gate(run)
    assert result.mandatory == [], verdict_table(result)
    assert "host-driver-removal-required" not in result.not_applicable


def test_a_policy_that_does_not_apply_is_reported_with_its_reason(dev: ProgramRun) -> None:
    # The seam with pulumi-policy: policies call the public args.not_applicable(reason); the gate
    # overrides that method (no private SDK import) and must still record the policy and its reason.
    result = evaluate(dev.registrations)
    assert result.not_applicable["host-driver-removal-required"] == (
        "no node group with a preinstalled driver under an operator that installs one"
    )
