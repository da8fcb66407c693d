"""The stack's GPU alerts: each one's default, its PromQL, and the Prometheus rule file they make.

Every alert has a summary, a severity and a runbook section (docs/runbooks.md, anchor = the alert
name in lower case). Which alerts a stack ships depends on what the stack has (NVLink, MIG-capable
GPUs, an operator-managed driver, the node agent, smoke Jobs) and on ``observability.alerts``.
The expressions read dcgm-exporter's series and kube-state-metrics' ``kube_node_labels``, which only
carries the node labels in its ``--metric-labels-allowlist`` (:func:`required_node_labels` says which).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog import observability as facts
from components.catalog.names import GPU_NODE_LABEL
from components.catalog.node_agent import (
    FLEET_METRIC,
    PROOF_ANNOTATION,
    REASON_LABEL,
    STATE_LABEL,
    FleetVerdict,
    Reason,
    State,
)
from components.observability.overrides import AlertOverride

RUNBOOK_DOC = "docs/runbooks.md"
GPU_LABELS = f"{facts.DCGM_NODE_LABEL}, {facts.DCGM_GPU_LABEL}"


@dataclass(frozen=True)
class AlertContext:
    """What the stack has, which decides which alerts apply (narrow: no stack config)."""

    nvlink: bool
    mig_capable: bool
    operator_driver: bool
    node_agent: bool
    smoke_namespace: str = ""
    smoke_jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class AlertRule:
    """One finished alerting rule."""

    name: str
    group: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str
    threshold: float | None = None

    @property
    def runbook(self) -> str:
        """The runbook section (relative to the repository root)."""
        return f"{RUNBOOK_DOC}#{self.name.lower()}"

    def rule(self) -> dict[str, Any]:
        """The rule as Prometheus's rule file (and the PrometheusRule's spec) writes it."""
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ not in ("0", "0s", "0m"):
            rule["for"] = self.for_
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {"summary": self.summary, "description": self.description, "runbook": self.runbook}
        return rule


@dataclass(frozen=True)
class AlertDefinition:
    """An alert's defaults and how its expression is written from its threshold and the stack."""

    name: str
    group: str
    severity: str
    for_: str
    summary: str
    description: str
    expr: Callable[[AlertContext, float | None], str]
    applies: Callable[[AlertContext], bool] = lambda _context: True
    threshold: float | None = None
    threshold_meaning: str = ""
    node_labels: tuple[str, ...] = field(default_factory=tuple)


def _node_label(label: str) -> str:
    return facts.ksm_label(label)


def _xid_expr(codes: Iterable[int]) -> str:
    # DCGM_FI_DEV_XID_ERRORS holds the last XID's code as its value: one equality per code.
    return " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {code}" for code in codes)


def _critical_xid(_context: AlertContext, _threshold: float | None) -> str:
    codes = [code for code in facts.alerting_xids() if code != facts.FALLEN_OFF_THE_BUS_XID]
    return _xid_expr(codes)


def _fell_off_the_bus(_context: AlertContext, _threshold: float | None) -> str:
    return _xid_expr([facts.FALLEN_OFF_THE_BUS_XID])


def _double_bit_ecc(_context: AlertContext, threshold: float | None) -> str:
    return f"increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > {_number(threshold)}"


def _row_remap_failure(_context: AlertContext, _threshold: float | None) -> str:
    return "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0"


def _thermal_throttling(_context: AlertContext, threshold: float | None) -> str:
    # The violation counter counts microseconds throttled: its per-second rate / 1e6 is the throttled share.
    return f"rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) / 1e6 > {_number(threshold)}"


def _nvlink_errors(_context: AlertContext, threshold: float | None) -> str:
    # increase() drops the metric name, so each counter gets a "field" label before the union: without
    # it the counters of one GPU would collide ("vector cannot contain metrics with the same labelset").
    increases = " or ".join(
        f'label_replace(increase({name}[15m]), "field", "{name}", "", "")' for name in facts.NVLINK_ERROR_FIELDS
    )
    return f"sum by ({GPU_LABELS}) ({increases}) > {_number(threshold)}"


def _allocatable_zero(_context: AlertContext, _threshold: float | None) -> str:
    resources = f'{facts.KSM_NODE_ALLOCATABLE}{{resource=~"{facts.KSM_GPU_RESOURCE_PATTERN}"}}'
    gpu_nodes = f'{facts.KSM_NODE_LABELS}{{{_node_label(GPU_NODE_LABEL)}="true"}}'
    upgrade = _node_label(facts.DRIVER_UPGRADE_STATE_LABEL)
    mig = _node_label(facts.MIG_CONFIG_STATE_LABEL)
    # A node in a driver upgrade or a MIG reconfiguration has no GPUs on purpose: not this alert's business.
    busy = (
        f'{facts.KSM_NODE_LABELS}{{{upgrade}=~".+", {upgrade}!~"upgrade-done|{facts.DRIVER_UPGRADE_STATE_FAILED}"}}'
        f' or {facts.KSM_NODE_LABELS}{{{mig}=~"pending|rebooting"}}'
    )
    return (
        f"(sum by (node) ({resources}) == 0"
        f" or on (node) (max by (node) ({gpu_nodes}) * 0 unless on (node) {resources}))"
        f" unless on (node) ({busy})"
    )


