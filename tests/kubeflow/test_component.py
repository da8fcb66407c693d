"""The Kubeflow component under mocks: program-owned secrets, await timeouts, Ingress with TLS, tree checks.

What the Directories deploy, and their order against the program's Namespaces and Secrets, is checked
on the real render in test_real_tree.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pulumi
import pytest
import yaml

from components.base.problems import StackConfigError
from components.catalog.kubeflow.releases import DEFAULT_TAG, tag_components
from components.catalog.kubeflow.v1_10_2.components import CERT_MANAGER
from components.catalog.kubeflow.v1_10_2.credentials import DEFAULT_PASSWORD_HASH, OIDC_CLIENT_ID, PIPELINES_MYSQL_USER
from components.catalog.upstream import KUBEFLOW_MANIFESTS
from components.kubeflow.checkout import checkout_problem
from components.kubeflow.component import Kubeflow
from components.stack.config import parse_stack_config
from preview.run.files import preview_files
from preview.run.runner import ProgramRun, run_program
from tests.helpers import refusal, set_path, stack_raw
from tests.kubeflow.kustomize import REPO_ROOT

SECRET = "kubernetes:core/v1:Secret"
DIRECTORY = "kubernetes:kustomize/v2:Directory"
RANDOM = "random:index/randomPassword:RandomPassword"


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    return run_program("dev")


def _kubeflow(run_raw: dict[str, object]) -> ProgramRun:
    return run_program("dev", overrides={"gpu-platform:kubeflow": run_raw["kubeflow"]})


def test_dex_and_oauth2_proxy_share_one_generated_client_secret(dev: ProgramRun) -> None:
    secrets = {r.inputs["metadata"]["name"]: r.inputs["stringData"] for r in dev.by_type(SECRET)}
    assert secrets["dex-oidc-client"]["OIDC_CLIENT_SECRET"] == secrets["oauth2-proxy"]["client-secret"]
    assert secrets["dex-oidc-client"]["OIDC_CLIENT_ID"] == secrets["oauth2-proxy"]["client-id"] == OIDC_CLIENT_ID
    assert {r.name for r in dev.by_type(RANDOM)} == {
        "kubeflow-oidc-client-secret",
        "kubeflow-oauth2-proxy-cookie-secret",
        "kubeflow-katib-mysql-root-password",
        "kubeflow-pipelines-mysql-root-password",
        "kubeflow-pipelines-minio-access-key",
        "kubeflow-pipelines-minio-secret-key",
    }


def test_a_configured_oidc_client_secret_replaces_the_generated_one() -> None:
    run = _kubeflow(set_path(stack_raw("dev"), "kubeflow.oidcClientSecretKey", "kubeflowOidcClientSecret"))
    secrets = {r.inputs["metadata"]["name"]: r for r in run.by_type(SECRET)}
    client = secrets["dex-oidc-client"].inputs["stringData"]["OIDC_CLIENT_SECRET"]
    assert client == secrets["oauth2-proxy"].inputs["stringData"]["client-secret"]
    assert "kubeflow-oidc-client-secret" not in {r.name for r in run.by_type(RANDOM)}
    assert secrets["oauth2-proxy"].masked_inputs["stringData"]["client-secret"] == "[secret]"


def test_left_out_components_get_no_secret_and_no_password() -> None:
    left_out = {CERT_MANAGER, "katib", "pipelines", "user-namespace"}
    components = [c for c in tag_components(DEFAULT_TAG) if c not in left_out]
    run = _kubeflow(set_path(stack_raw("dev"), "kubeflow.components", components))
    assert run.config_error is None
    assert {r.inputs["metadata"]["name"] for r in run.by_type(SECRET)} == {
        "dex-passwords",
        "dex-oidc-client",
        "oauth2-proxy",
    }
    assert {r.name for r in run.by_type(RANDOM)} == {
        "kubeflow-oidc-client-secret",
        "kubeflow-oauth2-proxy-cookie-secret",
    }


def test_secret_values_never_reach_the_preview_files(dev: ProgramRun) -> None:
    text = "\n".join(preview_files(dev).values())
    for registration in dev.by_type(SECRET):
        for item, value in registration.inputs["stringData"].items():
            if value not in (OIDC_CLIENT_ID, PIPELINES_MYSQL_USER):
                assert value not in text, item


def _child(kind: str, custom: bool = True) -> pulumi.ResourceTransformArgs:
    return pulumi.ResourceTransformArgs(
        custom=custom,
        type_=kind,
        name="kubeflow-platform:kubeflow/ml-pipeline",
        props={},
        opts=pulumi.ResourceOptions(),
    )


def test_every_directory_child_waits_the_configured_timeout(dev: ProgramRun) -> None:
    """The timeout is a transform on each Directory: the engine runs it for every object the Directory registers."""
    deployment = _child("kubernetes:apps/v1:Deployment")
    directories = dev.by_type(DIRECTORY)
    assert [d.name for d in directories] == ["kubeflow-foundation", "kubeflow-platform"]
    for directory in directories:
        [transform] = directory.transforms
        result = transform(deployment)
        assert result is not None and result.opts.custom_timeouts is not None
        assert (result.opts.custom_timeouts.create, result.opts.custom_timeouts.update) == ("900s", "900s")
        assert result.props == deployment.props
        assert transform(_child(DIRECTORY, custom=False)) is None, (
            "the Directory itself is a component: nothing to time out"
        )


def test_await_timeout_follows_the_config() -> None:
    run = _kubeflow(set_path(stack_raw("dev"), "kubeflow.awaitTimeoutSeconds", 1800))
    for directory in run.by_type(DIRECTORY):
        result = directory.transforms[0](_child("kubernetes:core/v1:ConfigMap"))
        assert result is not None and result.opts.custom_timeouts is not None
        assert result.opts.custom_timeouts.create == "1800s"
    assert refusal(set_path(stack_raw("dev"), "kubeflow.awaitTimeoutSeconds", 10)) == [
        "kubeflow.awaitTimeoutSeconds: Input should be greater than or equal to 60 (got 10)"
    ]


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
    assert profile["spec"]["resourceQuotaSpec"] == {
        "hard": {"requests.nvidia.com/gpu": "1", "requests.nvidia.com/mig-1g.10gb": "7"}
    }


def test_outputs_and_overlay_in_the_preview(dev: ProgramRun) -> None:
    assert dev.outputs["kubeflow"]["url"] == "https://kubeflow.dev.example.com/"
    assert dev.outputs["kubeflow"]["version"] == "v1.10.2"
    assert dev.outputs["kubeflow"]["dexIssuer"] == "http://dex.auth.svc.cluster.local:5556/dex"
    files = preview_files(dev)
    assert {f for f in files if f.startswith("kubeflow/")} == {
        "kubeflow/README.md",
        "kubeflow/foundation/kustomization.yaml",
        "kubeflow/platform/kustomization.yaml",
        "kubeflow/platform/spawner_ui_config.yaml",  # upstream's, plus the fleet's MIG resources and pools
    }
    assert "ml-platform@example.com" in files["kubeflow/platform/kustomization.yaml"]
    assert DEFAULT_PASSWORD_HASH not in "\n".join(files.values())


def test_overlay_points_kustomize_at_the_configured_tree(dev: ProgramRun) -> None:
    """manifestsPath is relative to the project; kustomize resolves it from each stage's folder."""
    for stage in ("foundation", "platform"):
        overlay = dev.root / "build" / "kubeflow" / "dev" / stage
        resources = yaml.safe_load((overlay / "kustomization.yaml").read_text())["resources"]
        assert resources, "the stage references upstream paths"
        for resource in resources:
            resolved = (overlay / resource).resolve()
            assert resolved.is_relative_to((dev.root / KUBEFLOW_MANIFESTS.path).resolve()), resource
            assert resolved.is_dir(), resource


