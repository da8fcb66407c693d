"""The values contract of GPU Operator chart v26.7.0: its key tree, hints and value rules.

Why a module of its own: this is data about one published chart, checked against that chart's
files; the engine that applies it lives in ``engine``. A new chart version gets a new module
built the same way, so this one never changes when a later chart moves a key.

Sources (see also ``gpu_operator_chart``):
- chart values.yaml at tag v26.7.0: every key it sets, plus keys it documents in comments
  (``validator.version``, ``hostPaths.kubeletRootDir``, ``dcgmExporter.config``,
  ``dcgmExporter.hpcJobMapping``, ``dcgmExporter.podLabelAllowlistRegex``,
  ``operator.metrics.serviceMonitor``, ``draDriver.*.kubeletPlugin``/``controller`` fields);
- templates/clusterpolicy.yaml (via the project's research notes): ``validator.{driver,toolkit,
  cuda,vfioPCI,vgpuManager,vgpuDevices}.env`` are rendered though absent from values.yaml;
  ``driver.nvidiaDriverCRD.nodeSelector`` is no longer rendered (commit 53770fc2b);
  ``sandboxDevicePlugin.enabled`` is only rendered when truthy (false still disables the plugin: the
  operator reads a missing ``enabled`` as false);
- templates/_helpers.tpl (upstream revision 0826073, not checked at the tag; not in the research
  notes): ``nameOverride``, ``fullnameOverride``, ``operator.labels``;
- ClusterPolicy CRD types (api/nvidia/v1/clusterpolicy_types.go): ``EnvVar`` is ``{name, value}``
  with string value, ``imagePullSecrets``/``args`` are ``[]string``, operand ``resources`` are
  ``{limits, requests}``, enums for kernelModuleType, mig.strategy, updateStrategy,
  defaultWorkload; ``psp`` is deprecated ("Pod Security Policies are no longer supported");
- node-feature-discovery 0.19.0 subchart values.yaml and values.schema.json (the full key tree
  of master, worker, topologyUpdater, gc, prometheus; free maps where the schema refers to a
  Kubernetes type such as Affinity or SecurityContext).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from components.catalog.gpu_operator_chart import MIG_STRATEGIES, RELEASES
from components.catalog.gpu_operator_contract.engine import (
    BOOL,
    INT,
    INT_OR_STR,
    K8S_ENV,
    K8S_PULL_SECRETS,
    K8S_RESOURCES,
    OBJECT,
    OBJECTS,
    PULL_POLICY,
    STR,
    STRING_MAP,
    STRINGS,
    TOLERATIONS,
    AnyValue,
    Contract,
    FreeMap,
    Ignored,
    Keys,
    ListOf,
    Node,
    Scalar,
    Violation,
    join_path,
    keys,
)

CHART_VERSION = "v26.7.0"

# --------------------------------------------------------------------------------------------
# ClusterPolicy CRD shapes (the CRD ships with the chart, so they can change with it)

# ClusterPolicy `EnvVar` is {name, value} with a string value; no valueFrom.
ENV = ListOf(
    Keys({"name": STR, "value": STR}, required=frozenset({"name"})),
    what='a list of {name, value} objects, e.g. [{"name": "X", "value": "1"}]',
)
# ClusterPolicy imagePullSecrets are []string (secret names), not [{name: ...}].
PULL_SECRET_NAMES = ListOf(STR, what="a list of secret names (strings)")
# ClusterPolicy ResourceRequirements has only limits and requests; core/v1 adds claims.
RESOURCES = Keys({"limits": FreeMap(), "requests": FreeMap()})


def _image(*, secrets: bool = True) -> dict[str, Node]:
    """The image fields of an operand block (repository, image, version, pull policy/secrets)."""
    out: dict[str, Node] = {"repository": STR, "image": STR, "version": STR, "imagePullPolicy": PULL_POLICY}
    if secrets:
        out["imagePullSecrets"] = PULL_SECRET_NAMES
    return out


def _driver_manager() -> Keys:
    return keys(**_image(secrets=False), env=ENV)


def _named(key: str = "name") -> Keys:
    return Keys(MappingProxyType({key: STR}))


# --------------------------------------------------------------------------------------------
# node-feature-discovery 0.19.0 subchart (its values.yaml / values.schema.json, in file order).
# The schema refers to Kubernetes types for affinity, securityContext, podSecurityContext and
# resources: those stay free maps here (Kubernetes validates them at apply time).

_PROBE = keys(initialDelaySeconds=INT, timeoutSeconds=INT, periodSeconds=INT, failureThreshold=INT)
_READINESS_PROBE = keys(
    initialDelaySeconds=INT, timeoutSeconds=INT, periodSeconds=INT, successThreshold=INT, failureThreshold=INT
)
_SERVICE_ACCOUNT = keys(create=BOOL, annotations=STRING_MAP, name=STR)
_RBAC = keys(create=BOOL)
_NETWORK_POLICY = keys(enabled=BOOL, egress=OBJECTS, ingress=OBJECTS)  # note: `enabled`
_PDB = keys(  # note: `enable`; the rest is policy/v1 PodDisruptionBudgetSpec
    enable=BOOL,
    minAvailable=INT_OR_STR,
    maxUnavailable=INT_OR_STR,
    unhealthyPodEvictionPolicy=Scalar(("str",), choices=("IfHealthyBudget", "AlwaysAllow")),
    selector=OBJECT,
)


def _nfd_pod(**extra: Node) -> dict[str, Node]:
    """Keys every NFD component (master, worker, topologyUpdater, gc) shares."""
    return {
        "enable": BOOL,
        "extraArgs": STRINGS,
        "extraEnvs": K8S_ENV,
        "hostNetwork": BOOL,
        "hostUsers": BOOL,
        "dnsPolicy": STR,
        "serviceAccount": _SERVICE_ACCOUNT,
        "revisionHistoryLimit": INT,
        "rbac": _RBAC,
        "port": INT,
        "podSecurityContext": OBJECT,
        "initContainers": OBJECTS,
        "livenessProbe": _PROBE,
        "readinessProbe": _READINESS_PROBE,
        "resources": K8S_RESOURCES,
        "nodeSelector": STRING_MAP,
        "tolerations": TOLERATIONS,
        "annotations": STRING_MAP,
        "labels": STRING_MAP,
        "affinity": OBJECT,
        "networkPolicy": _NETWORK_POLICY,
        **extra,
    }


_NFD_0_19_0 = keys(
    image=keys(repository=STR, pullPolicy=PULL_POLICY, tag=STR),
    imagePullSecrets=K8S_PULL_SECRETS,
    nameOverride=STR,
    fullnameOverride=STR,
    namespaceOverride=STR,
    featureGates=FreeMap(what="a mapping of feature gate names"),
    checksumValuesOnly=BOOL,
    priorityClassName=STR,
    postDeleteCleanup=BOOL,
    **{"global": keys(imagePullSecrets=K8S_PULL_SECRETS)},
    master=keys(
        **_nfd_pod(
            config=OBJECT,  # nfd-master configuration file
            instance=STR,
            resyncPeriod=STR,
            denyLabelNs=STRINGS,
            extraLabelNs=STRINGS,
            enableTaints=BOOL,
            nfdApiParallelism=INT,
            deploymentAnnotations=STRING_MAP,
            replicaCount=INT,
            securityContext=OBJECT,
            podDisruptionBudget=_PDB,
            startupProbe=_PROBE,
        )
    ),
    worker=keys(
        **_nfd_pod(
            ownerRefs=STRINGS,
            config=OBJECT,  # nfd-worker configuration file (sources.pci.deviceClassWhitelist, ...)
            daemonsetAnnotations=STRING_MAP,
            securityContext=OBJECT,
            mountUsrSrc=BOOL,
            priorityClassName=STR,
            updateStrategy=keys(
                type=Scalar(("str",), choices=("RollingUpdate", "OnDelete")),
                rollingUpdate=keys(maxUnavailable=INT_OR_STR, maxSurge=INT_OR_STR),
            ),
        )
    ),
    topologyUpdater=keys(
        **_nfd_pod(
            config=OBJECT,  # nfd-topology-updater configuration file
            createCRDs=BOOL,
            kubeletConfigPath=STR,
            kubeletPodResourcesSockPath=STR,
            updateInterval=STR,
            watchNamespace=STR,
            kubeletStateDir=STR,
            securityContext=OBJECT,
            daemonsetAnnotations=STRING_MAP,
            podSetFingerprint=BOOL,
        )
    ),
    gc=keys(
        **_nfd_pod(
            replicaCount=INT,
            interval=STR,
            deploymentAnnotations=STRING_MAP,
            podDisruptionBudget=_PDB,
        )
    ),
    prometheus=keys(enable=BOOL, scrapeInterval=STR, labels=STRING_MAP),
)


# --------------------------------------------------------------------------------------------
# gpu-operator v26.7.0 (values.yaml order)

_USE_NFD_SCOPE = (
    "operands are placed by the operator's nvidia.com/gpu.deploy.<operand> node labels; restrict "
    "them with node-feature-discovery.worker.nodeSelector or the node label "
    "nvidia.com/gpu.deploy.operands=false"
)

_GPU_OPERATOR_V26_7_0 = keys(
    nameOverride=STR,  # templates/_helpers.tpl
    fullnameOverride=STR,  # templates/_helpers.tpl
    # Helm passes `global` to every subchart (the NFD subchart reads global.imagePullSecrets).
    **{"global": OBJECT},
    platform=keys(openshift=BOOL),
    nfd=keys(enabled=BOOL, nodefeaturerules=BOOL),
    psa=keys(enabled=BOOL),
    cdi=keys(enabled=BOOL, nriPluginEnabled=BOOL),
    sandboxWorkloads=keys(
        enabled=BOOL,
        defaultWorkload=Scalar(("str",), choices=("container", "vm-passthrough", "vm-vgpu")),
        mode=Scalar(("str",), choices=("kubevirt", "kata")),
    ),
    hostPaths=keys(rootFS=STR, driverInstallDir=STR, kubeletRootDir=STR),  # last: commented
    daemonsets=keys(
        labels=STRING_MAP,
        annotations=STRING_MAP,
        priorityClassName=STR,
        tolerations=TOLERATIONS,
        updateStrategy=Scalar(("str",), choices=("RollingUpdate", "OnDelete")),
        rollingUpdate=keys(maxUnavailable=INT_OR_STR),
    ),
    validator=keys(
        **_image(),
        env=ENV,
        args=STRINGS,
        resources=RESOURCES,
        hostNetwork=BOOL,
        plugin=keys(env=ENV),
        # Rendered by templates/clusterpolicy.yaml but absent from values.yaml:
        driver=keys(env=ENV),
        toolkit=keys(env=ENV),
        cuda=keys(env=ENV),
        vfioPCI=keys(env=ENV),
        vgpuManager=keys(env=ENV),
        vgpuDevices=keys(env=ENV),
    ),
    operator=keys(
        **_image(),
        env=K8S_ENV,
        priorityClassName=STR,
        runtimeClass=STR,
        nodeSelector=STRING_MAP,
        use_ocp_driver_toolkit=BOOL,
        cleanupCRD=BOOL,
        upgradeCRD=BOOL,
        tolerations=TOLERATIONS,
        annotations=STRING_MAP,
        labels=STRING_MAP,  # templates/_helpers.tpl
        affinity=OBJECT,
        logging=keys(
            timeEncoding=Scalar(("str",), choices=("epoch", "millis", "nano", "iso8601", "rfc3339", "rfc3339nano")),
            level=Scalar(("str", "int")),
            develMode=BOOL,
        ),
        resources=K8S_RESOURCES,
        metrics=keys(  # commented example in values.yaml
            serviceMonitor=keys(interval=STR, honorLabels=BOOL, additionalLabels=STRING_MAP, relabelings=OBJECTS)
        ),
    ),
    mig=keys(strategy=Scalar(("str",), choices=MIG_STRATEGIES)),
    driver=keys(
        enabled=BOOL,
        nvidiaDriverCRD=keys(
            enabled=BOOL,
            deployDefaultCR=BOOL,
            driverType=Scalar(("str",), choices=("gpu", "vgpu", "vgpu-host-manager")),
            nodeSelector=Ignored(
                "still in values.yaml but no longer rendered into the default NVIDIADriver "
                "(commit 53770fc2b: the default NVIDIADriver covers the whole cluster); create "
                "your own NVIDIADriver CRs with spec.nodeSelector and set deployDefaultCR: false"
            ),
        ),
        kernelModuleType=Scalar(("str",), choices=("auto", "open", "proprietary")),
        useOpenKernelModules=Ignored("deprecated and made a no-op (values.yaml note); use driver.kernelModuleType"),
        usePrecompiled=BOOL,
        **_image(),
        startupProbe=keys(initialDelaySeconds=INT, periodSeconds=INT, timeoutSeconds=INT, failureThreshold=INT),
        rdma=keys(enabled=BOOL, useHostMofed=BOOL),
        upgradePolicy=keys(
            autoUpgrade=BOOL,
            maxParallelUpgrades=INT,
            maxUnavailable=INT_OR_STR,
            waitForCompletion=keys(timeoutSeconds=INT, podSelector=STR),
            gpuPodDeletion=keys(force=BOOL, timeoutSeconds=INT, deleteEmptyDir=BOOL),
            drain=keys(enable=BOOL, force=BOOL, podSelector=STR, timeoutSeconds=INT, deleteEmptyDir=BOOL),
        ),
        manager=_driver_manager(),
        env=ENV,
        resources=RESOURCES,
        repoConfig=_named("configMapName"),
        certConfig=_named(),
        licensingConfig=keys(secretName=STR, nlsEnabled=BOOL),
        virtualTopology=_named("config"),
        kernelModuleConfig=_named(),
        secretEnv=STR,
        hostNetwork=BOOL,
    ),
    toolkit=keys(enabled=BOOL, **_image(), env=ENV, resources=RESOURCES, installDir=STR, hostNetwork=BOOL),
    devicePlugin=keys(
        enabled=BOOL,
        **_image(),
        args=STRINGS,
        env=ENV,
        resources=RESOURCES,
        # ConfigMap data is map[string]string: each entry is one config file as a string.
        config=keys(create=BOOL, name=STR, default=STR, data=STRING_MAP),
        mps=keys(root=STR),
        hostNetwork=BOOL,
    ),
    dcgm=keys(enabled=BOOL, **_image(secrets=False), args=STRINGS, env=ENV, resources=RESOURCES, hostNetwork=BOOL),
    dcgmExporter=keys(
        enabled=BOOL,
        annotations=STRING_MAP,
        **_image(secrets=False),
        env=ENV,
        resources=RESOURCES,
        hostPID=BOOL,
        hostNetwork=BOOL,
        hpcJobMapping=keys(enabled=BOOL, directory=STR),  # commented example in values.yaml
        enablePodLabels=BOOL,
        enablePodUID=BOOL,
        podLabelAllowlistRegex=STRINGS,  # commented example in values.yaml
        service=keys(internalTrafficPolicy=Scalar(("str",), choices=("Cluster", "Local"))),
        serviceMonitor=keys(
            enabled=BOOL,
            interval=STR,
            scrapeTimeout=STR,
            honorLabels=BOOL,
            additionalLabels=STRING_MAP,
            relabelings=OBJECTS,
        ),
        # Commented example in values.yaml; templates/dcgm_exporter_config.yaml renders it.
        # `data` is the CSV text of the metrics file (a string, not a mapping).
        config=keys(name=STR, create=BOOL, data=STR),
    ),
    gfd=keys(enabled=BOOL, **_image(), env=ENV, resources=RESOURCES, hostNetwork=BOOL),
    migManager=keys(
        enabled=BOOL,
        **_image(),
        env=ENV,
        resources=RESOURCES,
        config=keys(default=STR, create=BOOL, name=STR, data=STRING_MAP),
        gpuClientsConfig=_named(),
        hostNetwork=BOOL,
    ),
    nodeStatusExporter=keys(enabled=BOOL, **_image(), resources=RESOURCES, hostNetwork=BOOL),
    gds=keys(enabled=BOOL, **_image(), env=ENV, args=STRINGS),
    gdrcopy=keys(enabled=BOOL, **_image(), env=ENV, args=STRINGS),
    vgpuManager=keys(
        enabled=BOOL,
        **_image(),
        env=ENV,
        resources=RESOURCES,
        driverManager=_driver_manager(),
        kernelModuleConfig=_named(),
        hostNetwork=BOOL,
    ),
    vgpuDeviceManager=keys(enabled=BOOL, **_image(), env=ENV, config=keys(name=STR, default=STR), hostNetwork=BOOL),
    vfioManager=keys(
        enabled=BOOL,
        **_image(),
        env=ENV,
        resources=RESOURCES,
        driverManager=_driver_manager(),
        hostNetwork=BOOL,
    ),
    kataManager=keys(
        enabled=BOOL,
        config=OBJECT,  # k8s-kata-manager config (artifactsDir, runtimeClasses, ...)
        imagePullPolicy=PULL_POLICY,
        imagePullSecrets=PULL_SECRET_NAMES,
        env=ENV,
        resources=RESOURCES,
        hostNetwork=BOOL,
    ),
    sandboxDevicePlugin=keys(
        # false renders a ClusterPolicy block without `enabled` (the template writes it only when true),
        # which the operator reads as disabled (gpu_operator_chart.OPERAND_ENABLED_WHEN_ABSENT).
        enabled=BOOL,
        **_image(),
        args=STRINGS,
        env=ENV,
        resources=RESOURCES,
        hostNetwork=BOOL,
    ),
    kataSandboxDevicePlugin=keys(
        enabled=BOOL, **_image(), args=STRINGS, env=ENV, resources=RESOURCES, hostNetwork=BOOL
    ),
    ccManager=keys(enabled=BOOL, defaultMode=STR, **_image(), resources=RESOURCES, hostNetwork=BOOL),
    clusterPolicy=keys(deployCR=BOOL),
    gpuCluster=keys(deployCR=BOOL),
    draDriver=keys(
        **_image(),
        featureGates=FreeMap(values=BOOL, what="a mapping of feature gate -> bool"),
        gpus=keys(kubeletPlugin=keys(env=ENV, resources=K8S_RESOURCES, healthcheck=keys(enabled=BOOL, port=INT))),
        computeDomains=keys(
            enabled=BOOL,
            controller=keys(env=ENV, resources=K8S_RESOURCES),
            kubeletPlugin=keys(env=ENV, resources=K8S_RESOURCES, healthcheck=keys(enabled=BOOL, port=INT)),
        ),
    ),
    extraObjects=ListOf(AnyValue(), what="a list of Kubernetes manifests"),
    **{"node-feature-discovery": _NFD_0_19_0},
)


# --------------------------------------------------------------------------------------------
# Value rules the key tree cannot express (each one a silent no-op or a broken operand).

# Environment variables that only one component reads (research notes, section 2):
# the validator reads DISABLE_DEV_CHAR_SYMLINK_CREATION (cmd/nvidia-validator/main.go), and
# mig-manager reads WITH_REBOOT (mig-parted cmd/nvidia-mig-manager/main.go).
ENV_HOMES: Mapping[str, str] = MappingProxyType(
    {"DISABLE_DEV_CHAR_SYMLINK_CREATION": "validator.driver.env", "WITH_REBOOT": "migManager.env"}
)
_ENV_KEYS = ("env", "extraEnvs")


def _iter_env_lists(value: Any, path: str) -> Iterator[tuple[str, Sequence[Any]]]:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if not isinstance(key, str):
                continue
            sub_path = join_path(path, key)
            if key in _ENV_KEYS and isinstance(sub, list | tuple):
                yield sub_path, sub
            else:
                yield from _iter_env_lists(sub, sub_path)


def misplaced_env_rule(values: Mapping[str, Any]) -> Iterable[Violation]:
    """An env var set on a container that never reads it (e.g. the validator flag on the driver)."""
    for path, items in _iter_env_lists(values, ""):
        for i, item in enumerate(items):
            name = item.get("name") if isinstance(item, Mapping) else None
            home = ENV_HOMES.get(name) if isinstance(name, str) else None
            if home is not None and path != home:
                yield Violation(
                    f"{path}[{i}].name",
                    f"`{path}[{i}]` sets {name}, which only the `{home}` container reads; move it to `{home}`",
                )


def mig_config_rule(values: Mapping[str, Any]) -> Iterable[Violation]:
    """migManager.config: create without data is skipped; data must hold the key config.yaml.

    values.yaml v26.7.0: "If create=true but data is empty, ConfigMap creation is skipped" and
    "Custom ConfigMaps must contain a key named "config.yaml"".
    """
    manager = values.get("migManager")
    config = manager.get("config") if isinstance(manager, Mapping) else None
    if not isinstance(config, Mapping):
        return
    data = config.get("data")
    if config.get("create") is True and not data:
        yield Violation(
            "migManager.config.data",
            "`migManager.config.create: true` with empty `data` creates no ConfigMap (the chart "
            'skips it silently); put the mig-parted file under data["config.yaml"]',
        )
    if isinstance(data, Mapping) and data and "config.yaml" not in data:
        yield Violation(
            "migManager.config.data",
            "`migManager.config.data` must contain the key `config.yaml` (mig-manager reads only "
            f"that key); got: {', '.join(sorted(str(k) for k in data))}",
        )


# Advice for keys that commonly appear in published values but do not exist (marker paths).
_HINTS_V26_7_0: Mapping[str, str] = MappingProxyType(
    {
        "daemonsets.nodeSelector": _USE_NFD_SCOPE,
        "nodeSelector": _USE_NFD_SCOPE,
        "psp": "PodSecurityPolicy support is gone (ClusterPolicy CRD: 'Pod Security Policies are no "
        "longer supported'); use psa.enabled",
        "node-feature-discovery.enableNodeFeatureApi": "absent from the NFD 0.19.0 values and "
        "schema; older NFD charts had it",
        "driver.env": "a mapping here is a classic mistake: write [{name: ..., value: ...}]; and "
        "DISABLE_DEV_CHAR_SYMLINK_CREATION is read by the validator: it belongs under validator.driver.env",
        "validator.driver.env": 'write [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]',
    }
)

# What the package's ``CONTRACTS`` registry lists for this chart version.
CONTRACT = Contract(
    chart_version=CHART_VERSION,
    root=_GPU_OPERATOR_V26_7_0,
    subcharts=MappingProxyType({"node-feature-discovery": RELEASES[CHART_VERSION].nfd_subchart_version}),
    hints=_HINTS_V26_7_0,
    rules=(misplaced_env_rule, mig_config_rule),
)
