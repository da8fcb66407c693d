"""Rendering what the program registers: the pinned GPU Operator chart with real helm, Directories with real kustomize.

The real program's renders (both stacks, Kubeflow on the pinned kubeflow/manifests tree) are shared
through ``tests/preview/support.real_stack``; seeded releases and Directories show what each kind of
failure looks like, and what the gate makes of it.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

import preview.render.tools as render_tools
from components.catalog.gpu_operator_operands import CHART_IMAGE_REGISTRIES, HOST_NETWORK_OPERANDS, image_registry
from components.catalog.names import KUSTOMIZE_DIRECTORY_TYPE
from components.catalog.upstream import GPU_OPERATOR_CHART
from policies.gpu_policies.names import pod_spec_path
from policies.gpu_policies.operands import is_operator_resource, operator_resource_blocks, resource_images
from policies.gpu_policies.props import get
from preview.gate.evaluate import RENDER_CHECK, evaluate
from preview.render.rendered import HELM_RELEASE, Rendered, RenderedObject, render_registrations, split_documents
from preview.render.tools import RenderSetupError, find_tool
from preview.run.registration import SECRET_MASK, Registration
from preview.run.runner import run_program
from preview.run.stack_file import available_stacks
from tests.helpers import ROOT, one_driver, stack_raw
from tests.preview.support import real_stack, with_pinned_kubeflow

# dev with every pool on gpuOperator.driver: the driver is rendered into the ClusterPolicy.
ONE_DRIVER = {"gpu-platform:nodeGroups": one_driver(stack_raw("dev", expand_defaults=False))["nodeGroups"]}

STACKS = available_stacks(ROOT)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the Kubeflow render is ~10 MB of YAML


def _release(run_or_registrations: Any) -> Registration:
    registrations = getattr(run_or_registrations, "registrations", run_or_registrations)
    return next(r for r in registrations if r.type == HELM_RELEASE)


def _directory(root: Path, name: str, files: dict[str, Any]) -> Registration:
    """A Directory registration over a kustomization written under ``root/<name>``."""
    folder = root / name
    folder.mkdir(parents=True)
    for file_name, document in files.items():
        text = document if isinstance(document, str) else yaml.safe_dump_all(document)
        (folder / file_name).write_text(text)
    urn = f"urn:pulumi:dev::gpu-platform::gpu-platform:kubeflow:Kubeflow${KUSTOMIZE_DIRECTORY_TYPE}::{name}"
    inputs = {"directory": name, "skipAwait": False}
    return Registration(KUSTOMIZE_DIRECTORY_TYPE, name, urn, "", False, inputs, copy.deepcopy(inputs))


def _kustomization(*resources: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(resources)}]


def _one(objects: list[RenderedObject], kind: str, name: str) -> RenderedObject:
    return next(o for o in objects if o.manifest["kind"] == kind and o.manifest["metadata"]["name"] == name)


# ----------------------------------------------------------------------------------------------
# The real program


@pytest.mark.parametrize("stack", STACKS)
def test_the_operator_release_renders_with_the_pinned_chart_and_the_stacks_values(stack: str) -> None:
    run, rendered = real_stack(stack)
    release = _release(run)
    (render,) = [r for r in rendered.renders if r.origin is release]
    assert render.problem is None
    assert render.command == (
        f"helm template {release.inputs['name']} {GPU_OPERATOR_CHART.path} --namespace {release.inputs['namespace']}"
    )
    policy = _one(list(render.objects), "ClusterPolicy", "cluster-policy")
    assert policy.type == "kubernetes:nvidia.com/v1:ClusterPolicy"
    assert policy.urn.endswith(
        "$kubernetes:helm.sh/v3:Release$kubernetes:nvidia.com/v1:ClusterPolicy::gpu-operator-release:cluster-policy"
    )
    # The values reach the chart: what the program computed for the driver, MIG and tolerations is in the policy.
    values = release.inputs["values"]
    assert policy.manifest["spec"]["driver"]["enabled"] == values["driver"]["enabled"]
    assert policy.manifest["spec"]["mig"]["strategy"] == values["mig"]["strategy"]
    assert policy.manifest["spec"]["daemonsets"]["tolerations"] == values["daemonsets"]["tolerations"]
    operator = _one(list(render.objects), "Deployment", "gpu-operator")
    assert (
        operator.name == f"{release.inputs['namespace']}/gpu-operator"
        and operator.type == "kubernetes:apps/v1:Deployment"
    )
    # CRDs come with the release (skipCrds is not set), test hooks do not (helm install does not run them).
    assert any(o.name == "clusterpolicies.nvidia.com" for o in render.objects)


@pytest.mark.parametrize("stack", STACKS)
def test_the_pinned_chart_pulls_from_the_catalog_registries_and_needs_no_host_network(stack: str) -> None:
    # Where the catalog's CHART_IMAGE_REGISTRIES and HOST_NETWORK_OPERANDS come from: the real chart, rendered.
    run, rendered = real_stack(stack)
    objects = [o for o in rendered.objects if o.origin is _release(run)]
    registries: set[str] = set()
    host_network: list[str] = []
    for obj in objects:
        if is_operator_resource(obj.type):
            registries |= {image_registry(ref) for _, ref in resource_images(obj.type, obj.manifest)}
            host_network += [
                b.path for b in operator_resource_blocks(obj.type, obj.manifest) if b.keys.get("hostNetwork")
            ]
        path = pod_spec_path(obj.type)
        pod = get(obj.manifest, *path) if path else None
        if pod:
            containers = [*pod.get("initContainers", []), *pod.get("containers", [])]
            registries |= {image_registry(c["image"]) for c in containers}
            if pod.get("hostNetwork"):
                host_network.append(obj.name)
    assert registries == set(CHART_IMAGE_REGISTRIES)
    assert host_network == list(HOST_NETWORK_OPERANDS) == []


@pytest.mark.parametrize("stack", STACKS)
def test_the_kubeflow_platform_directory_renders_the_real_tree(stack: str) -> None:
    _, rendered = real_stack(stack)
    (render,) = [r for r in rendered.renders if r.origin.name == "kubeflow-platform"]
    assert render.problem is None, render.problem
    assert render.command == f"kubectl kustomize {render.origin.inputs['directory']}"
    assert len(render.objects) > 400  # dev 529, prod 486 with kustomize 5.5 on v1.10.2
    pipeline = _one(list(render.objects), "Deployment", "ml-pipeline")
    assert (
        pipeline.name == "kubeflow/ml-pipeline"
        and pipeline.origin_label == "kubernetes:kustomize/v2:Directory::kubeflow-platform"
    )


def test_every_registered_release_and_directory_is_rendered_once_in_order() -> None:
    run, rendered = real_stack("dev")
    wanted = [r for r in run.registrations if r.type in (HELM_RELEASE, KUSTOMIZE_DIRECTORY_TYPE)]
    assert [render.origin for render in rendered.renders] == wanted
    assert len(wanted) == 3


def test_rendering_twice_gives_byte_identical_files() -> None:
    run, first = real_stack("dev")
    names = {"gpu-operator-release", "kubeflow-platform"}  # the two that build today
    second = render_registrations([r for r in run.registrations if r.name in names], run.root).files()
    assert second == {path: text for path, text in first.files().items() if path.split("/")[1] in names}
    assert "rendered/gpu-operator-release/clusterpolicy-cluster-policy.yaml" in second
    assert len([path for path in second if path.startswith("rendered/kubeflow-platform/")]) > 400


def test_rendered_files_are_the_documents_as_the_tool_printed_them() -> None:
    """The files keep helm's ``# Source:`` lines and parse to exactly the objects the gate checked."""
    _, rendered = real_stack("dev")
    files = rendered.files()
    policy = files["rendered/gpu-operator-release/clusterpolicy-cluster-policy.yaml"]
    assert policy.startswith("# Source: gpu-operator/templates/clusterpolicy.yaml\n")
    for render in rendered.renders:
        for obj in render.objects:
            if obj.manifest.get("kind") != "Secret":
                assert obj.text is not None and yaml.load(obj.text, Loader=LOADER) == obj.manifest
    kubeflow = [text for path, text in files.items() if path.startswith("rendered/kubeflow-platform/")]
    assert all(not text.startswith("---") and text.endswith("\n") for text in kubeflow)