# --------------------------------------------------------------------------------------------
# The tree check
# --------------------------------------------------------------------------------------------


def test_offline_preview_reports_a_missing_tree_as_a_notice() -> None:
    run = _kubeflow(set_path(stack_raw("dev"), "kubeflow.manifestsPath", "build/no-such-tree"))
    assert run.config_error is None
    assert any(
        n.startswith("kubeflow.manifestsPath: build/no-such-tree does not exist; run `make upstream`")
        for n in run.notices
    )


def test_a_real_run_stops_on_a_missing_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPU_PLATFORM_OFFLINE", raising=False)
    config = parse_stack_config(set_path(stack_raw("dev"), "kubeflow.manifestsPath", "/nonexistent/manifests")).kubeflow
    assert config is not None
    with pytest.raises(StackConfigError) as caught:
        Kubeflow._check_checkout(config)
    [problem] = caught.value.problems
    text = str(problem)
    assert text.startswith("kubeflow.manifestsPath: /nonexistent/manifests does not exist; run `make upstream`")
    assert "`make upstream UPSTREAM_MIRROR=<dir>` without network" in text
    assert KUBEFLOW_MANIFESTS.archive in text


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the real pinned tree, to edit."""
    target = tmp_path_factory.mktemp("tree") / "manifests"
    shutil.copytree(REPO_ROOT / KUBEFLOW_MANIFESTS.path, target, symlinks=True)
    return target


def test_the_pinned_tree_passes_and_a_git_checkout_of_it_too(tree_copy: Path) -> None:
    assert checkout_problem(REPO_ROOT / KUBEFLOW_MANIFESTS.path) is None
    (tree_copy / ".git" / "objects").mkdir(parents=True, exist_ok=True)
    (tree_copy / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    assert checkout_problem(tree_copy) is None


@pytest.mark.parametrize("change", ["edit", "add", "remove"])
def test_a_tree_that_differs_from_the_pin_is_refused(tree_copy: Path, change: str) -> None:
    secret = tree_copy / "common" / "dex" / "base" / "dex-passwords.yaml"
    extra = tree_copy / "common" / "dex" / "base" / "extra.yaml"
    original = secret.read_text()
    try:
        if change == "edit":
            secret.write_text(original.replace("$2y$12$", "$2y$10$"))
        elif change == "add":
            extra.write_text("kind: Secret\n")
        else:
            secret.unlink()
        problem = checkout_problem(tree_copy)
    finally:
        secret.write_text(original)
        extra.unlink(missing_ok=True)
    assert problem is not None
    assert "is not kubeflow/manifests v1.10.2 as pinned in components/catalog/upstream.py" in problem
    assert "a file differs, is missing or was added" in problem
    assert "run `make upstream`" in problem


def test_config_refusals_name_their_keys() -> None:
    assert any(
        line.startswith("kubeflow.tag: unknown kubeflow/manifests tag 'v1.10.0'; supported: v1.10.2")
        for line in refusal(set_path(stack_raw("dev"), "kubeflow.tag", "v1.10.0"))
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
