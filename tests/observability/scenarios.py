"""promtool unit tests for every alert: series that must fire it, and healthy series that must not.

Each scenario is written by hand from what the alert is about (a GPU that reported XID 48, a node
whose allocatable GPUs dropped to zero...), not from the rule's expression. The expected
annotations are the rule's templates filled with the expected labels, as Prometheus renders them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from components.catalog.observability import FALLEN_OFF_THE_BUS_XID, alerting_xids
from components.observability.alerts import AlertRule

GPU = 'Hostname="gpu-node-1", gpu="0"'
GPU_LABELS = {"Hostname": "gpu-node-1", "gpu": "0"}


@dataclass(frozen=True)
class Scenario:
    """Input series, when to look, and the alert instance expected then (labels without severity)."""

    alert: str
    series: list[tuple[str, str]]
    eval_time: str
    fires: list[dict[str, str]] = field(default_factory=list)
    value: str = ""
    name: str = ""


def _xid(code: int) -> list[tuple[str, str]]:
    return [(f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}", f"0 0 {code} {code}")]


def _node_state(label: str, value: str, node: str = "gpu-node-1") -> tuple[str, str]:
    return (f'kube_node_labels{{node="{node}", {label}="{value}"}}', "1x30")


def _fleet(pool: str, verdict: str) -> str:
    """The controller's gauge, as Prometheus stores it scraped through the ServiceMonitor (target labels added)."""
    target = 'namespace="gpu-platform-system", service="node-agent-controller-metrics", pod="node-agent-controller-0"'
    return f'gpu_platform_fleet_nodes{{pool="{pool}", verdict="{verdict}", {target}}}'


