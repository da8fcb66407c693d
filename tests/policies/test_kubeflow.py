"""No credential published in kubeflow/manifests; Ingresses serve TLS for every host."""

from __future__ import annotations

import base64

import bcrypt
import pytest
from pulumi_policy import EnforcementLevel

from components.catalog.kubeflow.model import PublicDefault
from components.catalog.kubeflow.v1_10_2.credentials import (
    DEFAULT_COOKIE_SECRET,
    DEFAULT_OIDC_CLIENT_SECRET,
    DEFAULT_PASSWORD,
    DEFAULT_PASSWORD_HASH,
    PUBLIC_DEFAULT_CREDENTIALS,
    PUBLIC_DEFAULT_SECRET_VALUES,
)
from policies.gpu_policies.kubeflow import (
    ingress_tls,
    is_named,
    kubeflow_no_public_credentials,
    kubeflow_profile_gpu_quotas,
)
from tests.policies.support import config_for, run_resource

SECRET = "kubernetes:core/v1:Secret"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
OWN_HASH = bcrypt.hashpw(b"a long private passphrase", bcrypt.gensalt(rounds=4)).decode()


def _secret(namespace: str, name: str, string_data: dict | None = None, data: dict | None = None) -> dict:
    props: dict = {"metadata": {"namespace": namespace, "name": name}, "type": "Opaque"}
    if string_data is not None:
        props["stringData"] = string_data
    if data is not None:
        props["data"] = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    return props


def test_own_credentials_pass() -> None:
    props = _secret("auth", "dex-passwords", {"DEX_USER_PASSWORD": OWN_HASH})
    assert run_resource(kubeflow_no_public_credentials, SECRET, props).messages == []
    client = _secret(
        "auth", "dex-oidc-client", {"OIDC_CLIENT_ID": "kubeflow-oidc-authservice", "OIDC_CLIENT_SECRET": "x" * 32}
    )
    assert run_resource(kubeflow_no_public_credentials, SECRET, client).messages == []


def test_the_upstream_dex_password_hash_is_refused() -> None:
    props = _secret("auth", "dex-passwords", {"DEX_USER_PASSWORD": DEFAULT_PASSWORD_HASH})
    outcome = run_resource(kubeflow_no_public_credentials, SECRET, props)
    assert outcome.messages == [
        f"Secret auth/dex-passwords stringData.DEX_USER_PASSWORD is the upstream dex password hash (the public "
        f"password {DEFAULT_PASSWORD}); anyone can read it upstream, so generate a new one"
    ]
    assert kubeflow_no_public_credentials.enforcement_level is EnforcementLevel.MANDATORY


