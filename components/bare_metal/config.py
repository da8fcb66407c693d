"""Config model of a bare-metal GPU estate (``bareMetal`` in the stack file).

Existing Kubernetes nodes reached over SSH for host preparation. By default the driver lives on the
host, so the GPU Operator runs with ``driver.enabled=false`` and ``gpuOperator.hostDriver.version``
declares the version every host must report. Driverless hosts (``gpuOperator.driver.owner: operator``)
run the operator's driver instead, and each node may set its own (``driver``, the same model as a
Yandex node group's). SSH keys are secret config keys, never inline.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from components.bare_metal import host_prep_steps as steps
from components.base.config_model import ConfigModel, gpu_node_taints_problems, label_problems
from components.base.problems import Problem, join_path
from components.catalog.file_paths import file_path_problem
from components.catalog.gpus import gpu_model_problem, host_gpu_count_problem
from components.catalog.kernel_args import kernel_arg_problem
from components.catalog.kubernetes import (
    Taint,
    dns_subdomain_problem,
    label_value_problem,
    parse_taint,
    user_name_problem,
)
from components.gpu_operator.pool_config import PoolDriverConfig
from components.mig.config import MigConfig

_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KERNEL_ARG = re.compile(r"^[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:/@+-]*)?$")


class BastionConfig(ConfigModel):
    """A jump host between the machine running Pulumi and the nodes."""

    host: str = Field(min_length=1)
    user: str = "root"
    port: int = Field(default=22, ge=1, le=65535)
    private_key_secret: str | None = Field(default=None, description="default: the nodes' key")


class SshConfig(ConfigModel):
    """How every node is reached."""

    user: str = "root"
    port: int = Field(default=22, ge=1, le=65535)
    private_key_secret: str = Field(default="sshPrivateKey", description="secret config key holding the private key")
    bastion: BastionConfig | None = None
    sudo: bool | None = Field(
        default=None, description="run the steps with sudo -n (password-less sudo); default: true unless user is root"
    )

    @property
    def become_root(self) -> bool:
        """Whether each step runs through sudo (the steps write /etc, run dracut and systemctl)."""
        return self.sudo if self.sudo is not None else self.user != "root"


class HostPreparationConfig(ConfigModel):
    """What host preparation does on every node (each step is idempotent and reports its changes)."""

    enabled: bool = True
    kernel_args: list[str] = Field(default_factory=list)
    allow_unsigned_modules: bool = Field(
        default=False, description="accept module.sig_enforce=0 in kernelArgs (the kernel then loads unsigned modules)"
    )
    bpf_jit_harden: Literal[0, 1] = 1
    configure_containerd: bool = Field(default=True, description="nvidia-ctk configures containerd on the host")
    containerd_config: str = "/etc/containerd/config.toml"
    set_as_default_runtime: bool = True
    enable_cdi: bool = False
    nvswitch: Literal["auto", "true", "false"] = "auto"
    extra_kernel_arg_names: list[str] = Field(
        default_factory=list, description="kernel argument names to accept beyond the built-in allowlist"
    )


class BareMetalNode(ConfigModel):
    """One existing GPU node: its Kubernetes node name, how to reach it, what it carries."""

    name: str
    address: str = Field(min_length=1)
    gpu_model: str
    gpus: int = Field(ge=1, le=16)
    pool: str = "bare-metal"
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[str] = Field(
        default_factory=list,
        description="taints the node carries (kubelet --register-with-taints); a GPU node needs a NoSchedule one",
    )
    allow_untainted: bool = Field(
        default=False, description="accept a GPU node without a NoSchedule taint (any pod may then land on it)"
    )
    nvswitch: Literal["auto", "true", "false"] | None = None
    mig: MigConfig | None = None
    driver: PoolDriverConfig | None = Field(
        default=None,
        description="this node's own operator-managed driver (driverless hosts, gpuOperator.driver.owner: operator); "
        "unset keys come from gpuOperator.driver",
    )

    @property
    def parsed_taints(self) -> list[Taint]:
        """Taints as objects (only valid after ``problems`` found none)."""
        return [parse_taint(text) for text in self.taints]


class BareMetalConfig(ConfigModel):
    """The bare-metal nodes and their preparation."""

    ssh: SshConfig = SshConfig()
    host_preparation: HostPreparationConfig = HostPreparationConfig()
    nodes: list[BareMetalNode] = Field(min_length=1)

    def secret_keys(self) -> set[str]:
        """Secret config keys this section names."""
        keys = {self.ssh.private_key_secret}
        if self.ssh.bastion is not None and self.ssh.bastion.private_key_secret:
            keys.add(self.ssh.bastion.private_key_secret)
        return keys

    def problems(self, path: str) -> Iterator[Problem]:
        """Node names, addresses, pools, models, labels, taints, SSH users and kernel arguments."""
        yield from self._ssh_problems(join_path(path, "ssh"))
        seen: set[str] = set()
        addresses: dict[str, int] = {}
        for index, node in enumerate(self.nodes):
            node_path = join_path(path, "nodes", index)
            if not _NODE_NAME.match(node.name) or len(node.name) > 253:
                yield Problem(join_path(node_path, "name"), f"{node.name!r} is not a Kubernetes node name")
            if node.name in seen:
                yield Problem(join_path(node_path, "name"), f"node {node.name!r} is listed twice")
            seen.add(node.name)
            if node.address in addresses:
                yield Problem(
                    join_path(node_path, "address"),
                    f"{node.address} is also the address of bareMetal.nodes[{addresses[node.address]}]: "
                    "host preparation would run twice on one host",
                )
            addresses.setdefault(node.address, index)
            address_problem = host_problem(node.address)
            if address_problem:
                yield Problem(join_path(node_path, "address"), address_problem)
            pool_problem = label_value_problem(node.pool) if node.pool else "must not be empty"
            if pool_problem:
                yield Problem(join_path(node_path, "pool"), f"{pool_problem} (it becomes a node label value)")
            yield from _taint_problems(node, node_path)
            model_problem = gpu_model_problem(node.gpu_model)
            if model_problem:
                yield Problem(join_path(node_path, "gpuModel"), model_problem)
            gpu_count_problem = host_gpu_count_problem(node.gpu_model, node.gpus)
            if gpu_count_problem:
                yield Problem(join_path(node_path, "gpus"), gpu_count_problem)
            yield from label_problems(node.labels, join_path(node_path, "labels"))
            if node.driver is not None:
                yield from node.driver.problems(join_path(node_path, "driver"))
        prep = self.host_preparation
        containerd = _step_input_problem("container-toolkit", "CONTAINERD_CONFIG", prep.containerd_config)
        if containerd:
            yield Problem(join_path(path, "hostPreparation", "containerdConfig"), containerd)
        extra = frozenset(prep.extra_kernel_arg_names)
        for index, argument in enumerate(prep.kernel_args):
            problem = kernel_arg_problem(argument, extra)
            if not _KERNEL_ARG.match(argument):
                yield Problem(
                    join_path(path, "hostPreparation", "kernelArgs", index), f"{argument!r} is not name or name=value"
                )
            elif problem:
                yield Problem(join_path(path, "hostPreparation", "kernelArgs", index), problem)
            elif (
                argument.startswith("module.sig_enforce=")
                and argument != "module.sig_enforce=1"
                and not prep.allow_unsigned_modules
            ):
                yield Problem(
                    join_path(path, "hostPreparation", "kernelArgs", index),
                    f"{argument} lets the kernel load unsigned modules; set hostPreparation.allowUnsignedModules: true "
                    "to accept that, or sign the NVIDIA modules (enroll the key with mokutil)",
                )

    def _ssh_problems(self, path: str) -> Iterator[Problem]:
        users = [("user", self.ssh.user)]
        if self.ssh.bastion is not None:
            users.append(("bastion.user", self.ssh.bastion.user))
            problem = host_problem(self.ssh.bastion.host)
            if problem:
                yield Problem(join_path(path, "bastion", "host"), problem)
        for key, user in users:
            problem = user_name_problem(user)
            if problem:
                yield Problem(join_path(path, key), f"{problem} (it is part of the SSH command)")


def _step_input_problem(step: str, name: str, value: str) -> str | None:
    """Why the host cannot take ``value`` for the host-preparation step's input ``name``: a path its file system
    cannot open, or a value the step's own check refuses; None when it takes it."""
    path = file_path_problem(value)
    if path:
        return f"{value[:80]!r} {path}"
    try:
        steps.get_step(step).input(name).check(value)
    except steps.HostPrepInputError as error:
        shown = str(error).removeprefix(f"{name}: ").removeprefix(f"{value!r} is not valid: ")
        return f"{value[:80]!r} is refused by the {step} step's own input check ({name}): {shown}"
    return None


def host_problem(host: str) -> str | None:
    """Why ``host`` is neither an IP address nor a DNS name SSH can reach, or None."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return dns_subdomain_problem(host.lower())
    return None


def _taint_problems(node: BareMetalNode, node_path: str) -> Iterator[Problem]:
    """The catalog's taint rules (form, one taint per key and effect, a NoSchedule one on a GPU node)."""
    yield from gpu_node_taints_problems(
        node.taints,
        join_path(node_path, "taints"),
        allow_untainted=node.allow_untainted,
        fix="register the node with one (kubelet --register-with-taints, or kubectl taint) and declare it here, or "
        "set allowUntainted: true to accept any pod on it",
    )