def scenarios(smoke_job: str = "gpu-smoke-a100-gpu", smoke_namespace: str = "gpu-operator") -> list[Scenario]:
    """Every scenario: at least one firing and one healthy per alert."""
    result: list[Scenario] = []
    for code in alerting_xids():
        if code != FALLEN_OFF_THE_BUS_XID:
            result.append(Scenario("GpuCriticalXid", _xid(code), "3m", [GPU_LABELS], str(code), f"xid {code}"))
    result += [
        Scenario("GpuCriticalXid", _xid(13), "3m", name="an application error (XID 13) is not critical"),
        Scenario("GpuCriticalXid", _xid(FALLEN_OFF_THE_BUS_XID), "3m", name="XID 79 has its own alert"),
        Scenario("GpuCriticalXid", [(f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}", "0x5")], "3m", name="no XID"),
        Scenario("GpuFellOffTheBus", _xid(79), "3m", [GPU_LABELS], "79", "xid 79"),
        Scenario("GpuFellOffTheBus", _xid(48), "3m", name="another XID"),
        Scenario(
            "GpuDoubleBitEccError",
            [(f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{GPU}}}", "0 0 0 1 1 1")],
            "5m",
            [GPU_LABELS],
            name="one double-bit error",
        ),
        Scenario(
            "GpuDoubleBitEccError",
            [
                (f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{GPU}}}", "2x20"),
                (f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{GPU}}}", "0+5x20"),
            ],
            "20m",
            name="old double-bit errors and single-bit ones only",
        ),
        Scenario("GpuRowRemapFailure", [(f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU}}}", "0 0 1 1")], "3m", [GPU_LABELS]),
        Scenario(
            "GpuRowRemapFailure",
            [
                (f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU}}}", "0x10"),
                (f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{GPU}}}", "0 1 2 2 2"),
            ],
            "5m",
            name="rows remapped successfully",
        ),
        # 30 s throttled per minute: half the time, for half an hour.
        Scenario(
            "GpuThermalThrottling",
            [(f"DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}", "0+30000000x40")],
            "30m",
            [GPU_LABELS],
            name="throttled half the time",
        ),
        Scenario(
            "GpuThermalThrottling",
            [
                (f"DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}", "0+600000x40"),
                (f"DCGM_FI_DEV_POWER_VIOLATION{{{GPU}}}", "0+30000000x40"),
            ],
            "30m",
            name="1% thermal (power throttling is not this alert)",
        ),
        Scenario(
            "GpuThermalThrottling",
            [(f"DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}", "0x10 0+30000000x10")],
            "18m",
            name="throttled, but not for 15 minutes yet",
        ),
        Scenario(
            "GpuNvlinkErrors",
            [
                (f"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{{{GPU}}}", "0+1x30"),
                (f"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{{GPU}}}", "0+1x30"),
            ],
            "20m",
            [GPU_LABELS],
            name="two errors a minute",
        ),
        Scenario(
            "GpuNvlinkErrors",
            [
                (f"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{{{GPU}}}", "0 1 2 2x30"),
                (f"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{{{GPU}}}", "0+1000000x30"),
            ],
            "20m",
            name="a couple of errors and heavy traffic",
        ),
        Scenario(
            "GpuNodeAllocatableZero",
            [
                (
                    'kube_node_status_allocatable{node="gpu-node-1", resource="nvidia_com_gpu", unit="integer"}',
                    "8x5 0x30",
                )
            ],
            "25m",
            [{"node": "gpu-node-1"}],
            name="allocatable GPUs dropped to zero",
        ),
        Scenario(
            "GpuNodeAllocatableZero",
            [('kube_node_labels{node="gpu-node-2", label_gpu_platform_io_gpu="true"}', "1x30")],
            "25m",
            [{"node": "gpu-node-2"}],
            name="a GPU node that advertises no GPU resource at all",
        ),
        Scenario(
            "GpuNodeAllocatableZero",
            [
                ('kube_node_labels{node="gpu-node-3", label_gpu_platform_io_gpu="true"}', "1x30"),
                ('kube_node_status_allocatable{node="gpu-node-3", resource="nvidia_com_gpu", unit="integer"}', "0x30"),
                (
                    'kube_node_status_allocatable{node="gpu-node-3", resource="nvidia_com_mig_1g_10gb", unit="integer"}',
                    "56x30",
                ),
                (
                    'kube_node_labels{node="gpu-node-4", label_nvidia_com_gpu_driver_upgrade_state="drain-required"}',
                    "1x30",
                ),
                ('kube_node_status_allocatable{node="gpu-node-4", resource="nvidia_com_gpu", unit="integer"}', "0x30"),
                ('kube_node_labels{node="gpu-node-5", label_nvidia_com_mig_config_state="pending"}', "1x30"),
                ('kube_node_status_allocatable{node="gpu-node-5", resource="nvidia_com_gpu", unit="integer"}', "0x30"),
                ('kube_node_status_allocatable{node="cpu-node-1", resource="cpu", unit="core"}', "16x30"),
                (
                    'kube_node_status_allocatable{node="gpu-node-6", resource="nvidia_com_gpu", unit="integer"}',
                    "8x5 0 8x30",
                ),
            ],
            "25m",
            name="MIG slices, a driver upgrade, a MIG reconfiguration, a CPU node, a one-minute blip",
        ),
        Scenario(
            "GpuMigConfigFailed",
            [_node_state("label_nvidia_com_mig_config_state", "failed")],
            "10m",
            [{"node": "gpu-node-1", "label_nvidia_com_mig_config_state": "failed"}],
        ),
        Scenario(
            "GpuMigConfigFailed",
            [
                _node_state("label_nvidia_com_mig_config_state", "success"),
                _node_state("label_nvidia_com_mig_config_state", "pending", "gpu-node-2"),
            ],
            "10m",
            name="success and pending",
        ),
        Scenario(
            "GpuDriverUpgradeFailed",
            [_node_state("label_nvidia_com_gpu_driver_upgrade_state", "upgrade-failed")],
            "10m",
            [{"node": "gpu-node-1", "label_nvidia_com_gpu_driver_upgrade_state": "upgrade-failed"}],
        ),
        Scenario(
            "GpuDriverUpgradeFailed",
            [
                _node_state("label_nvidia_com_gpu_driver_upgrade_state", "upgrade-done"),
                _node_state("label_nvidia_com_gpu_driver_upgrade_state", "drain-required", "gpu-node-2"),
            ],
            "10m",
            name="done and in progress",
        ),
        Scenario(
            "GpuNodeAgentFailed",
            [_node_state("label_gpu_platform_io_node_agent_state", "failed")],
            "10m",
            [{"node": "gpu-node-1", "label_gpu_platform_io_node_agent_state": "failed"}],
        ),
        Scenario(
            "GpuNodeAgentFailed",
            [_node_state("label_gpu_platform_io_node_agent_state", "done")],
            "10m",
            name="done",
        ),
        Scenario(
            "GpuNodeAgentRolloutHalted",
            [_node_state("label_gpu_platform_io_node_agent_reason", "rollout-halted")],
            "20m",
            [{"node": "gpu-node-1", "label_gpu_platform_io_node_agent_reason": "rollout-halted"}],
        ),
        Scenario(
            "GpuNodeAgentRolloutHalted",
            [_node_state("label_gpu_platform_io_node_agent_reason", "budget-full")],
            "20m",
            name="waiting for a budget slot is normal",
        ),
        Scenario(
            "GpuNodeDrifting",
            [
                (_fleet("a100", "drifting"), "0 1x30"),
                (_fleet("a100", "unproven"), "0x30"),
                (_fleet("a100", "conformant"), "3 2x30"),
                (_fleet("v100", "conformant"), "2x30"),
            ],
            "20m",
            [{"pool": "a100"}],
            "1",
            "a node drifts for 15 minutes",
        ),
        Scenario(
            "GpuNodeDrifting",
            [(_fleet("a100", "unproven"), "0 2x30"), (_fleet("a100", "drifting"), "0x30")],
            "20m",
            [{"pool": "a100"}],
            "2",
            "nodes stay unproven for 15 minutes",
        ),
        Scenario(
            "GpuNodeDrifting",
            [
                (_fleet("a100", "drifting"), "0 1x9 0x20"),  # a new node proven within 10 minutes
                (_fleet("a100", "in_maintenance"), "1x30"),
                (_fleet("a100", "failed"), "1x30"),  # the node agent's failure has its own alert
                (_fleet("a100", "conformant"), "2x30"),
            ],
            "20m",
            name="a node proven within 15 minutes, one in maintenance, one failed",
        ),
        Scenario(
            "GpuNodeDrifting",
            [
                # A new node: its driver pod starts (drifting), then its evidence passes and it waits for its CUDA
                # proof (unproven) for ten minutes, then the proof passes: never 15 minutes in a row.
                (_fleet("a100", "drifting"), "0 1x3 0x26"),
                (_fleet("a100", "unproven"), "0x3 1x10 0x17"),
                (_fleet("a100", "conformant"), "2x13 3x17"),
            ],
            "20m",
            name="a new node drifts while its driver starts, then waits ten minutes for its CUDA proof",
        ),
        Scenario(
            "GpuNodeDrifting",
            # Its evidence passes, but its CUDA proof waits (a halted pool, no free device) for good.
            [(_fleet("a100", "unproven"), "0 1x30"), (_fleet("a100", "conformant"), "2x30")],
            "20m",
            [{"pool": "a100"}],
            "1",
            "a node whose CUDA proof never comes stays unproven",
        ),
        Scenario(
            "GpuSmokeJobFailed",
            [
                (
                    f'kube_job_failed{{namespace="{smoke_namespace}", job_name="{smoke_job}", condition="true"}}',
                    "0 1 1",
                )
            ],
            "2m",
            [{"namespace": smoke_namespace, "job_name": smoke_job, "condition": "true"}],
        ),
        Scenario(
            "GpuSmokeJobFailed",
            [
                (
                    f'kube_job_failed{{namespace="{smoke_namespace}", job_name="{smoke_job}", condition="true"}}',
                    "0 0 0",
                ),
                (
                    f'kube_job_failed{{namespace="{smoke_namespace}", job_name="{smoke_job}", condition="false"}}',
                    "1 1 1",
                ),
                (
                    f'kube_job_failed{{namespace="{smoke_namespace}", job_name="someone-elses", condition="true"}}',
                    "1 1 1",
                ),
            ],
            "2m",
            name="succeeded, and a failed Job that is not ours",
        ),
    ]
    return result