def test_a_stream_splits_on_document_markers_only_where_the_yaml_spec_allows() -> None:
    stream = "---\n# Source: a.yaml\nkind: A\ndata:\n  script: |\n    echo ---\n---\n\n---\nkind: B\n"
    assert split_documents(stream) == [
        "\n# Source: a.yaml\nkind: A\ndata:\n  script: |\n    echo ---\n",
        "\nkind: B\n",
    ]
    # A marker with content after it, a document end or a directive: parsed as a stream instead.
    for unsafe in ("--- |\n  text\n", "kind: A\n...\n", "%YAML 1.2\n---\nkind: A\n"):
        assert split_documents(unsafe) is None


def test_an_object_that_carries_a_secret_value_is_written_masked_not_as_printed(tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"token": "s3cret-value"}}
    directory = _directory(
        tmp_path, "overlay", {"kustomization.yaml": _kustomization("config.yaml"), "config.yaml": [config]}
    )
    secret_origin = replace(
        directory,
        inputs={**directory.inputs, "note": "s3cret-value"},
        masked_inputs={**directory.masked_inputs, "note": SECRET_MASK},
    )
    (render,) = render_registrations([directory], tmp_path).renders
    printed = render_registrations([directory], tmp_path).files()["rendered/overlay/configmap-c.yaml"]
    assert printed == render.objects[0].text and "s3cret-value" in printed
    masked = replace(render, origin=secret_origin)
    text = Rendered((masked,)).files()["rendered/overlay/configmap-c.yaml"]
    assert "s3cret-value" not in text and yaml.safe_load(text)["data"]["token"] == SECRET_MASK


