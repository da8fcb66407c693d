"""The HostPreparation ComponentResource: idempotent host steps over SSH, one command per step per host.

Each step is a self-contained bash script from ``components/bare_metal/scripts/`` (see
``components/bare_metal/host_prep_steps.py``) with its inputs exported at the top. A step re-runs when its
script or inputs change (the command text is its trigger); re-running is safe, and the script's
last line says what it changed. The private keys are Pulumi secrets and no script prints a secret.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pulumi
import pulumi_command as command

from components.bare_metal import host_prep_steps as steps
from components.bare_metal.config import BareMetalConfig, BareMetalNode
from components.catalog.drivers import DRIVER_CONTAINER_RUNS_HOST_SERVICES, OPERATOR_DRIVER_ROOT
from components.catalog.names import HOST_PREPARATION_TYPE


@dataclass(frozen=True)
class HostPreparationArgs:
    """Inputs: the bare-metal config, the driver facts to check, and the SSH keys (secrets).

    ``driverless``: the GPU Operator's driver container owns the driver, so ``driver-check`` verifies
    that the host has no driver of its own and ``nvidia-services`` does not run (the container runs
    persistenced and the fabric manager, ``catalog.drivers.DRIVER_CONTAINER_RUNS_HOST_SERVICES``).
    """

    config: BareMetalConfig
    required_min_driver: str
    expected_driver_version: str
    private_key: pulumi.Input[str]
    bastion_private_key: pulumi.Input[str] | None = None
    driverless: bool = False


HEREDOC_END = "__GPU_PLATFORM_STEP__"


def remote_command(script: str, become_root: bool) -> str:
    """The command sent over SSH: the script itself, or fed to ``sudo -n bash -s`` for a non-root user.

    ``sudo -n`` fails at once instead of waiting for a password prompt that nobody answers.
    """
    if not become_root:
        return script
    return f"sudo -n bash -s <<'{HEREDOC_END}'\n{script.rstrip()}\n{HEREDOC_END}\n"


def step_environment(
    config: BareMetalConfig, node: BareMetalNode, args: HostPreparationArgs
) -> dict[str, dict[str, str]]:
    """The inputs of every step for one node (validated by host_prep_steps before anything runs)."""
    prep = config.host_preparation
    env: dict[str, dict[str, str]] = {
        "nouveau": {
            "KERNEL_ARGS": " ".join(prep.kernel_args),
            "ALLOW_UNSIGNED_MODULES": str(prep.allow_unsigned_modules).lower(),
        },
        "sysctl": {"BPF_JIT_HARDEN": str(prep.bpf_jit_harden)},
        "driver-check": {"HOST_DRIVER": "absent", "OPERATOR_DRIVER_ROOT": OPERATOR_DRIVER_ROOT}
        if args.driverless
        else {
            "HOST_DRIVER": "required",
            "REQUIRED_MIN_DRIVER": args.required_min_driver,
            "EXPECTED_DRIVER_VERSION": args.expected_driver_version,
        },
        "nvidia-services": {"NVSWITCH": node.nvswitch or prep.nvswitch},
        "container-toolkit": {
            "CONTAINERD_CONFIG": prep.containerd_config,
            "SET_AS_DEFAULT": str(prep.set_as_default_runtime).lower(),
            "ENABLE_CDI": str(prep.enable_cdi).lower(),
        },
    }
    skipped = {"container-toolkit"} if not prep.configure_containerd else set()
    if args.driverless and DRIVER_CONTAINER_RUNS_HOST_SERVICES:
        skipped.add("nvidia-services")
    return {step.name: env[step.name] for step in steps.STEPS if step.name not in skipped}


class HostPreparation(pulumi.ComponentResource):
    """Prepares every bare-metal GPU node; the GPU Operator depends on it."""

    commands: dict[str, list[command.remote.Command]]

    def __init__(self, name: str, args: HostPreparationArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(HOST_PREPARATION_TYPE, name, None, opts)
        config = args.config
        self.commands = {}
        keys = _SshKeys.of(args)
        for node in config.nodes:
            previous: list[pulumi.Resource] = []
            self.commands[node.name] = []
            connection = _connection(config, node, keys)
            for step_name, env in step_environment(config, node, args).items():
                text = remote_command(steps.command_text(step_name, env), config.ssh.become_root)
                digest = hashlib.sha256(text.encode()).hexdigest()
                run = command.remote.Command(
                    f"{name}-{node.name}-{step_name}",
                    connection=connection,
                    create=text,
                    triggers=[digest],
                    logging=command.remote.Logging.STDOUT_AND_STDERR,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=previous),
                )
                self.commands[node.name].append(run)
                previous = [run]
        self.register_outputs({"nodes": sorted(self.commands)})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a dependent waits for: each host's last step (the steps of a host run in order).

        Never the component itself: the SDK expands a component to every child, one edge per step.
        """
        return [commands[-1] for commands in self.commands.values() if commands]


@dataclass(frozen=True)
class _SshKeys:
    """The SSH private keys as secret Outputs, made once for the whole fleet."""

    node: pulumi.Output[str]
    bastion: pulumi.Output[str]

    @classmethod
    def of(cls, args: HostPreparationArgs) -> _SshKeys:
        node = pulumi.Output.secret(args.private_key)
        bastion = node if args.bastion_private_key is None else pulumi.Output.secret(args.bastion_private_key)
        return cls(node=node, bastion=bastion)


def _connection(
    config: BareMetalConfig, node: BareMetalNode, keys: _SshKeys
) -> pulumi.Output[command.remote.ConnectionArgs]:
    """One node's SSH connection as one Output, shared by the node's steps.

    Why one Output and not ``ConnectionArgs`` with a secret inside: pulumi-command wraps every
    ``connection`` in ``Output.secret``, which walks an input type field by field and makes an Output of
    each; an Output that already holds the whole connection passes through. The registered connection is
    the same (one secret object), and a fleet of hosts registers in a fraction of the time.
    """
    ssh = config.ssh
    bastion = ssh.bastion

    def connection_args(node_key: str, bastion_key: str) -> command.remote.ConnectionArgs:
        proxy = None
        if bastion is not None:
            proxy = command.remote.ProxyConnectionArgs(
                host=bastion.host, user=bastion.user, port=bastion.port, private_key=bastion_key
            )
        return command.remote.ConnectionArgs(
            host=node.address, user=ssh.user, port=ssh.port, private_key=node_key, proxy=proxy
        )

    return pulumi.Output.secret(pulumi.Output.all(keys.node, keys.bastion).apply(lambda both: connection_args(*both)))