_LABEL = re.compile(r"\{\{ \$labels\.(\w+) \}\}")


def _render(template: str, labels: dict[str, str], value: str) -> str:
    return _LABEL.sub(lambda match: labels[match.group(1)], template).replace("{{ $value }}", value)


def promtool_tests(rule_file: str, rules: list[AlertRule], chosen: list[Scenario]) -> dict[str, Any]:
    """A promtool test file: one test per scenario, expecting exactly the scenario's alerts."""
    by_name = {rule.name: rule for rule in rules}
    tests = []
    for scenario in chosen:
        rule = by_name[scenario.alert]
        expected = []
        for labels in scenario.fires:
            annotations = rule.rule()["annotations"]
            expected.append(
                {
                    "exp_labels": {**labels, "severity": rule.severity},
                    "exp_annotations": {
                        key: _render(text, labels, scenario.value) for key, text in annotations.items()
                    },
                }
            )
        tests.append(
            {
                "name": f"{scenario.alert}: {scenario.name or 'fires'}",
                "interval": "1m",
                "input_series": [{"series": series, "values": values} for series, values in scenario.series],
                "alert_rule_test": [
                    {"eval_time": scenario.eval_time, "alertname": scenario.alert, "exp_alerts": expected}
                ],
            }
        )
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests}
