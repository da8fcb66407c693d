"""``python -m tools.status``: every GPU node of a live cluster against the stack's declaration.

The cluster is the fake API server over real HTTPS (``tests/tools/status_fake_api.py``), reached by the real
``kubernetes`` client through a kubeconfig file, as a person runs the command. The fleets hold a node in each state
the command must tell apart; each node's verdict and its deciding reason are checked in the table (read by its
columns, as a person reads it) and in the JSON document (validated against its published schema).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from components.catalog import gpu_operator_upgrade as operator
from components.catalog import node_agent as agent
from components.catalog.names import MIG_CONFIG_LABEL
from components.catalog.nvidia_driver import GFD_DRIVER_VERSION_LABEL, GPU_PRESENT_LABEL, OWNER_LABEL
from components.yandex.cluster import yandex_kubeconfig
from tests.helpers import ROOT
from tests.tools.status_fake_api import FakeCluster, Pki, b64, kubeconfig, make_pki, serve
from tools.status import live
from tools.status.__main__ import main
from tools.status.declared import Declaration, PoolDeclaration, load_declaration
from tools.status.verdict import PROOF_ANNOTATION

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TOKEN = "fake-token-of-the-exec-plugin"
SCHEMA = json.loads((ROOT / "docs" / "status.schema.json").read_text())
OPERATOR_NS = "gpu-operator"
Obj = dict[str, Any]


# -- the fleet ----------------------------------------------------------------------------------------------------
def make_node(
    name: str,
    labels: dict[str, str],
    *,
    allocatable: dict[str, int] | None = None,
    annotations: dict[str, str] | None = None,
    ready: str = "True",
    ready_reason: str = "KubeletReady",
    cordoned: bool = False,
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {"kubernetes.io/hostname": name, **labels},
            "annotations": annotations or {},
        },
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {
            "conditions": [{"type": "Ready", "status": ready, "reason": ready_reason}],
            "allocatable": {"cpu": "8", "memory": "48Gi", **{k: str(v) for k, v in (allocatable or {}).items()}},
        },
    }


def driver_pod(node: str, image: str, ready: bool = True) -> Obj:
    """An NVIDIADriver DaemonSet's pod (gpu-operator v26.7.0 manifests/state-driver/0500_daemonset.yaml)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"nvidia-gpu-driver-ubuntu22.04-7c9d-{node}",
            "namespace": OPERATOR_NS,
            "labels": {
                operator.DRIVER_COMPONENT_LABEL: operator.DRIVER_COMPONENT,
                "app": "nvidia-gpu-driver-ubuntu22.04-7c9d",
            },
            "ownerReferences": [
                {"kind": "DaemonSet", "name": "nvidia-gpu-driver-ubuntu22.04-7c9d", "controller": True}
            ],
        },
        "spec": {"nodeName": node, "containers": [{"name": operator.DRIVER_CONTAINER, "image": image}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def proof(
    result: str = "passed",
    driver: str | None = None,
    mig: str | None = None,
    reason: str = "",
    node: str | None = None,
    cuda: str = "passed",
    cuda_reason: str = "",
    boot_id: str = "",
) -> str:
    """A proof record as the controller writes it; ``node``: its CUDA part is about that node (``make_node``'s UID)."""
    record: dict[str, Any] = {
        "result": result,
        "at": "2026-11-30T09:00:00Z",
        "reason": reason,
        "driver": driver,
        "mig": mig,
    }
    if node is not None:
        record["cuda"] = {"uid": f"uid-{node}", "boot_id": boot_id, "result": cuda, "at": "2026-11-30T09:00:00Z",
                          "reason": cuda_reason, "driver": driver, "mig": mig}  # fmt: skip
    return json.dumps(record)


@dataclass
class Member:
    """A node of the fleet in one state, and what the command must say about it."""

    node: Obj | None  #: None: a declared host that is not in the cluster
    pods: list[Obj]
    verdict: str
    reason: str  #: the deciding reason (the first), as ``field: message`` starts
    pool: str | None


def conformant(pool: PoolDeclaration, name: str) -> tuple[Obj, list[Obj]]:
    """A node of ``pool`` exactly as declared, proven, with its driver pod where the operator owns the driver."""
    driver = pool.driver
    assert driver is not None
    labels = {
        **pool.labels,
        GFD_DRIVER_VERSION_LABEL: driver.version,
        GPU_PRESENT_LABEL: "true",
        agent.GPU_DEPLOY_DRIVER_LABEL: "true",
        operator.UPGRADE_STATE_LABEL: operator.UpgradeState.DONE,
    }
    if driver.resource:
        labels[OWNER_LABEL] = driver.resource
    if pool.mig_config:
        labels[MIG_CONFIG_LABEL] = pool.mig_config
        labels[agent.MIG_STATE_LABEL] = agent.MIG_STATE_SUCCESS
    annotations = {PROOF_ANNOTATION: proof(driver=driver.version, mig=pool.mig_config, node=name)}
    node = make_node(name, labels, allocatable=dict(pool.resources), annotations=annotations)
    pods = [driver_pod(name, f"{driver.image}ubuntu22.04")] if driver.owner == "operator" else []
    return node, pods


def edit(node: Obj, labels: dict[str, str | None] | None = None, **changes: Any) -> Obj:
    """``node`` with labels set (None: removed), annotations, cordon, readiness or allocatable changed."""
    for key, value in (labels or {}).items():
        if value is None:
            node["metadata"]["labels"].pop(key, None)
        else:
            node["metadata"]["labels"][key] = value
    for key, value in changes.pop("annotations", {}).items():
        if value is None:
            node["metadata"]["annotations"].pop(key, None)
        else:
            node["metadata"]["annotations"][key] = value
    if changes.pop("cordoned", False):
        node["spec"]["unschedulable"] = True
    if "ready" in changes:
        node["status"]["conditions"] = [
            {"type": "Ready", "status": changes.pop("ready"), "reason": "NodeStatusUnknown"}
        ]
    if "allocatable" in changes:
        node["status"]["allocatable"] = {"cpu": "8", **{k: str(v) for k, v in changes.pop("allocatable").items()}}
    assert not changes, changes
    return node


@pytest.fixture(scope="module")
def dev() -> Declaration:
    return load_declaration("dev", ROOT)


@pytest.fixture(scope="module")
def prod() -> Declaration:
    return load_declaration("prod", ROOT)


def dev_fleet(dev: Declaration) -> list[Member]:
    """The dev stack (Yandex, per-pool NVIDIADrivers, MIG on a100) with a node in every state."""
    pools = {p.pool: p for p in dev.pools}
    members: list[Member] = []
    no_proof = {PROOF_ANNOTATION: None}
    old_image = "nvcr.io/nvidia/driver:570.172.08-ubuntu22.04"

    def add(pool: str, name: str, verdict: str, reason: str, pods: list[Obj] | None = None, **changes: Any) -> None:
        """A node of ``pool`` as declared, then ``changes`` (``edit``); ``pods``: other driver pods than its own."""
        node, own = conformant(pools[pool], name)
        members.append(Member(edit(node, **changes), own if pods is None else pods, verdict, reason, pool))

    add("v100", "v100-ok", "conformant", "")
    add("a100", "a100-ok", "conformant", "")
    # The autoscaler added it after the last pulumi up: as declared, but no proof ever saw it.
    add("v100", "v100-autoscaled", "unknown", "proof: never proven", annotations=no_proof)
    # Recreated by the cloud: back with the image's preinstalled driver, no operator driver pod, never proven.
    add("v100", "v100-replaced", "drift", "driver: runs a preinstalled driver 535.129.03", pods=[],
        labels={agent.GPU_DEPLOY_DRIVER_LABEL: agent.DEPLOY_DRIVER_PRE_INSTALLED, GFD_DRIVER_VERSION_LABEL: "535.129.03"},
        annotations=no_proof)  # fmt: skip
    # Relabelled by hand: a platform label; the MIG config (and mig-manager applied it).
    add("v100", "v100-relabelled", "drift", "labels: gpu-platform.io/role is training, declared gpu-notebooks",
        labels={"gpu-platform.io/role": "training"})  # fmt: skip
    add("a100", "a100-mig-by-hand", "drift", "mig: nvidia.com/mig.config is all-disabled, declared all-1g.10gb",
        labels={MIG_CONFIG_LABEL: "all-disabled"}, allocatable={"nvidia.com/gpu": 1})  # fmt: skip
    # mig-manager failed on one GPU: it answers failed, the node keeps advertising its old layout.
    add("a100", "a100-mig-failed", "failed", "mig: mig-manager failed to apply all-1g.10gb",
        labels={agent.MIG_STATE_LABEL: agent.MIG_STATE_FAILED}, allocatable={"nvidia.com/gpu": 1})  # fmt: skip
    # A hand-over that ended failed: cordoned by the agent, the operator's driver pod never Ready.
    add("v100", "v100-handover-failed", "failed",
        "maintenance: the node agent failed it (driver-not-ready), the node stays cordoned",
        pods=[driver_pod("v100-handover-failed", "nvcr.io/nvidia/driver:580.95.05-ubuntu22.04", ready=False)],
        labels={agent.STATE_LABEL: "failed", agent.REASON_LABEL: "driver-not-ready", GFD_DRIVER_VERSION_LABEL: None},
        cordoned=True)  # fmt: skip
    # Mid-maintenance: the agent moved the MIG label and cleared mig-manager's answer.
    add("a100", "a100-mig-applying", "in-maintenance", "maintenance: the node agent is at mig-applying",
        labels={agent.STATE_LABEL: "mig-applying", agent.MIG_STATE_LABEL: None}, cordoned=True,
        allocatable={"nvidia.com/gpu": 1})  # fmt: skip
    add("v100", "v100-waiting", "in-maintenance", "maintenance: the node agent is at waiting-slot (budget-full)",
        labels={agent.STATE_LABEL: "waiting-slot", agent.REASON_LABEL: "budget-full"})  # fmt: skip
    # The GPU Operator mid-upgrade: its upgrade controller holds the node, the old driver still runs.
    add("v100", "v100-upgrading", "in-maintenance",
        "upgrade: the GPU Operator is upgrading the driver (pod-restart-required)",
        pods=[driver_pod("v100-upgrading", old_image)], cordoned=True,
        labels={operator.UPGRADE_STATE_LABEL: "pod-restart-required", GFD_DRIVER_VERSION_LABEL: "570.172.08"})  # fmt: skip
    # The kubelet stopped reporting: whatever its labels say may be stale.
    add("v100", "v100-notready", "unknown", "node: is not Ready (Ready=Unknown: NodeStatusUnknown)",
        labels={"gpu-platform.io/role": "training"}, ready="Unknown")  # fmt: skip
    # A driver rolled back by hand: the pod runs another version and GFD says so; no upgrade under way.
    add("v100", "v100-old-driver", "drift",
        f"driver: driver pod nvidia-gpu-driver-ubuntu22.04-7c9d-v100-old-driver runs {old_image}",
        pods=[driver_pod("v100-old-driver", old_image)], labels={GFD_DRIVER_VERSION_LABEL: "570.172.08"})  # fmt: skip
    add("a100", "a100-wrong-owner", "drift",
        "driver: owned by gpu-platform-v100 (nvidia.com/gpu-operator.driver.owner), declared gpu-platform-a100",
        labels={OWNER_LABEL: "gpu-platform-v100"})  # fmt: skip
    add("v100", "v100-cordoned", "drift",
        "cordon: cordoned, and neither the node agent nor the GPU Operator holds it", cordoned=True)  # fmt: skip
    # A GPU fell off the bus: the node advertises none.
    add("v100", "v100-gpu-lost", "drift", "gpus: advertises no GPU resource, declared gpu=1", allocatable={})
    add("a100", "a100-proof-failed", "drift",
        "proof: the last proof failed at 2026-11-30T09:00:00Z: vectorAdd exited 1",
        annotations={PROOF_ANNOTATION: proof("failed", "595.91.07", "all-1g.10gb", "vectorAdd exited 1")})  # fmt: skip
    add("v100", "v100-stale-proof", "unknown", "proof: the last proof was of driver 570.172.08, declared 580.95.05",
        annotations={PROOF_ANNOTATION: proof(driver="570.172.08", node="v100-stale-proof")})  # fmt: skip
    # The CUDA half of the continuous proof (the controller's smoke pod on each node as it is now).
    halted = "the pool v100 is halted by v100-7 (uninstall-failed): no new node is proven until it is cleared"
    add("v100", "v100-cuda-waiting", "unknown",
        f"proof: not proven with CUDA yet (waiting at 2026-11-30T09:00:00Z): {halted}",
        annotations={PROOF_ANNOTATION: proof(driver="580.95.05", node="v100-cuda-waiting", cuda="waiting",
                                             cuda_reason=halted)})  # fmt: skip
    add("v100", "v100-cuda-running", "unknown", "proof: its CUDA proof is running",
        labels={agent.STATE_LABEL: "proving"}, annotations={PROOF_ANNOTATION: proof(driver="580.95.05")})  # fmt: skip
    add("v100", "v100-evidence-only", "unknown", "proof: no CUDA proof of this node yet",
        annotations={PROOF_ANNOTATION: proof(driver="580.95.05")})  # fmt: skip
    # Rebooted (or a VM replaced under the same Node object): its last CUDA proof was of an earlier boot.
    add("v100", "v100-rebooted", "unknown", "proof: the last CUDA proof at 2026-11-30T09:00:00Z was of an earlier boot",
        annotations={PROOF_ANNOTATION: proof(driver="580.95.05", node="v100-rebooted", boot_id="boot-1")})  # fmt: skip
    failed_smoke = "smoke pod node-agent-smoke-uid-a100-cuda-failed-proof1-0 failed: container smoke exited 9 (Error)"
    add("a100", "a100-cuda-failed", "failed", "maintenance: the node agent failed it (cuda-proof-failed)",
        labels={agent.STATE_LABEL: "failed", agent.REASON_LABEL: "cuda-proof-failed"},
        annotations={PROOF_ANNOTATION: proof(driver="595.91.07", mig="all-1g.10gb", node="a100-cuda-failed",
                                             cuda="failed", cuda_reason=failed_smoke)})  # fmt: skip
    # A GPU node of a group the stack no longer declares; and a CPU node (not a GPU node: not listed).
    leftover = make_node(
        "t4-leftover",
        {"gpu-platform.io/node-group": "t4", GPU_PRESENT_LABEL: "true"},
        allocatable={"nvidia.com/gpu": 1},
    )
    reason = "pool: a GPU node of no declared pool (gpu-platform.io/node-group=t4)"
    members.append(Member(leftover, [], "drift", reason, None))
    members.append(Member(make_node("cpu-1", {"node-role": "system"}), [], "", "", None))
    return members


def prod_fleet(prod: Declaration) -> list[Member]:
    """The prod stack (bare metal, the hosts' driver, a MIG layout per node)."""
    by_name = {p.gpu_pool: p for p in prod.pools}
    node1, _ = conformant(by_name["gpu-node-1"], "gpu-node-1")
    node2, _ = conformant(by_name["gpu-node-2"], "gpu-node-2")
    extra, _ = conformant(by_name["gpu-node-1"], "gpu-node-9")
    return [
        Member(node1, [], "conformant", "", "h100"),
        Member(
            node2,
            [driver_pod("gpu-node-2", "nvcr.io/nvidia/driver:580.95.05-rhel9.4")],
            "drift",
            "driver: the GPU Operator runs a driver pod here (nvcr.io/nvidia/driver:580.95.05-rhel9.4), but the hosts own the driver",
            "h100",
        ),
        Member(None, [], "drift", "node: declared in bareMetal.nodes[2], not a node of the cluster", "h100"),
        Member(extra, [], "drift", "pool: a GPU node of no declared pool (gpu-platform.io/node-group=h100)", None),
    ]


def load(cluster: FakeCluster, members: list[Member]) -> None:
    cluster.nodes = [m.node for m in members if m.node is not None]
    cluster.pods = {OPERATOR_NS: [pod for m in members for pod in m.pods], "kube-system": []}


# -- the kubeconfig and its credentials ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def write_plugin(folder: Path, name: str, api_version: str, token: str = TOKEN, exit_code: int = 0) -> Path:
    """An exec credential plugin: prints an ExecCredential with ``token`` and records that it ran (and its args)."""
    script = folder / name
    credential = json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": {"token": token}})
    script.write_text(
        textwrap.dedent(f"""\
            #!/bin/sh
            echo "$@" >> "{folder}/{name}.ran"
            if [ {exit_code} -ne 0 ]; then echo "credentials expired: run yc init" >&2; exit {exit_code}; fi
            cat <<'EOF'
            {credential}
            EOF
            """)
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@dataclass
class Api:
    """The running fake cluster, and a kubeconfig file that reaches it through an exec plugin."""

    cluster: FakeCluster
    url: str
    kubeconfig: Path
    folder: Path


@pytest.fixture
def api(tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config of the machine's
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)  # the width of a pipe: the default, 160
    cluster = FakeCluster(tokens={TOKEN})
    plugin = write_plugin(tmp_path, "get-token", "client.authentication.k8s.io/v1")
    with serve(cluster, pki) as url:
        user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "args": ["--cluster", "fake"], "interactiveMode": "Never"}}  # fmt: skip
        path = tmp_path / "kubeconfig"
        path.write_text(kubeconfig(url, user, ca=pki.ca))
        yield Api(cluster, url, path, tmp_path)


def run(api: Api, stack: str, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([stack, "--kubeconfig", str(api.kubeconfig), *args], now=NOW)
    out, err = capsys.readouterr()
    return code, out, err


# -- reading the table as a person does -----------------------------------------------------------------------------
TITLES = ["POOL", "NODE", "VERDICT", "DRIVER", "MIG", "MAINTENANCE", "PROOF"]


def table_rows(out: str) -> dict[str, dict[str, str]]:
    """Node -> its cells, cut at the header's column starts (every pool's header must be the same), and
    ``REASONS``: the lines under it (``↳ ...``), as a person reads them."""
    lines = out.splitlines()
    headers = [line for line in lines if line.startswith("POOL  ")]
    assert headers and len(set(headers)) == 1, "one column layout for every pool"
    header = headers[0]
    starts = [header.index(title) for title in TITLES]
    rows: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    in_table = False
    for line in lines:
        if line == header:
            in_table = True
        elif not line:
            in_table, current = False, None
        elif in_table and (line.lstrip().startswith("↳ ") or (current and line.startswith(" " * 10))):
            assert current is not None, line
            current["REASONS"] += ("\n" if current["REASONS"] else "") + line.strip().removeprefix("↳ ")
        elif in_table:
            current = {
                title: line[start : (starts[i + 1] if i + 1 < len(starts) else None)].strip()
                for i, (title, start) in enumerate(zip(TITLES, starts, strict=True))
            }
            current["REASONS"] = ""
            rows[current["NODE"]] = current
    return rows


# -- the states -------------------------------------------------------------------------------------------------
def test_the_declarations_are_the_stack_files(dev: Declaration, prod: Declaration) -> None:
    """What the fleets are compared with: the values Pulumi.dev.yaml and Pulumi.prod.yaml declare."""
    by_pool = {p.gpu_pool: p for p in dev.pools}
    assert by_pool["v100"].driver is not None and by_pool["a100"].driver is not None
    assert (by_pool["v100"].driver.version, by_pool["v100"].driver.resource) == ("580.95.05", "gpu-platform-v100")
    assert by_pool["v100"].driver.image == "nvcr.io/nvidia/driver:580.95.05-"
    assert (by_pool["a100"].driver.version, by_pool["a100"].mig_config) == ("595.91.07", "all-1g.10gb")
    assert dict(by_pool["a100"].resources) == {"nvidia.com/mig-1g.10gb": 7}
    assert by_pool["v100"].labels["gpu-platform.io/role"] == "gpu-notebooks"
    assert all(p.proven for p in dev.pools) and dev.operator_namespace == "gpu-operator"
    hosts = {p.gpu_pool: p for p in prod.bare_metal_hosts}
    assert sorted(hosts) == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    assert {p.pool for p in hosts.values()} == {"h100"}
    assert {(p.driver.owner, p.driver.version) for p in hosts.values() if p.driver} == {("host", "580.95.05")}
    assert dict(hosts["gpu-node-3"].resources) == {"nvidia.com/gpu": 4, "nvidia.com/mig-3g.40gb": 8}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_state_gets_its_verdict_and_reason_in_the_table_and_the_document(
    stack: str, dev: Declaration, prod: Declaration, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    members = dev_fleet(dev) if stack == "dev" else prod_fleet(prod)
    load(api.cluster, members)
    expected = {(m.node["metadata"]["name"] if m.node else "gpu-node-3"): m for m in members if m.verdict}
    if stack == "dev":
        assert len({m.verdict + m.reason.split(":")[0] for m in expected.values()}) >= 12

    code, out, err = run(api, stack, capsys=capsys)
    assert (code, err) == (1, "")
    rows = table_rows(out)
    assert set(rows) == set(expected), "every GPU node and missing host, once; the CPU node is not a GPU node"
    for name, member in expected.items():
        row = rows[name]
        assert (row["POOL"], row["VERDICT"]) == (member.pool or "(none)", member.verdict), name
        shown = row["REASONS"].split(" (+")[0]
        if not member.reason:
            assert shown == "", name
        elif shown.endswith("…"):  # cut at the width: what is shown is the start of the reason
            assert shown[:-1].startswith(member.reason) or member.reason.startswith(shown[:-1]), (name, shown)
            assert len(shown) > 100, "cut only where the line is full"
        else:
            assert shown.startswith(member.reason), (name, shown)
    if stack == "dev":
        assert "1 other node (no GPU, no pool) not shown" in out

    code, out, err = run(api, stack, "--json", capsys=capsys)
    assert (code, err) == (1, "")
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    assert (document["version"], document["stack"], document["conformant"]) == (1, stack, False)
    nodes = {n["name"]: n for n in document["nodes"]}
    assert set(nodes) == set(expected)
    for name, member in expected.items():
        entry = nodes[name]
        assert (entry["pool"], entry["verdict"]) == (member.pool, member.verdict), name
        reasons = [f"{r['field']}: {r['message']}" for r in entry["reasons"]]
        assert reasons[0].startswith(member.reason) if member.reason else reasons == [], (name, reasons)
        assert entry["reasons"] == [] or entry["reasons"][0]["verdict"] == member.verdict, "the first reason decides"
    if stack == "dev":  # the CUDA part of the record, as a consumer reads it: whether it is of the node as it is
        assert nodes["v100-rebooted"]["proof"]["cuda"]["current"] is False
        assert nodes["v100-cuda-waiting"]["proof"]["cuda"] == {
            "result": "waiting",
            "current": True,
            "at": "2026-11-30T09:00:00Z",
            "reason": nodes["v100-cuda-waiting"]["proof"]["cuda"]["reason"],
        }
        assert nodes["v100-cuda-waiting"]["proof"]["cuda"]["reason"], "why it waits"
    assert document["summary"]["otherNodes"] == (1 if stack == "dev" else 0)
    assert sum(document["summary"][v] for v in ("conformant", "drift", "in-maintenance", "failed", "unknown")) == len(
        expected
    )
    assert all(method == "GET" for method, _, _ in api.cluster.requests), "the command only reads"


def test_the_document_carries_what_each_field_shows(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    load(api.cluster, dev_fleet(dev))
    _, out, _ = run(api, "dev", "--json", capsys=capsys)
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert nodes["v100-ok"]["driver"] == {
        "owner": "operator",
        "declared": "580.95.05",
        "declaredImage": "nvcr.io/nvidia/driver:580.95.05-",
        "running": "580.95.05",
        "image": "nvcr.io/nvidia/driver:580.95.05-ubuntu22.04",
    }
    assert nodes["v100-ok"]["proof"] == {
        "result": "passed",
        "at": "2026-11-30T09:00:00Z",
        "driver": "580.95.05",
        "cuda": {"result": "passed", "current": True, "at": "2026-11-30T09:00:00Z"},
    }
    assert nodes["v100-autoscaled"]["proof"] == {"result": "none"}
    failed = nodes["a100-mig-failed"]
    assert failed["mig"] == {
        "declared": "all-1g.10gb",
        "applied": "all-1g.10gb",
        "state": "failed",
        "declaredResources": {"nvidia.com/mig-1g.10gb": 7},
        "resources": {"nvidia.com/gpu": 1},
    }
    assert [r["field"] for r in failed["reasons"]] == ["mig", "mig"]  # failed, then the old layout it advertises
    handover = nodes["v100-handover-failed"]
    assert handover["maintenance"] == {"state": "failed", "reason": "driver-not-ready", "detail": None}
    assert handover["cordoned"] is True
    assert nodes["v100-upgrading"]["upgrade"] == {"state": "pod-restart-required"}
    replaced = nodes["v100-replaced"]
    assert (replaced["driver"]["running"], replaced["driver"]["image"]) == ("535.129.03", None)
    assert [r["verdict"] for r in replaced["reasons"]] == ["drift", "unknown"]  # the proof: never proven, below drift
    assert nodes["t4-leftover"]["gpuPool"] is None and nodes["t4-leftover"]["driver"]["declared"] is None


def test_verbose_prints_every_reason_under_its_node(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    load(api.cluster, dev_fleet(dev))
    _, out, _ = run(api, "dev", "--json", capsys=capsys)
    every = {n["name"]: [f"{r['field']}: {r['message']}" for r in n["reasons"]] for n in json.loads(out)["nodes"]}
    _, out, _ = run(api, "dev", "--verbose", "--width", "100", capsys=capsys)
    assert max(len(line) for line in out.splitlines()) <= 100
    rows = table_rows(out)
    for name, reasons in every.items():
        shown = rows[name]["REASONS"].split("\n") if rows[name]["REASONS"] else []
        joined: list[str] = []
        for line in shown:  # a reason too long for the width goes on under itself
            if joined and not line.startswith(
                (
                    "node:",
                    "pool:",
                    "labels:",
                    "driver:",
                    "mig:",
                    "gpus:",
                    "maintenance:",
                    "upgrade:",
                    "cordon:",
                    "proof:",
                )
            ):
                joined[-1] += f" {line}"
            else:
                joined.append(line)
        assert joined == reasons, name
    assert sum(len(r["REASONS"].split("\n")) for r in rows.values()) > sum(map(len, every.values())), "some wrapped"
    assert "--verbose" not in out  # the hint is for the short form only


def test_a_fleet_as_declared_exits_0(dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    members = [m for m in dev_fleet(dev) if m.verdict == "conformant" or not m.verdict]
    load(api.cluster, members)
    code, out, err = run(api, "dev", capsys=capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == "2 GPU nodes: 2 conformant; 1 other node (no GPU, no pool) not shown"
    assert "↳" not in out and "--verbose" not in out
    code, out, _ = run(api, "dev", "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["conformant"] is True


def test_driver_pods_that_cannot_be_listed_make_the_driver_unknown(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reader whose RBAC lists nodes but not the operator's pods still gets every node, each saying why."""
    load(api.cluster, [m for m in dev_fleet(dev) if m.verdict])
    api.cluster.faults[f"/api/v1/namespaces/{OPERATOR_NS}/pods"] = 403
    code, out, _ = run(api, "dev", "--json", capsys=capsys)
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert code == 1
    ok = nodes["v100-ok"]
    assert ok["verdict"] == "unknown"
    assert ok["reasons"][0]["message"].startswith(
        "the GPU Operator's driver pods cannot be listed (403 Forbidden: fault injected by the test"
    )
    assert nodes["v100-relabelled"]["verdict"] == "drift"  # what is known to differ still decides


# -- the cluster cannot be read: exit 2, one line -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (
            {"faults": {"/api/v1/nodes": 503}},
            "503 Service Unavailable: fault injected by the test: 503 on /api/v1/nodes",
        ),
        ({"faults": {"/api/v1/nodes": 500}}, "500 Internal Server Error: fault injected by the test"),
        ({"tokens": set()}, "401 Unauthorized: Unauthorized"),
        ({"hang_up": {"/api/v1/nodes"}}, "cannot read the cluster at https://127.0.0.1:"),
    ],
    ids=["unavailable", "failing", "token-refused", "hangs-up"],
)
def test_an_unreadable_api_exits_2_with_one_line(
    fault: dict[str, Any], message: str, dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    load(api.cluster, dev_fleet(dev))
    for key, value in fault.items():
        setattr(api.cluster, key, value)
    code, out, err = run(api, "dev", capsys=capsys)
    assert (code, out) == (2, "")
    assert err.startswith("error: cannot read the cluster at https://127.0.0.1:") and message in err, err
    assert err.count("\n") == 1


def test_a_server_that_is_gone_exits_2(api: Api, capsys: pytest.CaptureFixture[str], pki: Pki) -> None:
    with serve(FakeCluster(), pki) as url:
        pass  # started and stopped: nothing listens there any more
    api.kubeconfig.write_text(kubeconfig(url, {"token": TOKEN}, ca=pki.ca))
    code, out, err = run(api, "dev", capsys=capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: cannot read the cluster at {url}:") and "refused" in err.lower(), err


def test_an_expired_continue_token_lists_again_from_the_start(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    members = [m for m in dev_fleet(dev) if m.verdict]
    load(api.cluster, members)
    monkeypatch.setattr(live, "PAGE_SIZE", 4)
    api.cluster.expire_continue = 1
    code, out, _ = run(api, "dev", "--json", capsys=capsys)
    assert code == 1 and len(json.loads(out)["nodes"]) == len(members)
    pages = [path for _, path, _ in api.cluster.requests if path.startswith("/api/v1/nodes")]
    assert len(pages) == 1 + 1 + -(-len(api.cluster.nodes) // 4)  # the first page, the refused one, then all


def test_unknown_stack_and_no_kubeconfig_exit_2(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nope"], now=NOW) == 2
    assert capsys.readouterr().err.startswith(
        "error: no stack file Pulumi.nope.yaml; stacks in this project: dev, existing, prod"
    )
    assert main(["dev"], now=NOW) == 2  # no --kubeconfig, no KUBECONFIG, no ~/.kube/config, not in a pod
    assert capsys.readouterr().err == (
        "error: no kubeconfig: give --kubeconfig FILE or set KUBECONFIG (for the stack's own: "
        "pulumi stack output kubeconfig --show-secrets > kubeconfig)\n"
    )


# -- authentication: each way the ecosystem's client authenticates ---------------------------------------------------
def test_the_exec_plugin_supplies_the_token(dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    load(api.cluster, dev_fleet(dev))
    code, _, _ = run(api, "dev", capsys=capsys)
    assert code == 1
    assert (api.folder / "get-token.ran").read_text() == "--cluster fake\n"
    users = {user for _, _, user in api.cluster.requests}
    assert users == {f"token:{TOKEN[:4]}"}, "every request carried the plugin's token"


def test_without_credentials_the_server_refuses(api: Api, capsys: pytest.CaptureFixture[str], pki: Pki) -> None:
    """The other side of the exec test: the fake refuses a request that carries no token (anonymous)."""
    api.kubeconfig.write_text(kubeconfig(api.url, {}, ca=pki.ca))
    code, _, err = run(api, "dev", capsys=capsys)
    assert code == 2
    assert '403 Forbidden: nodes is forbidden: User "system:anonymous" cannot list resource "nodes"' in err


def test_a_failing_exec_plugin_exits_2_with_its_message(api: Api, capsys: pytest.CaptureFixture[str], pki: Pki) -> None:
    plugin = write_plugin(api.folder, "expired", "client.authentication.k8s.io/v1", exit_code=1)
    user = {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}
    }
    api.kubeconfig.write_text(kubeconfig(api.url, user, ca=pki.ca))
    code, _, err = run(api, "dev", capsys=capsys)
    assert code == 2
    assert err.startswith(
        "error: cannot use the kubeconfig: exec: process returned 1. credentials expired: run yc init"
    )


def test_the_stacks_own_yandex_kubeconfig_runs_yc(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str], pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kubeconfig the dev stack exports (``yc k8s create-token``, v1beta1), with a stand-in ``yc`` on PATH."""
    bin_dir = api.folder / "bin"
    bin_dir.mkdir()
    write_plugin(bin_dir, "yc", "client.authentication.k8s.io/v1beta1")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    api.kubeconfig.write_text(yandex_kubeconfig("ml-dev", api.url, pki.ca))
    load(api.cluster, dev_fleet(dev))
    code, out, _ = run(api, "dev", capsys=capsys)
    assert code == 1 and "v100-ok" in out
    assert (bin_dir / "yc.ran").read_text() == "k8s create-token\n"


def test_a_client_certificate_authenticates(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str], pki: Pki
) -> None:
    api.cluster.client_cns = {pki.client_cn}
    user = {"client-certificate-data": b64(pki.text("client.crt")), "client-key-data": b64(pki.text("client.key"))}
    api.kubeconfig.write_text(kubeconfig(api.url, user, ca=pki.ca))
    load(api.cluster, dev_fleet(dev))
    code, _, _ = run(api, "dev", capsys=capsys)
    assert code == 1
    assert {user for _, _, user in api.cluster.requests} == {f"cert:{pki.client_cn}"}


def test_a_static_token_and_a_named_context(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str], pki: Pki
) -> None:
    """Two contexts: the current one's token is refused; ``--context`` picks the one that works."""
    document = json.loads(kubeconfig(api.url, {"token": "wrong"}, ca=pki.ca, name="stale"))
    good = json.loads(kubeconfig(api.url, {"token": TOKEN}, ca=pki.ca, name="platform"))
    for key in ("clusters", "users", "contexts"):
        document[key] += good[key]
    api.kubeconfig.write_text(json.dumps(document))
    load(api.cluster, dev_fleet(dev))
    assert run(api, "dev", capsys=capsys)[0] == 2
    assert run(api, "dev", "--context", "platform", capsys=capsys)[0] == 1
    code, _, err = run(api, "dev", "--context", "missing", capsys=capsys)
    assert code == 2 and "cannot use the kubeconfig" in err and "missing" in err


def test_kubeconfig_from_the_environment(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``--kubeconfig``: the files ``KUBECONFIG`` names, merged as kubectl merges them, read when the command runs."""
    load(api.cluster, dev_fleet(dev))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(api.folder / "absent"), str(api.kubeconfig)]))
    assert main(["dev", "--json"], now=NOW) == 1
    assert json.loads(capsys.readouterr().out)["cluster"]["server"] == api.url


def test_a_certificate_the_cluster_ca_did_not_sign_is_refused(
    api: Api, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = make_pki(tmp_path / "other-ca")
    api.kubeconfig.write_text(kubeconfig(api.url, {"token": TOKEN}, ca=other.ca))
    code, _, err = run(api, "dev", capsys=capsys)
    assert code == 2 and "CERTIFICATE_VERIFY_FAILED" in err


def test_in_a_pod_the_service_account_is_used(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str], pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = api.folder / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(TOKEN)
    (account / "ca.crt").write_text(pki.ca)
    monkeypatch.setattr(live, "SERVICE_TOKEN_FILENAME", str(account / "token"))
    monkeypatch.setattr(live, "SERVICE_CERT_FILENAME", str(account / "ca.crt"))
    host, port = api.url.removeprefix("https://").split(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    load(api.cluster, dev_fleet(dev))
    assert main(["dev", "--json"], now=NOW) == 1
    assert json.loads(capsys.readouterr().out)["cluster"]["server"] == api.url
    assert {user for _, _, user in api.cluster.requests} == {f"token:{TOKEN[:4]}"}


# -- as a person sees it --------------------------------------------------------------------------------------------
def big_fleet(dev: Declaration, size: int = 500) -> list[Member]:
    """``size`` nodes over both pools and no pool, in every state, some with names too long for their column."""
    states = [m for m in dev_fleet(dev) if m.verdict]
    members = []
    for index in range(size):
        template = states[index % len(states)]
        assert template.node is not None
        node = json.loads(json.dumps(template.node))
        long = "-with-a-name-far-longer-than-any-column-allows-for-it" if index % 50 == 0 else ""
        name = f"{template.node['metadata']['name']}-{index:03d}{long}"
        node["metadata"]["name"] = name
        pods = json.loads(json.dumps(template.pods))
        for pod in pods:
            pod["spec"]["nodeName"] = name
            pod["metadata"]["name"] = f"driver-{index}"
        members.append(Member(node, pods, template.verdict, template.reason, template.pool))
    return members


def test_500_nodes_stay_in_their_columns_grouped_by_pool(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    members = big_fleet(dev)
    load(api.cluster, members)
    code, out, _ = run(api, "dev", capsys=capsys)
    lines = out.splitlines()
    assert code == 1
    assert max(len(line) for line in lines) <= 160
    assert "\x1b[" not in out, "no colour where stdout is not a terminal"
    rows = [line for line in lines if line.split(" ", 1)[0] in ("v100", "a100", "(none)") and "  " in line]
    assert len(rows) == 500
    pools = [row.split()[0] for row in rows]
    assert pools == sorted(pools, key=["a100", "v100", "(none)"].index), "each pool's nodes together, no pool last"
    header = next(line for line in lines if line.startswith("POOL  "))
    for title in TITLES[1:]:
        at = header.index(title)
        assert all(row[at - 2 : at] == "  " and row[at] != " " for row in rows), f"{title}: every row aligned"
    assert sum("…" in row[: header.index("VERDICT")] for row in rows) == 10, "the long names are cut, with a mark"
    reasons = [line for line in lines if line.lstrip().startswith("↳ ")]
    assert len(reasons) == sum(m.verdict != "conformant" for m in members), "one reason line under each problem"
    assert all(line.index("↳") == header.index("NODE") for line in reasons), "under the node's name"
    headers = [line for line in lines if line.startswith(("a100 (", "v100 (", "GPU nodes of no declared pool"))]

    def tally(pool: str | None) -> str:
        found = [m.verdict for m in members if m.pool == pool]
        order = ["conformant", "drift", "in-maintenance", "failed", "unknown"]
        return f"{len(found)} nodes, " + ", ".join(f"{found.count(v)} {v}" for v in order if v in found)

    assert headers == [
        f"a100 (nodeGroups.a100): {tally('a100')}; declared driver 595.91.07 (gpu-platform-a100), MIG all-1g.10gb",
        f"v100 (nodeGroups.v100): {tally('v100')}; declared driver 580.95.05 (gpu-platform-v100), no MIG",
        f"GPU nodes of no declared pool: {tally(None)}",
    ]
    conformant_nodes = sum(m.verdict == "conformant" for m in members)
    code, out, _ = run(api, "dev", "--problems", "--width", "120", capsys=capsys)
    assert max(len(line) for line in out.splitlines()) <= 120
    assert f"{conformant_nodes} conformant nodes not shown (--problems)" in out and " conformant  " not in out


def _on_a_terminal(api: Api, env: dict[str, str]) -> str:
    """The command in a pseudo-terminal, as a person runs it: what the terminal receives."""
    import pty

    main_fd, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tools.status", "dev", "--kubeconfig", str(api.kubeconfig)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    os.close(terminal)
    received = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        received += chunk
    process.wait(timeout=60)
    os.close(main_fd)
    return received.decode()


def test_colour_on_a_terminal_only_and_never_with_no_color(dev: Declaration, api: Api) -> None:
    load(api.cluster, dev_fleet(dev))
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    shown = _on_a_terminal(api, {**env, "COLUMNS": "120"})
    assert "\x1b[1;31mdrift" in shown and "\x1b[32mconformant" in shown and "\x1b[1;37;41mfailed" in shown
    plain = [line.replace("\r", "") for line in _strip_ansi(shown).splitlines()]
    assert max(len(line) for line in plain) <= 120, "the terminal's width"
    assert "\x1b[" not in _on_a_terminal(api, {"NO_COLOR": "1", "COLUMNS": "120"})


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_make_status_runs_the_command() -> None:
    result = subprocess.run(
        ["make", "-n", "status", "STACK=prod", "KUBECONFIG=prod.kubeconfig", "CONTEXT=ml-prod", "ARGS=--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert (
        ".venv/bin/python -m tools.status prod --kubeconfig prod.kubeconfig --context ml-prod --json" in result.stdout
    )


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["version"] == {"const": 1}


def test_the_operations_guide_shows_what_the_command_prints(
    dev: Declaration, api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/operations.md, "Is the fleet as declared?": its example is this fleet's output, at 120 columns."""
    names = {
        "v100-ok": "cl1v100-abcd",
        "a100-ok": "cl1a100-efgh",
        "v100-autoscaled": "cl1v100-ijkl",
        "v100-replaced": "cl1v100-mnop",
        "a100-mig-failed": "cl1a100-qrst",
        "v100-handover-failed": "cl1v100-uvwx",
        "a100-mig-applying": "cl1a100-yzab",
        "v100-upgrading": "cl1v100-cdef",
        "v100-relabelled": "cl1v100-ghij",
        "t4-leftover": "cl1t4-klmn",
        "cpu-1": "cl1cpu-opqr",
    }
    members = [m for m in dev_fleet(dev) if m.node is not None and m.node["metadata"]["name"] in names]
    text = json.dumps([(m.node, m.pods) for m in members])
    for old, new in names.items():
        text = text.replace(f'"{old}"', f'"{new}"').replace(f"-{old}", f"-{new}")
    api.cluster.nodes = [node for node, _ in json.loads(text)]
    api.cluster.pods = {OPERATOR_NS: [pod for _, pods in json.loads(text) for pod in pods]}
    code, out, _ = run(api, "dev", "--width", "120", capsys=capsys)
    assert code == 1
    guide = (ROOT / "docs" / "operations.md").read_text()
    section = guide[guide.index("## Is the fleet as declared?") :]
    example = re.search(r"\n\n```\n(.*?\n)```\n", section, re.DOTALL)  # the first block opened without a language
    assert example is not None and example.group(1) == out.replace(api.url, "https://203.0.113.10")
