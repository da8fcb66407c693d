"""Config model of GPU observability (``observability`` in the stack file).

Which alerts are on and their thresholds are config: ``alerts.<AlertName>`` overrides one alert's
``enabled``, ``for``, ``severity`` or ``threshold`` (the defaults and what each threshold means are in
``components.observability.alerts`` and docs/runbooks.md). Unknown alert names are refused with the
list of known ones, so a typo never silently leaves an alert on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from components.base.config_model import ConfigModel, label_problems
from components.base.problems import Problem, join_path
from components.catalog.kubernetes import dns_label_problem, object_name_problem
from components.catalog.prometheus import duration_problem, threshold_problem
from components.observability.alerts import ALERT_NAMES, THRESHOLDS
from components.observability.overrides import AlertOverride


class MetricsConfig(ConfigModel):
    """The dcgm-exporter metrics file the GPU Operator's exporter reads."""

    config_map_name: str = Field(
        default="gpu-platform-dcgm-metrics",
        description="the metrics file's ConfigMap: a DNS-1123 subdomain (dots allowed)",
    )
    nvlink: Literal["auto", "on", "off"] = Field(
        default="auto", description="NVLink error counters; auto: on where a pool has more than one GPU per node"
    )


class DashboardsConfig(ConfigModel):
    """Grafana dashboards shipped as ConfigMaps that Grafana's sidecar loads."""

    enabled: bool = True
    folder: str | None = Field(default=None, description="grafana_folder annotation (the sidecar's folderAnnotation)")


class ObservabilityConfig(ConfigModel):
    """Metrics, alerts and dashboards of the GPU fleet."""

    enabled: bool = True
    namespace: str | None = Field(default=None, description="where rules and dashboards go; default: the operator's")
    rule_labels: dict[str, str] = Field(
        default_factory=dict,
        description="labels Prometheus's ruleSelector and serviceMonitorSelector match (e.g. release: prometheus)",
    )
    metrics: MetricsConfig = MetricsConfig()
    alerts: dict[str, AlertOverride] = Field(default_factory=dict)
    dashboards: DashboardsConfig = DashboardsConfig()

    def problems(self, path: str) -> Iterator[Problem]:
        """Names, labels, durations, thresholds and alert names (the platform's: ``alerts.ALERT_NAMES``)."""
        if self.namespace is not None:
            problem = dns_label_problem(self.namespace)
            if problem:
                yield Problem(join_path(path, "namespace"), problem)
        yield from label_problems(self.rule_labels, join_path(path, "ruleLabels"))
        # The operator mounts this ConfigMap under a volume name of its own ("metrics-config", gpu-operator v26.7.0
        # controllers/object_controls.go TransformDCGMExporter), so its name is only a ConfigMap's: a DNS subdomain.
        config_map = object_name_problem(self.metrics.config_map_name, "ConfigMap", "ValidateConfigMapName")
        if config_map:
            yield Problem(join_path(path, "metrics", "configMapName"), config_map)
        for name, override in sorted(self.alerts.items()):
            alert_path = join_path(path, "alerts", name)
            if name not in ALERT_NAMES:
                yield Problem(alert_path, f"unknown alert; known alerts: {', '.join(sorted(ALERT_NAMES))}")
            if override.for_ is not None:
                problem = duration_problem(override.for_)
                if problem:
                    yield Problem(join_path(alert_path, "for"), problem)
            if override.threshold is not None and name in ALERT_NAMES and name not in THRESHOLDS:
                with_one = ", ".join(f"{alert} ({meaning})" for alert, meaning in sorted(THRESHOLDS.items()))
                yield Problem(
                    join_path(alert_path, "threshold"), f"{name} has no threshold; alerts with one: {with_one}"
                )
            elif override.threshold is not None and threshold_problem(override.threshold):
                yield Problem(join_path(alert_path, "threshold"), threshold_problem(override.threshold) or "")
            elif override.threshold is not None and override.threshold < 0:
                yield Problem(join_path(alert_path, "threshold"), f"{override.threshold} must not be negative")
