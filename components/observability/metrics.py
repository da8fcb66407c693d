"""The dcgm-exporter metrics file of a stack, and the GPU Operator values that make the exporter read it.

The GPU Operator chart renders the ConfigMap itself from ``dcgmExporter.config`` (``create: true``
with the CSV text as ``data``; templates/dcgm_exporter_config.yaml) and points the ClusterPolicy at
it by name, so the file lives and rolls back with the release that reads it: no second resource in
the operator's namespace to order against the release (MIG's mig-parted config works the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.catalog.observability import DCGM_FIELDS, DcgmField, FieldGroup
from components.catalog.pools import GpuPool
from components.observability.config import MetricsConfig

HEADER = (
    "# gpu-platform dcgm-exporter metrics (generated from components/catalog/observability.py)\n"
    "# DCGM FIELD, Prometheus metric type, help message\n"
)


def nvlink_present(config: MetricsConfig, pools: Sequence[GpuPool]) -> bool:
    """Whether the stack's GPUs have NVLink to report: NVLink connects GPUs of one node, so ``auto`` means
    "some pool has more than one GPU per node"; ``on``/``off`` decide for hosts the rule misjudges."""
    if config.nvlink == "auto":
        return any(pool.gpus_per_node > 1 for pool in pools)
    return config.nvlink == "on"


def metric_fields(*, nvlink: bool) -> tuple[DcgmField, ...]:
    """The fields the stack's exporter reports: all of the catalog's, NVLink only where present."""
    return tuple(field for field in DCGM_FIELDS if nvlink or field.group is not FieldGroup.NVLINK)


def metrics_csv(fields: Sequence[DcgmField]) -> str:
    """The metrics file in dcgm-exporter's CSV format, one section per field group."""
    lines = [HEADER]
    group: FieldGroup | None = None
    for field in fields:
        if field.group is not group:
            group = field.group
            lines.append(f"\n# {group.value}\n")
        lines.append(field.csv_line() + "\n")
    return "".join(lines)


def operator_values(
    config: MetricsConfig, fields: Sequence[DcgmField], *, service_monitor: bool, rule_labels: dict[str, str]
) -> dict[str, Any]:
    """The GPU Operator values fragment: the metrics file and the ServiceMonitor's selector labels.

    Merged over the operator's own values by the stack plan (``dcgmExporter.serviceMonitor.enabled``
    stays the operator's ``prometheusOperator`` decision).
    """
    exporter: dict[str, Any] = {
        "config": {"name": config.config_map_name, "create": True, "data": metrics_csv(fields)},
    }
    if service_monitor and rule_labels:
        exporter["serviceMonitor"] = {"additionalLabels": dict(sorted(rule_labels.items()))}
    return {"dcgmExporter": exporter}
