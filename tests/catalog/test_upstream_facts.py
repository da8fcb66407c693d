"""The catalog's facts about other systems hold against their pinned source, and each check can fail.

Every fact of ``components.catalog.upstream_facts`` is checked against the real trees ``make upstream`` put under
``.upstream/``. The checks are shown to fail where they must: a driver manifest of the other mode, and copies of the
upstream files edited as an older or newer tag would have them (a key renamed, a label added to or dropped from a
paused set, a state added), each failure naming the file and the symbol to read.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.catalog import gpu_operator_upgrade as upgrade
from components.catalog.upstream import GPU_OPERATOR_SOURCE
from components.catalog.upstream_facts import (
    DOCS_PATH,
    FACTS,
    CatalogValue,
    Fact,
    Source,
    check_all,
    fact,
    main,
    render_driver_template,
    render_markdown,
)
from components.gpu_operator.pool_config import UpgradePolicy
from tests.helpers import ROOT


def _text(source: Source, root: Path = ROOT) -> str:
    return source.file(root).read_text(encoding="utf-8")


def _texts(checked: Fact, **replaced: str) -> list[str]:
    """The texts of a fact's sources from ``.upstream/``, with some (by path) replaced."""
    return [replaced.get(source.path, _text(source)) for source in checked.sources]


def _source(checked: Fact, path_end: str) -> Source:
    (found,) = [source for source in checked.sources if source.path.endswith(path_end)]
    return found


# -- every fact holds at the pins --------------------------------------------------------------------------
@pytest.mark.parametrize("checked", FACTS, ids=lambda f: f.name)
def test_fact_holds(checked: Fact) -> None:
    failure = checked.verify(ROOT)
    assert failure is None, str(failure)


@pytest.mark.parametrize("checked", FACTS, ids=lambda f: f.name)
def test_no_check_passes_on_empty_files(checked: Fact) -> None:
    """No check holds by itself: each needs its symbol in the text it reads."""
    failure = checked.verify_texts([""] * len(checked.sources))
    assert failure is not None
    assert all(source.path in failure.message for source in checked.sources)


def test_the_registry_covers_what_the_node_agent_relies_on() -> None:
    assert len(FACTS) >= 40
    assert len({f.name for f in FACTS}) == len(FACTS), "fact names are unique (they are the test ids)"
    held = {value.symbol for f in FACTS for value in f.catalog}
    for name in (
        "DRIVER_COMPONENT_LABEL",
        "DRIVER_COMPONENT",
        "CLUSTER_POLICY_DRIVER_APP",
        "NVIDIADRIVER_APP_FORMAT",
        "DRIVER_CONTAINER",
        "DRIVER_OWNER_LABEL",
        "CONTROLLER_REVISION_HASH_LABEL",
        "UPGRADE_DRIVER_NAME",
        "UPGRADE_STATE_LABEL",
        "UPGRADE_SKIP_LABEL",
        "UPGRADE_INITIAL_STATE_ANNOTATION",
        "UpgradeState",
        "OPERATOR_HOLDS_STATES",
        "GPU_POD_RESOURCE_PREFIXES",
        "GPU_DRA_DRIVER",
        "MIG_MANAGER_PAUSED_LABELS",
        "PAUSED_FOR_MIG",
        "DRIVER_MANAGER_PAUSED_LABELS",
        "PAUSED_FOR_DRIVER_UPGRADE",
    ):
        assert f"gpu_operator_upgrade.{name}" in held, name


def test_every_catalog_value_is_the_modules_own() -> None:
    """A fact's value is imported from the module that holds it, under the name the docs give it."""
    checked = 0
    for each in FACTS:
        for value in each.catalog:
            if not re.fullmatch(r"[\w.]+\.[A-Za-z_]\w*", value.symbol):
                continue  # a composite (several constants of one module, named together)
            module, _, attribute = value.symbol.rpartition(".")
            assert getattr(importlib.import_module(f"components.catalog.{module}"), attribute) is value.value
            checked += 1
    assert checked >= 40


