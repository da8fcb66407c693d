"""A fake RHEL GPU host for the host-prep scripts.

``FakeHost`` gives a script a temporary root (``HOST_ROOT``) and a PATH made of stub binaries plus
symlinks to the few real tools the scripts may use, nothing else: a script calling a tool that is
neither stubbed nor declared fails here instead of passing by luck on the build machine.

The stubs are this file run as a program (``python hostprep_fakes.py <tool> args...``). Each one
appends its argv to a call log and acts on the fake host the way the real tool would where a
script can notice: ``modprobe -r`` removes ``/sys/module/nouveau``, ``sysctl -p`` writes
``/proc/sys``, ``nvidia-ctk`` rewrites containerd files (every time, like the real one),
``systemctl`` keeps unit states, ``nvidia-smi`` answers queries from rows captured on a real H200
(``tests/fixtures/nvidia-smi/``). Stub state lives outside ``HOST_ROOT`` so scripts cannot see it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
THIS_FILE = Path(__file__).resolve()

STUBS = ("dracut", "grubby", "modprobe", "sysctl", "nvidia-ctk", "systemctl", "nvidia-smi")
OPTIONAL_STUBS = ("nv-fabricmanager", "lspci")
"""Installed only when the test says the host has them."""

HOST_TOOLS = ("bash", "cat", "cmp", "chmod", "dirname", "mkdir", "mktemp", "mv", "rm", "sha256sum")
"""The real tools the scripts may use (lib.sh documents the same list)."""

GRUB_ENTRIES = (
    ("/boot/vmlinuz-5.14.0-503.11.1.el9_5.x86_64", "Red Hat Enterprise Linux (5.14.0-503.11.1.el9_5.x86_64) 9.5"),
    ("/boot/vmlinuz-0-rescue-0123456789abcdef", "Red Hat Enterprise Linux (0-rescue-0123456789abcdef) 9.5"),
)
BOOT_ARGS = "ro crashkernel=1G-4G:192M,4G-64G:256M rd.lvm.lv=rhel/root rhgb quiet"


@dataclass(frozen=True)
class RunResult:
    """What a script run returned."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def stdout_lines(self) -> list[str]:
        return self.stdout.splitlines()


def _fixture_query_rows() -> list[dict[str, str]]:
    """The real H200 row of --query-gpu, as {field: value}."""
    lines = (FIXTURES / "query-gpu-device-id.csv").read_text().splitlines()
    header = [h.split("[")[0].strip() for h in lines[0].split(",")]
    return [dict(zip(header, (v.strip() for v in line.split(",")), strict=True)) for line in lines[1:]]