def test_a_fresh_hash_of_the_default_password_is_refused() -> None:
    fresh = bcrypt.hashpw(DEFAULT_PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    outcome = run_resource(
        kubeflow_no_public_credentials, SECRET, _secret("auth", "dex-passwords", {"DEX_USER_PASSWORD": fresh})
    )
    assert outcome.messages == [
        f"Secret auth/dex-passwords stringData.DEX_USER_PASSWORD is a bcrypt hash of the upstream default password "
        f"{DEFAULT_PASSWORD}; choose a new password and hash it with `python -m components.kubeflow.hash_password`"
    ]


def test_the_public_oidc_client_secret_is_refused_in_base64_data_too() -> None:
    props = _secret("auth", "dex-oidc-client", data={"OIDC_CLIENT_SECRET": DEFAULT_OIDC_CLIENT_SECRET})
    outcome = run_resource(kubeflow_no_public_credentials, SECRET, props)
    assert outcome.messages == [
        "Secret auth/dex-oidc-client data.OIDC_CLIENT_SECRET is the OIDC client secret published in "
        "kubeflow/manifests; anyone can read it upstream, so generate a new one"
    ]


def test_the_oauth2_proxy_secret_is_checked_key_by_key() -> None:
    props = _secret(
        "oauth2-proxy",
        "oauth2-proxy",
        {
            "client-secret": DEFAULT_OIDC_CLIENT_SECRET,
            "cookie-secret": DEFAULT_COOKIE_SECRET,
            "client-id": "kubeflow-oidc-authservice",
        },
    )
    outcome = run_resource(kubeflow_no_public_credentials, SECRET, props)
    assert [message.split(" is ")[0] for message in outcome.messages] == [
        "Secret oauth2-proxy/oauth2-proxy stringData.client-secret",
        "Secret oauth2-proxy/oauth2-proxy stringData.cookie-secret",
    ]


def test_a_secret_unknown_during_preview_is_not_a_default() -> None:
    unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown-string sentinel
    props = _secret(
        "auth", "dex-oidc-client", {"OIDC_CLIENT_SECRET": unknown, "OIDC_CLIENT_ID": DEFAULT_OIDC_CLIENT_SECRET}
    )
    outcome = run_resource(kubeflow_no_public_credentials, SECRET, props)
    assert len(outcome.messages) == 1 and "OIDC_CLIENT_ID" in outcome.text


def _ingress(hosts: list[str], tls: list[dict] | None) -> dict:
    spec: dict = {"rules": [{"host": host} for host in hosts]}
    if tls is not None:
        spec["tls"] = tls
    return {"metadata": {"name": "kubeflow", "namespace": "istio-system"}, "spec": spec}


def test_an_ingress_with_tls_for_its_host_passes() -> None:
    props = _ingress(["kubeflow.example.com"], [{"hosts": ["kubeflow.example.com"], "secretName": "kubeflow-tls"}])
    assert run_resource(ingress_tls, INGRESS, props).messages == []


def test_an_ingress_without_tls_is_refused() -> None:
    outcome = run_resource(ingress_tls, INGRESS, _ingress(["kubeflow.example.com"], None))
    assert outcome.messages == [
        "Ingress istio-system/kubeflow has no spec.tls, so sign-in and session cookies travel in clear text; add TLS"
    ]
    assert ingress_tls.enforcement_level is EnforcementLevel.MANDATORY


def test_every_host_needs_a_tls_entry_and_wildcards_cover_one_label() -> None:
    tls = [{"hosts": ["*.example.com"], "secretName": "wildcard"}]
    props = _ingress(["kubeflow.example.com", "example.com", "a.b.example.com"], tls)
    outcome = run_resource(ingress_tls, INGRESS, props)
    assert outcome.messages == [
        "Ingress istio-system/kubeflow serves a.b.example.com, example.com without a TLS entry for it (spec.tls "
        "hosts: *.example.com); add the host to spec.tls[].hosts"
    ]


def test_an_exempt_ingress_is_skipped() -> None:
    config = config_for(ingress_tls, exemptIngresses=["istio-system/kubeflow"])
    assert run_resource(ingress_tls, INGRESS, _ingress(["kubeflow.example.com"], None), config=config).messages == []


# ----------------------------------------------------------------------------------------------
# Upstream's database and MinIO defaults, refused where upstream puts them (the rendered Directory)


# The short values (Katib's, Pipelines' MySQL and MinIO); the long ones are refused by value anywhere (above).
AT_THEIR_KEYS = [c for c in PUBLIC_DEFAULT_CREDENTIALS if c.value not in PUBLIC_DEFAULT_SECRET_VALUES]


@pytest.mark.parametrize("credential", AT_THEIR_KEYS, ids=lambda c: f"{c.secret}-{c.key}")
def test_each_public_database_or_minio_default_is_refused_at_its_key(credential: PublicDefault) -> None:
    for props in (
        _secret("kubeflow", credential.secret, {credential.key: credential.value}),
        _secret("kubeflow", credential.secret, data={credential.key: credential.value}),
    ):
        outcome = run_resource(kubeflow_no_public_credentials, SECRET, props)
        assert len(outcome.messages) == 1, outcome.text
        assert outcome.messages[0].startswith(f"Secret kubeflow/{credential.secret} ")
        assert f".{credential.key} is {credential.what}" in outcome.text
        assert credential.source in outcome.text


def test_upstreams_katib_secret_as_kustomize_renders_it_is_refused() -> None:
    # applications/katib/upstream/components/mysql/secret.yaml, as `kubectl kustomize` prints it.
    props = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "katib-mysql-secrets", "namespace": "kubeflow"},
        "type": "Opaque",
        "data": {"MYSQL_ROOT_PASSWORD": "dGVzdA=="},
    }
    outcome = run_resource(kubeflow_no_public_credentials, SECRET, props)
    assert outcome.messages == [
        "Secret kubeflow/katib-mysql-secrets data.MYSQL_ROOT_PASSWORD is Katib's MySQL root password, the value "
        "published upstream in kubeflow/manifests (applications/katib/upstream/components/mysql/secret.yaml); "
        "replace it with a generated secret and point its consumers at it"
    ]


