"""Config model of a bare-metal GPU estate (``bareMetal`` in the stack file).

Existing Kubernetes nodes reached over SSH for host preparation. The driver lives on the host, so
the GPU Operator runs with ``driver.enabled=false`` and ``gpuOperator.hostDriver.version`` declares
the version every host must report. SSH keys are secret config keys, never inline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from components.base.config_model import ConfigModel, label_problems
from components.base.problems import Problem, join_path
from components.catalog.gpus import GPU_MODELS
from components.catalog.kubernetes import TaintFormatError, parse_taint
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


class BareMetalNode(ConfigModel):
    """One existing GPU node: its Kubernetes node name, how to reach it, what it carries."""

    name: str
    address: str = Field(min_length=1)
    gpu_model: str
    gpus: int = Field(ge=1, le=16)
    pool: str = "bare-metal"
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[str] = Field(default_factory=list, description="taints the node already carries (for tolerations)")
    nvswitch: Literal["auto", "true", "false"] | None = None
    mig: MigConfig | None = None


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
        """Node names, models, labels, taints and kernel arguments."""
        seen: set[str] = set()
        for index, node in enumerate(self.nodes):
            node_path = join_path(path, "nodes", index)
            if not _NODE_NAME.match(node.name) or len(node.name) > 253:
                yield Problem(join_path(node_path, "name"), f"{node.name!r} is not a Kubernetes node name")
            if node.name in seen:
                yield Problem(join_path(node_path, "name"), f"node {node.name!r} is listed twice")
            seen.add(node.name)
            if node.gpu_model not in GPU_MODELS:
                allowed = ", ".join(GPU_MODELS)
                yield Problem(
                    join_path(node_path, "gpuModel"), f"{node.gpu_model!r} is not a known GPU model; allowed: {allowed}"
                )
            yield from label_problems(node.labels, join_path(node_path, "labels"))
            for taint_index, text in enumerate(node.taints):
                try:
                    parse_taint(text)
                except TaintFormatError as error:
                    yield Problem(join_path(node_path, "taints", taint_index), str(error))
        prep = self.host_preparation
        for index, argument in enumerate(prep.kernel_args):
            if not _KERNEL_ARG.match(argument):
                yield Problem(
                    join_path(path, "hostPreparation", "kernelArgs", index), f"{argument!r} is not name or name=value"
                )
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