# ----------------------------------------------------------------------------------------------
# Seeded releases and Directories


def test_a_directory_that_does_not_build_is_a_mandatory_finding_with_kustomizes_error(tmp_path: Path) -> None:
    broken = _directory(tmp_path, "broken", {"kustomization.yaml": _kustomization("missing.yaml")})
    rendered = render_registrations([broken], tmp_path)
    (render,) = rendered.renders
    assert render.mandatory and render.objects == ()
    assert render.problem is not None and render.problem.startswith("`kubectl kustomize broken` failed: error:")
    assert "missing.yaml" in render.problem and str(tmp_path) not in render.problem  # no machine path
    result = evaluate([broken], rendered=rendered)
    assert result.failed
    (finding,) = result.mandatory
    assert (finding.policy, finding.resource, finding.origin) == (
        RENDER_CHECK,
        "kubernetes:kustomize/v2:Directory::broken",
        "registered",
    )
    assert f"kubernetes:kustomize/v2:Directory::broken: FAILED: {render.problem}" in result.renders


def test_a_directory_that_is_not_there_is_a_mandatory_finding(tmp_path: Path) -> None:
    gone = _directory(tmp_path, "gone", {"kustomization.yaml": _kustomization()})
    gone = replace(gone, inputs={"directory": "build/kubeflow/nowhere"})
    (render,) = render_registrations([gone], tmp_path).renders
    assert render.mandatory
    assert render.problem == (
        "`kubectl kustomize build/kubeflow/nowhere`: the directory build/kubeflow/nowhere does not exist; "
        "pulumi up would fail on it"
    )


def test_a_release_of_a_chart_without_a_pinned_copy_is_not_rendered_and_says_so() -> None:
    run, _ = real_stack("dev")
    other = replace(_release(run), inputs={**_release(run).inputs, "chart": "ingress-nginx", "version": "4.11.3"})
    (render,) = render_registrations([other], ROOT).renders
    assert not render.mandatory and render.objects == ()
    result = evaluate([other], rendered=render_registrations([other], ROOT))
    (finding,) = [f for f in result.findings if f.policy == RENDER_CHECK]
    assert finding.enforcement == "advisory"
    assert finding.message == (
        f"chart ingress-nginx 4.11.3 is not rendered: only the pinned gpu-operator {GPU_OPERATOR_CHART.version} "
        f"({GPU_OPERATOR_CHART.path}) is, so only the release's values are checked"
    )


def test_a_release_with_values_unknown_until_apply_is_not_rendered() -> None:
    run, _ = real_stack("dev")
    release = _release(run)
    masked = copy.deepcopy(release.masked_inputs)
    masked["values"]["driver"]["version"] = "[unknown]"
    (render,) = render_registrations([replace(release, masked_inputs=masked)], ROOT).renders
    assert render.problem == "not rendered: some values are only known after `pulumi up`" and not render.mandatory


def test_a_release_with_value_files_is_not_rendered_from_its_values_alone() -> None:
    run, _ = real_stack("dev")
    release = _release(run)
    with_files = replace(release, inputs={**release.inputs, "valueYamlFiles": ["extra-values.yaml"]})
    rendered = render_registrations([with_files], ROOT)
    assert rendered.renders[0].summary() == (
        "kubernetes:helm.sh/v3:Release::gpu-operator-release: not rendered: the gate renders values only, and the "
        "release sets valueYamlFiles"
    )
    assert rendered.objects == []


