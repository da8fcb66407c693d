"""Facts of GPU observability: DCGM fields, XID codes, label names the alerts read, Grafana's sidecar label.

Pure constants with their sources. The observability capability builds the dcgm-exporter metrics
file, the alert rules and the dashboards from them; nothing else spells a DCGM field or an XID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from components.catalog.gpu_operator_upgrade import UPGRADE_STATE_LABEL, UpgradeState
from components.catalog.names import MIG_CONFIG_STATE_LABEL as MIG_CONFIG_STATE_LABEL
from components.catalog.node_agent import MIG_STATE_FAILED


class FieldGroup(StrEnum):
    """What a DCGM field is for; the metrics file is built from groups."""

    UTILIZATION = "utilization"
    MIG_UTILIZATION = "mig-utilization"
    MEMORY = "memory"
    THERMAL_POWER = "thermal-power"
    XID = "xid"
    ECC = "ecc"
    RETIRED_PAGES = "retired-pages"
    REMAPPED_ROWS = "remapped-rows"
    THROTTLING = "throttling"
    NVLINK = "nvlink"
    INFO = "info"


@dataclass(frozen=True)
class DcgmField:
    """One line of a dcgm-exporter metrics file: ``FIELD, type, help``."""

    name: str
    kind: str  # "gauge", "counter" or "label" (dcgm-exporter's three types)
    help: str
    group: FieldGroup

    def csv_line(self) -> str:
        """The line as dcgm-exporter's CSV format writes it."""
        return f"{self.name}, {self.kind}, {self.help}"


# Field names, types and help texts as NVIDIA's dcgm-exporter ships them in etc/default-counters.csv
# (commit b54068a9feef589e07fc36c22642ad4bb61f6420; several are commented out there, i.e. available
# but off by default) and etc/dcp-metrics-included.csv (commit 99a774bb93604fbc5cc509e68c8bbb205dbfb16c:
# the DCP "PROF" fields and the driver-version label). DCGM_FI_DEV_GPU_UTIL is not reported for MIG
# instances; NVIDIA's maintainers point to DCGM_FI_PROF_GR_ENGINE_ACTIVE, which is reported per MIG
# instance with the GPU_I_ID and GPU_I_PROFILE labels (NVIDIA/dcgm-exporter issues #216, #430).
DCGM_FIELDS: Final[tuple[DcgmField, ...]] = (
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", FieldGroup.UTILIZATION),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", FieldGroup.UTILIZATION),
    DcgmField("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", FieldGroup.UTILIZATION),
    DcgmField(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gauge",
        "Ratio of time the graphics engine is active.",
        FieldGroup.MIG_UTILIZATION,
    ),
    DcgmField(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        FieldGroup.MIG_UTILIZATION,
    ),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        FieldGroup.MIG_UTILIZATION,
    ),
    DcgmField("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", FieldGroup.MEMORY),
    DcgmField("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", FieldGroup.MEMORY),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", FieldGroup.THERMAL_POWER),
    DcgmField("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", FieldGroup.THERMAL_POWER),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", FieldGroup.THERMAL_POWER),
    DcgmField("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", FieldGroup.XID),
    DcgmField(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.", FieldGroup.ECC
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.", FieldGroup.ECC
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors.", FieldGroup.ECC
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors.", FieldGroup.ECC
    ),
    DcgmField(
        "DCGM_FI_DEV_RETIRED_SBE",
        "counter",
        "Total number of retired pages due to single-bit errors.",
        FieldGroup.RETIRED_PAGES,
    ),
    DcgmField(
        "DCGM_FI_DEV_RETIRED_DBE",
        "counter",
        "Total number of retired pages due to double-bit errors.",
        FieldGroup.RETIRED_PAGES,
    ),
    DcgmField(
        "DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement.", FieldGroup.RETIRED_PAGES
    ),
    DcgmField(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
        FieldGroup.REMAPPED_ROWS,
    ),
    DcgmField(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors",
        FieldGroup.REMAPPED_ROWS,
    ),
    DcgmField(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", FieldGroup.REMAPPED_ROWS
    ),
    DcgmField(
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "counter",
        "Throttling duration due to thermal constraints (in us).",
        FieldGroup.THROTTLING,
    ),
    DcgmField(
        "DCGM_FI_DEV_POWER_VIOLATION",
        "counter",
        "Throttling duration due to power constraints (in us).",
        FieldGroup.THROTTLING,
    ),
    DcgmField(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink flow-control CRC errors.",
        FieldGroup.NVLINK,
    ),
    DcgmField(
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink data CRC errors.",
        FieldGroup.NVLINK,
    ),
    DcgmField(
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries.", FieldGroup.NVLINK
    ),
    DcgmField(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink recovery errors.",
        FieldGroup.NVLINK,
    ),
    DcgmField(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
        FieldGroup.NVLINK,
    ),
    DcgmField("DCGM_FI_DRIVER_VERSION", "label", "Driver Version", FieldGroup.INFO),
)

