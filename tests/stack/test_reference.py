"""docs/configuration.md is generated from the models and must match them."""

from __future__ import annotations

from components.stack.reference import render
from tests.helpers import ROOT


def test_configuration_reference_is_up_to_date() -> None:
    committed = (ROOT / "docs" / "configuration.md").read_text()
    assert committed == render(), "regenerate: python -m components.stack.reference > docs/configuration.md"


def test_reference_lists_keys_users_set() -> None:
    text = render()
    for key in (
        "`nodeGroups.<name>.gpuEnvironment`",
        "`nodeGroups.<name>.mig.perGpu[].devices`",
        "`gpuOperator.driver.upgradePolicy.drain.enable`",
        "`bareMetal.nodes[].gpuModel`",
        "`kubeflow.dex.passwordHashSecret`",
        "`smokeTest.image`",
        "`mig.demand[].profiles`",
    ):
        assert key in text, key
    assert "| `cuda.check` | `strict` \\| `permissive` | `strict` |" in text