def test_a_missing_tool_stops_the_render_and_says_make_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_tools, "REPO_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    directory = _directory(tmp_path, "overlay", {"kustomization.yaml": _kustomization()})
    with pytest.raises(RenderSetupError, match=r"kubectl is not in \.tools/bin nor on PATH.*run `make tools`"):
        render_registrations([directory], tmp_path)


def test_a_tool_on_path_is_used_when_tools_bin_has_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_tools, "REPO_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(ROOT / ".tools" / "bin"))
    assert find_tool("helm", tmp_path) == str(ROOT / ".tools" / "bin" / "helm")


def test_a_missing_pinned_chart_stops_the_render_and_says_make_upstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, _ = real_stack("dev")
    monkeypatch.setattr(render_tools, "REPO_ROOT", tmp_path)
    with pytest.raises(RenderSetupError, match=rf"chart {GPU_OPERATOR_CHART.version} is not at .*run `make upstream`"):
        render_registrations([_release(run)], tmp_path)


def test_written_files_mask_secret_data_and_the_releases_secret_values(tmp_path: Path) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "team-a"},
        "stringData": {"password": "hunter2-very-private"},
    }
    directory = _directory(
        tmp_path, "overlay", {"kustomization.yaml": _kustomization("secret.yaml"), "secret.yaml": [secret]}
    )
    files = render_registrations([directory], tmp_path).files()
    assert yaml.safe_load(files["rendered/overlay/secret-team-a-db.yaml"])["stringData"] == {"password": SECRET_MASK}

    run = run_program("dev", overrides={**with_pinned_kubeflow("dev"), **ONE_DRIVER})  # the ClusterPolicy's driver
    release = _release(run)
    masked = copy.deepcopy(release.masked_inputs)
    masked["values"]["driver"]["version"] = SECRET_MASK  # as if the driver version were a Pulumi secret
    secret_release = replace(release, masked_inputs=masked)
    rendered = render_registrations([secret_release], ROOT)
    text = rendered.files()["rendered/gpu-operator-release/clusterpolicy-cluster-policy.yaml"]
    assert release.inputs["values"]["driver"]["version"] not in text and SECRET_MASK in text
    # The policies see the real value; the report does not.
    inputs = copy.deepcopy(release.inputs)
    inputs["values"]["driver"]["repository"] = "registry.example.com/nvidia"
    masked["values"]["driver"]["repository"] = "registry.example.com/nvidia"
    leaky = replace(release, inputs=inputs, masked_inputs=masked)
    result = evaluate([leaky], rendered=render_registrations([leaky], ROOT))
    rendered_findings = [f for f in result.mandatory if f.origin.startswith("rendered from")]
    assert rendered_findings and all(
        release.inputs["values"]["driver"]["version"] not in f.message for f in rendered_findings
    )


def test_seeded_public_credentials_and_node_ports_in_a_real_kustomize_render(tmp_path: Path) -> None:
    # The same Secret and Service as upstream ships them, through the real kustomize, violating and clean.
    katib = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "katib-mysql-secrets"},
        "type": "Opaque",
        "data": {"MYSQL_ROOT_PASSWORD": "dGVzdA=="},
    }
    ui: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ml-pipeline-ui"},
        "spec": {"type": "NodePort", "ports": [{"port": 80}], "selector": {"app": "ml-pipeline-ui"}},
    }
    kustomization = [{**_kustomization("objects.yaml")[0], "namespace": "kubeflow"}]
    violating = _directory(tmp_path, "violating", {"kustomization.yaml": kustomization, "objects.yaml": [katib, ui]})
    clean_katib = {**katib, "data": {"MYSQL_ROOT_PASSWORD": "NGJhN2Q5YjE0ZTNmNDAwYg=="}}
    clean_ui = {**ui, "spec": {**ui["spec"], "type": "ClusterIP"}}
    clean = _directory(
        tmp_path, "clean", {"kustomization.yaml": kustomization, "objects.yaml": [clean_katib, clean_ui]}
    )

    bad = evaluate([violating], rendered=render_registrations([violating], tmp_path))
    assert sorted((f.policy, f.resource, f.origin) for f in bad.mandatory) == [
        (
            "external-services-allowlisted",
            "kubernetes:core/v1:Service::kubeflow/ml-pipeline-ui",
            "rendered from kubernetes:kustomize/v2:Directory::violating",
        ),
        (
            "kubeflow-no-public-credentials",
            "kubernetes:core/v1:Secret::kubeflow/katib-mysql-secrets",
            "rendered from kubernetes:kustomize/v2:Directory::violating",
        ),
    ]
    good = evaluate([clean], rendered=render_registrations([clean], tmp_path))
    assert good.mandatory == []
