"""The Kubeflow catalog: the pinned tag is the supported one, the component rules, the dex user's rules."""

from __future__ import annotations

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


def test_a_dex_user_must_be_an_email_and_a_plain_name() -> None:
    assert dex_email_problem("ml-platform@corp.example") is None
    assert dex_email_problem("ml-platform") is not None
    assert dex_username_problem("ml-platform") is None
    assert dex_username_problem("ml platform") is not None
