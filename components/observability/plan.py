"""Everything observability decides for a stack, from narrow inputs: the ``ObservabilityPlan``.

Computed once by the stack plan; the component and the outputs only read it. The inputs are the
pools and a few facts of other sections (passed in, never read from the stack config), so this
capability imports no other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.catalog.pools import GpuPool
from components.observability.alerts import AlertContext, AlertRule, plan_alerts, required_node_labels, rule_groups
from components.observability.config import ObservabilityConfig
from components.observability.dashboards import DashboardContext, DashboardSpec, plan_dashboards
from components.observability.metrics import metric_fields, nvlink_present, operator_values

RULES_NAME = "gpu-platform-gpu-alerts"
RULE_FILE_KEY = "gpu-platform-gpu-alerts.yaml"


@dataclass(frozen=True)
class StackFacts:
    """What observability needs to know of the rest of the stack."""

    cluster: str
    operator_namespace: str
    prometheus_operator: bool
    operator_driver: bool
    node_agent: bool
    smoke_jobs: tuple[str, ...] = ()
    #: The node agent's namespace, where its controller's metrics Service is ("" when it does not run).
    node_agent_namespace: str = ""


@dataclass(frozen=True)
class ObservabilityPlan:
    """The metrics file, the alerts and the dashboards of the stack, decided."""

    config: ObservabilityConfig
    namespace: str
    prometheus_operator: bool
    metric_names: tuple[str, ...]
    operator_values: dict[str, Any]
    alerts: tuple[AlertRule, ...]
    dashboards: tuple[DashboardSpec, ...]
    node_labels: tuple[str, ...]
    #: Where the node agent controller's metrics Service is ("" none): a ServiceMonitor scrapes it there where the
    #: Prometheus Operator runs (its labels are ``rule_labels``, as the dcgm-exporter's ServiceMonitor's).
    node_agent_namespace: str = ""

    @property
    def alert_names(self) -> list[str]:
        """The names of the alerts the stack ships, sorted."""
        return sorted(alert.name for alert in self.alerts)

    def rule_file(self) -> dict[str, Any]:
        """The Prometheus rule file (``groups``), as promtool and a PrometheusRule's spec take it."""
        return {"groups": rule_groups(self.alerts)}


def plan_observability(
    config: ObservabilityConfig, pools: Sequence[GpuPool], facts: StackFacts
) -> ObservabilityPlan | None:
    """The plan, or None when observability is off or the stack has no GPU pools to observe."""
    if not config.enabled or not pools:
        return None
    nvlink = nvlink_present(config.metrics, pools)
    fields = metric_fields(nvlink=nvlink)
    namespace = config.namespace or facts.operator_namespace
    alerts = plan_alerts(
        AlertContext(
            nvlink=nvlink,
            mig_capable=any(pool.model.mig_capable for pool in pools),
            operator_driver=facts.operator_driver,
            node_agent=facts.node_agent,
            smoke_namespace=facts.operator_namespace,
            smoke_jobs=facts.smoke_jobs,
        ),
        config.alerts,
    )
    dashboards: tuple[DashboardSpec, ...] = ()
    if config.dashboards.enabled:
        dashboards = plan_dashboards(
            DashboardContext(
                cluster=facts.cluster,
                smoke_namespace=facts.operator_namespace,
                smoke_jobs=facts.smoke_jobs,
                node_agent=facts.node_agent,
            )
        )
    return ObservabilityPlan(
        config=config,
        namespace=namespace,
        prometheus_operator=facts.prometheus_operator,
        metric_names=tuple(field.name for field in fields),
        operator_values=operator_values(
            config.metrics, fields, service_monitor=facts.prometheus_operator, rule_labels=config.rule_labels
        ),
        alerts=alerts,
        dashboards=dashboards,
        node_labels=required_node_labels(alerts),
        node_agent_namespace=facts.node_agent_namespace if facts.node_agent else "",
    )