class FakeHost:
    """A temp-dir host: an H200 with driver 580.159.04 loaded, containerd running,
    nvidia-persistenced installed but disabled, no NVSwitch, bpf_jit_harden=2 (a CIS-hardened
    default), nouveau not loaded."""

    def __init__(self, base: Path) -> None:
        self.root = base / "host"
        self.bin = base / "bin"
        self.tools = base / "tools"
        self.state_dir = base / "fake-state"
        for path in (self.root, self.bin, self.tools, self.state_dir):
            path.mkdir(parents=True)
        for tool in HOST_TOOLS:
            found = shutil.which(tool)
            if found is None:
                raise RuntimeError(f"the tests need {tool} on the build machine")
            (self.tools / tool).symlink_to(found)
        self.bash = str(self.tools / "bash")
        for stub in STUBS:
            self._write_stub(stub)
        rows = _fixture_query_rows()
        self._save(
            {
                "flags": [],
                "grub": [{"kernel": k, "title": t, "args": BOOT_ARGS} for k, t in GRUB_ENTRIES],
                "units": {
                    "containerd": {"enabled": True, "active": True},
                    "nvidia-persistenced": {"enabled": False, "active": False},
                },
                "smi": {"rows": rows, "error": None, "rc": 0},
                "fabricmanager": None,
                "lspci": None,
            }
        )
        self.set_driver(rows[0]["driver_version"])
        self.write("proc/cmdline", f"BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-503.11.1.el9_5.x86_64 {BOOT_ARGS}\n")
        self.write("proc/sys/net/core/bpf_jit_harden", "2\n")
        self.write("etc/containerd/config.toml", 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n')

    # -- state shared with the stubs ---------------------------------------------------------

    @property
    def _state_file(self) -> Path:
        return self.state_dir / "state.json"

    def _load(self) -> dict[str, Any]:
        return json.loads(self._state_file.read_text())

    def _save(self, state: dict[str, Any]) -> None:
        self._state_file.write_text(json.dumps(state, indent=1))
        for stub, key in (("nv-fabricmanager", "fabricmanager"), ("lspci", "lspci")):
            if state.get(key) is None:
                (self.bin / stub).unlink(missing_ok=True)
            else:
                self._write_stub(stub)

    def _write_stub(self, name: str) -> None:
        stub = self.bin / name
        stub.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{THIS_FILE}' '{name}' \"$@\"\n")
        stub.chmod(0o755)

    def _update(self, **changes: Any) -> None:
        state = self._load()
        state.update(changes)
        self._save(state)

    # -- arranging the host ------------------------------------------------------------------

    def path(self, relative: str) -> Path:
        return self.root / relative

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def read(self, relative: str) -> str:
        return (self.root / relative).read_text()

    def set_flag(self, flag: str, on: bool = True) -> None:
        """Make a stub fail: dracut-fail, modprobe-busy, ctk-fail, sysctl-ignored."""
        flags = set(self._load()["flags"])
        flags = flags | {flag} if on else flags - {flag}
        self._update(flags=sorted(flags))

    def set_driver(self, version: str, *, kernel_module: str | None = None) -> None:
        """User-space driver ``version`` on every GPU; the loaded module ``kernel_module`` (default the same)."""
        smi = self._load()["smi"]
        for row in smi["rows"]:
            row["driver_version"] = version
        self._update(smi=smi)
        nvrm = (FIXTURES / "proc-driver-version.txt").read_text()
        real = nvrm.split()[nvrm.split().index("x86_64") + 1]
        self.write("proc/driver/nvidia/version", nvrm.replace(real, kernel_module or version))

    def set_gpu_count(self, count: int) -> None:
        """``count`` copies of the captured H200 (an HGX board has 8)."""
        smi = self._load()["smi"]
        template = smi["rows"][0]
        rows = []
        for index in range(count):
            row = dict(template)
            row["index"] = str(index)
            row["pci.bus_id"] = f"00000000:{0x18 + index:02X}:00.0"
            rows.append(row)
        smi["rows"] = rows
        self._update(smi=smi)

    def set_row(self, index: int, fields: dict[str, str]) -> None:
        """Override --query-gpu fields (by nvidia-smi field name) of one GPU."""
        smi = self._load()["smi"]
        smi["rows"][index].update(fields)
        self._update(smi=smi)

    def break_nvml(self, message: str, rc: int) -> None:
        """nvidia-smi prints ``message`` and exits ``rc`` for every query."""
        smi = self._load()["smi"]
        smi.update(error=message, rc=rc)
        self._update(smi=smi)

    def set_unit(self, name: str, *, installed: bool = True, **fields: bool) -> None:
        units = self._load()["units"]
        if not installed:
            units.pop(name, None)
        else:
            units.setdefault(name, {"enabled": False, "active": False}).update(fields)
        self._update(units=units)

    def unit(self, name: str) -> dict[str, bool] | None:
        unit: dict[str, bool] | None = self._load()["units"].get(name)
        return unit

    def install_fabricmanager(self, version: str | None) -> None:
        """Install nv-fabricmanager at ``version`` with a disabled unit (None: not installed)."""
        self._update(fabricmanager=version)
        self.set_unit("nvidia-fabricmanager", installed=version is not None)

    def set_lspci(self, lines: list[str] | None) -> None:
        """``lspci -n -d 10de:`` output lines; None: pciutils not installed."""
        self._update(lspci=lines)

    def add_nvswitch_devices(self, count: int = 4) -> None:
        for index in range(count):
            self.write(f"dev/nvidia-nvswitch{index}", "")

    def load_nouveau(self) -> None:
        (self.root / "sys/module/nouveau").mkdir(parents=True, exist_ok=True)

    def reboot(self) -> None:
        """The kernel command line becomes what grubby configured; modules start unloaded."""
        args = self._load()["grub"][0]["args"]
        self.write("proc/cmdline", f"BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-503.11.1.el9_5.x86_64 {args}\n")
        shutil.rmtree(self.root / "sys/module/nouveau", ignore_errors=True)

    def set_grub_args(self, entry: int, args: str) -> None:
        grub = self._load()["grub"]
        grub[entry]["args"] = args
        self._update(grub=grub)

    def grub_args(self) -> list[str]:
        return [entry["args"] for entry in self._load()["grub"]]

    # -- running scripts and reading what they did -------------------------------------------

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": f"{self.bin}:{self.tools}",
            "HOST_ROOT": str(self.root),
            "FAKEHOST_STATE": str(self.state_dir),
            "LANG": "C",
        }
        env.update(extra or {})
        return env

    def run(self, step: str, env: dict[str, str] | None = None, *, as_argument: bool = False) -> RunResult:
        """Run the step as the component will: ``command_text`` (inputs exported at its top) on
        the stdin of ``bash -s``, or with ``as_argument`` as ``bash -c <text>`` (what sshd does
        with a Command's ``create`` when the login shell is bash). Inputs are validated first."""
        from components.bare_metal.host_prep_steps import command_text

        text = command_text(step, env)
        if as_argument:
            return self._bash(["-c", text], None, self._env())
        return self._bash(["-s"], text, self._env())

    def run_unchecked(self, step: str, env: dict[str, str]) -> RunResult:
        """Run the shipped script text with inputs in the process environment, skipping the
        Python-side validation: what the script itself does with a bad input."""
        from components.bare_metal.host_prep_steps import script_text

        return self._bash(["-s"], script_text(step), self._env(env))

    def run_from_disk(self, script: Path, env: dict[str, str] | None = None) -> RunResult:
        """Run a script file from the checkout (it sources lib.sh next to it)."""
        return self._bash([str(script)], None, self._env(env))

    def _bash(self, args: list[str], stdin: str | None, env: dict[str, str]) -> RunResult:
        proc = subprocess.run(
            [self.bash, *args], input=stdin, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        return RunResult(proc.returncode, proc.stdout, proc.stderr)

    def run_tool(self, *argv: str) -> RunResult:
        """Run a stub directly, as an admin on the host would have (e.g. nvidia-ctk by hand)."""
        proc = subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]], env=self._env(), capture_output=True, text=True, check=False
        )
        return RunResult(proc.returncode, proc.stdout, proc.stderr)

    def remove_tool(self, name: str) -> None:
        """The host lacks ``name`` (its package is not installed)."""
        (self.bin / name).unlink()

    def forget_calls(self) -> None:
        (self.state_dir / "calls.jsonl").unlink(missing_ok=True)

    def calls(self, tool: str | None = None) -> list[list[str]]:
        """Every stub call so far, as [tool, *args], optionally only those of ``tool``."""
        log = self.state_dir / "calls.jsonl"
        if not log.exists():
            return []
        calls = [json.loads(line) for line in log.read_text().splitlines()]
        return [call for call in calls if tool is None or call[0] == tool]

    def calls_matching(self, tool: str, *args: str) -> int:
        """How many calls of ``tool`` had exactly ``args``."""
        return sum(1 for call in self.calls(tool) if call[1:] == list(args))


