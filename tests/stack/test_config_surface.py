"""Every leaf of the config surface, from the receiving system's rule: a valid value passes, an invalid one is
refused at the key the file has.

The leaves are the model's, walked over both stack files as they are written (``nodeGroupDefaults`` not laid
under the groups): every key a stack sets and every key it could set in the sections it has. Each leaf gets
its rule from ``RULES`` (the first pattern that matches): the rule of the system the value ends in (the
Kubernetes API server, Yandex Cloud, the host, the int32 field it is written to) gives a strategy of valid
values and one of invalid values. A leaf whose validity depends on other keys (a platform's shapes, a MIG
layout, a driver against the GPUs) is listed in ``CONTEXTUAL`` with the tests that cover it; the coverage test
fails for a new leaf that has neither, so the surface cannot grow unchecked.

Properties: a valid value is never refused; an invalid one is refused, with a problem at the leaf's own key,
and no problem names a key the mutated file does not have. Deterministic in CI (``tests/properties.py``),
``make fuzz`` draws twenty times as many random examples.
"""

from __future__ import annotations

import string
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from components.base.config_model import _tagged_members, _unwrap
from components.base.merge import spells_out
from components.base.problems import StackConfigError, join_path
from components.catalog.kernel_args import ALLOWED_KERNEL_ARG_NAMES
from components.catalog.kubernetes import INT32_MAX, SYSTEM_NAMESPACES, TAINT_EFFECTS
from components.stack.config import StackConfig, top_level_keys
from tests.helpers import plan_raw, set_path, stack_raw
from tests.properties import examples

STACKS = ("dev", "prod")


# ----------------------------------------------------------------------------------------------
# The leaves of the surface