def test_the_empty_pipelines_mysql_password_is_refused_and_a_generated_one_passes() -> None:
    empty = _secret("kubeflow", "mysql-secret", {"username": "root", "password": ""})
    assert "is the Pipelines MySQL password (user root, empty password), empty in kubeflow/manifests" in (
        run_resource(kubeflow_no_public_credentials, SECRET, empty).text
    )
    generated = _secret("kubeflow", "mysql-secret", {"username": "root", "password": "x7Kp2" * 6})
    assert run_resource(kubeflow_no_public_credentials, SECRET, generated).messages == []


def test_generated_minio_and_katib_credentials_pass() -> None:
    minio = _secret("kubeflow", "mlpipeline-minio-artifact", {"accesskey": "pipelines", "secretkey": "Zq" * 20})
    katib = _secret("kubeflow", "katib-mysql-secrets", data={"MYSQL_ROOT_PASSWORD": "k" * 32})
    for props in (minio, katib):
        assert run_resource(kubeflow_no_public_credentials, SECRET, props).messages == []


def test_a_common_value_elsewhere_is_not_mistaken_for_a_default() -> None:
    # "test" is only refused where upstream ships it: another Secret or another key may hold it.
    props = _secret("team-a", "fixtures", {"MYSQL_ROOT_PASSWORD": "test", "password": ""})
    assert run_resource(kubeflow_no_public_credentials, SECRET, props).messages == []
    other_key = _secret("kubeflow", "katib-mysql-secrets", {"MYSQL_USER": "test"})
    assert run_resource(kubeflow_no_public_credentials, SECRET, other_key).messages == []


def test_a_hash_suffixed_generated_secret_name_is_recognised() -> None:
    assert is_named("mlpipeline-minio-artifact-5c8fmt8k2h", "mlpipeline-minio-artifact")
    assert not is_named("mlpipeline-minio-artifact-copy", "mlpipeline-minio-artifact")
    props = _secret("kubeflow", "mlpipeline-minio-artifact-5c8fmt8k2h", {"secretkey": "minio123"})
    assert len(run_resource(kubeflow_no_public_credentials, SECRET, props).messages) == 1


# --------------------------------------------------------------------------------------------
# kubeflow-profile-gpu-quotas
# --------------------------------------------------------------------------------------------

PROFILE = "kubernetes:kubeflow.org/v1:Profile"


def _profile(hard: dict[str, str]) -> dict:
    return {
        "metadata": {"name": "team-a"},
        "spec": {"owner": {"kind": "User", "name": "a@example.com"}, "resourceQuotaSpec": {"hard": hard}},
    }


def test_profile_quotas_on_advertised_gpu_resources_pass() -> None:
    hard = {
        "requests.nvidia.com/gpu": "2",
        "requests.nvidia.com/mig-1g.10gb": "7",
        "requests.nvidia.com/mig-1g.10gb.me": "1",
        "requests.cpu": "8",
    }
    assert run_resource(kubeflow_profile_gpu_quotas, PROFILE, _profile(hard)).messages == []
    assert kubeflow_profile_gpu_quotas.enforcement_level == EnforcementLevel.MANDATORY


def test_a_misspelt_mig_resource_is_refused() -> None:
    (message,) = run_resource(
        kubeflow_profile_gpu_quotas, PROFILE, _profile({"requests.nvidia.com/mig-1g.10g": "7"})
    ).messages
    assert message.startswith(
        "Profile team-a quota requests.nvidia.com/mig-1g.10g: nvidia.com/mig-1g.10g is not a resource"
    )


@pytest.mark.parametrize("key", ["limits.nvidia.com/gpu", "nvidia.com/mig-3g.40gb"])
def test_a_gpu_quota_kubernetes_never_counts_is_refused(key: str) -> None:
    (message,) = run_resource(kubeflow_profile_gpu_quotas, PROFILE, _profile({key: "1"})).messages
    assert f"quota {key}: Kubernetes counts an extended resource in a quota only as requests." in message


def test_extra_gpu_resources_are_allowed_by_config() -> None:
    props = _profile({"requests.nvidia.com/gpu.shared": "4"})
    assert len(run_resource(kubeflow_profile_gpu_quotas, PROFILE, props).messages) == 1
    config = config_for(kubeflow_profile_gpu_quotas, extraGpuResources=["nvidia.com/gpu.shared"])
    assert run_resource(kubeflow_profile_gpu_quotas, PROFILE, props, config=config).messages == []