def test_the_module_imports_the_standard_library_only_and_reads_nothing() -> None:
    """The catalog is pure: no pulumi, pydantic or yaml at import, and no file read until a check runs."""
    code = (
        "import builtins, pathlib, sys\n"
        "def refuse(*args, **kwargs):\n"
        "    raise AssertionError('I/O at import time')\n"
        "builtins.open = pathlib.Path.read_text = pathlib.Path.read_bytes = pathlib.Path.open = refuse\n"
        "import components.catalog.upstream_facts\n"
        "print(sorted(m for m in ('yaml', 'pulumi', 'pydantic', 'pulumi_kubernetes') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- (a) the two driver modes are not interchangeable --------------------------------------------------------
CP_MANIFEST = Source(GPU_OPERATOR_SOURCE, "assets/state-driver/0500_daemonset.yaml", "")
NVD_MANIFEST = Source(GPU_OPERATOR_SOURCE, "manifests/state-driver/0500_daemonset.yaml", "")


def test_the_cluster_policy_manifest_fails_the_nvidiadriver_app_fact() -> None:
    failure = fact("driver-app/nvidiadriver").verify_texts([_text(CP_MANIFEST)])
    assert failure is not None
    assert "manifests/state-driver/0500_daemonset.yaml" in failure.message, "names the file it should be read in"
    assert "metadata.labels['app'] is 'nvidia-driver-daemonset'" in failure.message
    assert "{{ .Driver.AppName }}" in failure.message


def test_the_nvidiadriver_manifest_fails_the_cluster_policy_app_fact() -> None:
    failure = fact("driver-app/cluster-policy").verify_texts([_text(NVD_MANIFEST)])
    assert failure is not None
    assert "assets/state-driver/0500_daemonset.yaml" in failure.message
    assert "'{{ .Driver.AppName }}', not 'nvidia-driver-daemonset'" in failure.message
    assert "gpu_operator_upgrade.CLUSTER_POLICY_DRIVER_APP" in failure.message


def test_the_component_label_is_the_one_selector_both_modes_share() -> None:
    """Why the node agent selects driver pods by the component label: it holds in either manifest."""
    for name in ("driver-component/cluster-policy", "driver-component/nvidiadriver"):
        for manifest in (CP_MANIFEST, NVD_MANIFEST):
            assert fact(name).verify_texts([_text(manifest)]) is None, (name, manifest.path)


def test_the_nvidiadriver_template_is_rendered_per_driver_type() -> None:
    """The template's conditions are evaluated: a vgpu-host-manager DaemonSet has another component and selector."""
    (daemon_set,) = yaml.safe_load_all(render_driver_template(_text(NVD_MANIFEST), "vgpu-host-manager"))
    template = daemon_set["spec"]["template"]
    assert template["metadata"]["labels"][upgrade.DRIVER_COMPONENT_LABEL] == "nvidia-vgpu-host-manager"
    assert template["spec"]["nodeSelector"] == {"nvidia.com/gpu.deploy.vgpu-manager": "true"}
    (gpu,) = yaml.safe_load_all(render_driver_template(_text(NVD_MANIFEST)))
    assert gpu["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.deploy.driver": "true"}


# -- (b) files as an older or newer tag would have them ------------------------------------------------------
def _replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, f"the pinned file no longer has {old!r}: update this test"
        return text.replace(old, new, 1)

    return edit


def _drop_force_new(field: str) -> Callable[[str], str]:
    """The node-group schema with ``ForceNew: true`` taken off one top-level field."""

    def edit(text: str) -> str:
        pattern = re.compile(rf'("{field}": \{{[^}}]*?)ForceNew:\s*true,\n', re.S)
        assert pattern.search(text), field
        return pattern.sub(r"\1", text, count=1)

    return edit


def _immutable_dropped(text: str) -> str:
    crd = yaml.safe_load(text)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    del spec["usePrecompiled"]["x-kubernetes-validations"]
    return str(yaml.safe_dump(crd))


_CONSTS = "pkg/upgrade/consts.go"
_DRIVER_MANAGER = "cmd/driver-manager/main.go"
_DM_MIG_LINE = "operandLabels[nvidiaMIGManagerDeployLabel] = dm.maybeSetPaused(dm.components.migManagerDeployed)\n"
_DM_NEW_LABEL = (
    "nvidiaDRADCGMExporterDeployLabel:     dm.maybeSetPaused(dm.components.draDCGMExporterDeployed),\n",
    "nvidiaDRADCGMExporterDeployLabel:     dm.maybeSetPaused(dm.components.draDCGMExporterDeployed),\n"
    "\t\tnvidiaNodeStatusExporterDeployLabel:  dm.maybeSetPaused(dm.components.nodeStatusExporterDeployed),\n",
)
_DM_NEW_CONST = (
    '\tnvidiaDRADCGMDeployLabel             = nvidiaDomainPrefix + "/" + "gpu.deploy.dcgm-dra"\n',
    '\tnvidiaDRADCGMDeployLabel             = nvidiaDomainPrefix + "/" + "gpu.deploy.dcgm-dra"\n'
    '\tnvidiaNodeStatusExporterDeployLabel  = nvidiaDomainPrefix + "/" + "gpu.deploy.node-status-exporter"\n',
)


def _both(*edits: Callable[[str], str]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        for each in edits:
            text = each(text)
        return text

    return edit


#: (fact, the end of the edited file's path, the edit, the symbol and a fragment the failure must name)
OTHER_TAGS: list[tuple[str, str, Callable[[str], str], str, str]] = [
    (
        "upgrade-skip-label",
        _CONSTS,
        _replace('"nvidia.com/%s-driver-upgrade.skip"', '"nvidia.com/%s-driver-upgrade-skip"'),
        "UpgradeSkipNodeLabelKeyFmt",
        "'nvidia.com/gpu-driver-upgrade-skip'",
    ),
    (
        "upgrade-state-label",
        _CONSTS,
        _replace("\tUpgradeStateLabelKeyFmt = ", "\tUpgradeStateLabelKeyFormat = "),
        "UpgradeStateLabelKeyFmt",
        "no string constant UpgradeStateLabelKeyFmt",
    ),
    (
        "upgrade-states",
        _CONSTS,
        _replace(
            '\tUpgradeStateDrainRequired = "drain-required"\n',
            '\tUpgradeStateDrainRequired = "drain-required"\n\tUpgradeStateDrainWaitRequired = "drain-wait-required"\n',
        ),
        "UpgradeState*",
        "UpgradeStateDrainWaitRequired = 'drain-wait-required', UpgradeState.DRAIN_WAIT_REQUIRED = None",
    ),
    (
        "operator-holds-states",
        _CONSTS,
        _replace(
            '\tUpgradeStateDrainRequired = "drain-required"\n',
            '\tUpgradeStateDrainRequired = "drain-required"\n\tUpgradeStateDrainWaitRequired = "drain-wait-required"\n',
        ),
        "UpgradeState*",
        "['drain-wait-required'] that gpu_operator_upgrade.OPERATOR_HOLDS_STATES lacks",
    ),
    (
        "upgrade-states",
        _CONSTS,
        _replace('UpgradeStateFailed = "upgrade-failed"', 'UpgradeStateFailed = "failed"'),
        "UpgradeState*",
        "UpgradeStateFailed = 'failed', UpgradeState.FAILED = 'upgrade-failed'",
    ),
    (
        "upgrade-driver-name",
        "cmd/gpu-operator/main.go",
        _replace('upgrade.SetDriverName("gpu")', 'upgrade.SetDriverName("nvidia")'),
        "upgrade.SetDriverName",
        "the driver name is 'nvidia'",
    ),
    (
        "driver-component/cluster-policy",
        "assets/state-driver/0500_daemonset.yaml",
        _replace("        app.kubernetes.io/component: nvidia-driver\n", ""),
        "spec.template.metadata.labels",
        "spec.template.metadata.labels['app.kubernetes.io/component'] is None",
    ),
    (
        "driver-container/nvidiadriver",
        "manifests/state-driver/0500_daemonset.yaml",
        _replace("        name: nvidia-driver-ctr\n", "        name: nvidia-driver\n"),
        "spec.template.spec.containers[].name",
        "none is 'nvidia-driver-ctr'",
    ),
    (
        "driver-app/nvidiadriver",
        "manifests/state-driver/0500_daemonset.yaml",
        _replace("    app: {{ .Driver.AppName }}\n", "    app: {{ .Driver.Name }}\n"),
        "metadata.labels",
        "metadata.labels['app'] is '{{ .Driver.Name }}'",
    ),
    (
        "driver-app/nvidiadriver-name",
        "internal/state/driver.go",
        _replace('appNamePrefixFormat = "nvidia-%s-driver-%s"', 'appNamePrefixFormat = "nvidia-%s-%s"'),
        "getDriverAppName",
        "'nvidia-{driver_type}-{os}-{hash}'",
    ),
    (
        "driver-pod-current-by-revision-hash",
        "pkg/upgrade/common_manager.go",
        _replace(
            "isPodSynced = podRevisionHash == daemonsetRevisionHash",
            "isPodSynced = podGeneration == daemonsetGeneration",
        ),
        "podInSyncWithDS",
        "no longer compares the pod's revision hash",
    ),
    (
        "driver-manager-paused-labels",
        _DRIVER_MANAGER,
        _both(_replace(*_DM_NEW_LABEL), _replace(*_DM_NEW_CONST)),
        "evictAllGPUOperatorComponents + evictKubeletPlugin",
        "['nvidia.com/gpu.deploy.node-status-exporter'] that gpu_operator_upgrade.DRIVER_MANAGER_PAUSED_LABELS lacks",
    ),
    (
        "driver-manager-paused-labels",
        _DRIVER_MANAGER,
        _replace(_DM_MIG_LINE, ""),
        "evictAllGPUOperatorComponents",
        "has ['nvidia.com/gpu.deploy.mig-manager'] that the labels",
    ),
    (
        "driver-manager-paused-labels",
        _DRIVER_MANAGER,
        _replace(
            "\t\tnvidiaNVSMDeployLabel:                dm.maybeSetPaused(dm.components.nvsmDeployed),\n",
            "\t\t// nvidiaNVSMDeployLabel:             dm.maybeSetPaused(dm.components.nvsmDeployed),\n",
        ),
        "evictAllGPUOperatorComponents",
        "'nvidia.com/gpu.deploy.nvsm'",
    ),
    (
        "paused-for-driver-upgrade",
        _DRIVER_MANAGER,
        _replace('pausedStr             = "paused-for-driver-upgrade"', 'pausedStr             = "paused"'),
        "pausedStr",
        "pausedStr is 'paused'",
    ),
    (
        "mig-manager-paused-labels",
        "pkg/mig/reconfigure/reconfigure.go",
        _replace(
            "\tif len(r.gpuClientDeployed) > 0 {\n\t\tlabels[gpuClientDeployLabel] = r.maybeSetPaused(r.gpuClientDeployed)\n\t}\n",
            "",
        ),
        "shutdownKubernetesGPUClients",
        "['nvidia.com/gpu.deploy.client']",
    ),
    (
        "mig-state-values",
        "pkg/mig/reconfigure/reconfigure.go",
        _replace('r.setNodeLabel(migConfigStateLabel, "rebooting")', 'r.setNodeLabel(migConfigStateLabel, "reboot")'),
        "setState",
        "['reboot'] that node_agent.MIG_STATE_*",
    ),
    (
        "mig-named-layouts",
        "assets/state-mig-manager/0400_configmap.yaml",
        _replace('            "1g.5gb": 7\n', '            "1g.5gb": 6\n'),
        "mig-configs",
        "all-1g.5gb: the ConfigMap has",
    ),
    (
        "nvidiadriver-immutable-fields",
        "crds/nvidia.com_nvidiadrivers.yaml",
        _immutable_dropped,
        "x-kubernetes-validations",
        "['usePrecompiled'] that the spec fields",
    ),
    (
        "yandex-node-group-force-new",
        "yandex/resource_yandex_kubernetes_node_group.go",
        _drop_force_new("node_taints"),
        "ForceNew",
        "['node_taints'] that the fields with ForceNew: true lack",
    ),
    (
        "yandex-taint-form",
        "yandex/resource_yandex_kubernetes_node_group.go",
        _replace("if len(partsKV) != 2 {", "if len(partsKV) > 2 {"),
        "parseTaint",
        "no longer splits",
    ),
    (
        "pulumi-patch-force-annotation",
        "provider/pkg/metadata/annotations.go",
        _replace('AnnotationPrefix + "patchForce"', 'AnnotationPrefix + "patch-force"'),
        "AnnotationPatchForce",
        "'pulumi.com/patch-force'",
    ),
    (
        "pulumi-kind-force-new",
        "provider/pkg/provider/diff.go",
        _replace('\t\t".spec.serviceName",\n', ""),
        "forceNew",
        "apps/StatefulSet v1: forceNew has [] more, ['spec.serviceName'] fewer",
    ),
]


@pytest.mark.parametrize(
    ("name", "path_end", "edit", "symbol", "fragment"),
    OTHER_TAGS,
    ids=[f"{case[0]}:{i}" for i, case in enumerate(OTHER_TAGS)],
)
def test_a_file_of_another_tag_breaks_the_fact_by_name(
    name: str, path_end: str, edit: Callable[[str], str], symbol: str, fragment: str
) -> None:
    checked = fact(name)
    source = _source(checked, path_end)
    failure = checked.verify_texts(_texts(checked, **{source.path: edit(_text(source))}))
    assert failure is not None, f"{name} still holds"
    assert failure.fact == name
    assert source.path in failure.message and symbol in failure.message, failure.message
    assert fragment in failure.message, failure.message


# -- check_all: what a pin bump broke, on a copy of the files the facts read ---------------------------------
def _copy_sources(root: Path) -> None:
    for source in {source for each in FACTS for source in each.sources}:
        target = source.file(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.file(ROOT), target)


def _edit(root: Path, source_path_end: str, edit: Callable[[str], str]) -> None:
    (path,) = {s.file(root) for f in FACTS for s in f.sources if s.path.endswith(source_path_end)}
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")


def test_check_all_lists_every_fact_a_tampered_tree_breaks(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    assert check_all(tmp_path) == [], "the copied files are the pinned ones"
    _edit(tmp_path, _CONSTS, _replace('"nvidia.com/%s-driver-upgrade.skip"', '"nvidia.com/%s-driver-upgrade-skip"'))
    _edit(tmp_path, _DRIVER_MANAGER, _both(_replace(*_DM_NEW_LABEL), _replace(*_DM_NEW_CONST)))
    (tmp_path / ".upstream" / "k8s-device-plugin-source-v0.20.0" / "internal" / "lm" / "nvml.go").unlink()
    failures = {failure.fact: failure.message for failure in check_all(tmp_path)}
    assert set(failures) == {"upgrade-skip-label", "driver-manager-paused-labels", "gfd-driver-version-label"}
    assert "consts.go UpgradeSkipNodeLabelKeyFmt" in failures["upgrade-skip-label"]
    assert "gpu.deploy.node-status-exporter" in failures["driver-manager-paused-labels"]
    assert "internal/lm/nvml.go is missing" in failures["gfd-driver-version-label"]


def test_the_command_lists_the_broken_facts_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _copy_sources(tmp_path)
    _edit(tmp_path, _CONSTS, _replace('UpgradeStateFailed = "upgrade-failed"', 'UpgradeStateFailed = "failed"'))
    assert main(["--root", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    broken = ["upgrade-states", "operator-holds-states"]
    assert [line.split(":", 1)[0] for line in out.splitlines()] == broken
    assert f"{len(FACTS) - len(broken)} of {len(FACTS)} facts hold" in err


# -- the docs table is the registry --------------------------------------------------------------------------
def test_the_docs_table_is_rendered_from_the_registry() -> None:
    committed = (ROOT / DOCS_PATH).read_text(encoding="utf-8")
    assert committed == render_markdown(), (
        f"{DOCS_PATH} is stale: python -m components.catalog.upstream_facts --markdown > {DOCS_PATH}"
    )
    for each in FACTS:
        assert f"`test_fact_holds[{each.name}]`" in committed


# -- the upgrade-policy defaults (pool_config holds them as model defaults, above the catalog) ----------------
def _crd_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, prop in schema.get("properties", {}).items():
        if "default" in prop:
            found[key] = prop["default"]
        elif nested := _crd_defaults(prop):
            found[key] = nested
    return found


def _upgrade_policy_defaults(texts: Sequence[str]) -> str | None:
    values, crd = (yaml.safe_load(text) for text in texts)
    chart = values["driver"]["upgradePolicy"]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    resource = _crd_defaults(schema["upgradePolicy"])
    problems = []
    if chart != UpgradePolicy().spelled(crd=False):
        problems.append(
            f"values.yaml driver.upgradePolicy is {chart}, UpgradePolicy() {UpgradePolicy().spelled(crd=False)}"
        )
    if resource != UpgradePolicy().spelled(crd=True):
        problems.append(f"the CRD's defaults are {resource}, UpgradePolicy() {UpgradePolicy().spelled(crd=True)}")
    return "; ".join(problems) or None


UPGRADE_POLICY_DEFAULTS = Fact(
    "upgrade-policy-defaults",
    "the pool config's upgrade policy defaults are the chart's and the NVIDIADriver CRD's",
    (CatalogValue("gpu_operator.pool_config.UpgradePolicy()", UpgradePolicy()),),
    (
        Source(GPU_OPERATOR_SOURCE, "deployments/gpu-operator/values.yaml", "driver.upgradePolicy"),
        Source(GPU_OPERATOR_SOURCE, "deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml", "upgradePolicy"),
    ),
    _upgrade_policy_defaults,
)


def test_the_upgrade_policy_defaults_are_the_charts_and_the_crds() -> None:
    failure = UPGRADE_POLICY_DEFAULTS.verify(ROOT)
    assert failure is None, str(failure)


def test_another_chart_default_breaks_the_upgrade_policy_defaults() -> None:
    values = UPGRADE_POLICY_DEFAULTS.sources[0]
    edited = _replace("    maxParallelUpgrades: 1\n", "    maxParallelUpgrades: 0\n")(_text(values))
    failure = UPGRADE_POLICY_DEFAULTS.verify_texts([edited, _text(UPGRADE_POLICY_DEFAULTS.sources[1])])
    assert failure is not None
    assert "values.yaml driver.upgradePolicy" in failure.message and "'maxParallelUpgrades': 0" in failure.message
