"""The generated Kubeflow overlay: spec refusals, file contents, and real kustomize renders.

The render tests build a miniature kubeflow/manifests checkout (fixture_tree.py) in tmp_path and
run the real ``kubectl kustomize`` (kustomize 5.5, installed by tools/install-kustomize.sh) on the
generated overlay, so what is asserted is what ``kustomize.v2.Directory`` would deploy.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components.catalog import kubeflow_manifests as km
from components.kubeflow.overlay import (
    CRDS_AND_NAMESPACES_DIR,
    PROGRAM_SUPPLIED_SECRETS,
    REST_DIR,
    KubeflowOverlayError,
    KubeflowOverlaySpec,
    kind_regex_excluding,
    manifests_path_for,
    render_overlay,
    write_overlay,
)
from tests.kubeflow.fixture_tree import (
    UPSTREAM_CLIENT_SECRET,
    UPSTREAM_COOKIE_SECRET,
    UPSTREAM_EMAIL,
    UPSTREAM_HASH,
    build_fixture_tree,
    ensure_kubectl,
    expected_objects,
    kustomize_build,
    object_key,
    parse_objects,
)

PUBLIC_SECRETS = (UPSTREAM_HASH, UPSTREAM_CLIENT_SECRET, UPSTREAM_COOKIE_SECRET, km.DEFAULT_PASSWORD)
ALL_V1102 = tuple(c for c in km.tag_components("v1.10.2") if c != km.CERT_MANAGER)


@pytest.fixture(scope="session")
def kubectl() -> Path:
    """The real kubectl/kustomize; installed by the project's script when missing."""
    return ensure_kubectl()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture_tree(tmp_path_factory.mktemp("kf") / "manifests", "v1.10.2")


def _render(checkout: Path, out: Path, subdir: str = ".", **spec_args: Any) -> list[dict[str, Any]]:
    spec = KubeflowOverlaySpec(manifests_path_for(checkout, out), **spec_args)
    write_overlay(spec, out)
    return parse_objects(kustomize_build(out / subdir))


def _keys(objects: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {object_key(o) for o in objects}


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


# --------------------------------------------------------------------------------------------
# Spec refusals
# --------------------------------------------------------------------------------------------


def test_unknown_tag_is_refused_with_the_supported_tags() -> None:
    with pytest.raises(KubeflowOverlayError, match=r"unknown kubeflow/manifests tag 'v1\.9\.1'") as error:
        KubeflowOverlaySpec("../manifests", tag="v1.9.1")
    assert "v1.10.0, v1.10.1, v1.10.2" in str(error.value)


def test_unknown_component_is_refused_with_the_allowed_names() -> None:
    with pytest.raises(KubeflowOverlayError, match="unknown Kubeflow component 'notebooks'") as error:
        KubeflowOverlaySpec("../manifests", components=(*km.REQUIRED_COMPONENTS, "notebooks"))
    message = str(error.value)
    for name in ("jupyter", "katib", "kserve", "spark", "dex"):
        assert name in message


def test_a_required_component_cannot_be_disabled() -> None:
    without_dex = tuple(c for c in ALL_V1102 if c != "dex")
    with pytest.raises(KubeflowOverlayError, match=r"required Kubeflow component.*dex cannot be disabled"):
        KubeflowOverlaySpec("../manifests", components=without_dex)


def test_cert_manager_is_switched_by_its_flag_not_the_component_list() -> None:
    with pytest.raises(KubeflowOverlayError, match="install_cert_manager"):
        KubeflowOverlaySpec("../manifests", components=(*km.REQUIRED_COMPONENTS, "cert-manager"))


def test_spark_is_refused_for_a_tag_whose_example_lacks_it() -> None:
    with pytest.raises(KubeflowOverlayError, match=r"'spark' is not in the v1\.10\.0 example.*v1\.10\.2"):
        KubeflowOverlaySpec("../manifests", tag="v1.10.0", components=(*km.REQUIRED_COMPONENTS, "spark"))


def test_a_component_that_is_not_offered_says_why() -> None:
    with pytest.raises(KubeflowOverlayError, match="'model-registry' is not offered: not part of example"):
        KubeflowOverlaySpec("../manifests", components=(*km.REQUIRED_COMPONENTS, "model-registry"))


def test_a_component_without_what_it_needs_is_refused() -> None:
    with pytest.raises(KubeflowOverlayError, match="'jupyter' needs admission-webhook"):
        KubeflowOverlaySpec("../manifests", components=(*km.REQUIRED_COMPONENTS, "jupyter"))
    with pytest.raises(KubeflowOverlayError, match="'kserve' needs knative"):
        KubeflowOverlaySpec("../manifests", components=(*km.REQUIRED_COMPONENTS, "kserve"))


def test_a_component_listed_twice_is_refused() -> None:
    with pytest.raises(KubeflowOverlayError, match="'katib' is listed twice"):
        KubeflowOverlaySpec("../manifests", components=(*km.REQUIRED_COMPONENTS, "katib", "katib"))


def test_components_given_as_one_string_are_refused() -> None:
    with pytest.raises(KubeflowOverlayError, match="must be a list of names"):
        KubeflowOverlaySpec("../manifests", components="katib")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("dex_user_email", "alice", "is not an email address"),
        ("dex_user_email", "alice@corp.example\n  hashFromEnv: X", "is not an email address"),
        ("dex_username", "alice smith", "must be 1-63 letters"),
        ("ingress_host", "https://kubeflow.example.com", "must be a lowercase DNS name"),
        ("ingress_host", "Kubeflow.Example.com", "must be a lowercase DNS name"),
        ("manifests_path", "", "must name the kubeflow/manifests checkout"),
    ],
)
def test_malformed_values_are_refused(field: str, value: str, message: str) -> None:
    args: dict[str, Any] = {"manifests_path": "../manifests", field: value}
    with pytest.raises(KubeflowOverlayError, match=message):
        KubeflowOverlaySpec(**args)


