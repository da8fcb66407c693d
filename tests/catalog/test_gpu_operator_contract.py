"""The GPU Operator values contract refuses what chart v26.7.0 would silently ignore.

Key names hard-coded below come from chart gpu-operator v26.7.0 values.yaml (and, where noted,
from what its templates read although values.yaml does not show it); the "blog-post" keys are
the ones the project's research notes found not to exist or to be ignored.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from components.catalog.gpu_operator_chart import (
    CHART_NAME,
    CHART_REPO,
    CONTROL_PLANE_TOLERATION,
    DEFAULT_CHART_VERSION,
    DEFAULT_DRIVER_VERSION,
    GPU_RESOURCE,
    GPU_TOLERATION,
    SUPPORTED_CHART_VERSIONS,
    daemonset_tolerations,
    mig_resource_name,
    nfd_worker_tolerations,
    release,
)
from components.catalog.gpu_operator_contract import (
    CONTRACTS,
    ContractViolationError,
    Violation,
    contract_for,
)
from tests.properties import examples

CONTRACT = contract_for("v26.7.0")

MIG_CONFIG = """version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  five-1g-one-2g:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 5
        "2g.20gb": 1
"""

INFRA_TAINT = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def realistic_values() -> dict:
    """What the program emits for an H100 MIG pool plus a V100 pool with an R580 driver."""
    return {
        "driver": {
            "enabled": True,
            "version": "580.105.08",
            "kernelModuleType": "auto",
            "usePrecompiled": False,
            "repository": "nvcr.io/nvidia",
            "imagePullSecrets": ["ngc-pull"],
            "env": [{"name": "ACCEPT_LICENSE", "value": "yes"}],
            "upgradePolicy": {
                "autoUpgrade": True,
                "maxParallelUpgrades": 1,
                "maxUnavailable": "25%",
                "waitForCompletion": {"timeoutSeconds": 0, "podSelector": ""},
                "gpuPodDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
                "drain": {"enable": True, "force": False, "timeoutSeconds": 300, "deleteEmptyDir": True},
            },
            "manager": {"env": [{"name": "ENABLE_GPU_POD_EVICTION", "value": "true"}]},
        },
        "toolkit": {
            "enabled": True,
            "version": "v1.20.0",
            "env": [{"name": "CONTAINERD_SOCKET", "value": "/run/containerd/containerd.sock"}],
        },
        "devicePlugin": {"enabled": True, "resources": {"limits": {"memory": "256Mi"}}},
        "dcgmExporter": {"enabled": True, "serviceMonitor": {"enabled": True, "interval": "30s"}},
        "mig": {"strategy": "mixed"},
        "migManager": {
            "enabled": True,
            "env": [{"name": "WITH_REBOOT", "value": "true"}],
            "config": {
                "create": True,
                "name": "custom-mig-config",
                "default": "all-disabled",
                "data": {"config.yaml": MIG_CONFIG},
            },
        },
        "daemonsets": {
            "labels": {"team": "ml-platform"},
            "tolerations": daemonset_tolerations([INFRA_TAINT]),
            "priorityClassName": "system-node-critical",
            "updateStrategy": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "1"},
        },
        "node-feature-discovery": {
            "worker": {
                "tolerations": nfd_worker_tolerations([INFRA_TAINT]),
                "nodeSelector": {"node.kubernetes.io/instance-type": "gpu-h100"},
                "config": {"sources": {"pci": {"deviceClassWhitelist": ["0300", "0302"]}}},
            },
            "master": {"config": {"extraLabelNs": ["nvidia.com"]}},
            "gc": {"enable": True, "interval": "1h"},
        },
        "validator": {
            "driver": {"env": [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]},
        },
        "operator": {"upgradeCRD": True, "cleanupCRD": False},
        "nfd": {"enabled": True},
        "cdi": {"enabled": True},
    }


def paths_of(violations: list[Violation]) -> list[str]:
    return [v.path for v in violations]


# --- the realistic values dict --------------------------------------------------------------


def test_realistic_full_values_have_no_violations():
    assert CONTRACT.violations(realistic_values()) == []


def test_require_valid_passes_good_values_and_reports_every_bad_one():
    CONTRACT.require_valid(realistic_values())
    values = realistic_values()
    values["daemonsets"]["nodeSelector"] = {"gpu": "true"}
    values["driver"]["upgradepolicy"] = {}
    with pytest.raises(ContractViolationError) as err:
        CONTRACT.require_valid(values)
    assert paths_of(list(err.value.violations)) == ["daemonsets.nodeSelector", "driver.upgradepolicy"]
    assert "2 value path(s) not accepted by gpu-operator v26.7.0" in str(err.value)


# --- keys that do not exist ----------------------------------------------------------------------


def test_daemonsets_node_selector_is_refused_with_what_daemonsets_accepts_and_how_to_scope():
    (violation,) = CONTRACT.violations({"daemonsets": {"nodeSelector": {"gpu": "true"}}})
    assert violation.path == "daemonsets.nodeSelector"
    assert "is not a key of gpu-operator v26.7.0" in violation.message
    assert (
        "`daemonsets` accepts: annotations, labels, priorityClassName, rollingUpdate, tolerations, updateStrategy"
        in violation.message
    )
    assert "node-feature-discovery.worker.nodeSelector" in violation.message


def test_misspelled_key_is_refused_with_a_suggestion():
    (violation,) = CONTRACT.violations({"driver": {"upgradepolicy": {"autoUpgrade": False}}})
    assert violation.path == "driver.upgradepolicy"
    assert "did you mean `driver.upgradePolicy`?" in violation.message
    assert CONTRACT.suggest("driver.upgradepolicy") == "driver.upgradePolicy"


def test_key_at_the_wrong_depth_points_to_where_it_lives():
    (violation,) = CONTRACT.violations({"driver": {"drain": {"enable": True}}})
    assert "did you mean `driver.upgradePolicy.drain`?" in violation.message


def test_unknown_top_level_key_is_refused():
    (violation,) = CONTRACT.violations({"gpuOperator": {"enabled": True}})
    assert violation.path == "gpuOperator"
    assert "the top level accepts:" in violation.message
    assert not CONTRACT.accepts("gpuOperator")


def test_unknown_key_inside_a_list_item_is_reported_with_its_index():
    values = {"validator": {"driver": {"env": [{"name": "A", "value": "1"}, {"nme": "B", "value": "2"}]}}}
    found = CONTRACT.violations(values)
    assert paths_of(found) == ["validator.driver.env[1]", "validator.driver.env[1].nme"]
    assert "missing the required key `name`" in found[0].message
    assert "did you mean `validator.driver.env[1].name`?" in found[1].message


def test_unknown_nfd_key_names_the_subchart():
    (violation,) = CONTRACT.violations({"node-feature-discovery": {"worker": {"nodeselector": {}}}})
    assert "node-feature-discovery 0.19.0 subchart of gpu-operator v26.7.0" in violation.message
    assert "did you mean `node-feature-discovery.worker.nodeSelector`?" in violation.message


# --- type checks -----------------------------------------------------------------------------------


def test_a_dict_where_validator_driver_env_must_be_a_list_is_refused():
    values = {"validator": {"driver": {"env": {"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}}}}
    (violation,) = CONTRACT.violations(values)
    assert violation.path == "validator.driver.env"
    assert "must be a list of {name, value} objects" in violation.message
    assert "got mapping" in violation.message


def test_blog_post_driver_env_map_is_refused_and_points_to_the_validator():
    values = {"driver": {"env": {"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}}}
    (violation,) = CONTRACT.violations(values)
    assert violation.path == "driver.env"
    assert "validator.driver.env" in violation.message


def test_validator_flag_on_the_driver_container_is_refused_even_as_a_list():
    values = {"driver": {"env": [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]}}
    (violation,) = CONTRACT.violations(values)
    assert violation.path == "driver.env[0].name"
    assert "move it to `validator.driver.env`" in violation.message


@pytest.mark.parametrize(
    ("values", "path", "expected"),
    [
        ({"driver": {"enabled": "true"}}, "driver.enabled", "must be a boolean, got str 'true'"),
        ({"dcgmExporter": {"serviceMonitor": {"enabled": 1}}}, "dcgmExporter.serviceMonitor.enabled", "boolean"),
        ({"driver": {"version": 580.95}}, "driver.version", 'must be a string, got float 580.95 (quote it: "580.95")'),
        ({"validator": {"driver": {"env": [{"name": "X", "value": True}]}}}, "validator.driver.env[0].value", "string"),
        ({"toolkit": {"imagePullSecrets": [{"name": "regcred"}]}}, "toolkit.imagePullSecrets[0]", "must be a string"),
        ({"mig": {"strategy": "Mixed"}}, "mig.strategy", "must be one of none, single, mixed"),
        ({"daemonsets": {"tolerations": {"key": "x"}}}, "daemonsets.tolerations", "must be a list of tolerations"),
        ({"daemonsets": {"labels": {"gpu": True}}}, "daemonsets.labels.gpu", "must be a string"),
        (
            {"driver": {"upgradePolicy": {"drain": {"timeoutSeconds": "300"}}}},
            "driver.upgradePolicy.drain.timeoutSeconds",
            "integer",
        ),
        (
            {"migManager": {"config": {"data": {"config.yaml": {"version": "v1"}}}}},
            'migManager.config.data["config.yaml"]',
            "string",
        ),
    ],
)
def test_wrong_types_are_refused(values, path, expected):
    (violation,) = CONTRACT.violations(values)
    assert violation.path == path
    assert expected in violation.message


def test_helm_null_and_deploy_time_values_are_not_type_checked():
    class Output:  # stands in for pulumi.Output: its value is only known at deploy time
        pass

    values = {"operator": {"nodeSelector": None}, "driver": {"version": Output(), "env": Output()}}
    assert CONTRACT.violations(values) == []


# --- free maps -----------------------------------------------------------------------------------


def test_free_maps_accept_arbitrary_keys():
    values = {
        "daemonsets": {"labels": {"team": "ml", "cost-center": "42"}, "annotations": {"a.b/c": "d"}},
        "operator": {"affinity": {"nodeAffinity": {"anything": [{"goes": "here"}]}}},
        "node-feature-discovery": {"worker": {"config": {"core": {"labelWhiteList": "x"}}}},
    }
    assert CONTRACT.violations(values) == []
    assert CONTRACT.accepts("daemonsets.labels.team")
    assert CONTRACT.accepts("operator.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")


@settings(max_examples=examples(100))
@given(st.dictionaries(st.text(min_size=1), st.text(), max_size=5))
def test_any_string_labels_are_accepted(labels):
    assert CONTRACT.violations({"daemonsets": {"labels": labels}}) == []


DRIVER_KEYS = {p.split(".")[1] for p in CONTRACT.paths() if p.startswith("driver.")}


@settings(max_examples=examples(100))
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzXYZ", min_size=3, max_size=12))
def test_any_key_the_driver_block_lacks_is_refused_at_its_path(key):
    assume(key not in DRIVER_KEYS)
    (violation,) = CONTRACT.violations({"driver": {key: True}})
    assert violation.path == f"driver.{key}"
    assert "is not a key of gpu-operator v26.7.0" in violation.message


# --- every bad path, sorted ----------------------------------------------------------------------


def test_every_bad_path_is_reported_in_a_deterministic_order():
    bad = {
        "zzz": 1,
        "validator": {"driver": {"env": {"name": "X"}}},
        "daemonsets": {"nodeSelector": {}, "tolerations": [{"key": "a", "effects": "NoSchedule"}]},
        "driver": {"upgradepolicy": {}, "env": [{"name": f"V{i}", "value": i} for i in range(11)]},
    }
    found = CONTRACT.violations(bad)
    assert paths_of(found) == [
        "daemonsets.nodeSelector",
        "daemonsets.tolerations[0].effects",
        *[f"driver.env[{i}].value" for i in range(11)],  # natural order: [2] before [10]
        "driver.upgradepolicy",
        "validator.driver.env",
        "zzz",
    ]
    reordered = dict(reversed(list(bad.items())))
    assert CONTRACT.violations(reordered) == found


# --- spot checks against the chart ---------------------------------------------------------------

# From chart gpu-operator v26.7.0 values.yaml.
REAL_KEYS = [
    "driver.upgradePolicy.drain.timeoutSeconds",
    "driver.upgradePolicy.gpuPodDeletion.deleteEmptyDir",
    "driver.nvidiaDriverCRD.deployDefaultCR",
    "driver.kernelModuleType",
    "driver.startupProbe.failureThreshold",
    "driver.manager.version",
    "driver.licensingConfig.nlsEnabled",
    "toolkit.installDir",
    "devicePlugin.config.default",
    "devicePlugin.mps.root",
    "dcgmExporter.serviceMonitor.additionalLabels",
    "dcgmExporter.service.internalTrafficPolicy",
    "migManager.config.default",
    "migManager.gpuClientsConfig.name",
    "daemonsets.rollingUpdate.maxUnavailable",
    "operator.logging.timeEncoding",
    "sandboxWorkloads.mode",
    "cdi.nriPluginEnabled",
    "ccManager.defaultMode",
    "draDriver.computeDomains.enabled",
    "hostPaths.driverInstallDir",
    "node-feature-discovery.gc.serviceAccount.create",
    "node-feature-discovery.worker.config.sources.pci.deviceClassWhitelist",
    "node-feature-discovery.master.config.extraLabelNs",
    # Read by the templates (or documented in comments) but not set in values.yaml:
    "validator.driver.env",
    "validator.toolkit.env[0].name",
    "validator.cuda.env",
    "validator.version",
    "hostPaths.kubeletRootDir",
    "dcgmExporter.config.name",
    # From the node-feature-discovery 0.19.0 subchart values:
    "node-feature-discovery.worker.tolerations",
    "node-feature-discovery.worker.nodeSelector",
    "node-feature-discovery.topologyUpdater.enable",
    "node-feature-discovery.master.enableTaints",
    "node-feature-discovery.gc.interval",
    "node-feature-discovery.prometheus.enable",
]


@pytest.mark.parametrize("path", REAL_KEYS)
def test_real_chart_keys_are_accepted(path):
    assert CONTRACT.accepts(path)


# Published in blog posts / old charts; the research notes find them absent or ignored in v26.7.0.
BLOG_POST_KEYS = [
    ("daemonsets.nodeSelector", {"daemonsets": {"nodeSelector": {"gpu": "true"}}}),
    ("driver.useOpenKernelModules", {"driver": {"useOpenKernelModules": True}}),
    ("driver.nvidiaDriverCRD.nodeSelector", {"driver": {"nvidiaDriverCRD": {"nodeSelector": {"a": "b"}}}}),
    ("psp", {"psp": {"enabled": False}}),
    ("node-feature-discovery.enableNodeFeatureApi", {"node-feature-discovery": {"enableNodeFeatureApi": True}}),
]


@pytest.mark.parametrize(("path", "values"), BLOG_POST_KEYS)
def test_blog_post_keys_are_refused(path, values):
    assert not CONTRACT.accepts(path)
    assert paths_of(CONTRACT.violations(values)) == [path]


def test_ignored_keys_say_why():
    (violation,) = CONTRACT.violations({"driver": {"nvidiaDriverCRD": {"nodeSelector": {"pool": "v100"}}}})
    assert "is ignored by gpu-operator v26.7.0" in violation.message
    assert "NVIDIADriver" in violation.message


def test_sandbox_device_plugin_takes_both_booleans():
    """false disables the plugin (tests/gpu_operator/test_rendered_chart.py renders it with the real chart)."""
    assert CONTRACT.violations({"sandboxDevicePlugin": {"enabled": False}}) == []
    assert CONTRACT.violations({"sandboxDevicePlugin": {"enabled": True}}) == []
    assert paths_of(CONTRACT.violations({"sandboxDevicePlugin": {"enabled": "no"}})) == ["sandboxDevicePlugin.enabled"]


def test_mig_config_data_must_hold_config_yaml_and_create_needs_data():
    wrong_key = {"migManager": {"config": {"name": "c", "data": {"mig.yaml": MIG_CONFIG}}}}
    (violation,) = CONTRACT.violations(wrong_key)
    assert "must contain the key `config.yaml`" in violation.message
    empty = {"migManager": {"config": {"create": True, "name": "c", "data": {}}}}
    (violation,) = CONTRACT.violations(empty)
    assert "creates no ConfigMap" in violation.message


# --- API details -----------------------------------------------------------------------------------


def test_accepts_understands_list_and_map_markers():
    assert CONTRACT.accepts("validator.driver.env[0].name")
    assert CONTRACT.accepts("validator.driver.env[].value")
    assert CONTRACT.accepts('migManager.config.data["config.yaml"]')
    assert not CONTRACT.accepts("validator.driver.env[0].nme")
    assert not CONTRACT.accepts("validator.driver.env.name")  # a list needs an index
    assert not CONTRACT.accepts("driver.version.major")  # nothing below a scalar
    assert not CONTRACT.accepts("")


def test_every_listed_path_is_accepted_and_markers_are_readable():
    paths = CONTRACT.paths()
    assert "daemonsets.labels.*" in paths
    assert "validator.driver.env[].name" in paths
    assert "driver.nvidiaDriverCRD.nodeSelector" not in paths
    assert all(CONTRACT.accepts(p) for p in paths)


def test_unknown_chart_version_lists_the_supported_ones():
    with pytest.raises(ValueError, match=r"supported: v26\.7\.0"):
        contract_for("v25.10.1")
    with pytest.raises(ValueError, match=r"did you mean 'v26\.7\.0'"):
        contract_for("26.7.0")


def test_contracts_and_chart_facts_cover_the_same_versions():
    assert tuple(CONTRACTS) == SUPPORTED_CHART_VERSIONS
    assert DEFAULT_CHART_VERSION in CONTRACTS
    top_level = {p for p in CONTRACT.paths() if "." not in p and "[" not in p}
    assert set(release().operand_blocks) <= top_level
    for key in release().images:
        assert CONTRACT.accepts(f"{key}.version") or key in {"operator", "validator", "nodeStatusExporter"}


# --- chart facts -----------------------------------------------------------------------------------


def test_chart_facts():
    assert (CHART_NAME, CHART_REPO) == ("gpu-operator", "https://helm.ngc.nvidia.com/nvidia")
    assert DEFAULT_CHART_VERSION == "v26.7.0"
    assert DEFAULT_DRIVER_VERSION == "595.91.07"  # values.yaml driver.version
    assert release().images["migManager"].reference == "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"
    assert release().nfd_subchart_version == "0.19.0"
    assert GPU_RESOURCE == "nvidia.com/gpu"
    assert mig_resource_name("1g.10gb") == "nvidia.com/mig-1g.10gb"
    with pytest.raises(ValueError):
        mig_resource_name("nvidia.com/mig-1g.10gb")
    with pytest.raises(ValueError, match=r"supported: v26\.7\.0"):
        release("v1.0.0")


def test_added_tolerations_keep_the_chart_defaults():
    # Helm replaces lists: setting worker.tolerations without the defaults drops the control plane.
    worker = nfd_worker_tolerations([INFRA_TAINT, GPU_TOLERATION.to_values()])
    assert worker == [CONTROL_PLANE_TOLERATION.to_values(), GPU_TOLERATION.to_values(), INFRA_TAINT]
    assert daemonset_tolerations() == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert CONTROL_PLANE_TOLERATION.to_values()["value"] == ""