#: The NVLink error counters (the alert sums them); bandwidth is in the same group but is not an error.
NVLINK_ERROR_FIELDS: Final = tuple(
    field.name for field in DCGM_FIELDS if field.group is FieldGroup.NVLINK and "ERROR" in field.name
)

# Labels dcgm-exporter puts on every series. "Hostname" is the node name: the GPU Operator's exporter
# DaemonSet passes spec.nodeName as NODE_NAME (NVIDIA/gpu-operator assets/state-dcgm-exporter/0800_daemonset.yaml,
# commit 06faaf0cca8a7ea15613b03f86f101e5e225b69d), which dcgm-exporter reports as Hostname. GPU_I_* only
# on MIG instances (NVIDIA/dcgm-exporter issue #272 shows them).
DCGM_NODE_LABEL: Final = "Hostname"
DCGM_GPU_LABEL: Final = "gpu"
DCGM_MIG_INSTANCE_LABEL: Final = "GPU_I_ID"
DCGM_MIG_PROFILE_LABEL: Final = "GPU_I_PROFILE"
DCGM_MODEL_LABEL: Final = "modelName"
#: A "label" field becomes a label of that name on every series (dcp-metrics-included.csv).
DCGM_DRIVER_VERSION_LABEL: Final = "DCGM_FI_DRIVER_VERSION"
#: The key the GPU Operator's dcgmExporter.config ConfigMap must hold (chart values.yaml, v26.7.0).
DCGM_METRICS_CONFIG_KEY: Final = "dcgm-metrics.csv"


@dataclass(frozen=True)
class Xid:
    """One XID code of NVIDIA's XID catalogue."""

    code: int
    mnemonic: str