def test_default_components_are_the_tag_example_without_cert_manager_switch_and_user_namespace() -> None:
    spec = KubeflowOverlaySpec("../manifests")
    assert spec.enabled_components == tuple(c for c in ALL_V1102 if c != "user-namespace")
    assert "spark" in spec.enabled_components
    assert "spark" not in KubeflowOverlaySpec("../manifests", tag="v1.10.0").enabled_components
    assert spec.disabled_components == ("user-namespace",)


# --------------------------------------------------------------------------------------------
# Overlay files (no kustomize needed)
# --------------------------------------------------------------------------------------------


def _kustomization(files: dict[str, str], subdir: str = ".") -> dict[str, Any]:
    name = "kustomization.yaml" if subdir == "." else f"{subdir}/kustomization.yaml"
    document: dict[str, Any] = yaml.safe_load(files[name])
    return document


def test_overlay_files_and_their_order() -> None:
    files = render_overlay(KubeflowOverlaySpec("../manifests"))
    assert list(files) == sorted(files)
    assert set(files) == {
        "README.md",
        "kustomization.yaml",
        f"{CRDS_AND_NAMESPACES_DIR}/kustomization.yaml",
        f"{REST_DIR}/kustomization.yaml",
    }


def test_overlay_mirrors_upstream_sort_options_and_paths() -> None:
    files = render_overlay(KubeflowOverlaySpec("../manifests", install_cert_manager=False))
    root = _kustomization(files)
    assert root["sortOptions"]["order"] == "legacy"
    assert root["sortOptions"]["legacySortOptions"]["orderFirst"][:4] == [
        "Namespace",
        "ResourceQuota",
        "StorageClass",
        "CustomResourceDefinition",
    ]
    assert root["sortOptions"]["legacySortOptions"]["orderLast"] == ["ValidatingWebhookConfiguration"]
    assert root["resources"][0] == "../manifests/common/istio/istio-crds/base"
    assert "../manifests/applications/profiles/pss" in root["resources"]
    assert not any(r.startswith("../manifests/common/cert-manager") for r in root["resources"])
    # The phase kustomizations are one level deeper: same resources, one more "../".
    for subdir in (CRDS_AND_NAMESPACES_DIR, REST_DIR):
        assert _kustomization(files, subdir)["resources"] == ["../" + r for r in root["resources"]]


def test_v1_10_0_uses_the_apps_and_istio_1_24_layout() -> None:
    root = _kustomization(render_overlay(KubeflowOverlaySpec("kf", tag="v1.10.0")))
    assert "kf/common/istio-1-24/istio-install/overlays/oauth2-proxy" in root["resources"]
    assert "kf/apps/profiles/upstream/overlays/kubeflow" in root["resources"]
    assert not any("/applications/" in r or "/common/istio/" in r for r in root["resources"])


def test_an_absolute_checkout_is_written_relative_to_the_overlay(tmp_path: Path) -> None:
    spec = KubeflowOverlaySpec(tmp_path / "vendor" / "kubeflow-manifests")
    with pytest.raises(KubeflowOverlayError, match="kustomize refuses absolute resource directories"):
        render_overlay(spec)
    files = render_overlay(spec, overlay_dir=tmp_path / "build" / "kubeflow")
    assert _kustomization(files)["resources"][0] == "../../vendor/kubeflow-manifests/common/cert-manager/base"
    assert all(str(tmp_path) not in text for text in files.values())


