"""Canary driver upgrades in one ``pulumi up``: canary NVIDIADriver -> its smoke Jobs -> the other pools' drivers.

The order is nothing but Pulumi dependencies, so these tests read the dependencies the program registers
(under mocks, the real program). The last test makes the canary's smoke Job fail in the mocks, the way a
failed Job fails its resource operation in ``pulumi up``, and checks that the other pool's NVIDIADriver
is then never sent to the engine: its driver stays as it was.
"""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.runtime import MockResourceArgs

import preview.run.runner
from components.catalog.names import NVIDIA_DRIVER_TYPE
from preview.run.mocks import PlatformMocks
from preview.run.runner import ProgramRun, run_program
from tests.helpers import as_overrides, run_raw, set_path, stack_raw

JOB = "kubernetes:batch/v1:Job"
RELEASE = "kubernetes:helm.sh/v3:Release"


def _canary_dev() -> dict[str, Any]:
    """dev with the V100 group as the canary of a driver change: both groups move to a new R580 driver."""
    raw = set_path(stack_raw("dev"), "gpuOperator.driver.version", "580.105.08")
    raw = set_path(raw, "nodeGroups.v100.driver", {"canary": True})
    return set_path(raw, "nodeGroups.a100.driver", {"version": "580.105.08", "cuda": "13.0"})


@pytest.fixture(scope="module")
def canary() -> ProgramRun:
    return run_raw("dev", _canary_dev())


def _driver(run: ProgramRun, pool: str) -> Any:
    (found,) = [r for r in run.by_type(NVIDIA_DRIVER_TYPE) if list(r.inputs["spec"]["nodeSelector"].values()) == [pool]]
    return found


def _jobs(run: ProgramRun, pool: str) -> list[Any]:
    return [r for r in run.by_type(JOB) if r.inputs["metadata"]["labels"].get("gpu-platform.io/pool") == pool]


def test_the_canary_gets_its_own_nvidiadriver_even_with_the_same_driver(canary: ProgramRun) -> None:
    versions = {
        r.inputs["spec"]["nodeSelector"]["gpu-platform.io/driver"]: r.inputs["spec"]["version"]
        for r in canary.by_type(NVIDIA_DRIVER_TYPE)
    }
    assert versions == {"v100": "580.105.08", "a100": "580.105.08"}


def test_canary_then_its_smoke_jobs_then_the_rest(canary: ProgramRun) -> None:
    release = canary.one(RELEASE, "gpu-operator-release")
    canary_driver, rest_driver = _driver(canary, "v100"), _driver(canary, "a100")
    (canary_job,) = _jobs(canary, "v100")
    (rest_job,) = _jobs(canary, "a100")
    canary_proof = canary.one(JOB, "gpu-proof-canary-job")
    rest_proof = canary.one(JOB, "gpu-proof-main-job")
    assert release.urn in canary_driver.dependencies
    assert canary_driver.urn in canary_proof.dependencies  # each node of the canary proven, then its smoke Jobs
    assert canary_proof.urn in canary_job.dependencies
    assert canary_job.urn in rest_driver.dependencies and canary_proof.urn in rest_driver.dependencies
    assert rest_driver.urn in rest_proof.dependencies and rest_proof.urn in rest_job.dependencies
    assert rest_driver.urn not in canary_job.dependencies and rest_driver.urn not in canary_driver.dependencies


def test_outputs_and_preview_give_the_order_and_the_waves(canary: ProgramRun) -> None:
    drivers = canary.outputs["drivers"]
    assert drivers["order"] == [["v100"], ["a100"]]
    assert drivers["pools"]["v100"]["canary"] is True and drivers["pools"]["v100"]["step"] == 1
    assert drivers["pools"]["a100"]["canary"] is False and drivers["pools"]["a100"]["step"] == 2


def test_waves_follow_the_pools_upgrade_policy() -> None:
    raw = set_path(
        _canary_dev(), "nodeGroups.v100.driver.upgradePolicy", {"maxParallelUpgrades": 0, "maxUnavailable": 2}
    )
    pools = run_raw("dev", raw).outputs["drivers"]["pools"]
    # v100: at most 3 nodes, no parallel limit, 2 unavailable at once -> 2 waves; a100 keeps 1 at a time.
    assert (pools["v100"]["waves"], pools["a100"]["waves"]) == (2, 2)
    assert pools["v100"]["maxUnavailable"] == 2


SENT: list[str] = []


class _FailingCanaryJob(PlatformMocks):
    """The canary's smoke Job fails: its resource operation errors, as a failed Job does in ``pulumi up``."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == NVIDIA_DRIVER_TYPE:
            SENT.append(args.inputs["metadata"]["name"])
        if args.typ == JOB and args.inputs["metadata"]["labels"].get("gpu-platform.io/pool") == "v100":
            raise RuntimeError("Job gpu-smoke-v100 failed: BackoffLimitExceeded")
        return super().new_resource(args)


def test_a_failing_canary_leaves_the_other_pools_driver_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    SENT.clear()
    monkeypatch.setattr(preview.run.runner, "PlatformMocks", _FailingCanaryJob)
    with pytest.raises(Exception, match="BackoffLimitExceeded"):
        run_program("dev", overrides=as_overrides(_canary_dev()))
    assert SENT == ["gpu-platform-v100"]  # the canary's driver changed; the A100 pool's was never sent


def test_without_the_failure_both_drivers_reach_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control for the test above: the same run with healthy mocks registers both drivers."""
    sent: list[str] = []

    class _Recording(PlatformMocks):
        def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
            if args.typ == NVIDIA_DRIVER_TYPE:
                sent.append(args.inputs["metadata"]["name"])
            return super().new_resource(args)

    monkeypatch.setattr(preview.run.runner, "PlatformMocks", _Recording)
    run_raw("dev", _canary_dev())
    assert sorted(sent) == ["gpu-platform-a100", "gpu-platform-v100"]
