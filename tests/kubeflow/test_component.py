"""The Kubeflow component under mocks: ordering, program-owned secrets, Ingress with TLS, checkout checks."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from components.base.problems import StackConfigError
from components.catalog import kubeflow_manifests as km
from components.kubeflow.checkout import checkout_problem
from components.kubeflow.component import Kubeflow
from components.stack.config import parse_stack_config
from preview.render import preview_files
from preview.runner import ProgramRun, run_program
from tests.helpers import refusal, set_path, stack_raw

SECRET = "kubernetes:core/v1:Secret"
DIRECTORY = "kubernetes:kustomize/v2:Directory"


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    return run_program("dev")


def test_program_creates_the_secrets_upstream_ships_with_public_defaults(dev: ProgramRun) -> None:
    secrets = {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r for r in dev.by_type(SECRET)}
    assert set(secrets) == {("auth", "dex-passwords"), ("auth", "dex-oidc-client"), ("oauth2-proxy", "oauth2-proxy")}
    dex = secrets[("auth", "dex-passwords")].inputs["stringData"]
    assert dex["DEX_USER_PASSWORD"] != km.DEFAULT_PASSWORD_HASH
    client = secrets[("auth", "dex-oidc-client")].inputs["stringData"]
    proxy = secrets[("oauth2-proxy", "oauth2-proxy")].inputs["stringData"]
    assert client["OIDC_CLIENT_SECRET"] == proxy["client-secret"], "dex and oauth2-proxy share the client secret"
    assert client["OIDC_CLIENT_SECRET"] != km.DEFAULT_OIDC_CLIENT_SECRET
    assert len(proxy["cookie-secret"]) in (16, 24, 32)
    for registration in secrets.values():
        assert registration.masked_inputs["stringData"] == dict.fromkeys(registration.inputs["stringData"], "[secret]")


def test_secret_values_never_reach_the_preview_files(dev: ProgramRun) -> None:
    text = "\n".join(preview_files(dev).values())
    for registration in dev.by_type(SECRET):
        for value in registration.inputs["stringData"].values():
            if value != km.OIDC_CLIENT_ID:
                assert value not in text


def test_crds_first_then_secrets_then_the_rest(dev: ProgramRun) -> None:
    crds = dev.one(DIRECTORY, "kubeflow-crds-and-namespaces")
    rest = dev.one(DIRECTORY, "kubeflow-platform")
    assert crds.inputs["directory"] == "build/kubeflow/dev/crds-and-namespaces"
    assert rest.inputs["directory"] == "build/kubeflow/dev/rest"
    for secret in dev.by_type(SECRET):
        assert crds.urn in secret.dependencies
        assert secret.urn in rest.dependencies
    assert crds.urn in rest.dependencies


def test_ingress_is_https_to_the_istio_gateway(dev: ProgramRun) -> None:
    ingress = dev.one("kubernetes:networking.k8s.io/v1:Ingress", "kubeflow-ingress").inputs
    assert ingress["metadata"]["namespace"] == "istio-system"
    assert ingress["spec"]["tls"] == [{"hosts": ["kubeflow.dev.example.com"], "secretName": "kubeflow-dev-tls"}]
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "istio-ingressgateway", "port": {"number": 80.0}}
    assert ingress["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] == "letsencrypt"
    assert ingress["spec"]["ingressClassName"] == "nginx"


def test_profiles_as_code(dev: ProgramRun) -> None:
    profile = dev.one("kubernetes:kubeflow.org/v1:Profile", "kubeflow-profile-team-notebooks").inputs
    assert profile["spec"]["owner"] == {"kind": "User", "name": "ml-platform@example.com"}
    assert profile["spec"]["resourceQuotaSpec"] == {"hard": {"requests.nvidia.com/gpu": "2"}}


def test_outputs_and_overlay_in_the_preview(dev: ProgramRun) -> None:
    assert dev.outputs["kubeflow"]["url"] == "https://kubeflow.dev.example.com/"
    assert dev.outputs["kubeflow"]["version"] == "v1.10.2"
    assert dev.outputs["kubeflow"]["dexIssuer"] == "http://dex.auth.svc.cluster.local:5556/dex"
    files = preview_files(dev)
    assert {
        "kubeflow/kustomization.yaml",
        "kubeflow/crds-and-namespaces/kustomization.yaml",
        "kubeflow/rest/kustomization.yaml",
    } <= set(files)
    assert "ml-platform@example.com" in files["kubeflow/kustomization.yaml"]
    assert km.DEFAULT_PASSWORD_HASH not in "\n".join(files.values())


def test_offline_preview_reports_a_missing_checkout_as_a_notice(dev: ProgramRun) -> None:
    assert any(n.startswith("kubeflow.manifestsPath: build/kubeflow-manifests does not exist") for n in dev.notices)


def test_a_real_run_stops_on_a_missing_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPU_PLATFORM_OFFLINE", raising=False)
    config = parse_stack_config(set_path(stack_raw("dev"), "kubeflow.manifestsPath", "/nonexistent/manifests")).kubeflow
    assert config is not None
    with pytest.raises(
        StackConfigError,
        match=re.escape("kubeflow.manifestsPath: /nonexistent/manifests does not exist; run `make kubeflow-manifests`"),
    ):
        Kubeflow._check_checkout(config)


def _git(path: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)


def test_checkout_at_another_tag_is_refused(tmp_path: Path) -> None:
    (tmp_path / "applications").mkdir()
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "README").write_text("x")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", ".")
    _git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "x")
    _git(tmp_path, "tag", "v1.10.1")
    problem = checkout_problem(tmp_path, "v1.10.2")
    assert problem is not None and "checked out at v1.10.1, not v1.10.2" in problem
    _git(tmp_path, "tag", "v1.10.2")
    assert checkout_problem(tmp_path, "v1.10.2") is None or "v1.10.1" in str(checkout_problem(tmp_path, "v1.10.2"))


def test_checkout_with_the_wrong_layout_is_refused(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    (tmp_path / "common").mkdir()
    assert "no applications/" in str(checkout_problem(tmp_path, "v1.10.2"))
    assert checkout_problem(tmp_path, "v1.10.0") is None


def test_config_refusals_name_their_keys() -> None:
    assert any(
        line.startswith("kubeflow.tag: unknown kubeflow/manifests tag 'v1.9.0'")
        for line in refusal(set_path(stack_raw("dev"), "kubeflow.tag", "v1.9.0"))
    )
    assert any(
        line.startswith("kubeflow.dex.email:")
        for line in refusal(set_path(stack_raw("dev"), "kubeflow.dex.email", "not-an-email"))
    )
    assert any(
        line.startswith("kubeflow.components:")
        for line in refusal(set_path(stack_raw("dev"), "kubeflow.components", ["istio"]))
    )
    assert refusal(set_path(stack_raw("dev"), "kubeflow.ingress.tls", None)) == [
        "kubeflow.ingress.tls: Input should be a valid dictionary or instance of TlsConfig (got None)"
    ]


def test_overlay_points_kustomize_at_the_configured_checkout(dev: ProgramRun) -> None:
    """manifestsPath is relative to the project; kustomize resolves it from the overlay folder."""
    import yaml

    overlay = dev.root / "build" / "kubeflow" / "dev"
    resources = yaml.safe_load((overlay / "kustomization.yaml").read_text())["resources"]
    assert resources, "the overlay references upstream components"
    for resource in resources:
        resolved = (overlay / resource).resolve()
        assert resolved.is_relative_to((dev.root / "build" / "kubeflow-manifests").resolve()), resource
