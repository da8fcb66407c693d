"""The consumer example schedules a Job with nothing but the platform's stack outputs."""

from __future__ import annotations

import runpy
from typing import Any

import pulumi
import pytest
from pulumi.runtime import set_all_config
from pulumi.runtime.mocks import MockResourceArgs

from preview.run.mocks import PlatformMocks, RecordingMonitor, mocked_engine
from preview.run.runner import run_program
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "gpu-consumer"


class ConsumerMocks(PlatformMocks):
    """Answers the StackReference with the platform stack's real (offline) outputs."""

    def __init__(self, outputs: dict[str, Any], secret_names: list[str]) -> None:
        super().__init__()
        self.outputs = outputs
        self.secret_names = secret_names

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            return args.name, {"outputs": self.outputs, "secretOutputNames": self.secret_names}
        return super().new_resource(args)


def _run_consumer(pool: str, contract: str | None = None) -> tuple[RecordingMonitor, dict[str, Any]]:
    platform = run_program("prod")
    outputs = dict(platform.plain_outputs)
    if contract is not None:
        outputs["contractVersion"] = contract
    exported: dict[str, Any] = {}

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(EXAMPLE / "__main__.py"), run_name="__main__")
        root = pulumi.runtime.get_root_resource()
        return pulumi.Output.from_input(getattr(root, "outputs", {})).apply(exported.update)

    mocks = ConsumerMocks(outputs, platform.secret_output_names)
    with mocked_engine(mocks, project="gpu-consumer", stack="dev", preview=False) as monitor:
        set_all_config(
            {
                "gpu-consumer:platformStack": "acme/gpu-platform/prod",
                "gpu-consumer:pool": pool,
                "gpu-consumer:image": "registry.example.com/team/train:2026.11.1",
            }
        )
        program()
    return monitor, exported


def test_consumer_schedules_onto_the_pool_with_the_platforms_outputs() -> None:
    monitor, exported = _run_consumer("gpu-node-2")
    (job,) = [r for r in monitor.registrations if r.type == "kubernetes:batch/v1:Job"]
    pod = job.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-2"}
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/mig-1g.10gb": 1.0}}
    assert exported["gpuResource"] == "nvidia.com/mig-1g.10gb"
    (provider,) = [r for r in monitor.registrations if r.type == "pulumi:providers:kubernetes"]
    assert provider.masked_inputs["kubeconfig"] == "[secret]", "the kubeconfig stays secret in the consumer"


def test_consumer_refuses_an_unknown_pool_with_the_list() -> None:
    with pytest.raises(
        pulumi.RunError, match="pool 'gpu-node-9' is not a gpu-platform pool; pools: gpu-node-1, gpu-node-2, gpu-node-3"
    ):
        _run_consumer("gpu-node-9")


def test_consumer_refuses_a_new_contract_version() -> None:
    with pytest.raises(pulumi.RunError, match="outputs contract 2 is not supported"):
        _run_consumer("gpu-node-1", contract="2")