# The XIDs the platform treats as critical (issue 18): uncorrectable ECC (48), page retirement and
# row remapping (63, 64), NVLink (74), fallen off the bus (79), excessive single-bit errors (92),
# contained and uncontained ECC (94, 95). Mnemonics from NVIDIA's XID catalogue
# (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html).
CRITICAL_XIDS: Final[tuple[Xid, ...]] = (
    Xid(48, "ROBUST_CHANNEL_GPU_ECC_DBE"),
    Xid(63, "INFOROM_DRAM_RETIREMENT_EVENT"),
    Xid(64, "INFOROM_DRAM_RETIREMENT_FAILURE"),
    Xid(74, "NVLINK_ERROR"),
    Xid(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"),
    Xid(92, "EXCESSIVE_SBE_INTERRUPTS"),
    Xid(94, "ROBUST_CHANNEL_CONTAINED_ERROR"),
    Xid(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR"),
)

# The XIDs whose "Resolution Bucket (Immediate Action)" is RESET_GPU in NVIDIA's XID catalogue for
# Ampere and newer (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), as
# transcribed machine-readably by NVIDIA's NVSentinel in
# distros/kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv (commit
# 6f8b0fcfa8e502bdda78fabf96facef729a9285b). Code 162 is listed there without a mnemonic and is left out.
RESET_REQUIRED_XIDS: Final[tuple[Xid, ...]] = (
    Xid(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR"),
    Xid(62, "PMU_HALT_ERROR"),
    Xid(64, "INFOROM_DRAM_RETIREMENT_FAILURE"),
    Xid(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR"),
    Xid(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR"),
    Xid(110, "SEC_FAULT_ERROR"),
    Xid(119, "GSP_RPC_TIMEOUT"),
    Xid(120, "GSP_ERROR"),
    Xid(136, "ALI_TRAINING_FAIL"),
    Xid(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE"),
    Xid(143, "GPU_INIT_ERROR"),
    Xid(155, "NVLINK_SW_DEFINED_ERROR"),
    Xid(156, "RESOURCE_RETIREMENT_EVENT"),
    Xid(158, "GPU_FATAL_TIMEOUT"),
)

#: "GPU has fallen off the bus" (NVIDIA XID catalogue).
FALLEN_OFF_THE_BUS_XID: Final = 79


def alerting_xids() -> tuple[int, ...]:
    """Every XID that raises the critical-XID alert, sorted: the platform's list and the reset-required ones."""
    return tuple(sorted({xid.code for xid in (*CRITICAL_XIDS, *RESET_REQUIRED_XIDS)}))


# Node labels whose values the alerts read. NVIDIA's mig-manager writes nvidia.com/mig.config.state
# (names.MIG_CONFIG_STATE_LABEL: pending, rebooting, success, failed; mig-parted v0.15.0
# pkg/mig/reconfigure/reconfigure.go ``migStateFailed``).
MIG_CONFIG_STATE_FAILED: Final = MIG_STATE_FAILED
# The GPU Operator's upgrade controller writes nvidia.com/gpu-driver-upgrade-state (gpu_operator_upgrade, with
# its source).
DRIVER_UPGRADE_STATE_LABEL: Final = UPGRADE_STATE_LABEL
DRIVER_UPGRADE_STATE_FAILED: Final = UpgradeState.FAILED.value

# kube-state-metrics (https://github.com/kubernetes/kube-state-metrics/blob/main/docs/metrics/):
# kube_node_labels exposes only the node labels named in --metric-labels-allowlist, each as
# label_<name> with every character outside [a-zA-Z0-9_] replaced by "_".
KSM_NODE_LABELS: Final = "kube_node_labels"
KSM_NODE_ALLOCATABLE: Final = "kube_node_status_allocatable"
KSM_POD_REQUESTS: Final = "kube_pod_container_resource_requests"
#: 1 for the Job's condition (``condition="true"``) once the Job has failed for good (backoffLimit or deadline).
KSM_JOB_FAILED: Final = "kube_job_failed"
KSM_JOB_SUCCEEDED: Final = "kube_job_status_succeeded"
#: kube-state-metrics writes an extended resource's name with "/", "." and "-" as "_": nvidia.com/gpu -> nvidia_com_gpu.
KSM_GPU_RESOURCE_PATTERN: Final = "nvidia_com_(gpu|mig_.+)"


def ksm_label(label: str) -> str:
    """The kube-state-metrics series label of a Kubernetes label (``nvidia.com/mig.config.state`` -> ``label_nvidia_com_mig_config_state``)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


# Grafana's dashboard sidecar (grafana/helm-charts charts/grafana values.yaml sidecar.dashboards.label and
# labelValue, as kube-prometheus-stack sets them) loads every ConfigMap with this label.
GRAFANA_DASHBOARD_LABEL: Final = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE: Final = "1"
#: Grafana refuses dashboard UIDs longer than this (Grafana docs, dashboard JSON model "uid").
GRAFANA_UID_MAX_LENGTH: Final = 40

# The Prometheus Operator's rule resource (prometheus-operator API monitoring.coreos.com/v1).
PROMETHEUS_RULE_API_VERSION: Final = "monitoring.coreos.com/v1"
PROMETHEUS_RULE_KIND: Final = "PrometheusRule"
# Its scrape target resource: a Service's endpoints selected by label (same API group and version).
SERVICE_MONITOR_API_VERSION: Final = "monitoring.coreos.com/v1"
SERVICE_MONITOR_KIND: Final = "ServiceMonitor"
#: How often the node agent controller's gauges are scraped (they change at most once per reconcile).
NODE_AGENT_SCRAPE_INTERVAL: Final = "30s"