# =============================================================================================
# The stubs (this file run as a program)
# =============================================================================================


class _Stub:
    def __init__(self, name: str, args: list[str]) -> None:
        self.name = name
        self.args = args
        self.state_dir = Path(os.environ["FAKEHOST_STATE"])
        root = os.environ.get("HOST_ROOT", "")
        if not root or root == "/":
            raise SystemExit(f"fake {name}: refusing to act without a fake HOST_ROOT")
        self.root = Path(root)
        self.state: dict[str, Any] = json.loads((self.state_dir / "state.json").read_text())
        with (self.state_dir / "calls.jsonl").open("a") as log:
            log.write(json.dumps([name, *args]) + "\n")

    def save(self) -> None:
        (self.state_dir / "state.json").write_text(json.dumps(self.state, indent=1))

    def flag(self, name: str) -> bool:
        return name in self.state["flags"]

    @staticmethod
    def err(text: str) -> None:
        print(text, file=sys.stderr)


def _dracut(stub: _Stub) -> int:
    if stub.flag("dracut-fail"):
        stub.err("dracut: Cannot find module directory /lib/modules/5.14.0-503.11.1.el9_5.x86_64/")
        return 1
    return 0


def _grubby(stub: _Stub) -> int:
    args = stub.args
    if args == ["--info=ALL"]:
        for index, entry in enumerate(stub.state["grub"]):
            print(f"index={index}")
            print(f'kernel="{entry["kernel"]}"')
            print(f'args="{entry["args"]}"')
            print('root="/dev/mapper/rhel-root"')
            print(f'title="{entry["title"]}"')
        return 0
    if len(args) == 2 and args[0] == "--update-kernel=ALL" and args[1].startswith("--args="):
        new = args[1].removeprefix("--args=").split()
        for entry in stub.state["grub"]:
            tokens = entry["args"].split()
            for token in new:
                key = token.split("=", 1)[0]
                tokens = [t for t in tokens if t.split("=", 1)[0] != key]
                tokens.append(token)
            entry["args"] = " ".join(tokens)
        stub.save()
        return 0
    stub.err(f"grubby: fake does not handle {args}")
    return 64