def _label_is(label: str, value: str) -> Callable[[AlertContext, float | None], str]:
    def expr(_context: AlertContext, _threshold: float | None) -> str:
        return f'{facts.KSM_NODE_LABELS}{{{_node_label(label)}="{value}"}} == 1'

    return expr


def _smoke_failed(context: AlertContext, _threshold: float | None) -> str:
    jobs = "|".join(context.smoke_jobs)
    return f'{facts.KSM_JOB_FAILED}{{namespace="{context.smoke_namespace}", job_name=~"{jobs}", condition="true"}} == 1'


def _drifting(_context: AlertContext, _threshold: float | None) -> str:
    verdicts = f"{FleetVerdict.DRIFTING.value}|{FleetVerdict.UNPROVEN.value}"
    return f'max by (pool) ({FLEET_METRIC}{{verdict=~"{verdicts}"}}) > 0'


def _number(value: float | None) -> str:
    number = float(value or 0)
    return str(int(number)) if number.is_integer() else repr(number)


ON_GPU = f"GPU {{{{ $labels.{facts.DCGM_GPU_LABEL} }}}} on node {{{{ $labels.{facts.DCGM_NODE_LABEL} }}}}"
ON_NODE = "Node {{ $labels.node }}"

DEFINITIONS: tuple[AlertDefinition, ...] = (
    AlertDefinition(
        "GpuCriticalXid",
        "gpu-health",
        "critical",
        "0m",
        f"{ON_GPU} reported critical XID {{{{ $value }}}}",
        "An XID the platform treats as critical, or one NVIDIA's XID catalogue resolves with a GPU reset, "
        "was reported; the GPU is likely unusable until it is reset or replaced.",
        _critical_xid,
    ),
    AlertDefinition(
        "GpuFellOffTheBus",
        "gpu-health",
        "critical",
        "0m",
        f"{ON_GPU} has fallen off the bus (XID 79)",
        "The driver lost the GPU on PCIe; only a node reboot (often a power cycle) brings it back.",
        _fell_off_the_bus,
    ),
    AlertDefinition(
        "GpuDoubleBitEccError",
        "gpu-health",
        "critical",
        "0m",
        f"{ON_GPU} had uncorrectable (double-bit) ECC errors",
        "Volatile double-bit ECC errors rose in the last 10 minutes by more than the threshold.",
        _double_bit_ecc,
        threshold=0,
        threshold_meaning="double-bit errors in 10 minutes",
    ),
    AlertDefinition(
        "GpuRowRemapFailure",
        "gpu-health",
        "critical",
        "0m",
        f"{ON_GPU} failed to remap a memory row",
        "The GPU ran out of spare rows or failed to remap one: its memory can no longer be repaired in the field.",
        _row_remap_failure,
    ),
    AlertDefinition(
        "GpuThermalThrottling",
        "gpu-health",
        "warning",
        "15m",
        f"{ON_GPU} is throttled by temperature",
        "The GPU spent more than the threshold share of the time thermally throttled, for the whole period.",
        _thermal_throttling,
        threshold=0.1,
        threshold_meaning="share of time throttled (0-1)",
    ),
    AlertDefinition(
        "GpuNvlinkErrors",
        "gpu-health",
        "warning",
        "0m",
        f"{ON_GPU} has NVLink errors",
        "NVLink CRC, replay and recovery errors rose in the last 15 minutes by more than the threshold.",
        _nvlink_errors,
        applies=lambda context: context.nvlink,
        threshold=10,
        threshold_meaning="NVLink errors in 15 minutes",
    ),
    AlertDefinition(
        "GpuNodeAllocatableZero",
        "gpu-health",
        "critical",
        "10m",
        f"{ON_NODE} offers no GPUs",
        "A GPU node's allocatable nvidia.com/gpu and MIG resources are zero (or missing) outside a driver "
        "upgrade or MIG reconfiguration: the device plugin found no healthy GPU.",
        _allocatable_zero,
        node_labels=(GPU_NODE_LABEL, facts.DRIVER_UPGRADE_STATE_LABEL, facts.MIG_CONFIG_STATE_LABEL),
    ),
    AlertDefinition(
        "GpuMigConfigFailed",
        "rollouts",
        "warning",
        "5m",
        f"{ON_NODE}: mig-manager failed to apply the MIG configuration",
        f"{facts.MIG_CONFIG_STATE_LABEL} is {facts.MIG_CONFIG_STATE_FAILED}: the node's GPUs are not partitioned "
        "as its nvidia.com/mig.config label asks.",
        _label_is(facts.MIG_CONFIG_STATE_LABEL, facts.MIG_CONFIG_STATE_FAILED),
        applies=lambda context: context.mig_capable,
        node_labels=(facts.MIG_CONFIG_STATE_LABEL,),
    ),
    AlertDefinition(
        "GpuDriverUpgradeFailed",
        "rollouts",
        "warning",
        "5m",
        f"{ON_NODE}: the GPU driver upgrade failed",
        f"{facts.DRIVER_UPGRADE_STATE_LABEL} is {facts.DRIVER_UPGRADE_STATE_FAILED}: the GPU Operator's upgrade "
        "controller gave up on this node; it stays cordoned.",
        _label_is(facts.DRIVER_UPGRADE_STATE_LABEL, facts.DRIVER_UPGRADE_STATE_FAILED),
        applies=lambda context: context.operator_driver,
        node_labels=(facts.DRIVER_UPGRADE_STATE_LABEL,),
    ),
    AlertDefinition(
        "GpuNodeAgentFailed",
        "rollouts",
        "warning",
        "5m",
        f"{ON_NODE}: the node agent failed (driver hand-over or MIG layout change)",
        f"{STATE_LABEL} is {State.FAILED.value}; the reason is in {REASON_LABEL} and the node's Events.",
        _label_is(STATE_LABEL, State.FAILED.value),
        applies=lambda context: context.node_agent,
        node_labels=(STATE_LABEL,),
    ),
    AlertDefinition(
        "GpuNodeAgentRolloutHalted",
        "rollouts",
        "warning",
        "15m",
        f"{ON_NODE} waits on a halted node-agent rollout",
        f"{REASON_LABEL} is {Reason.ROLLOUT_HALTED.value}: a node failed after its maintenance touched it, so no "
        "other node of the pool enters maintenance until a human clears it.",
        _label_is(REASON_LABEL, Reason.ROLLOUT_HALTED.value),
        applies=lambda context: context.node_agent,
        node_labels=(REASON_LABEL,),
    ),
    AlertDefinition(
        "GpuNodeDrifting",
        "rollouts",
        "warning",
        "15m",
        "Pool {{ $labels.pool }} has {{ $value }} GPU node(s) drifting from its declaration or unproven",
        f"The node agent's continuous proof finds a node of the pool that is not the declared driver or MIG layout "
        f"({FLEET_METRIC} verdict drifting), or has not proven it (unproven: not Ready, or its evidence passes but no "
        f"CUDA proof of the node as it is now passed: waiting for a slot, a halted pool, no free device); the reason "
        f"is in the node's {PROOF_ANNOTATION} annotation (its cuda part for the CUDA proof).",
        _drifting,
        applies=lambda context: context.node_agent,
    ),
    AlertDefinition(
        "GpuSmokeJobFailed",
        "rollouts",
        "warning",
        "0m",
        "GPU smoke Job {{ $labels.job_name }} failed",
        "The CUDA vectorAdd Job of a pool and GPU resource failed for good: that hardware cannot run GPU work.",
        _smoke_failed,
        applies=lambda context: bool(context.smoke_jobs),
    ),
)

