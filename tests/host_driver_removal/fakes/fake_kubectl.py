"""Fake ``kubectl`` backed by a JSON file, for the host-driver-removal behaviour tests.

It answers exactly the subcommands the script uses (get/patch/create/replace/create --raw) with the same output
shapes and error messages as a real API server, including the checks the script relies on for safety:
optimistic concurrency on Lease replace (409 Conflict), AlreadyExists on create, PDB-blocked evictions (429),
label value validation and the rule that Events about a Node must live in namespace ``default``. It also plays
the GPU Operator: paused operand labels remove their pods from the node, and ``nvidia.com/gpu.deploy.driver=true``
makes the operator's validator write ``driver-ready`` on the fake host (and, if asked, uncordon the node as
k8s-driver-manager does when it finds no driver loaded). Every invocation is recorded in
``calls`` so tests can assert what the script did (and did not do).

Only light standard-library modules are imported (no pathlib/random) and the process is started with
``python -S``: the script makes ~20 kubectl calls per run, so start-up time is most of the suite's run time.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from typing import Any

OPERAND_APPS = {
    "device-plugin": "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "dcgm-exporter": "nvidia-dcgm-exporter",
    "dcgm": "nvidia-dcgm",
    "operator-validator": "nvidia-operator-validator",
    "container-toolkit": "nvidia-container-toolkit-daemonset",
    "mig-manager": "nvidia-mig-manager",
}
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class ApiError(Exception):
    """An error the real kubectl would print as ``Error from server (...)`` with exit code 1."""


# ----------------------------------------------------------------------------------------------------------------
# A small kubectl-compatible JSONPath: {.a.b}, escaped dots, [*], [N], {"literal"}, {range ...}{end}.
# Missing keys print nothing (kubectl sets allowMissingKeys); maps and lists print as compact JSON.
# ----------------------------------------------------------------------------------------------------------------
def _tokens(template: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(template):
        start = template.find("{", i)
        if start < 0:
            out.append(("text", template[i:]))
            break
        if start > i:
            out.append(("text", template[i:start]))
        end = template.find("}", start)
        if end < 0:
            raise ApiError("error parsing jsonpath: unclosed action")
        body = template[start + 1 : end].strip()
        if body.startswith('"'):
            out.append(("lit", json.loads(body)))
        elif body.startswith("range "):
            out.append(("range", body[len("range ") :].strip()))
        elif body == "end":
            out.append(("end", ""))
        else:
            out.append(("path", body))
        i = end + 1
    return out


def _segments(path: str) -> list[tuple[str, str | None]]:
    if not path.startswith("."):
        raise ApiError(f"fake kubectl: unsupported jsonpath {path!r}")
    segs: list[str] = []
    cur = ""
    i = 1
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            cur += path[i + 1]
            i += 2
            continue
        if ch == ".":
            segs.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    segs.append(cur)
    parsed: list[tuple[str, str | None]] = []
    for seg in segs:
        m = re.fullmatch(r"(.*?)(?:\[(\*|\d+)\])?", seg)
        assert m is not None
        parsed.append((m.group(1), m.group(2)))
    return parsed


def _eval(path: str, ctx: Any) -> list[Any]:
    values = [ctx]
    for name, index in _segments(path):
        nxt: list[Any] = []
        for v in values:
            if name:
                if not isinstance(v, dict) or name not in v:
                    continue
                v = v[name]
            if index == "*":
                if isinstance(v, list):
                    nxt.extend(v)
                elif isinstance(v, dict):
                    nxt.extend(v.values())
            elif index is not None:
                if isinstance(v, list) and int(index) < len(v):
                    nxt.append(v[int(index)])
            else:
                nxt.append(v)
        values = nxt
    return values


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    if value is None:
        return ""
    return str(value)


def _render(tokens: list[tuple[str, str]], ctx: Any) -> str:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        kind, arg = tokens[i]
        if kind in ("text", "lit"):
            out.append(arg)
        elif kind == "path":
            out.append(" ".join(_fmt(v) for v in _eval(arg, ctx)))
        elif kind == "range":
            depth, j = 1, i + 1
            while j < len(tokens):
                if tokens[j][0] == "range":
                    depth += 1
                elif tokens[j][0] == "end":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            body = tokens[i + 1 : j]
            for item in _eval(arg, ctx):
                out.append(_render(body, item))
            i = j
        i += 1
    return "".join(out)


def jsonpath(template: str, obj: Any) -> str:
    """Render a kubectl ``-o jsonpath=`` template against ``obj``."""
    return _render(_tokens(template), obj)


# ----------------------------------------------------------------------------------------------------------------
# Argument parsing.
# ----------------------------------------------------------------------------------------------------------------
VALUE_FLAGS = {
    "-n": "namespace",
    "--namespace": "namespace",
    "-o": "output",
    "--output": "output",
    "--field-selector": "field_selector",
    "--type": "type",
    "-p": "patch",
    "--patch": "patch",
    "-f": "filename",
    "--filename": "filename",
    "--raw": "raw",
    "--request-timeout": "request_timeout",
}
BOOL_FLAGS = {"-A": "all_namespaces", "--all-namespaces": "all_namespaces", "--ignore-not-found": "ignore_not_found"}


def parse_args(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Split argv into positionals and flags; unknown flags are an error so the tests notice new kubectl usage."""
    pos: list[str] = []
    opts: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in BOOL_FLAGS:
            opts[BOOL_FLAGS[arg]] = True
        elif "=" in arg and arg.split("=", 1)[0] in VALUE_FLAGS and arg.startswith("-"):
            key, value = arg.split("=", 1)
            opts[VALUE_FLAGS[key]] = value
        elif arg in VALUE_FLAGS:
            i += 1
            opts[VALUE_FLAGS[arg]] = argv[i]
        elif arg.startswith("-"):
            raise ApiError(f"fake kubectl: unsupported flag {arg}")
        else:
            pos.append(arg)
        i += 1
    return pos, opts