def _modprobe(stub: _Stub) -> int:
    if stub.args == ["-r", "nouveau"]:
        if stub.flag("modprobe-busy"):
            stub.err("modprobe: FATAL: Module nouveau is in use.")
            return 1
        shutil.rmtree(stub.root / "sys/module/nouveau", ignore_errors=True)
        return 0
    stub.err(f"modprobe: fake does not handle {stub.args}")
    return 64


def _sysctl(stub: _Stub) -> int:
    if len(stub.args) == 2 and stub.args[0] == "-p":
        for raw in Path(stub.args[1]).read_text().splitlines():
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            key, _, value = (part.strip() for part in line.partition("="))
            if not stub.flag("sysctl-ignored"):
                target = stub.root / "proc/sys" / key.lstrip("-").replace(".", "/")
                target.write_text(value + "\n")
            print(f"{key} = {value}")
        return 0
    stub.err(f"sysctl: fake does not handle {stub.args}")
    return 64


_NVIDIA_RUNTIME = """[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
"""


def _nvidia_ctk(stub: _Stub) -> int:
    args = stub.args
    if args[:2] != ["runtime", "configure"]:
        stub.err(f"nvidia-ctk: fake does not handle {args}")
        return 64
    options: dict[str, str] = {}
    for arg in args[2:]:
        key, _, value = arg.removeprefix("--").partition("=")
        options[key] = value
    if options.get("runtime") != "containerd" or "config" not in options:
        stub.err(f"nvidia-ctk: fake needs --runtime=containerd and --config: {args}")
        return 64
    if stub.flag("ctk-fail"):
        stub.err('level=error msg="unable to load config for runtime containerd: invalid TOML"')
        return 1
    runtime = _NVIDIA_RUNTIME
    if "set-as-default" in options:
        runtime = '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n\n' + runtime
    if "cdi.enabled" in options:
        runtime = '[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n\n' + runtime
    config = Path(options["config"])
    text = config.read_text() if config.exists() else "version = 2\n"
    if "drop-in-config" in options:
        drop_in = Path(options["drop-in-config"])
        drop_in.parent.mkdir(parents=True, exist_ok=True)
        drop_in.write_text("version = 2\n\n" + runtime)
        imports = f'imports = ["{drop_in.parent}/*.toml"]\n'
        if imports not in text:
            text = imports + text
        stub.err(f"INFO[0000] Wrote updated config to {drop_in}")
    elif _NVIDIA_RUNTIME not in text:
        text = text + "\n" + runtime
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)  # rewritten every time, like the real tool
    stub.err("INFO[0000] It is recommended that containerd daemon be restarted.")
    return 0


