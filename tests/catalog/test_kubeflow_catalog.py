"""The Kubeflow catalog: the pinned tag is the supported one, the component rules, the refused dex users,
and the API server's name rules the Kubeflow config applies (checked against apimachinery's own test values)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from components.catalog.kubeflow.releases import (
    DEFAULT_TAG,
    MANIFESTS_TAGS,
    SUPPORTED_TAGS,
    component_paths,
    unsupported_tag_problem,
)
from components.catalog.kubeflow.selection import (
    ComponentSelectionError,
    component_selection_problem,
    disabled_components,
    enabled_components,
    switchable_components,
)
from components.catalog.kubeflow.users import dex_email_problem, dex_username_problem
from components.catalog.kubeflow.v1_10_2 import layout
from components.catalog.kubeflow.v1_10_2.components import REQUIRED_COMPONENTS
from components.catalog.kubeflow.v1_10_2.credentials import DEFAULT_USER_EMAIL
from components.catalog.kubernetes import (
    custom_resource_name_problem,
    ingress_class_name_problem,
    quota_resource_name_problem,
    secret_name_problem,
)
from components.catalog.upstream import KUBEFLOW_MANIFESTS


def test_the_pinned_tree_is_the_one_supported_tag() -> None:
    assert DEFAULT_TAG == KUBEFLOW_MANIFESTS.version == layout.TAG
    assert SUPPORTED_TAGS == (DEFAULT_TAG,)
    assert MANIFESTS_TAGS[DEFAULT_TAG].example_resources == layout.EXAMPLE_RESOURCES
    assert unsupported_tag_problem(DEFAULT_TAG) is None
    problem = unsupported_tag_problem("v1.10.0")
    assert problem is not None and "supported: v1.10.2" in problem
    assert component_paths(DEFAULT_TAG, "istio")[0] == "common/istio/istio-crds/base"


def test_the_default_selection_is_everything_but_the_example_profile() -> None:
    everything = switchable_components(DEFAULT_TAG)
    assert enabled_components(DEFAULT_TAG, None) == tuple(c for c in everything if c != "user-namespace")
    assert disabled_components(DEFAULT_TAG, enabled_components(DEFAULT_TAG, None), False) == (
        "cert-manager",
        "user-namespace",
    )


@pytest.mark.parametrize(
    ("components", "says"),
    [
        ([*REQUIRED_COMPONENTS, "notebooks"], "unknown Kubeflow component 'notebooks'; allowed for v1.10.2: istio, "),
        ([*REQUIRED_COMPONENTS, "model-registry"], "'model-registry' is not offered: not part of example"),
        ([*REQUIRED_COMPONENTS, "cert-manager"], "set installCertManager"),
        ([*REQUIRED_COMPONENTS, "katib", "katib"], "'katib' is listed twice"),
        ([*REQUIRED_COMPONENTS, "kserve"], "'kserve' needs knative"),
        (["istio"], "required Kubeflow component(s) oauth2-proxy, dex"),
    ],
)
def test_a_selection_that_cannot_work_is_refused_with_the_reason(components: list[str], says: str) -> None:
    problem = component_selection_problem(DEFAULT_TAG, components)
    assert problem is not None and says in problem
    with pytest.raises(ComponentSelectionError) as refused:
        enabled_components(DEFAULT_TAG, components)
    assert str(refused.value) == problem


def test_the_public_default_user_is_refused_and_a_team_address_is_not() -> None:
    for email in (DEFAULT_USER_EMAIL, "USER@example.com"):
        problem = dex_email_problem(email)
        assert problem is not None and "public default user of kubeflow/manifests v1.10.2" in problem
    assert dex_email_problem("ml-platform@corp.example") is None
    assert dex_email_problem("ml-platform") is not None
    assert dex_username_problem("ml-platform") is None
    assert dex_username_problem("ml platform") is not None


# k8s.io/apimachinery pkg/util/validation/validation_test.go TestIsDNS1123Subdomain: goodValues, badValues.
GOOD_SUBDOMAINS = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2",
                   "a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a", "a.1", "ab.1", "0.a", "01.a", "1a.a",
                   "a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55", "a" * 253]  # fmt: skip
BAD_SUBDOMAINS = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b",
                  "1_", "_1", "1_2", ".", "a.", ".a", "a..b", "1.", ".1", "1..2", " ", "a ", " a", "a b", "1 ",
                  " 1", "1 2", "A.a", "aB.a", "ab.A", "A1.a", "a1.A", "A.1", "aB.1", "A1.1", "1A.1", "0.A",
                  "01.A", "012.A", "1A.a", "1a.A", "A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e", "aa.bB.cc.dd.ee",
                  "a@b", "a,b", "a_b", "a;b", "a:b", "a%b", "a?b", "a$b", "a" * 254]  # fmt: skip


@pytest.mark.parametrize("rule", [secret_name_problem, ingress_class_name_problem])
def test_object_names_follow_apimachinerys_subdomain_rule(rule: Callable[[str], str | None]) -> None:
    assert [name for name in GOOD_SUBDOMAINS if rule(name) is not None] == []
    assert [name for name in BAD_SUBDOMAINS if rule(name) is None] == []
    assert [name for name in GOOD_SUBDOMAINS if custom_resource_name_problem(name, "ClusterIssuer") is not None] == []
    assert [name for name in BAD_SUBDOMAINS if custom_resource_name_problem(name, "ClusterIssuer") is None] == []


@pytest.mark.parametrize(
    "key",
    ["requests.nvidia.com/gpu", "requests.nvidia.com/mig-1g.10gb", "cpu", "limits.memory", "pods",
     "count/deployments.apps", "hugepages-2Mi", "requests.hugepages-1Gi", "services.loadbalancers"],
)  # fmt: skip
def test_quota_keys_a_resource_quota_accepts(key: str) -> None:
    assert quota_resource_name_problem(key) is None


@pytest.mark.parametrize("key", ["gpu", "requests.gpus", "Requests.cpu", "requests nvidia.com/gpu", "nvidia.com/", ""])
def test_quota_keys_a_resource_quota_refuses(key: str) -> None:
    problem = quota_resource_name_problem(key)
    assert problem is not None and "validateResourceQuotaResourceName" in problem