ALERT_NAMES: tuple[str, ...] = tuple(definition.name for definition in DEFINITIONS)
#: Alert name -> what its threshold means, for the alerts that have one (the others refuse ``threshold``).
THRESHOLDS: dict[str, str] = {d.name: d.threshold_meaning for d in DEFINITIONS if d.threshold is not None}
GROUP_ORDER = ("gpu-health", "rollouts")


def plan_alerts(context: AlertContext, overrides: Mapping[str, AlertOverride]) -> tuple[AlertRule, ...]:
    """The alerts the stack ships, with the config's overrides applied, in definition order."""
    rules: list[AlertRule] = []
    for definition in DEFINITIONS:
        override = overrides.get(definition.name)
        if not definition.applies(context) or (override is not None and override.enabled is False):
            continue
        threshold = definition.threshold
        if override is not None and override.threshold is not None:
            threshold = override.threshold
        rules.append(
            AlertRule(
                name=definition.name,
                group=definition.group,
                expr=definition.expr(context, threshold),
                for_=(override.for_ if override else None) or definition.for_,
                severity=(override.severity if override else None) or definition.severity,
                summary=definition.summary,
                description=definition.description,
                threshold=threshold,
            )
        )
    return tuple(rules)


def rule_groups(rules: Iterable[AlertRule], prefix: str = "gpu-platform") -> list[dict[str, Any]]:
    """The ``groups`` of a Prometheus rule file: one group per area, empty groups left out."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for rule in rules:
        by_group.setdefault(rule.group, []).append(rule.rule())
    return [{"name": f"{prefix}-{group}", "rules": by_group[group]} for group in GROUP_ORDER if group in by_group]


def required_node_labels(rules: Iterable[AlertRule]) -> tuple[str, ...]:
    """The node labels kube-state-metrics must allowlist (``--metric-labels-allowlist=nodes=[...]``)."""
    names = {rule.name for rule in rules}
    return tuple(
        sorted({label for definition in DEFINITIONS if definition.name in names for label in definition.node_labels})
    )