def test_renders_are_byte_identical(tmp_path: Path) -> None:
    spec_args: dict[str, Any] = {"dex_user_email": "alice@corp.example", "ingress_host": "kubeflow.corp.example"}
    first = render_overlay(KubeflowOverlaySpec("../manifests", **spec_args))
    second = render_overlay(KubeflowOverlaySpec("../manifests", **spec_args))
    assert first == second
    write_overlay(KubeflowOverlaySpec("../manifests", **spec_args), tmp_path / "a")
    write_overlay(KubeflowOverlaySpec("../manifests", **spec_args), tmp_path / "b")
    for relative, text in first.items():
        assert (tmp_path / "a" / relative).read_bytes() == (tmp_path / "b" / relative).read_bytes()
        assert (tmp_path / "a" / relative).read_text() == text


def test_overlay_files_carry_no_secret_values() -> None:
    spec = KubeflowOverlaySpec(
        "../manifests",
        components=ALL_V1102,
        dex_user_email="alice@corp.example",
        dex_username="alice",
        ingress_host="kubeflow.corp.example",
    )
    for relative, text in render_overlay(spec).items():
        for value in PUBLIC_SECRETS:
            assert value not in text, f"{relative} contains {value!r}"
        assert "stringData" not in text and "secretGenerator" not in text, relative
        assert not re.search(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}", text), f"{relative} contains a bcrypt hash"


def test_program_supplied_secrets_name_what_the_consumers_read() -> None:
    assert [(s.namespace, s.name, s.keys) for s in PROGRAM_SUPPLIED_SECRETS] == [
        ("auth", "dex-passwords", ("DEX_USER_PASSWORD",)),
        ("auth", "dex-oidc-client", ("OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET")),
        ("oauth2-proxy", "oauth2-proxy", ("client-id", "client-secret", "cookie-secret")),
    ]


def test_catalog_default_hash_is_the_published_password() -> None:
    assert bcrypt.checkpw(km.DEFAULT_PASSWORD.encode(), km.DEFAULT_PASSWORD_HASH.encode())
    assert km.DEFAULT_PASSWORD_HASH in km.PUBLIC_DEFAULT_SECRET_VALUES


_KIND = st.text(alphabet="CNRDamestpuocrDfinNx", min_size=0, max_size=30)


@given(
    kind=st.one_of(
        _KIND,
        st.sampled_from(["CustomResourceDefinition", "Namespace", "Custom", "Names", "Namespaces", "N", "C", "Pod"]),
    )
)
def test_kind_regex_matches_every_kind_except_the_excluded(kind: str) -> None:
    pattern = re.compile(kind_regex_excluding(("CustomResourceDefinition", "Namespace")))
    excluded = kind in ("CustomResourceDefinition", "Namespace")
    assert bool(pattern.fullmatch(kind)) is not excluded


# --------------------------------------------------------------------------------------------
# Real kustomize renders of the fixture checkout
# --------------------------------------------------------------------------------------------


