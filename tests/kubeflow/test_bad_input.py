"""Kubeflow and secret-key settings that are legal YAML but wrong are refused by key."""

from __future__ import annotations

import pytest

from tests.helpers import refusal, set_path, stack_raw


@pytest.mark.parametrize("host", ["192.0.2.10", "kubeflow", "Kubeflow.Example.com"])
def test_an_ingress_host_must_be_a_dns_name(host: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.ingress.host", host))
    assert line.startswith("kubeflow.ingress.host: ") and repr(host) in line
    assert line.endswith("(the API server's Ingress rule host check, k8s.io/kubernetes validateIngressRules)")


def test_a_profile_name_must_be_a_namespace_name() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.profiles.0.name", "Team_A"))
    assert line == (
        "kubeflow.profiles[0].name: 'Team_A' must be 1-63 lowercase letters, digits or '-', starting and ending "
        "with a letter or digit: a Profile names its namespace (the API server's namespace name rule, "
        "k8s.io/apimachinery NameIsDNSLabel)"
    )


@pytest.mark.parametrize("name", ["kube-system", "kubeflow", "istio-system", "default"])
def test_a_profile_cannot_take_a_system_namespace(name: str) -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.profiles.0.name", name))
    assert (
        line
        == f"kubeflow.profiles[0].name: {name!r} is a namespace of Kubernetes or the Kubeflow install; a team needs its own"
    )


def test_a_profile_owner_must_be_an_email() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.profiles.0.owner", "ml-platform"))
    assert line.startswith("kubeflow.profiles[0].owner: 'ml-platform' is not an email address")


def test_quota_values_must_be_quantities() -> None:
    raw = set_path(stack_raw("dev"), "kubeflow.profiles.0.resourceQuota", {"requests.nvidia.com/gpu": "two"})
    (line,) = refusal(raw)
    assert line.startswith(
        "kubeflow.profiles[0].resourceQuota.requests.nvidia.com/gpu: 'two' is not a Kubernetes quantity"
    )
    assert line.endswith("(the API server's quantity format, k8s.io/apimachinery resource.ParseQuantity)")


@pytest.mark.parametrize(
    ("stack", "key"),
    [
        ("dev", "kubeflow.dex.passwordHashSecret"),
        ("prod", "cluster.kubeconfigSecret"),
        ("prod", "bareMetal.ssh.privateKeySecret"),
    ],
)
def test_a_secret_key_cannot_be_a_program_setting_or_empty(stack: str, key: str) -> None:
    (line,) = refusal(set_path(stack_raw(stack), key, "cuda"))
    assert line == f"{key}: 'cuda' is a program setting of its own, not a secret key; name another key"
    lines = refusal(set_path(stack_raw(stack), key, ""))
    assert any(line.startswith(f"{key}: ") for line in lines), lines


def test_a_manifests_path_longer_than_any_path_is_refused() -> None:
    lines = refusal(set_path(stack_raw("dev"), "kubeflow.manifestsPath", "a" * 5000))
    assert any(
        line.startswith("kubeflow.manifestsPath: ")
        and "is 5000 bytes long; a Linux path is shorter than PATH_MAX" in line
        for line in lines
    ), lines


# --------------------------------------------------------------------------------------------
# Values that reach a Kubernetes object: refused by the receiver's rule, named by their key
# --------------------------------------------------------------------------------------------

_SUBDOMAIN = (
    "the Kubernetes API server allows only a DNS-1123 subdomain, lowercase letters, digits, '-' and '.', "
    "starting and ending with a letter or digit, at most 253 characters (k8s.io/apimachinery NameIsDNSSubdomain"
)


def test_a_tls_secret_name_the_api_server_refuses_is_refused_by_key() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.ingress.tls.secretName", "Bad_Secret"))
    assert line == (
        f"kubeflow.ingress.tls.secretName: 'Bad_Secret' is not a valid Secret name: {_SUBDOMAIN}, "
        "applied by networking validateTLSSecretName)"
    )


def test_an_ingress_class_name_with_a_space_is_refused_by_key() -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "kubeflow.ingress.className", "nginx public"))
    assert line == (
        f"kubeflow.ingress.className: 'nginx public' is not a valid IngressClass name: {_SUBDOMAIN}, "
        "applied by networking ValidateIngressClassName)"
    )


def test_a_cluster_issuer_with_a_space_is_refused_by_key() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.ingress.tls.clusterIssuer", "letsencrypt prod"))
    assert line == (
        f"kubeflow.ingress.tls.clusterIssuer: 'letsencrypt prod' is not a valid cert-manager ClusterIssuer name: "
        f"{_SUBDOMAIN}, applied by the apiextensions-apiserver custom resource validator)"
    )


@pytest.mark.parametrize("email", ["user@example.com", "User@Example.com"])
def test_kubeflows_public_default_user_is_refused_as_the_dex_user(email: str) -> None:
    (line,) = refusal(set_path(stack_raw("prod"), "kubeflow.dex.email", email))
    assert line.startswith(f"kubeflow.dex.email: {email!r} is the public default user of kubeflow/manifests v1.10.2 ")
    assert "common/dex/overlays/oauth2-proxy/config-map.yaml" in line
    assert "choose your team's own email address" in line


def test_a_dex_username_that_is_not_a_plain_name_is_refused_by_key() -> None:
    (line,) = refusal(set_path(stack_raw("dev"), "kubeflow.dex.username", "ml platform"))
    assert line.startswith("kubeflow.dex.username: 'ml platform' must be 1-63 letters, digits, '.', '_' or '-'")


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("requests.gpus", "'requests.gpus' is not a resource a ResourceQuota counts"),
        ("requests nvidia.com/gpu", "must not be empty or contain whitespace"),
    ],
)
def test_a_quota_key_a_resource_quota_refuses_is_refused_by_key(key: str, says: str) -> None:
    raw = set_path(stack_raw("dev"), "kubeflow.profiles.0.resourceQuota", {"requests.nvidia.com/gpu": "1", key: "2"})
    (line,) = refusal(raw)
    assert line.startswith(f"kubeflow.profiles[0].resourceQuota.{key}: ")
    assert says in line and "k8s.io/kubernetes validateResourceQuotaResourceName" in line


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("kubeflow.tag", "v1.10.0", "kubeflow.tag: unknown kubeflow/manifests tag 'v1.10.0'; supported: v1.10.2"),
        ("kubeflow.components", ["istio"], "kubeflow.components: required Kubeflow component(s) oauth2-proxy, dex"),
        ("kubeflow.components", ["cert-manager"], "kubeflow.components: cert-manager is not switched by the "),
        ("kubeflow.manifestsPath", "a\nb", "kubeflow.manifestsPath: holds the control character '\\n' (0x000a)"),
    ],
)
def test_install_choices_are_refused_by_the_key_they_are_about(key: str, value: object, message: str) -> None:
    lines = refusal(set_path(stack_raw("dev"), key, value))
    assert any(line.startswith(message) for line in lines), lines