# ----------------------------------------------------------------------------------------------------------------
# The fake API.
# ----------------------------------------------------------------------------------------------------------------
def _field(obj: dict[str, Any], dotted: str) -> str:
    cur: Any = obj
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def _matches(obj: dict[str, Any], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if _field(obj, key) == value:
                return False
        else:
            key, value = term.split("=", 1)
            if _field(obj, key) != value:
                return False
    return True


def _print(obj: Any, opts: dict[str, Any]) -> None:
    output = opts.get("output") or ""
    if output.startswith("jsonpath="):
        sys.stdout.write(jsonpath(output[len("jsonpath=") :], obj))
    elif output == "json":
        sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    else:
        raise ApiError(f"fake kubectl: unsupported output {output!r}")


def _next_rv(state: dict[str, Any]) -> str:
    state["rv"] = state.get("rv", 100) + 1
    return str(state["rv"])


def cmd_get(state: dict[str, Any], pos: list[str], opts: dict[str, Any]) -> None:
    kind = pos[1]
    name = pos[2] if len(pos) > 2 else None
    if kind in ("node", "nodes"):
        node = state["nodes"].get(name)
        if node is None:
            raise ApiError(f'Error from server (NotFound): nodes "{name}" not found')
        _print(node, opts)
    elif kind in ("pod", "pods"):
        pods = [p for p in state["pods"] if _matches(p, opts.get("field_selector"))]
        if not opts.get("all_namespaces"):
            pods = [p for p in pods if p["metadata"]["namespace"] == opts.get("namespace", "default")]
        _print({"apiVersion": "v1", "kind": "List", "items": pods}, opts)
    elif kind in ("lease", "leases"):
        lease = state["leases"].get(f"{opts.get('namespace', 'default')}/{name}")
        if lease is None:
            if opts.get("ignore_not_found"):
                return
            raise ApiError(f'Error from server (NotFound): leases.coordination.k8s.io "{name}" not found')
        _print(lease, opts)
    else:
        raise ApiError(f"fake kubectl: get {kind} unsupported")


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            if not isinstance(target.get(key), dict):
                target[key] = {}
            _merge(target[key], value)
        else:
            target[key] = value


def _simulate_operator(state: dict[str, Any], node: dict[str, Any], before: dict[str, str]) -> None:
    operator = state.get("operator", {})
    labels = node["metadata"].get("labels", {})
    name = node["metadata"]["name"]
    if operator.get("removes_operand_pods", True):
        gone_apps = {
            app
            for suffix, app in OPERAND_APPS.items()
            if labels.get(f"nvidia.com/gpu.deploy.{suffix}", "true") != "true"
        }
        state["pods"] = [
            p
            for p in state["pods"]
            if not (p["spec"].get("nodeName") == name and p["metadata"].get("labels", {}).get("app") in gone_apps)
        ]
    driver = "nvidia.com/gpu.deploy.driver"
    driver_enabled = labels.get(driver) == "true" and before.get(driver) != "true"
    if driver_enabled and operator.get("uncordons_on_driver_start", False):
        # k8s-driver-manager's "no driver loaded" path uncordons the node whatever its state was before.
        node.setdefault("spec", {})["unschedulable"] = False
    if driver_enabled and operator.get("installs_driver", True):
        ready_dir = os.path.join(operator["host_root"], "run/nvidia/validations")
        os.makedirs(ready_dir, exist_ok=True)
        with open(os.path.join(ready_dir, "driver-ready"), "w") as ready:
            ready.write("IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\n")


def cmd_patch(state: dict[str, Any], pos: list[str], opts: dict[str, Any]) -> None:
    if pos[1] not in ("node", "nodes") or opts.get("type") != "merge":
        raise ApiError("fake kubectl: only `patch node NAME --type=merge -p JSON` is supported")
    node = state["nodes"].get(pos[2])
    if node is None:
        raise ApiError(f'Error from server (NotFound): nodes "{pos[2]}" not found')
    patch = json.loads(opts["patch"])
    for key, value in (patch.get("metadata", {}).get("labels") or {}).items():
        if value is not None and (not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE_RE.match(value)):
            raise ApiError(f'The Node "{pos[2]}" is invalid: metadata.labels: Invalid value: "{value}" ({key})')
    for value in (patch.get("metadata", {}).get("annotations") or {}).values():
        if value is not None and not isinstance(value, str):
            raise ApiError("annotations must be strings")
    before = dict(node["metadata"].get("labels", {}))
    _merge(node, patch)
    state["patches"].append({"node": pos[2], "patch": patch})
    _simulate_operator(state, node, before)
    print(f"node/{pos[2]} patched")


def _read_body(opts: dict[str, Any]) -> dict[str, Any]:
    if opts.get("filename") != "-":
        raise ApiError("fake kubectl: only -f - (stdin) is supported")
    return json.loads(sys.stdin.read())


def cmd_create(state: dict[str, Any], pos: list[str], opts: dict[str, Any]) -> None:
    body = _read_body(opts)
    raw = opts.get("raw")
    if raw:
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction", raw)
        if not m or body.get("kind") != "Eviction" or body.get("apiVersion") != "policy/v1":
            raise ApiError(f"fake kubectl: unsupported raw create {raw} {body}")
        ns, name = m.groups()
        pod = next(
            (p for p in state["pods"] if p["metadata"]["namespace"] == ns and p["metadata"]["name"] == name), None
        )
        if pod is None:
            raise ApiError(f'Error from server (NotFound): pods "{name}" not found')
        if pod.get("x-fake", {}).get("pdb_blocks_eviction"):
            state["evictions_refused"].append(f"{ns}/{name}")
            raise ApiError(
                "Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget."
            )
        state["pods"].remove(pod)
        state["evictions"].append(f"{ns}/{name}")
        print('{"kind":"Status","apiVersion":"v1","status":"Success"}')
        return
    kind = body.get("kind")
    meta = body.setdefault("metadata", {})
    ns = meta.get("namespace") or opts.get("namespace") or "default"
    meta["namespace"] = ns
    if kind == "Lease":
        key = f"{ns}/{meta['name']}"
        if key in state["leases"]:
            raise ApiError(
                f'Error from server (AlreadyExists): leases.coordination.k8s.io "{meta["name"]}" already exists'
            )
        meta["resourceVersion"] = _next_rv(state)
        state["leases"][key] = body
        print(f"lease.coordination.k8s.io/{meta['name']} created")
    elif kind == "Event":
        involved = body.get("involvedObject", {})
        if not involved.get("namespace") and ns not in ("", "default"):
            raise ApiError(
                'The Event is invalid: involvedObject.namespace: Invalid value: "": does not match event.namespace'
            )
        if "name" not in meta:
            meta["name"] = meta.pop("generateName") + os.urandom(3).hex()
        state["events"].append(body)
        print(f"event/{meta['name']} created")
    else:
        raise ApiError(f"fake kubectl: create {kind} unsupported")


def cmd_replace(state: dict[str, Any], pos: list[str], opts: dict[str, Any]) -> None:
    body = _read_body(opts)
    meta = body.get("metadata", {})
    if body.get("kind") != "Lease":
        raise ApiError("fake kubectl: replace supports only Lease")
    ns = meta.get("namespace") or opts.get("namespace") or "default"
    key = f"{ns}/{meta['name']}"
    current = state["leases"].get(key)
    if current is None:
        raise ApiError(f'Error from server (NotFound): leases.coordination.k8s.io "{meta["name"]}" not found')
    if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
        raise ApiError(
            f'Error from server (Conflict): Operation cannot be fulfilled on leases.coordination.k8s.io "{meta["name"]}":'
            " the object has been modified; please apply your changes to the latest version and try again"
        )
    meta["resourceVersion"] = _next_rv(state)
    state["leases"][key] = body
    print(f"lease.coordination.k8s.io/{meta['name']} replaced")


COMMANDS = {"get": cmd_get, "patch": cmd_patch, "create": cmd_create, "replace": cmd_replace}


def main(argv: list[str]) -> int:
    """Run one fake kubectl invocation under an exclusive lock on the state file."""
    state_path = os.environ["FAKE_KUBE_STATE"]
    with open(f"{state_path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(state_path) as f:
            state = json.load(f)
        state["calls"].append(argv)
        rc = 0
        try:
            pos, opts = parse_args(argv)
            if not pos or pos[0] not in COMMANDS:
                raise ApiError(f"fake kubectl: unsupported command {argv}")
            COMMANDS[pos[0]](state, pos, opts)
        except ApiError as err:
            sys.stderr.write(f"{err}\n")
            rc = 1
        # Atomic replace: tests may read the state while a background script is running.
        with open(f"{state_path}.tmp", "w") as f:
            json.dump(state, f, indent=1)
        os.replace(f"{state_path}.tmp", state_path)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