def _leaves(model: type[BaseModel], raw: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every leaf key path of ``model`` under ``raw`` (maps and lists of models: the entries the file has)."""
    raw = raw if isinstance(raw, dict) else {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        value = raw.get(key)
        if value is None and field.default is None and _is_section(field.annotation):
            continue  # an optional section the file does not have (bareMetal on dev, a group's own driver)
        yield from _value_leaves(field.annotation, value, (*path, key))


def _is_section(annotation: Any) -> bool:
    unwrapped = _unwrap(annotation)
    return _tagged_members(unwrapped) is not None or (isinstance(unwrapped, type) and issubclass(unwrapped, BaseModel))


def _value_leaves(annotation: Any, value: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    unwrapped = _unwrap(annotation)
    members = _tagged_members(unwrapped)
    if members is not None:
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind in members:
            yield from _leaves(members[kind], value, path)
        return
    if isinstance(unwrapped, type) and issubclass(unwrapped, BaseModel):
        yield from _leaves(unwrapped, value, path)
        return
    args = [_unwrap(arg) for arg in typing.get_args(unwrapped)]
    item = args[-1] if args else None
    if isinstance(item, type) and issubclass(item, BaseModel):
        origin = typing.get_origin(unwrapped)
        entries = (value or {}).items() if origin is dict else enumerate(value or [])
        for key, entry in entries:
            yield from _leaves(item, entry, (*path, key))
        return
    yield path


def pattern(path: tuple[Any, ...]) -> str:
    """``("nodeGroups", "v100", "taints")`` -> ``nodeGroups.*.taints``; list indices -> ``[]``."""
    parts = []
    for index, part in enumerate(path):
        if isinstance(part, int):
            parts.append("[]")
        elif (index == 1 and path[0] == "nodeGroups") or (index == 2 and path[:2] == ("observability", "alerts")):
            parts.append("*")
        else:
            parts.append(str(part))
    return ".".join(parts)


# ----------------------------------------------------------------------------------------------
# Rules: valid and invalid values, from the receiving system's rule


@dataclass(frozen=True)
class Rule:
    """Whose rule a leaf follows, with a strategy of values it accepts and one of values it refuses."""

    owner: str
    valid: st.SearchStrategy[Any]
    invalid: st.SearchStrategy[Any] | None


_NOT_BOOLEAN = st.sampled_from(["sometimes", 2, [], {"a": 1}, "maybe"])
_NOT_INT = st.sampled_from(["ten", 1.5, [], {}, "1e3x"])


def boolean() -> Rule:
    return Rule("a YAML boolean", st.booleans(), _NOT_BOOLEAN)


def integer(low: int, high: int = INT32_MAX, owner: str = "an int32 field of the Kubernetes object") -> Rule:
    above = st.integers(high + 1, high + 10**13)
    below = st.integers(low - 10**6, low - 1)
    return Rule(owner, st.integers(low, high), st.one_of(above, below, _NOT_INT))


def _without(rule: Rule, contextual: Any) -> Rule:
    """``rule`` with a value whose validity depends on another key drawn on neither side."""
    invalid = None if rule.invalid is None else rule.invalid.filter(lambda value: value != contextual)
    return Rule(rule.owner, rule.valid.filter(lambda value: value != contextual), invalid)


def choice(*allowed: Any) -> Rule:
    return Rule("the values the receiver knows", st.sampled_from(allowed), st.sampled_from(["zz-unknown", 42, "Auto"]))


_DNS_LABEL = st.from_regex(r"[a-z]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
_BAD_NAME = st.one_of(
    st.from_regex(r"[a-z]{0,4}[A-Z_!@][a-z]{1,4}", fullmatch=True),
    st.just("x" * 64),
    st.just("-leading-dash"),
)


def dns_label(exclude: tuple[str, ...] = ()) -> Rule:
    valid = _DNS_LABEL.filter(lambda name: name not in exclude)
    return Rule(
        "DNS-1123 label (apimachinery IsDNS1123Label)", valid, st.one_of(_BAD_NAME, st.sampled_from(exclude or ("A",)))
    )


_LABEL_VALUE = st.from_regex(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?)?", fullmatch=True)
_BAD_LABEL_VALUE = st.one_of(st.from_regex(r"[a-z]{1,4}[!# ][a-z]{1,4}", fullmatch=True), st.just("v" * 64))


def label_map() -> Rule:
    keys = st.from_regex(r"team\.example\.com/[a-z]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
    invalid = st.one_of(
        st.dictionaries(
            st.sampled_from(["Bad_Key!", "a/b/c", "kubernetes.io/role"]), _LABEL_VALUE, min_size=1, max_size=1
        ),
        st.dictionaries(keys, _BAD_LABEL_VALUE, min_size=1, max_size=1),
    )
    return Rule(
        "Kubernetes labels (IsQualifiedName, IsValidLabelValue)",
        st.dictionaries(keys, _LABEL_VALUE, max_size=3),
        invalid,
    )


def _taint(effect: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    key = st.from_regex(r"([a-z]{1,8}\.example\.com/)?[a-z]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
    value = st.one_of(st.none(), _LABEL_VALUE)
    return st.builds(lambda k, v, e: f"{k}:{e}" if v is None else f"{k}={v}:{e}", key, value, effect)


def taints() -> Rule:
    extra = st.lists(_taint(st.sampled_from(TAINT_EFFECTS)), max_size=3).map(
        lambda items: [
            t
            for i, t in enumerate(items)
            if t.partition("=")[0].partition(":")[0] not in {x.partition("=")[0].partition(":")[0] for x in items[:i]}
            and not t.startswith("nvidia.com/gpu")
        ]
    )
    valid = extra.map(lambda items: ["nvidia.com/gpu=true:NoSchedule", *items])
    broken = st.sampled_from(["nvidia.com/gpu=true:Never", "no-effect", "a=b=c:NoSchedule", "Bad Key=x:NoSchedule"])
    repeated = st.just(["nvidia.com/gpu=true:NoSchedule", "nvidia.com/gpu=false:NoSchedule"])
    invalid: st.SearchStrategy[list[str]] = st.one_of(
        broken.map(lambda bad: ["nvidia.com/gpu=true:NoSchedule", bad]), repeated, st.just([])
    )
    return Rule("Kubernetes taints (kubectl parseTaint, one per key and effect, a NoSchedule one)", valid, invalid)


def _requirement() -> st.SearchStrategy[str]:
    key = st.from_regex(r"([a-z]{1,6}\.io/)?[a-z]([-a-z0-9]{0,8}[a-z0-9])?", fullmatch=True)
    value = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?", fullmatch=True)
    values = st.lists(value, min_size=1, max_size=3).map(",".join)
    return st.one_of(
        key,
        key.map(lambda k: f"!{k}"),
        st.builds(lambda k, op, v: f"{k}{op}{v}", key, st.sampled_from(["=", "==", "!="]), value),
        st.builds(lambda k, op, v: f"{k} {op} ({v})", key, st.sampled_from(["in", "notin"]), values),
    )


def selector() -> Rule:
    valid = st.lists(_requirement(), max_size=3).map(",".join)
    broken = st.sampled_from(["a=b=c!!", "app in (x", "app in (a b)", "x,", "a b", "=v", "team in (ml) extra"])
    invalid = st.one_of(broken, st.builds(lambda ok, bad: f"{ok},{bad}", _requirement(), broken))
    return Rule("a label selector (apimachinery labels.Parse)", valid, invalid)


def yandex_id() -> Rule:
    valid = st.from_regex(r"[a-z0-9]{20}", fullmatch=True)
    invalid = st.one_of(st.from_regex(r"[a-z]{3}[A-Z !_][a-z0-9]{3}", fullmatch=True), st.just("x" * 51))
    return Rule("a Yandex Cloud id (Yandex Cloud API)", valid, invalid)


def yandex_ids() -> Rule:
    id_rule = yandex_id()
    invalid = id_rule.invalid
    assert invalid is not None
    return Rule(
        id_rule.owner, st.lists(id_rule.valid, max_size=3), st.one_of(invalid.map(lambda v: [v]), st.just([""]))
    )


def yandex_label_value() -> Rule:
    valid = st.from_regex(r"[-_./@0-9a-z]{1,63}", fullmatch=True).filter(lambda v: v.strip() == v)
    invalid = st.one_of(st.from_regex(r"[a-z]{1,4}[A-Z !][a-z]{1,4}", fullmatch=True), st.just("e" * 64))
    return Rule("a Yandex Cloud label value (Yandex Cloud API)", valid, invalid)


def percent_or_count(low: int) -> Rule:
    valid = st.one_of(st.integers(low, 1000), st.integers(max(low, 1), 100).map(lambda p: f"{p}%"))
    invalid = st.sampled_from(["101%", "-1", "many", "25 %", -3] if low == 0 else ["101%", "0%", "many", 0, -3])
    return Rule("an int or percentage (apimachinery intstr)", valid, invalid)


def login_name() -> Rule:
    valid = st.from_regex(r"[a-z_][a-z0-9_-]{0,20}", fullmatch=True)
    invalid = st.sampled_from(["root;reboot", "$(id)", "Admin", "a b", "9user"])
    return Rule("a login name (useradd NAME_REGEX)", valid, invalid)


def host() -> Rule:
    valid = st.one_of(st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8}){1,2}", fullmatch=True), st.ip_addresses(v=4).map(str))
    return Rule(
        "an address SSH reaches (an IP or a DNS name)", valid, st.sampled_from(["bad host!", "a..b", "-x.example.com"])
    )


def secret_key(taken: tuple[str, ...]) -> Rule:
    valid = st.from_regex(r"[a-z][A-Za-z0-9]{3,12}", fullmatch=True).filter(
        lambda k: k not in (*taken, *top_level_keys())
    )
    return Rule("a secret config key of its own", valid, st.sampled_from(["", *top_level_keys()[:3]]))


def kernel_args() -> Rule:
    names = sorted(ALLOWED_KERNEL_ARG_NAMES - {"module.sig_enforce", "nouveau.modeset"})
    arg = st.builds(
        lambda n, v: f"{n}={v}" if v else n, st.sampled_from(names), st.from_regex(r"[a-z0-9]{0,4}", fullmatch=True)
    )
    valid = st.lists(arg, max_size=3)
    invalid = st.sampled_from(["init=/bin/sh", "nouveau.modeset=1", "quiet splash", "rd.break"]).map(lambda a: [a])
    return Rule("kernel arguments host preparation adds (components/catalog/kernel_args.py)", valid, invalid)


def window_time() -> Rule:
    valid = st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 23), st.integers(0, 59))
    return Rule("HH:MM UTC (Yandex maintenance window)", valid, st.sampled_from(["24:00", "2:00", "02:60", "noon"]))


def window_duration() -> Rule:
    valid = st.one_of(st.integers(1, 24).map(lambda h: f"{h}h"), st.integers(60, 1440).map(lambda m: f"{m}m"))
    return Rule("1h to 24h (Yandex maintenance window)", valid, st.sampled_from(["0m", "25h", "59m", "90", "1d"]))


def free_text() -> Rule:
    return Rule(
        "free text (shown in outputs only)",
        st.text(string.ascii_letters + string.digits + " -_.@", min_size=1, max_size=20).filter(str.strip),
        None,
    )


# First match wins. The int bounds are each field's own (the model's ge/le), the upper one the int32 field.
RULES: list[tuple[str, Rule]] = [
    ("environment.production", boolean()),
    ("environment.owner", free_text()),
    ("cluster.clusterId", yandex_id()),
    ("cluster.endpoint", choice("external", "internal")),
    ("cluster.name", dns_label()),
    ("cluster.context", free_text()),
    ("*.location.subnetId", yandex_id()),
    ("*.securityGroupIds", yandex_ids()),
    # 0 is valid beside a maxUnavailable of 1 or more and refused beside 0, at the deploy block that holds both
    # (tests/stack/test_bad_input_classes.py): neither side of the property, like the other contextual values.
    (
        "*.deploy.maxExpansion",
        _without(integer(1, 100, "Yandex Cloud deploy policy (0-100; 0 only with maxUnavailable)"), 0),
    ),
    ("*.deploy.maxUnavailable", integer(0, 100, "Yandex Cloud deploy policy (0-100)")),
    ("*.bootDisk.size", integer(64, 4096, "Yandex Cloud boot disk (GB)")),
    ("*.bootDisk.type", choice("network-hdd", "network-ssd")),
    ("*.labels", label_map()),
    ("*.taints", taints()),
    ("*.preemptible", boolean()),
    ("*.nat", boolean()),
    ("*.maintenance.autoRepair", boolean()),
    ("*.maintenance.windows.[].startTime", window_time()),
    ("*.maintenance.windows.[].duration", window_duration()),
    ("*.maintenance.windows.[].day", choice("monday", "saturday", "sunday")),
    # false is legal YAML, but with NVIDIADriver resources nothing replaces a driver pod without the upgrade
    # controller, so it is refused there (tests/gpu_operator/test_per_pool_drivers.py): only true is valid anywhere.
    (
        "*upgradePolicy.autoUpgrade",
        Rule("a YAML boolean (true wherever NVIDIADrivers run)", st.just(True), _NOT_BOOLEAN),
    ),
    ("*upgradePolicy.maxParallelUpgrades", integer(0)),
    # 0 and 0% are legal intstr values, but with autoUpgrade they let no node upgrade and are refused
    # (tests/gpu_operator/test_per_pool_drivers.py): valid anywhere from 1; invalid as intstr itself refuses.
    (
        "*upgradePolicy.maxUnavailable",
        Rule(percent_or_count(1).owner, percent_or_count(1).valid, percent_or_count(0).invalid),
    ),
    ("*upgradePolicy.*.podSelector", selector()),
    ("*upgradePolicy.*.timeoutSeconds", integer(0)),
    ("*upgradePolicy.*.force", boolean()),
    ("*upgradePolicy.*.enable", boolean()),
    ("*upgradePolicy.*.deleteEmptyDir", boolean()),
    ("bareMetal.ssh.user", login_name()),
    ("bareMetal.ssh.bastion.user", login_name()),
    ("bareMetal.ssh.port", integer(1, 65535, "a TCP port")),
    ("bareMetal.ssh.bastion.port", integer(1, 65535, "a TCP port")),
    ("bareMetal.ssh.bastion.host", host()),
    ("bareMetal.ssh.sudo", boolean()),
    ("bareMetal.ssh.privateKeySecret", secret_key(("kubeconfig", "kubeflowDexPasswordHash"))),
    ("bareMetal.ssh.bastion.privateKeySecret", secret_key(("kubeconfig", "kubeflowDexPasswordHash"))),
    ("cluster.kubeconfigSecret", secret_key(("sshPrivateKey", "kubeflowDexPasswordHash"))),
    ("bareMetal.hostPreparation.kernelArgs", kernel_args()),
    ("bareMetal.hostPreparation.bpfJitHarden", choice(0, 1)),
    ("bareMetal.hostPreparation.nvswitch", choice("auto", "true", "false")),
    ("bareMetal.hostPreparation.allowUnsignedModules", boolean()),
    ("bareMetal.hostPreparation.enableCdi", boolean()),
    ("bareMetal.hostPreparation.setAsDefaultRuntime", boolean()),
    ("bareMetal.nodes.[].address", host()),
    ("bareMetal.nodes.[].labels", label_map()),
    ("bareMetal.nodes.[].taints", taints()),
    ("bareMetal.nodes.[].nvswitch", choice("auto", "true", "false")),
    ("gpuOperator.namespace", dns_label(SYSTEM_NAMESPACES)),
    ("gpuOperator.releaseName", dns_label()),
    ("gpuOperator.timeoutSeconds", integer(300)),
    # The operator writes it into every operand DaemonSet with no maxSurge: 0 in any spelling never proceeds.
    (
        "gpuOperator.maxUnavailable",
        Rule(percent_or_count(1).owner, percent_or_count(1).valid, st.sampled_from(["101%", "many", 0, "0", "0%", -3])),
    ),
    ("gpuOperator.updateStrategy", choice("RollingUpdate", "OnDelete")),
    (
        "gpuOperator.priorityClassName",
        Rule(
            "a PriorityClass name",
            st.just("system-node-critical") | _DNS_LABEL.filter(lambda n: not n.startswith("system-")),
            st.sampled_from(["system-mine", "Critical", "a_b"]),
        ),
    ),
    ("gpuOperator.kyverno.namespace", dns_label()),
    (
        "gpuOperator.kyverno.configMap",
        Rule("a DNS-1123 subdomain (ConfigMap name)", _DNS_LABEL, _BAD_NAME.filter(lambda n: len(n) < 64)),
    ),
    ("gpuOperator.kyverno.mode", choice("webhookNamespaceSelector")),
    ("gpuOperator.kyverno.enabled", boolean()),
    (
        "gpuOperator.kyverno.policies",
        Rule(
            "DNS-1123 subdomains",
            st.lists(_DNS_LABEL, max_size=2),
            _BAD_NAME.filter(lambda n: len(n) < 64).map(lambda n: [n]),
        ),
    ),
    ("gpuOperator.vgpuDeviceManager", boolean()),
    ("gpuOperator.vfioManager", boolean()),
    ("gpuOperator.sandboxDevicePlugin", boolean()),
    ("gpuOperator.disableDevCharSymlinks", boolean()),
    ("gpuOperator.scopeNfdToGpuNodes", boolean()),
    ("gpuOperator.prometheusOperator", boolean()),
    ("gpuOperator.migManager", boolean()),
    (
        "mig.configMapName",
        Rule("a DNS-1123 subdomain (ConfigMap name)", _DNS_LABEL, _BAD_NAME.filter(lambda n: len(n) < 64)),
    ),
    ("mig.withReboot", boolean()),
    ("nodeAgent.namespace", dns_label()),
    (
        "nodeAgent.maxUnavailable",
        Rule(
            "a count >= 1 or 1%-100%",
            st.one_of(st.integers(1, 1000), st.integers(1, 100).map(lambda p: f"{p}%")),
            st.sampled_from([0, "0%", "101%", True, "x"]),
        ),
    ),
    ("nodeAgent.dryRun", boolean()),
    ("nodeAgent.cordonOnProofFailure", boolean()),
    ("nodeAgent.allowReboot", boolean()),
    ("nodeAgent.evictionTimeoutSeconds", integer(30)),
    ("nodeAgent.rebootTimeoutSeconds", integer(120)),
    ("nodeAgent.*TimeoutSeconds", integer(60)),
    ("nodeAgent.leaseTtlSeconds", integer(60)),
    ("smokeTest.enabled", boolean()),
    ("smokeTest.timeoutSeconds", integer(60)),
    ("smokeTest.ttlSecondsAfterFinished", integer(0)),
    ("observability.enabled", boolean()),
    ("observability.namespace", dns_label()),
    ("observability.ruleLabels", label_map()),
    (
        "observability.metrics.configMapName",
        Rule("a DNS-1123 subdomain (ConfigMap name)", _DNS_LABEL, _BAD_NAME.filter(lambda n: len(n) < 64)),
    ),
    ("observability.metrics.nvlink", choice("auto", "on", "off")),
    ("observability.dashboards.enabled", boolean()),
    ("observability.dashboards.folder", free_text()),
    ("observability.alerts.*.enabled", boolean()),
    ("observability.alerts.*.severity", choice("critical", "warning", "info")),
]

# Leaves whose validity depends on other keys, and where that is tested.
CONTEXTUAL: dict[str, str] = {
    "environment.name": "a Yandex label value on Yandex only: tests/stack/test_bad_input_classes.py",
    "cluster.kind": "selects the block's keys: tests/stack/test_config.py",
    "cluster.kubernetesVersion": "supported range and node skew: tests/stack/test_config.py, tests/yandex",
    "cuda.*": "the catalog's CUDA levels against every pool's driver: tests/gpu_operator",
    "*.platform": "Yandex platforms and their shapes: tests/stack/test_config.py",
    "*.gpuModel": "the platform's chip: tests/stack/test_config.py",
    "*.resources.*": "the platform's shapes: tests/stack/test_config.py",
    "*.gpuEnvironment": "decides the driver owner: tests/stack/test_driver_migration.py",
    "*.scale.*": "min <= initial <= max, and the fleet Kubeflow quotas count: tests/stack/test_config.py",
    "*.location.zone": "the platform's zones: tests/stack/test_config.py",
    "*.maintenance.autoUpgrade": "refused on runc_drivers_cuda groups: tests/yandex",
    "*.kubernetesVersion": "the skew policy against the cluster: tests/yandex/test_bad_input.py",
    "*.mig.*": "MIG geometry per GPU model: tests/mig",
    "*.driver.version": "driver against GPU architectures and CUDA: tests/gpu_operator",
    "*.driver.kernelModuleType": "open modules need Turing or newer: tests/gpu_operator",
    "*.driver.cuda": "at least cuda.version: tests/stack/test_canary_drivers.py",
    "*.driver.usePrecompiled": "precompiled images carry branch versions: tests/stack/test_bad_input_classes.py",
    "*.driver.canary": "not every pool a canary: tests/stack/test_bad_input_classes.py",
    "*.hostDriverRemoval": "runc_drivers_cuda groups and Kubernetes 1.30: tests/node_agent, tests/yandex",
    "bareMetal.nodes.[].driver.*": "a node's own driver needs driverless hosts: tests/stack/test_bare_metal_drivers.py",
    "bareMetal.nodes.[].name": "a node name, unique: tests/bare_metal",
    "bareMetal.nodes.[].gpus": "the model's GPUs per node: tests/bare_metal",
    "bareMetal.nodes.[].pool": "pools group nodes for MIG and quotas: tests/bare_metal",
    "bareMetal.nodes.[].allowUntainted": "warned about: tests/bare_metal/test_bad_input.py",
    "bareMetal.hostPreparation.enabled": "decides which secrets are read: tests/bare_metal",
    "bareMetal.hostPreparation.configureContainerd": "decides the toolkit: tests/bare_metal",
    "bareMetal.hostPreparation.containerdConfig": "an absolute path: tests/bare_metal",
    "bareMetal.hostPreparation.extraKernelArgNames": "widens kernelArgs: tests/bare_metal/test_bad_input.py",
    "gpuOperator.toolkit": "not beside host preparation's containerd config: tests/bare_metal",
    "gpuOperator.enabled": "no operator, no smoke targets: tests/stack/test_plan.py",
    "gpuOperator.chartVersion": "the supported charts: tests/gpu_operator",
    "gpuOperator.chartPath": "the pinned chart's content: tests/gpu_operator, tests/preview/gate/test_policy_gate.py",
    "gpuOperator.driver.owner": "host or operator against the pools: tests/stack/test_driver_migration.py",
    "gpuOperator.hostDriver.*": "required with owner host: tests/bare_metal",
    "gpuOperator.extraValues": "the pinned chart's contract: tests/gpu_operator/test_gpu_operator.py",
    "kubeflow.*": "the Kubeflow section's own rules: tests/kubeflow",
    "mig.strategy": "what the pools advertise, against Kubeflow quotas: tests/mig",
    "mig.fromDemand": "plans pools from mig.demand: tests/mig",
    "mig.demand.*": "the fleet's MIG capacity: tests/mig",
    "nodeAgent.migLayout": "Kubernetes 1.30 and MIG pools: tests/node_agent",
    "smokeTest.image": "the kubelet's grammar and the pin rule: tests/stack/test_grammar_edge_cases.py; its CUDA level "
    "(imageCuda) against the drivers: tests/smoke_test",
    "smokeTest.imageCuda": "against every pool's driver: tests/smoke_test",
    "smokeTest.skipPools": "names of the stack's pools: tests/smoke_test",
    "observability.alerts.*.for": "Prometheus durations: tests/stack/test_grammar_edge_cases.py, tests/observability",
    "observability.alerts.*.threshold": "finite numbers, only alerts with a threshold: "
    "tests/stack/test_grammar_edge_cases.py, tests/observability",
}


def rule_for(leaf: str) -> Rule | None:
    """The first rule whose pattern matches ``leaf``; None for a contextual or uncovered leaf."""
    return next((rule for glob, rule in RULES if fnmatchcase(leaf, glob)), None)


def contextual(leaf: str) -> str | None:
    return next((why for glob, why in CONTEXTUAL.items() if fnmatchcase(leaf, glob)), None)


def _surface() -> list[tuple[str, tuple[Any, ...]]]:
    found = []
    for stack in STACKS:
        for path in _leaves(StackConfig, stack_raw(stack, expand_defaults=False)):
            found.append((stack, path))
    return found


SURFACE = _surface()
CHECKED = [(stack, path) for stack, path in SURFACE if contextual(pattern(path)) is None and rule_for(pattern(path))]


def test_every_leaf_of_the_surface_has_a_rule_or_says_where_it_is_tested() -> None:
    uncovered = sorted(
        {pattern(path) for _, path in SURFACE if rule_for(pattern(path)) is None and not contextual(pattern(path))}
    )
    assert uncovered == [], f"leaves with no rule and no contextual test: {uncovered}"
    assert len(CHECKED) > 150, "both stacks' sections, defaults included"
    assert any(path[0] == "nodeGroupDefaults" for _, path in CHECKED)


def _has_invalid(leaf: tuple[str, tuple[Any, ...]]) -> bool:
    rule = rule_for(pattern(leaf[1]))
    return rule is not None and rule.invalid is not None


def _mutated(stack: str, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    return set_path(stack_raw(stack, expand_defaults=False), path, value)


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), leaf=st.sampled_from(CHECKED))
def test_a_valid_value_is_never_refused(data: st.DataObject, leaf: tuple[str, tuple[Any, ...]]) -> None:
    stack, path = leaf
    rule = rule_for(pattern(path))
    assert rule is not None
    value = data.draw(rule.valid, label=f"valid {join_path(*path)} ({rule.owner})")
    raw = _mutated(stack, path, value)
    try:
        plan_raw(raw)
    except StackConfigError as error:
        pytest.fail(f"{stack}: {join_path(*path)}={value!r} is valid by {rule.owner}, refused: {error.problems}")


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), leaf=st.sampled_from([leaf for leaf in CHECKED if _has_invalid(leaf)]))
def test_an_invalid_value_is_refused_at_the_key_the_file_has(
    data: st.DataObject, leaf: tuple[str, tuple[Any, ...]]
) -> None:
    stack, path = leaf
    rule = rule_for(pattern(path))
    assert rule is not None and rule.invalid is not None
    value = data.draw(rule.invalid, label=f"invalid {join_path(*path)} ({rule.owner})")
    raw = _mutated(stack, path, value)
    with pytest.raises(StackConfigError) as refused:
        plan_raw(raw)
    key = join_path(*path)
    problems = refused.value.problems
    assert any(p.path == key or p.path.startswith((f"{key}[", f"{key}.")) for p in problems), (key, value, problems)
    absent = [p for p in problems if not spells_out(raw, p.path)]
    assert absent == [], f"refusals name keys the file does not have: {absent}"


# ----------------------------------------------------------------------------------------------
# Any junk anywhere in the files as written: no refusal names a key the file does not have


def _file_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    paths: list[tuple[Any, ...]] = []
    for key, value in items:
        paths.append((*prefix, key))
        paths.extend(_file_paths(value, (*prefix, key)))
    return paths


WRITTEN = [(stack, path) for stack in STACKS for path in _file_paths(stack_raw(stack, expand_defaults=False))]
_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**13),
    st.text(max_size=10),
    st.lists(st.text(max_size=6), max_size=2),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=2),
)


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(leaf=st.sampled_from(WRITTEN), value=_JUNK)
def test_no_refusal_names_a_key_the_file_does_not_have(leaf: tuple[str, tuple[Any, ...]], value: Any) -> None:
    stack, path = leaf
    raw = _mutated(stack, path, value)
    try:
        plan_raw(raw)
    except StackConfigError as error:
        # A key the file lacks is named only to say it must be written: "is required", or "set <that key>"
        # for a program default that does not fit (the chart's default driver on a V100 pool).
        absent = [
            p
            for p in error.problems
            if not spells_out(raw, p.path)
            and not p.message.startswith("is required")
            and f"set {p.path}" not in p.message
        ]
        assert absent == [], f"{join_path(*path)}={value!r}: refusals name keys the file does not have: {absent}"
