"""The bare-metal host preparation steps, described for the component that runs them over SSH.

Pure Python, no Pulumi import: the host-preparation component turns each step into one
``pulumi_command.remote.Command`` per host, and tests read the same description.

How a step is meant to run. ``command_text(step, env)`` is the whole command: the step's bash
script with ``lib.sh`` inlined (see ``components/bare_metal/scripts/lib.sh``) and the inputs as
``export NAME='value'`` lines at the top. Pass it as ``create`` (the host's login shell must be bash,
as root's is on RHEL) or as ``stdin`` of ``create="sudo bash -s"``. The inputs travel inside the
text, not through the Command's ``environment``, because sshd drops client variables that are not in
its ``AcceptEnv`` list (RHEL accepts only LANG and LC_*). A side effect the component relies on: a
change to a script, to lib.sh or to an input changes the text, and pulumi-command re-runs the step.
No input is a secret, and none may be: the text is stored in the Pulumi state.

Reading the result: ``parse_changed(stdout)`` (what the run changed; empty on a re-run of a prepared
host), ``parse_facts(stdout)`` (``key=value`` lines such as ``driver_version``) and
``parse_errors(stdout)`` (why it failed). Exit status 1 means the host is not acceptable, 2 an input
is invalid.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
LIB_SCRIPT = "lib.sh"
_INLINE_MARKER = "# host-prep:inline lib.sh"

_VERSION = r"(\d+(\.\d+){0,3})?"
_ABS_PATH = r"/[^\s'\"]*"
_KERNEL_ARG = r"[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:/@+-]*)?"
_KERNEL_ARGS = rf"\s*({_KERNEL_ARG}(\s+{_KERNEL_ARG})*\s*)?"
_SIG_ENFORCE_OFF = re.compile(r"(^|\s)module\.sig_enforce=(?!(1|y|Y|on)(\s|$))")
_UNIT = r"[A-Za-z0-9@._-]+"


class HostPrepInputError(ValueError):
    """An input that a step does not take, or a value the step would refuse on the host."""


class HostPrepOutputError(ValueError):
    """Step output that does not follow the protocol (the script did not finish)."""


@dataclass(frozen=True)
class StepInput:
    """One environment variable a step reads.

    ``default`` is what the script uses when the variable is unset ("" means "none"); ``choices``
    and ``pattern`` repeat the script's own validation so that a bad value fails at preview time,
    not on the host.
    """

    name: str
    default: str
    description: str
    choices: tuple[str, ...] = ()
    pattern: str | None = None

    def check(self, value: str) -> None:
        """Raise HostPrepInputError when the script would refuse ``value``."""
        if "\n" in value or "\x00" in value:
            raise HostPrepInputError(f"{self.name}: the value must be a single line")
        if self.choices and value not in self.choices:
            allowed = ", ".join(self.choices)
            raise HostPrepInputError(f"{self.name} must be one of: {allowed} (got {value!r})")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise HostPrepInputError(f"{self.name}: {value!r} is not valid: {self.description}")


@dataclass(frozen=True)
class HostPrepStep:
    """One host preparation step: a script in SCRIPTS_DIR, its inputs, what it can report."""

    name: str
    script: str
    purpose: str
    inputs: tuple[StepInput, ...]
    changes: tuple[str, ...]
    """Names the step can print in its ``changed:`` line; empty for a pure check."""
    cross_check: Callable[[Mapping[str, str]], None] | None = None
    """A rule between inputs that the script also enforces, run here to fail at preview time."""

    def input(self, name: str) -> StepInput:
        """The input called ``name``; the error lists the ones the step takes."""
        for step_input in self.inputs:
            if step_input.name == name:
                return step_input
        taken = ", ".join(i.name for i in self.inputs) or "none"
        raise HostPrepInputError(f"step {self.name!r} takes no input {name!r}; it takes: {taken}")


_BOOL = ("true", "false")


def _unsigned_modules_need_permission(values: Mapping[str, str]) -> None:
    """nouveau.sh refuses to turn module signature checking off unless explicitly allowed."""
    if _SIG_ENFORCE_OFF.search(values["KERNEL_ARGS"]) and values["ALLOW_UNSIGNED_MODULES"] != "true":
        raise HostPrepInputError(
            "KERNEL_ARGS turns module.sig_enforce off, which lets the kernel load unsigned modules; "
            "set ALLOW_UNSIGNED_MODULES=true to accept that"
        )


STEPS: tuple[HostPrepStep, ...] = (
    HostPrepStep(
        name="nouveau",
        script="nouveau.sh",
        purpose="blacklist nouveau, rebuild the initramfs when that changed, add kernel arguments",
        inputs=(
            StepInput(
                "KERNEL_ARGS",
                "",
                "kernel arguments to add to every boot entry, space separated name or name=value",
                pattern=_KERNEL_ARGS,
            ),
            StepInput(
                "ALLOW_UNSIGNED_MODULES",
                "false",
                "true to accept module.sig_enforce=0 in KERNEL_ARGS (the kernel then loads unsigned modules)",
                choices=_BOOL,
            ),
        ),
        changes=("nouveau-blacklist", "initramfs", "nouveau-unloaded", "kernel-args"),
        cross_check=_unsigned_modules_need_permission,
    ),
    HostPrepStep(
        name="sysctl",
        script="sysctl.sh",
        purpose="persist and apply net.core.bpf_jit_harden (2 breaks nvidia-container-cli)",
        inputs=(StepInput("BPF_JIT_HARDEN", "1", "0 or 1; 2 breaks GPU containers", choices=("0", "1")),),
        changes=("sysctl-conf", "sysctl-live"),
    ),
    HostPrepStep(
        name="driver-check",
        script="driver-check.sh",
        purpose="fail unless the host driver is loaded consistently and is the declared version "
        "(HOST_DRIVER=absent: unless the host has no driver of its own)",
        inputs=(
            StepInput(
                "HOST_DRIVER",
                "required",
                "required: the host's driver is checked; absent: driverless host, no host driver may be there",
                choices=("required", "absent"),
            ),
            StepInput(
                "OPERATOR_DRIVER_ROOT",
                "/run/nvidia/driver",
                "with HOST_DRIVER=absent: where the GPU Operator's driver container puts the driver (absolute path)",
                pattern=_ABS_PATH,
            ),
            StepInput(
                "REQUIRED_MIN_DRIVER",
                "",
                "lowest acceptable driver version such as 580.65.06, or empty",
                pattern=_VERSION,
            ),
            StepInput(
                "EXPECTED_DRIVER_VERSION",
                "",
                "the exact driver version the host must have, or empty",
                pattern=_VERSION,
            ),
        ),
        changes=(),
    ),
    HostPrepStep(
        name="nvidia-services",
        script="nvidia-services.sh",
        purpose="nvidia-persistenced running; on NVSwitch hosts nvidia-fabricmanager at the driver version",
        inputs=(StepInput("NVSWITCH", "auto", "whether the host has NVSwitches", choices=("auto", "true", "false")),),
        changes=("nvidia-persistenced", "nvidia-fabricmanager"),
    ),
    HostPrepStep(
        name="container-toolkit",
        script="container-toolkit.sh",
        purpose="register the nvidia runtime with containerd; restart containerd only if its config changed",
        inputs=(
            StepInput(
                "CONTAINERD_CONFIG",
                "/etc/containerd/config.toml",
                "containerd's main config file, an absolute path",
                pattern=_ABS_PATH,
            ),
            StepInput(
                "CTK_DROP_IN_CONFIG",
                "/etc/containerd/conf.d/99-nvidia.toml",
                "the drop-in nvidia-ctk writes (absolute path), or 'none' for nvidia-container-toolkit < 1.18",
                pattern=f"none|{_ABS_PATH}",
            ),
            StepInput("CONTAINERD_SERVICE", "containerd", "the systemd unit to restart", pattern=_UNIT),
            StepInput("SET_AS_DEFAULT", "true", "make nvidia containerd's default runtime", choices=_BOOL),
            StepInput("ENABLE_CDI", "false", "also enable CDI in containerd", choices=_BOOL),
        ),
        changes=("containerd-config", "containerd-restart"),
    ),
)
"""In the order a host should run them: the driver check needs nouveau gone (a reboot may sit in
between), the services need the driver, and containerd is restarted last."""

_BY_NAME = {step.name: step for step in STEPS}


def get_step(name: str) -> HostPrepStep:
    """The step called ``name``; the error lists every step."""
    try:
        return _BY_NAME[name]
    except KeyError:
        known = ", ".join(_BY_NAME)
        raise HostPrepInputError(f"unknown host preparation step {name!r}; steps: {known}") from None


def _resolve(step: HostPrepStep | str) -> HostPrepStep:
    return get_step(step) if isinstance(step, str) else step


def script_text(step: HostPrepStep | str) -> str:
    """The step's script with lib.sh inlined: one self-contained bash script.

    The script sources lib.sh on a line ending in the inline marker; that line is replaced by the
    text of lib.sh, so nothing but this text has to reach the host.
    """
    return _inlined_script(_resolve(step).script)


@functools.cache
def _inlined_script(script: str) -> str:
    """``script_text`` of one script file, read once per process (a fleet asks for each step once per host)."""
    lines = (SCRIPTS_DIR / script).read_text(encoding="utf-8").splitlines(keepends=True)
    marked = [i for i, line in enumerate(lines) if line.rstrip().endswith(_INLINE_MARKER)]
    if len(marked) != 1:
        raise HostPrepOutputError(f"{script} must source lib.sh on exactly one line ending in {_INLINE_MARKER!r}")
    lib_lines = (SCRIPTS_DIR / LIB_SCRIPT).read_text(encoding="utf-8").splitlines(keepends=True)
    if lib_lines and lib_lines[0].startswith("# shellcheck shell="):
        lib_lines = lib_lines[1:]
    inlined = [
        f"# ---- begin {LIB_SCRIPT} (inlined by host_prep_steps.script_text) ----\n",
        *lib_lines,
        f"# ---- end {LIB_SCRIPT} ----\n",
    ]
    index = marked[0]
    return "".join(lines[:index] + inlined + lines[index + 1 :])


def resolve_env(step: HostPrepStep | str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every input of the step with its value: ``env`` where given, else the script's default.

    Raises HostPrepInputError for a name the step does not take (a typo would otherwise be
    silently ignored on the host) and for a value the script would refuse.
    """
    step = _resolve(step)
    given = dict(env or {})
    for name in given:
        step.input(name)
    values: dict[str, str] = {}
    for step_input in step.inputs:
        value = given.get(step_input.name, step_input.default)
        if not isinstance(value, str):
            raise HostPrepInputError(f"{step_input.name}: the value must be a string, got {value!r}")
        step_input.check(value)
        values[step_input.name] = value
    if step.cross_check is not None:
        step.cross_check(values)
    return values


