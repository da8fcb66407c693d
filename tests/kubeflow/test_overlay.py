"""The generated Kubeflow overlay: spec refusals, file contents, and real kustomize renders of a non-default spec.

The generator unit tests read the files only; the render tests next to them build a spec the example
stacks do not use (components left out, upstream's example Profile on) from the real pinned tree with
the real ``kubectl kustomize``. What the stacks themselves deploy is in test_real_tree.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml

from components.catalog.kubeflow.releases import DEFAULT_TAG, MANIFESTS_TAGS, tag_components
from components.catalog.kubeflow.v1_10_2.components import CERT_MANAGER, REQUIRED_COMPONENTS
from components.catalog.kubeflow.v1_10_2.credentials import (
    DEFAULT_PASSWORD,
    DEFAULT_PASSWORD_HASH,
    DEFAULT_USER_EMAIL,
    DEFAULT_USERNAME,
    PUBLIC_DEFAULT_CREDENTIALS,
    PUBLIC_DEFAULT_SECRET_VALUES,
)
from components.catalog.kubeflow.v1_10_2.layout import upstream_sort_options
from components.catalog.kubeflow.v1_10_2.login import (
    DEX_CONFIG_KEY,
    DEX_CONFIGMAP,
    DEX_NAMESPACE,
    OAUTH2_PROXY_PARAMETERS_CONFIGMAP,
    USER_NAMESPACE_CONFIGMAP,
    USER_PROFILE_NAME,
)
from components.catalog.kubeflow.v1_10_2.replaced import REPLACED_SECRETS, SECRET_NAMESPACES
from components.catalog.upstream import KUBEFLOW_MANIFESTS
from components.kubeflow.overlay import render_overlay, write_overlay
from components.kubeflow.readme import review_command
from components.kubeflow.spec import (
    KubeflowOverlayError,
    KubeflowOverlaySpec,
    manifests_path_for,
    required_namespaces,
    required_secrets,
)
from components.kubeflow.stages import FOUNDATION, PLATFORM, STAGES
from tests.kubeflow.kustomize import REPO_ROOT, Obj, find, key, kustomize_build

ALL = tuple(c for c in tag_components(DEFAULT_TAG) if c != CERT_MANAGER)
TREE = REPO_ROOT / KUBEFLOW_MANIFESTS.path
PUBLIC = (*(d.value for d in PUBLIC_DEFAULT_CREDENTIALS if len(d.value) >= 8), DEFAULT_PASSWORD)
# A spec the example stacks do not use: Katib, Pipelines, KServe (and so Knative) and Spark left
# out, upstream's example Profile kept and given the configured user, no Ingress host.
LEAN = tuple(c for c in ALL if c not in {"katib", "pipelines", "kserve", "knative", "spark"})
LEAN_ARGS: dict[str, Any] = {"components": LEAN, "dex_user_email": "alice@corp.example", "install_cert_manager": False}


def _kustomization(files: dict[str, str], stage: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(files[f"{stage}/kustomization.yaml"])
    return document


def _patches(files: dict[str, str], stage: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(p["patch"]) for p in _kustomization(files, stage).get("patches", [])]


# --------------------------------------------------------------------------------------------
# Spec refusals
# --------------------------------------------------------------------------------------------


def test_unknown_tag_is_refused_with_the_pinned_one() -> None:
    with pytest.raises(KubeflowOverlayError, match=r"unknown kubeflow/manifests tag 'v1\.10\.0'") as error:
        KubeflowOverlaySpec("../manifests", tag="v1.10.0")
    assert "supported: v1.10.2 (the tree pinned by content digest in components/catalog/upstream.py)" in str(
        error.value
    )


def test_unknown_component_is_refused_with_the_allowed_names() -> None:
    with pytest.raises(KubeflowOverlayError, match="unknown Kubeflow component 'notebooks'") as error:
        KubeflowOverlaySpec("../manifests", components=(*REQUIRED_COMPONENTS, "notebooks"))
    message = str(error.value)
    for name in ("jupyter", "katib", "kserve", "spark", "dex"):
        assert name in message


def test_a_required_component_cannot_be_disabled() -> None:
    without_dex = tuple(c for c in ALL if c != "dex")
    with pytest.raises(KubeflowOverlayError, match=r"required Kubeflow component.*dex cannot be disabled"):
        KubeflowOverlaySpec("../manifests", components=without_dex)


def test_cert_manager_is_switched_by_its_flag_not_the_component_list() -> None:
    with pytest.raises(KubeflowOverlayError, match="installCertManager"):
        KubeflowOverlaySpec("../manifests", components=(*REQUIRED_COMPONENTS, "cert-manager"))


def test_a_component_that_is_not_offered_says_why() -> None:
    with pytest.raises(KubeflowOverlayError, match="'model-registry' is not offered: not part of example"):
        KubeflowOverlaySpec("../manifests", components=(*REQUIRED_COMPONENTS, "model-registry"))


def test_a_component_without_what_it_needs_is_refused() -> None:
    with pytest.raises(KubeflowOverlayError, match="'jupyter' needs admission-webhook"):
        KubeflowOverlaySpec("../manifests", components=(*REQUIRED_COMPONENTS, "jupyter"))
    with pytest.raises(KubeflowOverlayError, match="'kserve' needs knative"):
        KubeflowOverlaySpec("../manifests", components=(*REQUIRED_COMPONENTS, "kserve"))


def test_a_component_listed_twice_is_refused() -> None:
    with pytest.raises(KubeflowOverlayError, match="'katib' is listed twice"):
        KubeflowOverlaySpec("../manifests", components=(*REQUIRED_COMPONENTS, "katib", "katib"))


def test_components_given_as_one_string_are_refused() -> None:
    with pytest.raises(KubeflowOverlayError, match="must be a list of names"):
        KubeflowOverlaySpec("../manifests", components="katib")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("dex_user_email", "alice", "is not an email address"),
        ("dex_user_email", "alice@corp.example\n  hashFromEnv: X", "is not an email address"),
        ("dex_username", "alice smith", "must be 1-63 letters"),
        ("ingress_host", "https://kubeflow.example.com", "must be a fully qualified DNS name"),
        ("ingress_host", "Kubeflow.Example.com", "must be a fully qualified DNS name"),
        ("manifests_path", "", "must name the kubeflow/manifests tree"),
    ],
)
def test_malformed_values_are_refused(field: str, value: str, message: str) -> None:
    args: dict[str, Any] = {"manifests_path": "../manifests", field: value}
    with pytest.raises(KubeflowOverlayError, match=message):
        KubeflowOverlaySpec(**args)


def test_default_components_are_the_example_without_cert_manager_switch_and_user_namespace() -> None:
    spec = KubeflowOverlaySpec("../manifests")
    assert spec.enabled_components == tuple(c for c in ALL if c != "user-namespace")
    assert spec.disabled_components == ("user-namespace",)


# --------------------------------------------------------------------------------------------
# Overlay files (no kustomize needed)
# --------------------------------------------------------------------------------------------


def test_overlay_files_are_the_readme_and_one_kustomization_per_stage() -> None:
    files = render_overlay(KubeflowOverlaySpec("../manifests"))
    assert list(files) == sorted(files)
    assert set(files) == {"README.md", "foundation/kustomization.yaml", "platform/kustomization.yaml"}
    assert [s.directory for s in STAGES] == ["foundation", "platform"]


def test_stages_split_the_example_paths_in_upstream_order() -> None:
    files = render_overlay(KubeflowOverlaySpec("../manifests", components=ALL))
    example = [f"../../manifests/{path}" for _c, path in MANIFESTS_TAGS[DEFAULT_TAG].example_resources]
    foundation = _kustomization(files, FOUNDATION.directory)["resources"]
    platform = _kustomization(files, PLATFORM.directory)["resources"]
    assert foundation == [
        "../../manifests/common/cert-manager/base",
        "../../manifests/common/istio/istio-crds/base",
        "../../manifests/common/istio/istio-namespace/base",
        "../../manifests/common/istio/istio-install/overlays/oauth2-proxy",
    ]
    assert (
        platform[0] == "../../manifests/common/cert-manager/kubeflow-issuer/base"
    )  # validated by cert-manager's webhook
    assert sorted(foundation + platform) == sorted(example)
    assert [r for r in example if r in platform] == platform, "upstream order kept"
    for stage in STAGES:
        assert _kustomization(files, stage.directory)["sortOptions"] == upstream_sort_options()


def test_cert_manager_off_leaves_both_cert_manager_paths_out() -> None:
    files = render_overlay(KubeflowOverlaySpec("../manifests", install_cert_manager=False))
    for stage in STAGES:
        assert not [r for r in _kustomization(files, stage.directory)["resources"] if "/common/cert-manager/" in r]


def test_platform_deletes_exactly_what_the_program_creates() -> None:
    spec = KubeflowOverlaySpec(
        "../manifests", dex_user_email="alice@corp.example", ingress_host="kubeflow.corp.example"
    )
    files = render_overlay(spec)
    deleted = {
        (p["kind"], p["metadata"].get("namespace", ""), p["metadata"]["name"])
        for p in _patches(files, "platform")
        if p.get("$patch") == "delete"
    }
    assert deleted == {("Secret", s.namespace, s.name) for s in REPLACED_SECRETS} | {
        ("Namespace", "", n.name) for n in SECRET_NAMESPACES
    }
    assert required_secrets(spec) == REPLACED_SECRETS
    assert required_namespaces(spec) == SECRET_NAMESPACES
    assert "patches" not in _kustomization(files, "foundation"), "the foundation is upstream's, unchanged"


def test_a_left_out_component_leaves_its_secrets_and_patches_out() -> None:
    spec = KubeflowOverlaySpec("../manifests", **LEAN_ARGS)
    names = {s.name for s in required_secrets(spec)}
    assert names == {"dex-passwords", "dex-oidc-client", "oauth2-proxy"}
    patched = {p["metadata"]["name"] for p in _patches(render_overlay(spec), "platform")}
    assert not patched & {"katib-mysql-secrets", "mysql-secret", "mlpipeline-minio-artifact", "mysql", "katib-mysql"}
    assert {USER_PROFILE_NAME, USER_NAMESPACE_CONFIGMAP} <= patched


def test_mysql_servers_are_patched_to_require_a_root_password() -> None:
    patches = {
        p["metadata"]["name"]: p for p in _patches(render_overlay(KubeflowOverlaySpec("../manifests")), "platform")
    }
    [mysql] = patches["mysql"]["spec"]["template"]["spec"]["containers"]
    assert mysql["env"] == [
        {"name": "MYSQL_ALLOW_EMPTY_PASSWORD", "$patch": "delete"},
        {"name": "MYSQL_ROOT_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "mysql-secret", "key": "password"}}},
    ]
    [katib] = patches["katib-mysql"]["spec"]["template"]["spec"]["containers"]
    assert katib["env"] == [{"name": "MYSQL_ALLOW_EMPTY_PASSWORD", "$patch": "delete"}]


def test_without_a_configured_user_dex_config_is_not_patched() -> None:
    patched = {p["metadata"]["name"] for p in _patches(render_overlay(KubeflowOverlaySpec("../manifests")), "platform")}
    assert DEX_CONFIGMAP not in patched
    assert OAUTH2_PROXY_PARAMETERS_CONFIGMAP not in patched


def test_an_absolute_tree_is_written_relative_to_the_overlay(tmp_path: Path) -> None:
    spec = KubeflowOverlaySpec(tmp_path / "vendor" / "kubeflow-manifests")
    with pytest.raises(KubeflowOverlayError, match="kustomize refuses absolute resource directories"):
        render_overlay(spec)
    files = render_overlay(spec, overlay_dir=tmp_path / "build" / "kubeflow")
    assert (
        _kustomization(files, "foundation")["resources"][0]
        == "../../../vendor/kubeflow-manifests/common/cert-manager/base"
    )
    assert all(str(tmp_path) not in text for text in files.values())


def test_renders_are_byte_identical(tmp_path: Path) -> None:
    spec_args: dict[str, Any] = {"dex_user_email": "alice@corp.example", "ingress_host": "kubeflow.corp.example"}
    first = render_overlay(KubeflowOverlaySpec("../manifests", **spec_args), "build/kubeflow/x")
    second = render_overlay(KubeflowOverlaySpec("../manifests", **spec_args), "build/kubeflow/x")
    assert first == second
    write_overlay(KubeflowOverlaySpec("../manifests", **spec_args), tmp_path / "a")
    write_overlay(KubeflowOverlaySpec("../manifests", **spec_args), tmp_path / "b")
    for relative in render_overlay(KubeflowOverlaySpec("../manifests", **spec_args)):
        assert (tmp_path / "a" / relative).read_bytes() == (tmp_path / "b" / relative).read_bytes()


def test_write_overlay_removes_files_of_an_earlier_layout(tmp_path: Path) -> None:
    out = tmp_path / "overlay"
    (out / "rest").mkdir(parents=True)
    (out / "rest" / "kustomization.yaml").write_text("stale")
    (out / "kustomization.yaml").write_text("stale")
    write_overlay(KubeflowOverlaySpec("../manifests"), out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "README.md",
        "foundation",
        "foundation/kustomization.yaml",
        "platform",
        "platform/kustomization.yaml",
    ]


def test_overlay_files_carry_no_secret_values() -> None:
    spec = KubeflowOverlaySpec(
        "../manifests",
        components=ALL,
        dex_user_email="alice@corp.example",
        dex_username="alice",
        ingress_host="kubeflow.corp.example",
    )
    for relative, text in render_overlay(spec).items():
        for value in PUBLIC:
            assert value not in text, f"{relative} contains {value!r}"
        assert "stringData" not in text and "secretGenerator" not in text, relative
        assert not re.search(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}", text), f"{relative} contains a bcrypt hash"


def test_readme_names_the_stages_the_namespaces_and_the_secrets() -> None:
    readme = render_overlay(KubeflowOverlaySpec("../manifests"), "build/kubeflow/dev")["README.md"]
    assert 'kubectl kustomize "$(git rev-parse --show-toplevel)/build/kubeflow/dev/platform"' in readme
    assert "kubectl kustomize ." not in readme
    for secret in REPLACED_SECRETS:
        assert f"`{secret.namespace}/{secret.name}`" in readme
    for namespace in SECRET_NAMESPACES:
        assert f"- `{namespace.name}` (labels" in readme


def test_review_command_without_a_project_relative_folder_renders_from_the_overlay() -> None:
    assert review_command(None, PLATFORM) == "kubectl kustomize platform"
    assert review_command("/abs/overlay", FOUNDATION) == "kubectl kustomize foundation"


def test_catalog_default_hash_is_the_published_password() -> None:
    assert bcrypt.checkpw(DEFAULT_PASSWORD.encode(), DEFAULT_PASSWORD_HASH.encode())
    assert DEFAULT_PASSWORD_HASH in PUBLIC_DEFAULT_SECRET_VALUES


# --------------------------------------------------------------------------------------------
# Real kustomize on the real tree, for a spec the stacks do not use
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Obj]]:
    out = tmp_path_factory.mktemp("kubeflow") / "overlay"
    write_overlay(KubeflowOverlaySpec(manifests_path_for(TREE, out), **LEAN_ARGS), out)
    return {stage.directory: kustomize_build(out / stage.directory) for stage in STAGES}


def test_left_out_components_are_absent_and_the_overlay_still_builds(lean: dict[str, list[Obj]]) -> None:
    objects = [o for stage in lean.values() for o in stage]
    names = {o["metadata"]["name"] for o in objects if o["kind"] == "Deployment"}
    assert not {"katib-mysql", "ml-pipeline", "minio", "kserve-controller-manager", "spark-operator-controller"} & names
    assert not [o for o in objects if o["metadata"].get("namespace") == "knative-serving"]
    assert not [o for o in objects if o["kind"] == "ClusterIssuer" or o["metadata"].get("namespace") == "cert-manager"]
    replaced = tuple(s.name for s in REPLACED_SECRETS)
    assert not [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"].startswith(replaced)]


def test_the_example_profile_gets_the_configured_user(lean: dict[str, list[Obj]]) -> None:
    platform = lean[PLATFORM.directory]
    profile = find(platform, "Profile", USER_PROFILE_NAME)
    assert profile["spec"]["owner"] == {"kind": "User", "name": "alice@corp.example"}
    dex = yaml.safe_load(find(platform, "ConfigMap", DEX_CONFIGMAP, DEX_NAMESPACE)["data"][DEX_CONFIG_KEY])
    assert dex["staticPasswords"][0]["email"] == "alice@corp.example"
    assert dex["staticPasswords"][0]["username"] == DEFAULT_USERNAME  # not configured: upstream's
    assert DEFAULT_USER_EMAIL not in str([o for o in platform if key(o)[0] in ("ConfigMap", "Profile")])
