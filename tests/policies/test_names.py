"""The pack reads the program's names without the provider SDKs, and its defaults match the program's."""

from __future__ import annotations

import subprocess
import sys

from components.gpu_operator.config import GpuOperatorConfig
from components.node_agent.config import NodeAgentConfig
from policies.gpu_policies.workloads import DEFAULT_PRIVILEGED_NAMESPACES
from tests.helpers import ROOT


def test_the_default_privileged_namespaces_are_where_the_program_puts_privileged_pods() -> None:
    assert (
        GpuOperatorConfig.model_fields["namespace"].default,
        NodeAgentConfig.model_fields["namespace"].default,
    ) == DEFAULT_PRIVILEGED_NAMESPACES


def test_the_pack_imports_no_provider_sdk_nor_the_config_model() -> None:
    code = (
        "import sys; import policies.gpu_policies; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pulumi_kubernetes', 'pulumi_yandex_marketmaker', 'pulumi_command', 'pydantic')); print(bad)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