def command_text(step: HostPrepStep | str, env: Mapping[str, str] | None = None) -> str:
    """The full command for one host: ``export`` lines for every input, then the script.

    Every input is written out, defaults included, so that a default changed here also changes
    the command and re-runs the step.
    """
    step = _resolve(step)
    exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in resolve_env(step, env).items())
    text = script_text(step)
    if text.startswith("#!"):
        shebang, _, rest = text.partition("\n")
        return f"{shebang}\n{exports}{rest}"
    return exports + text


def parse_changed(stdout: str) -> list[str]:
    """What the run changed, from its last ``changed:`` line; ``[]`` for ``changed: nothing``.

    Raises HostPrepOutputError when there is no such line: the script was killed, or the output
    was cut, and nothing can be said about what it did.
    """
    for line in reversed(stdout.splitlines()):
        text = line.strip()
        if text.startswith("changed:"):
            rest = text.removeprefix("changed:").strip()
            if rest == "nothing":
                return []
            return [item.strip() for item in rest.split(",") if item.strip()]
    raise HostPrepOutputError("no 'changed:' line in the step output: the script did not finish")


_FACT = re.compile(r"^([a-z0-9_.]+)=(.*)$")


def parse_facts(stdout: str) -> dict[str, str]:
    """The ``key=value`` lines of a step's stdout (a later line wins over an earlier one)."""
    facts: dict[str, str] = {}
    for line in stdout.splitlines():
        match = _FACT.match(line.rstrip("\r"))
        if match:
            facts[match.group(1)] = match.group(2)
    return facts


def parse_errors(stdout: str) -> list[str]:
    """The reasons a step gave for failing (its ``error:`` lines), in order."""
    return [line.removeprefix("error:").strip() for line in stdout.splitlines() if line.startswith("error:")]