def test_public_default_secrets_never_survive_the_render(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    plain = kustomize_build(checkout / "common/dex/overlays/oauth2-proxy")
    assert UPSTREAM_HASH in plain  # the fixture really carries the defaults
    objects = _render(checkout, tmp_path / "overlay", components=ALL_V1102)
    text = yaml.safe_dump_all(objects)
    for value in PUBLIC_SECRETS:
        assert value not in text
    assert [o for o in objects if o["kind"] == "Secret"] == []


def test_consumers_point_at_the_program_supplied_secret_names(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    objects = _render(checkout, tmp_path / "overlay")
    oauth2 = _find(objects, "Deployment", "oauth2-proxy")["spec"]["template"]["spec"]["containers"][0]
    secret_refs = {
        (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for e in oauth2["env"]
        if "secretKeyRef" in e["valueFrom"]
    }
    assert secret_refs == {("oauth2-proxy", k) for k in ("client-id", "client-secret", "cookie-secret")}
    dex = _find(objects, "Deployment", "dex")["spec"]["template"]["spec"]["containers"][0]
    assert [e["secretRef"]["name"] for e in dex["envFrom"]] == ["dex-oidc-client", "dex-passwords"]
    supplied = {(s.namespace, s.name) for s in PROGRAM_SUPPLIED_SECRETS}
    assert supplied == {("oauth2-proxy", "oauth2-proxy"), ("auth", "dex-oidc-client"), ("auth", "dex-passwords")}


def test_cert_manager_follows_install_cert_manager(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    cert_manager = expected_objects()["cert-manager"]
    with_it = _keys(_render(checkout, tmp_path / "with", install_cert_manager=True))
    without = _keys(_render(checkout, tmp_path / "without", install_cert_manager=False))
    assert cert_manager <= with_it
    assert cert_manager.isdisjoint(without)
    assert with_it - without == cert_manager


def test_configured_user_replaces_the_default_user(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    objects = _render(
        checkout, tmp_path / "overlay", components=ALL_V1102, dex_user_email="alice@corp.example", dex_username="alice"
    )
    assert UPSTREAM_EMAIL not in yaml.safe_dump_all(objects)
    config = yaml.safe_load(_find(objects, "ConfigMap", "dex")["data"]["config.yaml"])
    assert config["staticPasswords"] == [
        {
            "email": "alice@corp.example",
            "hashFromEnv": "DEX_USER_PASSWORD",
            "username": "alice",
            "userID": "15841185641784",
        }
    ]
    assert config["staticClients"][0]["secretEnv"] == "OIDC_CLIENT_SECRET"
    profile = _find(objects, "Profile", "kubeflow-user-example-com")
    assert profile["spec"]["owner"] == {"kind": "User", "name": "alice@corp.example"}


def test_without_a_configured_user_dex_keeps_upstream_config(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    objects = _render(checkout, tmp_path / "overlay")
    config = yaml.safe_load(_find(objects, "ConfigMap", "dex")["data"]["config.yaml"])
    assert config["staticPasswords"][0]["email"] == UPSTREAM_EMAIL


def test_enabled_components_are_present_and_disabled_ones_absent(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    expected = expected_objects("v1.10.2")
    everything = _keys(_render(checkout, tmp_path / "all", components=ALL_V1102))
    for component in ALL_V1102:
        assert expected[component] <= everything, component
    disabled = {"katib", "spark", "kserve", "knative", "user-namespace"}
    some = _keys(_render(checkout, tmp_path / "some", components=tuple(c for c in ALL_V1102 if c not in disabled)))
    for component in ALL_V1102:
        if component in disabled:
            assert expected[component].isdisjoint(some), component
        else:
            assert expected[component] <= some, component


def test_upstream_sort_order_reaches_the_render(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    kinds = [o["kind"] for o in _render(checkout, tmp_path / "overlay")]
    namespaces = kinds.count("Namespace")
    assert kinds[:namespaces] == ["Namespace"] * namespaces
    assert kinds[namespaces] == "CustomResourceDefinition"
    assert kinds[-1] == "ValidatingWebhookConfiguration"


def test_ingress_host_makes_oauth2_proxy_cookies_secure(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    def parameters(objects: list[dict[str, Any]]) -> tuple[str, str]:
        [cm] = [o for o in objects if o["metadata"]["name"].startswith("oauth2-proxy-parameters")]
        env = _find(objects, "Deployment", "oauth2-proxy")["spec"]["template"]["spec"]["containers"][0]["env"]
        [ref] = [e["valueFrom"]["configMapKeyRef"]["name"] for e in env if "configMapKeyRef" in e["valueFrom"]]
        assert ref == cm["metadata"]["name"]  # the Deployment follows the re-hashed name
        return cm["data"]["FORCE_HTTPS"], ref

    plain = parameters(_render(checkout, tmp_path / "plain"))
    served = parameters(_render(checkout, tmp_path / "served", ingress_host="kubeflow.corp.example"))
    assert plain[0] == "false"
    assert served[0] == "true"
    assert plain[1] != served[1]


def test_phases_split_the_full_render_exactly(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "overlay"
    args: dict[str, Any] = {"components": ALL_V1102, "dex_user_email": "alice@corp.example"}
    full = _render(checkout, out, **args)
    first = parse_objects(kustomize_build(out / CRDS_AND_NAMESPACES_DIR))
    rest = parse_objects(kustomize_build(out / REST_DIR))
    assert {o["kind"] for o in first} == {"CustomResourceDefinition", "Namespace"}
    assert not {o["kind"] for o in rest} & {"CustomResourceDefinition", "Namespace"}

    def canonical(objects: list[dict[str, Any]]) -> Counter[str]:
        return Counter(yaml.safe_dump(o, sort_keys=True) for o in objects)

    assert canonical(first) + canonical(rest) == canonical(full)


def test_absolute_manifests_path_renders_too(kubectl: Path, checkout: Path, tmp_path: Path) -> None:
    spec = KubeflowOverlaySpec(checkout.resolve())
    write_overlay(spec, tmp_path / "overlay")
    for subdir in (".", CRDS_AND_NAMESPACES_DIR, REST_DIR):
        assert parse_objects(kustomize_build(tmp_path / "overlay" / subdir))


def test_v1_10_0_layout_renders_with_every_component(kubectl: Path, tmp_path: Path) -> None:
    old = build_fixture_tree(tmp_path / "manifests-1.10.0", "v1.10.0")
    components = tuple(c for c in km.tag_components("v1.10.0") if c != km.CERT_MANAGER)
    objects = _keys(_render(old, tmp_path / "overlay", tag="v1.10.0", components=components))
    for component, expected in expected_objects("v1.10.0").items():
        assert expected <= objects, component