def _systemctl(stub: _Stub) -> int:
    args = [a for a in stub.args if a not in ("--quiet", "--no-pager")]
    quiet = "--quiet" in stub.args
    if len(args) < 2:
        stub.err(f"systemctl: fake does not handle {stub.args}")
        return 64
    verb, unit_name = args[0], args[-1].removesuffix(".service")
    units = stub.state["units"]
    unit = units.get(unit_name)
    if verb == "is-enabled":
        state = "not-found" if unit is None else ("enabled" if unit["enabled"] else "disabled")
        print(state)
        return 0 if state == "enabled" else 1
    if verb == "is-active":
        active = unit is not None and unit["active"]
        if not quiet:
            print("active" if active else "inactive")
        return 0 if active else 3
    if unit is None:
        stub.err(f"Failed to {verb} unit: Unit file {unit_name}.service does not exist.")
        return 5
    if verb == "enable":
        unit["enabled"] = True
        stub.err(f"Created symlink /etc/systemd/system/multi-user.target.wants/{unit_name}.service.")
    if verb in ("start", "restart") or (verb == "enable" and "--now" in args):
        if unit.get("fail_start"):
            unit["active"] = False
            stub.save()
            stub.err(f"Job for {unit_name}.service failed because the control process exited with error code.")
            return 1
        unit["active"] = True
    elif verb != "enable":
        stub.err(f"systemctl: fake does not handle {stub.args}")
        return 64
    stub.save()
    return 0


def _nvidia_smi(stub: _Stub) -> int:
    smi = stub.state["smi"]
    if smi["error"]:
        print(smi["error"])  # nvidia-smi prints its errors on stdout
        return int(smi["rc"])
    rows = smi["rows"]
    if stub.args == ["--version"]:
        text = (FIXTURES / "version.txt").read_text()
        real = text.splitlines()[0].split(":")[1].strip()
        print(text.replace(real, rows[0]["driver_version"]), end="")
        return 0
    query = [a for a in stub.args if a.startswith("--query-gpu=")]
    formats = [a for a in stub.args if a.startswith("--format=")]
    if len(query) != 1 or formats != ["--format=csv,noheader"] or len(stub.args) != 2:
        stub.err(f"nvidia-smi: fake does not handle {stub.args}")
        return 64
    fields = query[0].removeprefix("--query-gpu=").split(",")
    for name in fields:
        if name not in rows[0]:
            print(f'Field "{name}" is not a valid field to query.')
            return 2
    for row in rows:
        print(", ".join(row[name] for name in fields))
    return 0


def _nv_fabricmanager(stub: _Stub) -> int:
    if stub.args == ["--version"]:
        print(f"Fabric Manager version is : {stub.state['fabricmanager']}")
        return 0
    stub.err(f"nv-fabricmanager: fake does not handle {stub.args}")
    return 64


def _lspci(stub: _Stub) -> int:
    if stub.args == ["-n", "-d", "10de:"]:
        for line in stub.state["lspci"]:
            print(line)
        return 0
    stub.err(f"lspci: fake does not handle {stub.args}")
    return 64


_HANDLERS = {
    "dracut": _dracut,
    "grubby": _grubby,
    "modprobe": _modprobe,
    "sysctl": _sysctl,
    "nvidia-ctk": _nvidia_ctk,
    "systemctl": _systemctl,
    "nvidia-smi": _nvidia_smi,
    "nv-fabricmanager": _nv_fabricmanager,
    "lspci": _lspci,
}


def main(argv: list[str]) -> int:
    stub = _Stub(argv[1], argv[2:])
    return _HANDLERS[stub.name](stub)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
