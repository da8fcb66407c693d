"""Every fact the catalog holds about another system, checked against that system's pinned source.

Why: the node agent, the proof, the review and the policies act on what other controllers do (which labels the
GPU Operator puts on its driver pods, which labels mig-manager and k8s-driver-manager pause, which node-group
fields make the Yandex provider replace a group). Written from memory, such a fact was wrong twice (the driver pods'
``app`` label in NVIDIADriver mode, the ``pod-template-generation`` rule). Here each fact names the catalog value
(imported from the module that holds it, never typed again), the upstream file and symbol it comes from, and a
check that reads that file's text under ``.upstream/`` (``components.catalog.upstream.SOURCES``, put in place by
``make upstream``). A pin bump that changes one of them fails by name.

``python -m components.catalog.upstream_facts`` lists every fact that no longer holds (exit 1), naming file and
symbol; ``--markdown`` prints the table committed as ``docs/upstream-facts.md``. The tests are
``tests/catalog/test_upstream_facts.py``.

Standard library only at import time, and no I/O: files are read only when a check runs; the YAML checks import
PyYAML then.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from components.catalog import gpu_operator_chart, gpu_operator_operands, kubernetes, names, node_agent, nvidia_driver
from components.catalog import gpu_operator_upgrade as upgrade
from components.catalog import replacements as replace
from components.catalog.mig import named_layouts
from components.catalog.mig import parted as mig_parted
from components.catalog.upstream import (
    DEVICE_PLUGIN_SOURCE,
    DRIVER_MANAGER_SOURCE,
    GPU_OPERATOR_SOURCE,
    MIG_PARTED_SOURCE,
    PULUMI_KUBERNETES_SOURCE,
    YANDEX_PROVIDER_SOURCE,
    UpstreamArtifact,
)

#: The project root (``.upstream/`` is below it).
ROOT: Final = Path(__file__).resolve().parents[2]
#: The committed rendering of :func:`render_markdown`.
DOCS_PATH: Final = "docs/upstream-facts.md"


# -- the structured form ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """Where a fact is read: a file of a pinned upstream artifact, and the symbol in it."""

    artifact: UpstreamArtifact
    path: str  #: inside the artifact's tree
    symbol: str  #: the Go constant or function, or the place in a manifest

    def file(self, root: Path) -> Path:
        """The file under the project ``root``."""
        return root / self.artifact.path / self.path

    def __str__(self) -> str:
        return f"{self.artifact.name} {self.artifact.version} {self.path} {self.symbol}"


@dataclass(frozen=True)
class CatalogValue:
    """A catalog value and the name it has in its module (``gpu_operator_upgrade.DRIVER_CONTAINER``)."""

    symbol: str
    value: Any


#: A check reads the text of each of its fact's sources (in order) and returns None when the fact holds, else why
#: not. It never names the file itself: :meth:`Fact.verify_texts` prefixes every message with the sources.
Check = Callable[[Sequence[str]], str | None]


@dataclass(frozen=True)
class Failure:
    """A fact that no longer holds: its name and a message naming the upstream file and symbol."""

    fact: str
    message: str

    def __str__(self) -> str:
        return f"{self.fact}: {self.message}"


@dataclass(frozen=True)
class Fact:
    """One claim of the catalog about another system, with the source that supports it and its check."""

    name: str
    claim: str  #: what the catalog says, in one sentence
    catalog: tuple[CatalogValue, ...]
    sources: tuple[Source, ...]
    check: Check

    def verify_texts(self, texts: Sequence[str]) -> Failure | None:
        """The check run on ``texts`` (one per source; a test feeds another tag's or another mode's file here)."""
        try:
            why = self.check(texts)
        except Exception as error:  # a file the check cannot read as expected is a fact that does not hold
            why = f"could not be read as expected ({type(error).__name__}: {error})"
        if why is None:
            return None
        where = "; ".join(str(source) for source in self.sources)
        held = ", ".join(value.symbol for value in self.catalog)
        return Failure(self.name, f"{where}: {why} (catalog: {held})")

    def verify(self, root: Path = ROOT) -> Failure | None:
        """The check run on the files under ``root``'s ``.upstream/``; a missing file is a failure too."""
        texts = []
        for source in self.sources:
            path = source.file(root)
            if not path.is_file():
                return Failure(
                    self.name,
                    f"{source}: {path.relative_to(root).as_posix()} is missing (run `make upstream`; after a pin "
                    "bump, the file may have moved: find the symbol in the new tag)",
                )
            texts.append(path.read_text(encoding="utf-8"))
        return self.verify_texts(texts)


def _catalog(module: ModuleType, *attributes: str) -> tuple[CatalogValue, ...]:
    """The named values of a catalog module, read from the module itself (a renamed constant fails at import)."""
    short = module.__name__.removeprefix("components.catalog.")
    return tuple(CatalogValue(f"{short}.{attribute}", getattr(module, attribute)) for attribute in attributes)


# -- reading Go ---------------------------------------------------------------------------------------------
_GO_LITERAL_OR_COMMENT = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|`[^`]*`|\'(?:[^\'\\\n]|\\.)*\'|//[^\n]*|/\*.*?\*/',
    re.S,
)
_GO_LITERAL_OR_BRACE = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`|\'(?:[^\'\\\n]|\\.)*\'|[{}]')
_GO_STRING = r'"(?:[^"\\\n]|\\.)*"|`[^`]*`'
_CONST_BLOCK = re.compile(r"\bconst\s*\(\s*\n(.*?)\n\s*\)", re.S)
_CONST_SINGLE = re.compile(r"\bconst\s+(\w+)(?:\s+[\w.]+)?\s*=\s*([^\n]+)")
_CONST_SPEC = re.compile(r"^\s*(\w+)(?:\s+[\w.]+)?\s*=\s*(.+?)\s*$", re.M)
_EXPR_TOKEN = re.compile(rf"\s*({_GO_STRING}|[A-Za-z_][\w.]*|\+|\S)")


def _go_code(text: str) -> str:
    """Go source with every comment blanked (newlines kept): a commented-out line states no fact."""

    def blank(match: re.Match[str]) -> str:
        token = match.group(0)
        return re.sub(r"[^\n]", " ", token) if token.startswith("/") else token

    return _GO_LITERAL_OR_COMMENT.sub(blank, text)


def _go_string(literal: str) -> str:
    """The value of a Go string literal (raw or interpreted)."""
    if literal.startswith("`"):
        return literal[1:-1]
    try:
        return str(json.loads(literal))
    except json.JSONDecodeError:
        return str(ast.literal_eval(literal))


def _matching_brace(code: str, start: int) -> int:
    """The index of the ``}`` closing the ``{`` at ``start`` (braces inside literals do not count)."""
    depth = 0
    for match in _GO_LITERAL_OR_BRACE.finditer(code, start):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return match.start()
    raise ValueError(f"unbalanced braces after offset {start}")


class Go:
    """The string constants and function bodies of one Go file (or of several files of one package)."""

    def __init__(self, *texts: str) -> None:
        self.code = "\n".join(_go_code(text) for text in texts)
        self._expressions: dict[str, str] = {}
        for block in _CONST_BLOCK.finditer(self.code):
            for spec in _CONST_SPEC.finditer(block.group(1)):
                self._expressions.setdefault(spec.group(1), spec.group(2))
        for single in _CONST_SINGLE.finditer(self.code):
            self._expressions.setdefault(single.group(1), single.group(2))

    def const(self, name: str) -> str | None:
        """The value of the string constant ``name`` (literals and other constants joined by ``+``), or None."""
        return self._evaluate(name, frozenset())

    def _evaluate(self, name: str, seen: frozenset[str]) -> str | None:
        expression = self._expressions.get(name)
        if expression is None or name in seen:
            return None
        tokens = _EXPR_TOKEN.findall(expression)
        if not tokens or len(tokens) % 2 == 0 or any(token != "+" for token in tokens[1::2]):
            return None
        parts = []
        for token in tokens[::2]:
            if token[0] in '"`':
                parts.append(_go_string(token))
            elif re.fullmatch(r"[A-Za-z_]\w*", token):
                value = self._evaluate(token, seen | {name})
                if value is None:
                    return None
                parts.append(value)
            else:
                return None
        return "".join(parts)

    def consts(self, prefix: str = "") -> dict[str, str]:
        """Every string constant whose name starts with ``prefix``, by name."""
        found = {name: self.const(name) for name in self._expressions if name.startswith(prefix)}
        return {name: value for name, value in found.items() if value is not None}

    def func(self, name: str, receiver: str = "") -> str | None:
        """The body of function ``name`` (a method of type ``receiver`` when given), or None."""
        owner = rf"\(\s*\w*\s*\*?{re.escape(receiver)}\s*\)\s*" if receiver else r"(?:\([^)]*\)\s*)?"
        match = re.search(rf"^func\s+{owner}{re.escape(name)}\s*\(", self.code, re.M)
        if match is None:
            return None
        opening = re.compile(r"\{[ \t]*\n").search(self.code, match.end())
        if opening is None:
            return None
        return self.code[opening.start() + 1 : _matching_brace(self.code, opening.start())]

    def body(self, name: str, receiver: str = "") -> str:
        """The body of function ``name``; a missing function raises a ``LookupError`` naming it."""
        found = self.func(name, receiver)
        if found is None:
            raise LookupError(f"no function {f'({receiver}) ' if receiver else ''}{name}")
        return found


def _need(go: Go, name: str) -> str:
    """The value of a constant that must exist; a missing one raises a ``LookupError`` naming it."""
    value = go.const(name)
    if value is None:
        raise LookupError(f"no string constant {name}")
    return value


def _compare(found: str, what: str, values: Iterable[CatalogValue]) -> str | None:
    """None when every catalog value equals ``found``, else which differ."""
    wrong = [f"{value.symbol} = {value.value!r}" for value in values if value.value != found]
    return f"{what} is {found!r}, the catalog's {', '.join(wrong)}" if wrong else None


def _compare_sets(found: Iterable[str], what: str, value: CatalogValue) -> str | None:
    """None when ``found`` and the catalog value hold the same items, else what one has that the other lacks."""
    upstream, catalog = set(found), set(value.value)
    if upstream == catalog:
        return None
    problems = []
    if upstream - catalog:
        problems.append(f"{what} has {sorted(upstream - catalog)} that {value.symbol} lacks")
    if catalog - upstream:
        problems.append(f"{value.symbol} has {sorted(catalog - upstream)} that {what} lacks")
    return "; ".join(problems)


def _go_const_fact(
    name: str, claim: str, catalog: tuple[CatalogValue, ...], artifact: UpstreamArtifact, path: str, const: str
) -> Fact:
    """The catalog values equal one Go string constant (``Name = "value"``, or built from other constants)."""

    def check(texts: Sequence[str]) -> str | None:
        return _compare(_need(Go(texts[0]), const), const, catalog)

    return Fact(name, claim, catalog, (Source(artifact, path, const),), check)


# -- reading YAML, and the operator's Go-templated manifests ------------------------------------------------
_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_CONTROL = re.compile(r"\{\{-?\s*(if|else if|else|end|range|with|define|block)\b\s*(.*?)\s*-?\}\}")
_WHOLE_VALUE = re.compile(r"^(\s*(?:-\s+)?(?:[^\s:#][^:#]*?\s*:\s+)?)(\{\{-?\s*.*?\s*-?\}\})\s*$")


def template_value(expression: str) -> str:
    """How a manifest renders a value the operator fills in: ``{{ .Driver.AppName }}``."""
    return "{{ " + expression + " }}"


def render_driver_template(text: str, driver_type: str = "gpu") -> str:
    """An operator manifest (Go template) as YAML for an NVIDIADriver of ``driver_type`` with no optional settings.

    ``{{ if eq .Driver.Spec.DriverType "x" }}`` is decided by ``driver_type``; every other condition is false (no
    OpenShift, no precompiled driver, no labels, tolerations or resources of the resource's own), and so are
    ``range`` and ``with``. A value the operator fills in becomes the string ``{{ <expression> }}``. Plain YAML
    passes through unchanged, so the ClusterPolicy's manifests read the same way.
    """
    lines: list[str] = []
    active = True
    stack: list[tuple[bool, bool]] = []  # (active outside the block, a branch of it was taken)
    for line in text.splitlines():
        control = _CONTROL.fullmatch(line.strip())
        if control:
            keyword, condition = control.group(1), control.group(2)
            if keyword in ("if", "range", "with", "define", "block"):
                taken = keyword == "if" and _condition(condition, driver_type)
                stack.append((active, taken))
                active = active and taken
            elif keyword == "else if":
                outside, taken = stack[-1]
                now = not taken and _condition(condition, driver_type)
                stack[-1] = (outside, taken or now)
                active = outside and now
            elif keyword == "else":
                outside, taken = stack[-1]
                stack[-1] = (outside, True)
                active = outside and not taken
            else:
                active = stack.pop()[0]
            continue
        if not active or _ACTION.fullmatch(line.strip()):
            continue  # an action alone on its line inserts optional content (labels, tolerations): none here
        whole = _WHOLE_VALUE.match(line)
        if whole:
            expression = _ACTION.fullmatch(whole.group(2))
            assert expression is not None
            lines.append(whole.group(1) + json.dumps(template_value(expression.group(1))))
        else:
            lines.append(_ACTION.sub(lambda match: "<" + match.group(1).replace('"', "'") + ">", line))
    if stack:
        raise ValueError("a template block is not closed")
    return "\n".join(lines) + "\n"


def _condition(condition: str, driver_type: str) -> bool:
    match = re.fullmatch(r'eq\s+\.Driver\.Spec\.DriverType\s+"([^"]*)"', condition)
    return match is not None and match.group(1) == driver_type


def _yaml_documents(text: str) -> list[Any]:
    import yaml  # only when a check runs: the module imports with the standard library alone

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's when built with it: the CRDs are large
    return [document for document in yaml.load_all(text, Loader=loader) if document is not None]


def _daemon_set(text: str) -> dict[str, Any]:
    """The DaemonSet of a driver manifest (either mode), rendered for driverType gpu."""
    documents = [doc for doc in _yaml_documents(render_driver_template(text)) if doc.get("kind") == "DaemonSet"]
    if len(documents) != 1:
        raise ValueError(f"{len(documents)} DaemonSets, expected one")
    return dict(documents[0])


def _dig(document: Any, path: str) -> Any:
    """``document`` at a dotted ``path`` (``spec.template.metadata.labels``); a missing key gives None."""
    for key in path.split("."):
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document


_DAEMON_SET_LABELS = ("metadata.labels", "spec.template.metadata.labels")


def _labels_problem(daemon_set: Mapping[str, Any], key: str, value: str, paths: Sequence[str]) -> str | None:
    """None when the label ``key`` is ``value`` in every label map at ``paths``, else where it is not."""
    found = {path: (_dig(daemon_set, path) or {}).get(key) for path in paths}
    wrong = [f"{path}[{key!r}] is {label!r}" for path, label in found.items() if label != value]
    return f"{'; '.join(wrong)}, not {value!r}" if wrong else None


def _driver_label_fact(
    name: str, claim: str, catalog: tuple[CatalogValue, ...], path: str, key: str, value: str, paths: Sequence[str]
) -> Fact:
    """A label the driver DaemonSet of one mode carries (``paths``: on the DaemonSet, its selector, its pods)."""

    def check(texts: Sequence[str]) -> str | None:
        return _labels_problem(_daemon_set(texts[0]), key, value, paths)

    symbol = "DaemonSet " + ", ".join(paths)
    return Fact(name, claim, catalog, (Source(GPU_OPERATOR_SOURCE, path, symbol),), check)


def _driver_container_fact(name: str, mode: str, path: str) -> Fact:
    catalog = _catalog(upgrade, "DRIVER_CONTAINER")

    def check(texts: Sequence[str]) -> str | None:
        daemon_set = _daemon_set(texts[0])
        containers = [c.get("name") for c in _dig(daemon_set, "spec.template.spec.containers") or []]
        default = (_dig(daemon_set, "spec.template.metadata.annotations") or {}).get(
            "kubectl.kubernetes.io/default-container"
        )
        if upgrade.DRIVER_CONTAINER not in containers:
            return f"the pod's containers are {containers}, none is {upgrade.DRIVER_CONTAINER!r}"
        return _compare(str(default), "the default-container annotation", catalog)

    return Fact(
        name,
        f"the {mode} driver pods run the driver in a container of this name (also their default container)",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, path, "DaemonSet spec.template.spec.containers[].name"),),
        check,
    )


# -- the facts ----------------------------------------------------------------------------------------------
_CP_DRIVER = "assets/state-driver/0500_daemonset.yaml"
_NVD_DRIVER = "manifests/state-driver/0500_daemonset.yaml"
_LIBS = "vendor/github.com/NVIDIA/k8s-operator-libs/pkg/upgrade"
_OPERATOR_MAIN = "cmd/gpu-operator/main.go"
_RECONFIGURE = "pkg/mig/reconfigure/reconfigure.go"
_DRIVER_MANAGER = "cmd/driver-manager/main.go"
_NVD_CRD = "deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml"


def _driver_facts() -> list[Fact]:
    """The operator's driver pods in both modes."""
    component = _catalog(upgrade, "DRIVER_COMPONENT_LABEL", "DRIVER_COMPONENT")
    key, value = upgrade.DRIVER_COMPONENT_LABEL, upgrade.DRIVER_COMPONENT
    app = template_value(".Driver.AppName")
    return [
        _driver_label_fact(
            "driver-component/cluster-policy",
            "the ClusterPolicy's driver DaemonSet and its pods carry the component label",
            component,
            _CP_DRIVER,
            key,
            value,
            _DAEMON_SET_LABELS,
        ),
        _driver_label_fact(
            "driver-component/nvidiadriver",
            "an NVIDIADriver's driver DaemonSets (driverType gpu) and their pods carry the component label",
            component,
            _NVD_DRIVER,
            key,
            value,
            _DAEMON_SET_LABELS,
        ),
        _driver_label_fact(
            "driver-app/cluster-policy",
            "the ClusterPolicy's one driver DaemonSet, its selector and its pods have this app label",
            _catalog(upgrade, "CLUSTER_POLICY_DRIVER_APP"),
            _CP_DRIVER,
            "app",
            upgrade.CLUSTER_POLICY_DRIVER_APP,
            (*_DAEMON_SET_LABELS, "spec.selector.matchLabels"),
        ),
        _driver_label_fact(
            "driver-app/nvidiadriver",
            "an NVIDIADriver's DaemonSets, selectors and pods have the app label the operator names per resource "
            "(.Driver.AppName, not the ClusterPolicy's)",
            _catalog(upgrade, "NVIDIADRIVER_APP_FORMAT"),
            _NVD_DRIVER,
            "app",
            app,
            (*_DAEMON_SET_LABELS, "spec.selector.matchLabels"),
        ),
        _app_name_format_fact(),
        _driver_container_fact("driver-container/cluster-policy", "ClusterPolicy", _CP_DRIVER),
        _driver_container_fact("driver-container/nvidiadriver", "NVIDIADriver", _NVD_DRIVER),
        _go_const_fact(
            "driver-owner-label",
            "the node label naming the NVIDIADriver that owns a node",
            _catalog(upgrade, "DRIVER_OWNER_LABEL"),
            GPU_OPERATOR_SOURCE,
            "internal/consts/consts.go",
            "NVIDIADriverOwnerLabel",
        ),
        _go_const_fact(
            "gpu-present-label",
            "only nodes with this label get an owner",
            _catalog(nvidia_driver, "GPU_PRESENT_LABEL"),
            GPU_OPERATOR_SOURCE,
            "internal/consts/consts.go",
            "GPUPresentLabel",
        ),
        _revision_hash_label_fact(),
        _revision_hash_rule_fact(),
        _host_driver_library_fact(),
    ]


def _host_driver_library_fact() -> Fact:
    """The host-driver files name ``libnvidia-ml.so.1`` in every ``/usr`` folder the operator looks for it in."""
    files = _catalog(node_agent, "HOST_DRIVER_FILES")[0]
    library = "libnvidia-ml.so.1"
    ours = CatalogValue(files.symbol, {path.rpartition("/")[0] for path in files.value if path.endswith(f"/{library}")})

    def check(texts: Sequence[str]) -> str | None:
        literals = [_go_string(token) for token in re.findall(_GO_STRING, Go(texts[0]).body("GetDriverLibraryPath"))]
        if library not in literals:
            return f"GetDriverLibraryPath no longer looks for {library}"
        return _compare_sets(
            [folder for folder in literals if folder.startswith("/usr/")], f"the /usr folders of {library}", ours
        )

    return Fact(
        "host-driver-library-folders",
        "a host driver's libnvidia-ml.so.1 is in one of these /usr folders (x86_64 and aarch64 multiarch, lib64)",
        (files,),
        (Source(GPU_OPERATOR_SOURCE, "internal/driver/root.go", "GetDriverLibraryPath"),),
        check,
    )


def _app_name_format_fact() -> Fact:
    catalog = _catalog(upgrade, "NVIDIADRIVER_APP_FORMAT")
    arguments = {"cr.Spec.DriverType": "{driver_type}", "pool.osTag": "{os}", "appNamePrefix": "{prefix}"}

    def check(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        body = go.body("getDriverAppName")
        prefix_format = _need(Go(body), "appNamePrefixFormat")
        call = re.search(r"appNamePrefix\s*:=\s*fmt\.Sprintf\(appNamePrefixFormat,\s*([^)]*)\)", body)
        join = re.search(rf"appName\s*:=\s*fmt\.Sprintf\(({_GO_STRING}),\s*appNamePrefix,\s*hash\)", body)
        if call is None or join is None:
            return "the name is no longer fmt.Sprintf(appNamePrefixFormat, ...) joined with the hash"
        prefix = _fill(prefix_format, [arguments.get(arg.strip(), arg.strip()) for arg in call.group(1).split(",")])
        found = _fill(_go_string(join.group(1)), [prefix, "{hash}"])
        if (
            not re.search(r"AppName:\s*nvidiaDriverAppName,", go.code)
            or "nvidiaDriverAppName := getDriverAppName(" not in go.code
        ):
            return "the rendered DaemonSet's .Driver.AppName is no longer getDriverAppName's result"
        return _compare(found, "getDriverAppName's name", catalog)

    return Fact(
        "driver-app/nvidiadriver-name",
        "an NVIDIADriver DaemonSet's app label is nvidia-<driverType>-driver-<os>-<hash>",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, "internal/state/driver.go", "getDriverAppName appNamePrefixFormat"),),
        check,
    )


def _fill(go_format: str, arguments: Sequence[str]) -> str:
    """A ``fmt.Sprintf`` format with only ``%s`` verbs, filled in order."""
    pieces = go_format.split("%s")
    if len(pieces) != len(arguments) + 1 or "%" in go_format.replace("%s", ""):
        raise ValueError(f"format {go_format!r} does not take {len(arguments)} %s")
    return "".join(piece + argument for piece, argument in zip(pieces, [*arguments, ""], strict=True))


def _revision_hash_label_fact() -> Fact:
    catalog = _catalog(upgrade, "CONTROLLER_REVISION_HASH_LABEL")

    def check(texts: Sequence[str]) -> str | None:
        pods, common = Go(texts[0]), Go(texts[1])
        if not re.search(
            r"pod\.Labels\[PodControllerRevisionHashLabelKey\]", pods.body("GetPodControllerRevisionHash")
        ):
            return "GetPodControllerRevisionHash no longer reads the pod's PodControllerRevisionHashLabelKey label"
        in_sync = common.body("podInSyncWithDS")
        if not (
            "GetPodControllerRevisionHash(" in in_sync
            and "GetDaemonsetControllerRevisionHash(" in in_sync
            and re.search(r"isPodSynced\s*=\s*podRevisionHash\s*==\s*daemonsetRevisionHash", in_sync)
        ):
            return "podInSyncWithDS no longer compares the pod's revision hash with its DaemonSet's"
        return _compare(_need(pods, "PodControllerRevisionHashLabelKey"), "PodControllerRevisionHashLabelKey", catalog)

    return Fact(
        "driver-pod-current-by-revision-hash",
        "k8s-operator-libs judges a driver pod current when its controller-revision-hash label equals its "
        "DaemonSet's newest ControllerRevision's hash",
        catalog,
        (
            Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/pod_manager.go", "PodControllerRevisionHashLabelKey"),
            Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/common_manager.go", "podInSyncWithDS"),
        ),
        check,
    )


def _revision_hash_rule_fact() -> Fact:
    catalog = (CatalogValue("gpu_operator_upgrade.revision_hash", upgrade.revision_hash),)
    revisions = [("ds-aaa", 1), ("ds-ccc", 3), ("ds-bbb", 2), ("other-zzz", 9)]

    def check(texts: Sequence[str]) -> str | None:
        body = Go(texts[0]).body("GetDaemonsetControllerRevisionHash")
        rules = {
            "a prefix match on the DaemonSet's name": r"strings\.HasPrefix\(controllerRevision\.Name,\s*daemonset\.Name\)",
            "sorted by .Revision, the last taken": r"revisions\[i\]\.Revision\s*<\s*revisions\[j\]\.Revision[\s\S]*"
            r"revisions\[len\(revisions\)-1\]",
            "the name after '<daemonset>-'": r'strings\.TrimPrefix\(currentRevision\.Name,\s*fmt\.Sprintf\("%s-",\s*'
            r"daemonset\.Name\)\)",
        }
        lost = [rule for rule, pattern in rules.items() if not re.search(pattern, body)]
        if lost:
            return f"GetDaemonsetControllerRevisionHash no longer takes {'; '.join(lost)}"
        got = upgrade.revision_hash("ds", revisions)
        return None if got == "ccc" else f"the catalog's revision_hash gives {got!r} for {revisions}, upstream 'ccc'"

    return Fact(
        "daemonset-revision-hash",
        "a DaemonSet's current hash is its newest ControllerRevision's (by .revision, name prefix) after '<name>-'",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/pod_manager.go", "GetDaemonsetControllerRevisionHash"),),
        check,
    )


def _upgrade_facts() -> list[Fact]:
    """The operator's upgrade controller (the vendored k8s-operator-libs ``pkg/upgrade``)."""
    return [
        _driver_name_fact(),
        _upgrade_key_fact(
            "upgrade-state-label",
            "the node label holding the node's place in the operator's driver upgrade",
            _catalog(upgrade, "UPGRADE_STATE_LABEL"),
            "UpgradeStateLabelKeyFmt",
            "GetUpgradeStateLabelKey",
        ),
        _upgrade_key_fact(
            "upgrade-skip-label",
            "the node label that keeps a node in upgrade-required",
            _catalog(upgrade, "UPGRADE_SKIP_LABEL"),
            "UpgradeSkipNodeLabelKeyFmt",
            "GetUpgradeSkipNodeLabelKey",
        ),
        _upgrade_key_fact(
            "upgrade-initial-state-annotation",
            "the node annotation the operator writes when the node was unschedulable as its upgrade began",
            _catalog(upgrade, "UPGRADE_INITIAL_STATE_ANNOTATION"),
            "UpgradeInitialStateAnnotationKeyFmt",
            "GetUpgradeInitialStateAnnotationKey",
        ),
        _skip_value_fact(),
        _upgrade_states_fact(),
        _holds_states_fact(),
        _gpu_pod_fact(),
        _dra_driver_fact(),
    ]


def _driver_name(main: str) -> str:
    calls = re.findall(rf"\bupgrade\.SetDriverName\(\s*({_GO_STRING})\s*\)", Go(main).body("main"))
    if len(calls) != 1:
        raise LookupError(f"{len(calls)} calls of upgrade.SetDriverName with a literal in main, expected one")
    return _go_string(calls[0])


def _driver_name_fact() -> Fact:
    catalog = _catalog(upgrade, "UPGRADE_DRIVER_NAME")

    def check(texts: Sequence[str]) -> str | None:
        return _compare(_driver_name(texts[0]), "the driver name", catalog)

    return Fact(
        "upgrade-driver-name",
        "the operator names its driver so for k8s-operator-libs: the %s of every upgrade key",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, _OPERATOR_MAIN, "main upgrade.SetDriverName"),),
        check,
    )


def _upgrade_key_fact(name: str, claim: str, catalog: tuple[CatalogValue, ...], key_format: str, getter: str) -> Fact:
    """A key k8s-operator-libs builds as ``fmt.Sprintf(<key_format>, DriverName)``, with the operator's driver name."""

    def check(texts: Sequence[str]) -> str | None:
        consts, util, main = texts
        if not re.search(rf"fmt\.Sprintf\({key_format},\s*DriverName\)", Go(util).body(getter)):
            return f"{getter} no longer builds the key as fmt.Sprintf({key_format}, DriverName)"
        found = _fill(_need(Go(consts), key_format), [_driver_name(main)])
        return _compare(found, f"{key_format} with the driver name", catalog)

    return Fact(
        name,
        claim,
        catalog,
        (
            Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/consts.go", key_format),
            Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/util.go", getter),
            Source(GPU_OPERATOR_SOURCE, _OPERATOR_MAIN, "main upgrade.SetDriverName"),
        ),
        check,
    )


def _skip_value_fact() -> Fact:
    catalog = _catalog(upgrade, "UPGRADE_SKIP_VALUE")

    def check(texts: Sequence[str]) -> str | None:
        package = Go(*texts)
        match = re.search(
            r"node\.Labels\[GetUpgradeSkipNodeLabelKey\(\)\]\s*==\s*(\w+|" + _GO_STRING + ")",
            package.body("SkipNodeUpgrade"),
        )
        if match is None:
            return "SkipNodeUpgrade no longer compares the skip label with one value"
        token = match.group(1)
        found = _go_string(token) if token[0] in '"`' else _need(package, token)
        return _compare(found, "the value SkipNodeUpgrade honours", catalog)

    return Fact(
        "upgrade-skip-value",
        "the skip label holds the node back only with this value",
        catalog,
        (
            Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/common_manager.go", "SkipNodeUpgrade"),
            Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/consts.go", "trueString"),
        ),
        check,
    )


def _upgrade_state_consts(consts: str) -> dict[str, str]:
    """``UpgradeState*`` constants (not the ``*KeyFmt`` ones) by the enum member name they map to."""
    states = {}
    for go_name, value in Go(consts).consts("UpgradeState").items():
        if go_name.endswith("Fmt"):
            continue
        camel = go_name.removeprefix("UpgradeState")
        states[re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()] = value
    return states


def _upgrade_states_fact() -> Fact:
    catalog = (CatalogValue("gpu_operator_upgrade.UpgradeState", upgrade.UpgradeState),)

    def check(texts: Sequence[str]) -> str | None:
        upstream = _upgrade_state_consts(texts[0])
        ours = {member.name: member.value for member in upgrade.UpgradeState}
        if upstream == ours:
            return None
        lines = [
            f"UpgradeState{_camel(key)} = {upstream.get(key)!r}, UpgradeState.{key} = {ours.get(key)!r}"
            for key in sorted(set(upstream) | set(ours))
            if upstream.get(key) != ours.get(key)
        ]
        return "; ".join(lines)

    return Fact(
        "upgrade-states",
        "the values of the upgrade state label, one enum member per UpgradeState* constant (the same names)",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/consts.go", "UpgradeState*"),),
        check,
    )


def _camel(member: str) -> str:
    return "".join(part.capitalize() for part in member.split("_"))


#: The states in which the operator does not hold a node: not yet started, waiting for a slot, finished.
_NOT_HOLDING: Final = ("UpgradeStateUnknown", "UpgradeStateUpgradeRequired", "UpgradeStateDone")


def _holds_states_fact() -> Fact:
    catalog = (CatalogValue("gpu_operator_upgrade.OPERATOR_HOLDS_STATES", upgrade.OPERATOR_HOLDS_STATES),)

    def check(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        states = {name: value for name, value in go.consts("UpgradeState").items() if not name.endswith("Fmt")}
        holding = {value for name, value in states.items() if name not in _NOT_HOLDING}
        unknown = set(upgrade.OPERATOR_HOLDS_STATES) - set(states.values())
        if unknown:
            return f"{sorted(unknown)} are no UpgradeState* value"
        return _compare_sets(holding, f"every UpgradeState* but {', '.join(_NOT_HOLDING)}", catalog[0])

    return Fact(
        "operator-holds-states",
        "the operator holds a node in every upgrade state but unknown, upgrade-required and upgrade-done "
        "(a new state upstream must be placed)",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, f"{_LIBS}/consts.go", "UpgradeState*"),),
        check,
    )


def _gpu_pod_fact() -> Fact:
    catalog = _catalog(upgrade, "GPU_POD_RESOURCE_PREFIXES")

    def check(texts: Sequence[str]) -> str | None:
        body = Go(texts[0]).body("gpuPodSpecFilter")
        prefixes = [_go_string(p) for p in re.findall(rf"strings\.HasPrefix\(\s*\w+\s*,\s*({_GO_STRING})\s*\)", body)]
        if "PodHasNVIDIAGPUClaim(" not in body:
            return "gpuPodSpecFilter no longer counts pods holding an NVIDIA DRA claim"
        return _compare_sets(prefixes, "gpuPodSpecFilter's resource prefixes", catalog[0])

    return Fact(
        "gpu-pod-resource-prefixes",
        "the operator deletes as GPU pods those whose containers name a resource with these prefixes (or that hold "
        "an NVIDIA DRA claim)",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, _OPERATOR_MAIN, "gpuPodSpecFilter"),),
        check,
    )


def _dra_driver_fact() -> Fact:
    catalog = _catalog(upgrade, "GPU_DRA_DRIVER")

    def check(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        if not re.search(r"\.Driver\s*==\s*NVIDIAGPUDRADriverName", go.body("PodHasNVIDIAGPUClaim")):
            return "PodHasNVIDIAGPUClaim no longer matches claims allocated by NVIDIAGPUDRADriverName"
        return _compare(_need(go, "NVIDIAGPUDRADriverName"), "NVIDIAGPUDRADriverName", catalog)

    return Fact(
        "gpu-dra-driver",
        "a pod holding a claim allocated by this DRA driver is a GPU pod to the operator",
        catalog,
        (Source(GPU_OPERATOR_SOURCE, "controllers/nodelabeling_controller.go", "NVIDIAGPUDRADriverName"),),
        check,
    )


# -- the pausers ------------------------------------------------------------------------------------------
def _labels_set_by(body: str, setter: str, go: Go) -> set[str]:
    """The label keys (constants) a function's maps give the value of ``<receiver>.<setter>(...)``."""
    keys = re.findall(rf"(?:^|[{{,\s])(\w+)\s*:\s*\w+\.{setter}\(", body, re.M)
    keys += re.findall(rf"\w+\[\s*(\w+)\s*\]\s*=\s*\w+\.{setter}\(", body)
    return {_need(go, key) for key in keys}


def _paused_labels_fact(
    name: str,
    claim: str,
    value: CatalogValue,
    artifact: UpstreamArtifact,
    path: str,
    functions: Sequence[str],
    setter: str = "maybeSetPaused",
) -> Fact:
    """The SET of labels ``functions`` give the value of ``setter(...)`` equals the catalog's tuple: a label added or
    dropped upstream fails, and so does one only a comment mentions."""

    def check(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        found: set[str] = set()
        for function in functions:
            found |= _labels_set_by(go.body(function), setter, go)
        return _compare_sets(found, f"the labels {' + '.join(functions)} set with {setter}", value)

    return Fact(name, claim, (value,), (Source(artifact, path, " + ".join(functions)),), check)


def _returned_strings(body: str, go: Go) -> set[str]:
    """The string values a function returns (literals, or constants)."""
    found = set()
    for token in re.findall(rf"\breturn\s+({_GO_STRING}|\w+)\s*$", body, re.M):
        if token[0] in '"`':
            found.add(_go_string(token))
        elif go.const(token) is not None:
            found.add(_need(go, token))
    return found


def _pauser_facts() -> list[Fact]:
    """mig-manager and k8s-driver-manager pause operands by node label."""

    def paused_for_mig(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        values = _returned_strings(go.body("maybeSetPaused"), go) - {"false"}
        if len(values) != 1:
            return f"maybeSetPaused returns {sorted(values)} besides 'false'"
        return _compare(values.pop(), "the value maybeSetPaused writes", _catalog(upgrade, "PAUSED_FOR_MIG"))

    def paused_for_driver(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        body = go.body("maybeSetPaused")
        if not re.search(r"return\s+pausedStr\s*$", body, re.M) or not re.search(
            r'return\s+currentValue\s*\+\s*"_"\s*\+\s*pausedStr', body
        ):
            return "maybeSetPaused no longer writes pausedStr for true, appended with '_' to other values"
        return _compare(_need(go, "pausedStr"), "pausedStr", _catalog(upgrade, "PAUSED_FOR_DRIVER_UPGRADE"))

    return [
        _paused_labels_fact(
            "mig-manager-paused-labels",
            "mig-manager pauses exactly these operand labels before a MIG change (client only where present)",
            _catalog(upgrade, "MIG_MANAGER_PAUSED_LABELS")[0],
            MIG_PARTED_SOURCE,
            _RECONFIGURE,
            ("shutdownKubernetesGPUClients",),
        ),
        _paused_labels_fact(
            "mig-manager-restored-labels",
            "mig-manager sets the same labels back to true after a change, and on exit unless a change succeeded",
            _catalog(upgrade, "MIG_MANAGER_PAUSED_LABELS")[0],
            MIG_PARTED_SOURCE,
            _RECONFIGURE,
            ("restartKubernetesGPUClients", "setState"),
            "maybeSetTrue",
        ),
        Fact(
            "paused-for-mig",
            "the value mig-manager gives a paused operand label",
            _catalog(upgrade, "PAUSED_FOR_MIG"),
            (Source(MIG_PARTED_SOURCE, _RECONFIGURE, "maybeSetPaused"),),
            paused_for_mig,
        ),
        _paused_labels_fact(
            "driver-manager-paused-labels",
            "k8s-driver-manager pauses exactly these operand labels while the driver reloads (dra-driver last; "
            "plus a label the user names, which the catalog cannot know)",
            _catalog(upgrade, "DRIVER_MANAGER_PAUSED_LABELS")[0],
            DRIVER_MANAGER_SOURCE,
            _DRIVER_MANAGER,
            ("evictAllGPUOperatorComponents", "evictKubeletPlugin"),
        ),
        Fact(
            "paused-for-driver-upgrade",
            "the value k8s-driver-manager gives a paused operand label (appended with '_' to a value not true/false)",
            _catalog(upgrade, "PAUSED_FOR_DRIVER_UPGRADE"),
            (Source(DRIVER_MANAGER_SOURCE, _DRIVER_MANAGER, "pausedStr maybeSetPaused"),),
            paused_for_driver,
        ),
        _go_const_fact(
            "gpu-deploy-driver-label",
            "the node label that places the operator's driver (the driver manager sets it pre-installed)",
            _catalog(node_agent, "GPU_DEPLOY_DRIVER_LABEL"),
            DRIVER_MANAGER_SOURCE,
            _DRIVER_MANAGER,
            "nvidiaDriverDeployLabel",
        ),
        _pre_installed_fact(),
    ]


def _pre_installed_fact() -> Fact:
    catalog = _catalog(node_agent, "DEPLOY_DRIVER_PRE_INSTALLED")

    def check(texts: Sequence[str]) -> str | None:
        body = Go(texts[0]).body("disableContainerizedDriver")
        match = re.search(rf"nvidiaDriverDeployLabel\s*:\s*({_GO_STRING})", body)
        if match is None:
            return "disableContainerizedDriver no longer sets nvidiaDriverDeployLabel to a literal"
        return _compare(_go_string(match.group(1)), "the value written", catalog)

    return Fact(
        "deploy-driver-pre-installed",
        "the driver manager labels a node with a host driver so",
        catalog,
        (Source(DRIVER_MANAGER_SOURCE, _DRIVER_MANAGER, "disableContainerizedDriver"),),
        check,
    )


# -- MIG ----------------------------------------------------------------------------------------------------
def _mig_states_written(text: str) -> dict[str, str]:
    """Every value mig-manager writes to ``migConfigStateLabel``, by how it writes it."""
    go = Go(text)
    written = {}
    for literal in re.findall(rf"setNodeLabel\(migConfigStateLabel,\s*({_GO_STRING})\)", go.body("Run")):
        written[_go_string(literal)] = "Run setNodeLabel"
    for constant in set(re.findall(r"\bsetState\((\w+)\)", go.code)):
        written[_need(go, constant)] = constant
    if not re.search(r"setNodeLabel\(migConfigStateLabel,\s*state\)", go.body("setState")):
        raise LookupError("setState no longer writes its state to migConfigStateLabel")
    return written


def _mig_state_fact(name: str, attribute: str) -> Fact:
    catalog = _catalog(node_agent, attribute)

    def check(texts: Sequence[str]) -> str | None:
        written = _mig_states_written(texts[0])
        missing = [f"{value.symbol} = {value.value!r}" for value in catalog if value.value not in written]
        return f"mig-manager writes {sorted(written)}, not {', '.join(missing)}" if missing else None

    return Fact(
        name,
        "a value mig-manager writes to nvidia.com/mig.config.state",
        catalog,
        (Source(MIG_PARTED_SOURCE, _RECONFIGURE, "Run setNodeLabel(migConfigStateLabel, ...), setState"),),
        check,
    )


def _mig_facts() -> list[Fact]:
    """MIG labels (mig-manager and the operator) and NVIDIA's named layouts."""
    all_states = CatalogValue(
        "node_agent.MIG_STATE_*",
        (
            node_agent.MIG_STATE_SUCCESS,
            node_agent.MIG_STATE_FAILED,
            node_agent.MIG_STATE_PENDING,
            node_agent.MIG_STATE_REBOOTING,
        ),
    )

    def every_state(texts: Sequence[str]) -> str | None:
        return _compare_sets(_mig_states_written(texts[0]), "the values mig-manager writes", all_states)

    def all_disabled(texts: Sequence[str]) -> str | None:
        go = Go(*texts)  # one Go package: the constants in one file, the function in the other
        writes = re.search(
            r"labels\[migConfigLabelKey\]\s*=\s*migConfigDisabledValue",
            go.body("updateGPUStateLabels", "nodeLabelingController"),
        )
        if writes is None:
            return "updateGPUStateLabels no longer writes migConfigDisabledValue to migConfigLabelKey"
        return _compare(
            _need(go, "migConfigDisabledValue"), "migConfigDisabledValue", _catalog(names, "MIG_ALL_DISABLED")
        )

    labelling = "controllers/nodelabeling_controller.go"
    return [
        _go_const_fact(
            "mig-config-state-label",
            "mig-manager answers a MIG change in this node label",
            _catalog(names, "MIG_CONFIG_STATE_LABEL"),
            MIG_PARTED_SOURCE,
            _RECONFIGURE,
            "migConfigStateLabel",
        ),
        _mig_state_fact("mig-state-success", "MIG_STATE_SUCCESS"),
        _mig_state_fact("mig-state-failed", "MIG_STATE_FAILED"),
        _mig_state_fact("mig-state-pending", "MIG_STATE_PENDING"),
        _mig_state_fact("mig-state-rebooting", "MIG_STATE_REBOOTING"),
        Fact(
            "mig-state-values",
            "mig-manager writes exactly these values to nvidia.com/mig.config.state",
            (all_states,),
            (Source(MIG_PARTED_SOURCE, _RECONFIGURE, "Run setNodeLabel(migConfigStateLabel, ...), setState"),),
            every_state,
        ),
        _go_const_fact(
            "mig-config-label/mig-manager",
            "mig-manager applies the named config in this node label",
            _catalog(names, "MIG_CONFIG_LABEL"),
            MIG_PARTED_SOURCE,
            "cmd/nvidia-mig-manager/main.go",
            "MigConfigLabel",
        ),
        _go_const_fact(
            "mig-config-label/operator",
            "the operator writes the default MIG config into this node label",
            _catalog(names, "MIG_CONFIG_LABEL"),
            GPU_OPERATOR_SOURCE,
            "controllers/state_manager.go",
            "migConfigLabelKey",
        ),
        Fact(
            "mig-all-disabled/operator",
            "the operator writes this config on MIG-capable nodes without one",
            _catalog(names, "MIG_ALL_DISABLED"),
            (
                Source(GPU_OPERATOR_SOURCE, "controllers/state_manager.go", "migConfigDisabledValue"),
                Source(GPU_OPERATOR_SOURCE, labelling, "updateGPUStateLabels"),
            ),
            all_disabled,
        ),
        _named_layouts_fact(),
    ]


def _named_layouts_fact() -> Fact:
    catalog = (CatalogValue("mig.named_layouts.DEFAULT_CONFIGS", named_layouts.DEFAULT_CONFIGS),)

    def check(texts: Sequence[str]) -> str | None:
        config_map = next(doc for doc in _yaml_documents(texts[0]) if doc.get("kind") == "ConfigMap")
        (config,) = _yaml_documents(config_map["data"]["config.yaml"])
        upstream = {name: _parted_entries(name, entries) for name, entries in config["mig-configs"].items()}
        ours = {config.name: config.entries for config in named_layouts.DEFAULT_CONFIGS}
        problems = [f"{name}: not in the ConfigMap" for name in ours if name not in upstream]
        problems += [f"{name}: not in the catalog" for name in upstream if name not in ours]
        problems += [
            f"{name}: the ConfigMap has {upstream[name]}, the catalog {ours[name]}"
            for name in ours
            if name in upstream and upstream[name] != ours[name]
        ]
        if not problems and list(upstream) != list(ours):
            problems.append("the configs are in another order (the catalog keeps the file's order)")
        return "; ".join(problems) or None

    return Fact(
        "mig-named-layouts",
        "NVIDIA's named mig-parted configs are the catalog's: the same names in the same order, each entry with the "
        "same device filter and per-GPU profile counts",
        catalog,
        (
            Source(
                GPU_OPERATOR_SOURCE,
                "assets/state-mig-manager/0400_configmap.yaml",
                "ConfigMap default-mig-parted-config data.config.yaml mig-configs",
            ),
        ),
        check,
    )


def _parted_entries(name: str, entries: Sequence[Mapping[str, Any]]) -> tuple[named_layouts.PartedEntry, ...]:
    """A ``mig-configs`` list as the catalog models it; anything it cannot model raises ``ValueError``."""
    parsed = []
    for entry in entries:
        extra = set(entry) - {"devices", "mig-enabled", "mig-devices", "device-filter"}
        if extra or entry.get("devices") != "all":
            raise ValueError(f"{name}: an entry the catalog cannot model ({dict(entry)})")
        device_filter = entry.get("device-filter")
        filters: tuple[str, ...] | None = None
        if isinstance(device_filter, str):
            filters = (device_filter,)  # A30's filter is a bare string in the file
        elif device_filter is not None:
            filters = tuple(device_filter)
        devices = tuple(entry.get("mig-devices", {}).items()) if entry.get("mig-enabled") else None
        parsed.append(named_layouts.PartedEntry(filters, devices))
    return tuple(parsed)


# -- GFD, the device plugin, the NVIDIADriver and ClusterPolicy CRDs, the operator image ----------------------
def _device_plugin_facts() -> list[Fact]:
    gfd = _catalog(nvidia_driver, "GFD_DRIVER_VERSION_LABEL")

    def gfd_label(texts: Sequence[str]) -> str | None:
        body = Go(texts[0]).body("newVersionLabeler")
        if not re.search(r"driverVersion,\s*err\s*:=\s*manager\.GetDriverVersion\(\)", body):
            return "newVersionLabeler no longer takes driverVersion from the NVML manager"
        labels = [_go_string(key) for key in re.findall(rf"({_GO_STRING})\s*:\s*driverVersion\s*,", body)]
        if len(labels) != 1:
            return f"the labels with the whole driverVersion are {labels}, expected one"
        return _compare(labels[0], "the label with the whole driver version", gfd)

    def resource(texts: Sequence[str], profile: str | None) -> str:
        consts, resources, rm = texts
        prefix = _need(Go(consts), "ResourceNamePrefix")
        if not re.search(r'ResourceNamePrefix\s*\+\s*"/"\s*\+\s*n\b', resources):
            raise LookupError("resources.go no longer prefixes resource names with ResourceNamePrefix + '/'")
        body = Go(rm).body("AddDefaultResourcesToConfig")
        if profile is None:
            match = re.search(rf'AddGPUResource\("\*",\s*({_GO_STRING})\)', body)
            if match is None:
                raise LookupError("AddDefaultResourcesToConfig no longer adds the full-GPU resource")
            return f"{prefix}/{_go_string(match.group(1))}"
        match = re.search(
            rf"strings\.ReplaceAll\(({_GO_STRING})\s*\+\s*p\.String\(\),\s*({_GO_STRING}),\s*({_GO_STRING})\)", body
        )
        if match is None:
            raise LookupError("AddDefaultResourcesToConfig no longer names a MIG resource 'mig-' + profile")
        start, old, new = (_go_string(group) for group in match.groups())
        return f"{prefix}/" + (start + profile).replace(old, new)

    def gpu_resource(texts: Sequence[str]) -> str | None:
        return _compare(resource(texts, None), "the full-GPU resource", _catalog(gpu_operator_chart, "GPU_RESOURCE"))

    def mig_resource(texts: Sequence[str]) -> str | None:
        wrong = []
        for profile in ("1g.10gb", "1g.10gb+me", "1g.24gb+me.all", "7g.80gb"):
            upstream, ours = resource(texts, profile), gpu_operator_chart.mig_resource_name(profile)
            if upstream != ours:
                wrong.append(f"{profile}: the device plugin advertises {upstream!r}, mig_resource_name {ours!r}")
        if not gpu_operator_chart.mig_resource_name("1g.10gb").startswith(gpu_operator_chart.MIG_RESOURCE_PREFIX):
            wrong.append("mig_resource_name does not start with MIG_RESOURCE_PREFIX")
        return "; ".join(wrong) or None

    resource_sources = (
        Source(DEVICE_PLUGIN_SOURCE, "api/config/v1/consts.go", "ResourceNamePrefix"),
        Source(DEVICE_PLUGIN_SOURCE, "api/config/v1/resources.go", "ResourceName normalisation"),
        Source(DEVICE_PLUGIN_SOURCE, "internal/rm/rm.go", "AddDefaultResourcesToConfig"),
    )
    return [
        Fact(
            "gfd-driver-version-label",
            "GPU Feature Discovery labels the node with the whole driver version NVML reports",
            gfd,
            (Source(DEVICE_PLUGIN_SOURCE, "internal/lm/nvml.go", "newVersionLabeler"),),
            gfd_label,
        ),
        Fact(
            "gpu-resource-name",
            "the device plugin advertises a whole GPU (and a slice under the single strategy) as this resource",
            _catalog(gpu_operator_chart, "GPU_RESOURCE"),
            resource_sources,
            gpu_resource,
        ),
        Fact(
            "mig-resource-name",
            "under the mixed strategy a slice is nvidia.com/mig-<profile> with '+' written '.'",
            (
                *_catalog(gpu_operator_chart, "MIG_RESOURCE_PREFIX"),
                CatalogValue("gpu_operator_chart.mig_resource_name", gpu_operator_chart.mig_resource_name),
            ),
            resource_sources,
            mig_resource,
        ),
    ]


def _crd_spec(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A CRD's ``spec`` and its one version's ``openAPIV3Schema``."""
    (crd,) = _yaml_documents(text)
    versions = crd["spec"]["versions"]
    if len(versions) != 1:
        raise ValueError(f"{len(versions)} versions, the catalog knows one")
    return crd["spec"], versions[0]["schema"]["openAPIV3Schema"]


def _crd_facts() -> list[Fact]:
    """The NVIDIADriver CRD of the chart in the operator's source, the ClusterPolicy's MIG strategies, the image."""
    crd_source = Source(GPU_OPERATOR_SOURCE, _NVD_CRD, "CustomResourceDefinition nvidiadrivers.nvidia.com")

    def kind(texts: Sequence[str]) -> str | None:
        spec, _ = _crd_spec(texts[0])
        api_version = f"{spec['group']}/{spec['versions'][0]['name']}"
        return _compare(api_version, "the group/version", _catalog(nvidia_driver, "API_VERSION")) or _compare(
            spec["names"]["kind"], "the kind", _catalog(nvidia_driver, "KIND")
        )

    def immutable(texts: Sequence[str]) -> str | None:
        _, schema = _crd_spec(texts[0])
        fields = [
            field
            for field, prop in schema["properties"]["spec"]["properties"].items()
            if any(
                rule.get("rule", "").replace(" ", "") == "self==oldSelf"
                for rule in prop.get("x-kubernetes-validations", [])
            )
        ]
        return _compare_sets(
            fields, "the spec fields with the rule self == oldSelf", _catalog(nvidia_driver, "IMMUTABLE_SPEC_FIELDS")[0]
        )

    def driver_type(texts: Sequence[str]) -> str | None:
        _, schema = _crd_spec(texts[0])
        prop = schema["properties"]["spec"]["properties"]["driverType"]
        if nvidia_driver.DRIVER_TYPE not in prop.get("enum", ()):
            return f"driverType's enum is {prop.get('enum')}"
        return _compare(prop.get("default"), "driverType's default", _catalog(nvidia_driver, "DRIVER_TYPE"))

    def ready(texts: Sequence[str]) -> str | None:
        _, schema = _crd_spec(texts[0])
        states = schema["properties"]["status"]["properties"]["state"].get("enum", [])
        return None if nvidia_driver.READY_STATE in states else f"status.state's enum is {states}"

    def mig_strategies(texts: Sequence[str]) -> str | None:
        _, schema = _crd_spec(texts[0])
        strategy = schema["properties"]["spec"]["properties"]["mig"]["properties"]["strategy"]
        return _compare_sets(
            strategy["enum"], "spec.mig.strategy's enum", _catalog(gpu_operator_chart, "MIG_STRATEGIES")[0]
        )

    def field_manager(texts: Sequence[str]) -> str | None:
        entry = re.findall(r"^ENTRYPOINT\s+(\[.*\])\s*$", texts[0], re.M)
        if len(entry) != 1:
            return f"{len(entry)} exec-form ENTRYPOINTs, expected one"
        binary = Path(json.loads(entry[0])[0]).name
        return _compare(
            binary,
            "the operator binary's name (its client's user agent)",
            _catalog(gpu_operator_chart, "OPERATOR_FIELD_MANAGER"),
        )

    return [
        Fact(
            "nvidiadriver-kind",
            "the resource is nvidia.com/v1alpha1 NVIDIADriver",
            _catalog(nvidia_driver, "API_VERSION", "KIND"),
            (crd_source,),
            kind,
        ),
        Fact(
            "nvidiadriver-immutable-fields",
            "exactly these spec fields cannot change in place (x-kubernetes-validations self == oldSelf)",
            _catalog(nvidia_driver, "IMMUTABLE_SPEC_FIELDS"),
            (Source(GPU_OPERATOR_SOURCE, _NVD_CRD, "spec.properties.*.x-kubernetes-validations"),),
            immutable,
        ),
        Fact(
            "nvidiadriver-driver-type",
            "the driverType the program writes is allowed and the default",
            _catalog(nvidia_driver, "DRIVER_TYPE"),
            (Source(GPU_OPERATOR_SOURCE, _NVD_CRD, "spec.properties.driverType"),),
            driver_type,
        ),
        Fact(
            "nvidiadriver-ready-state",
            "a ready NVIDIADriver says so in status.state",
            _catalog(nvidia_driver, "READY_STATE"),
            (Source(GPU_OPERATOR_SOURCE, _NVD_CRD, "status.properties.state.enum"),),
            ready,
        ),
        _go_const_fact(
            "nvidiadriver-conflict-reason",
            "overlapping nodeSelectors are reported with this condition reason",
            _catalog(nvidia_driver, "CONFLICT_REASON"),
            GPU_OPERATOR_SOURCE,
            "internal/conditions/nvidiadriver.go",
            "ConflictingNodeSelector",
        ),
        Fact(
            "mig-strategies",
            "the ClusterPolicy accepts exactly these MIG strategies",
            _catalog(gpu_operator_chart, "MIG_STRATEGIES"),
            (
                Source(
                    GPU_OPERATOR_SOURCE,
                    "deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml",
                    "spec.mig.strategy.enum",
                ),
            ),
            mig_strategies,
        ),
        Fact(
            "operator-field-manager",
            "the operator's label writes are recorded under its binary's name as field manager",
            _catalog(gpu_operator_chart, "OPERATOR_FIELD_MANAGER"),
            (Source(GPU_OPERATOR_SOURCE, "docker/Dockerfile", "ENTRYPOINT"),),
            field_manager,
        ),
    ]


# -- Yandex -------------------------------------------------------------------------------------------------
_SCHEMA_MAP = re.compile(r"Schema:\s*map\[string\]\*schema\.Schema\{")


def terraform_schema(code: str) -> dict[str, dict[str, Any]]:
    """The first ``Schema: map[string]*schema.Schema{...}`` in ``code``: each key's flat attributes and nested schema.

    ``{"cluster_id": {"attributes": "Type: ... ForceNew: true", "schema": {...}}}``: ``attributes`` is the block's
    text without its nested braces, ``schema`` the ``Elem: &schema.Resource{Schema: ...}`` below it, if any.
    """
    match = _SCHEMA_MAP.search(code)
    if match is None:
        return {}
    start = match.end() - 1
    inner = code[start + 1 : _matching_brace(code, start)]
    entries: dict[str, dict[str, Any]] = {}
    position = 0
    key = re.compile(rf"({_GO_STRING})\s*:\s*\{{")
    while (found := key.search(inner, position)) is not None:
        opening = found.end() - 1
        closing = _matching_brace(inner, opening)
        block = inner[opening + 1 : closing]
        entries[_go_string(found.group(1))] = {"attributes": _flat(block), "schema": terraform_schema(block)}
        position = closing + 1
    return entries


def _flat(block: str) -> str:
    """``block`` without anything inside nested braces."""
    out, depth, last = [], 0, 0
    for match in _GO_LITERAL_OR_BRACE.finditer(block):
        token = match.group(0)
        if token not in "{}":
            continue
        if token == "{":
            if depth == 0:
                out.append(block[last : match.start()])
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                last = match.end()
    if depth == 0:
        out.append(block[last:])
    return "".join(out)


def _force_new_paths(schema: Mapping[str, Mapping[str, Any]], prefix: str = "") -> set[str]:
    paths = set()
    for key, entry in schema.items():
        if re.search(r"\bForceNew:\s*true\b", entry["attributes"]):
            paths.add(prefix + key)
        paths |= _force_new_paths(entry["schema"], f"{prefix}{key}.")
    return paths


def _terraform_path(pulumi_path: str, schema: Mapping[str, Mapping[str, Any]]) -> str:
    """A Pulumi input path (camelCase, ``[*]``) as the Terraform schema path the bridge maps it to.

    The bridge writes names in camelCase and a list block that may hold more than one item in the plural
    (``allocation_policy.location`` is ``allocationPolicy.locations``).
    """
    parts = []
    level: Mapping[str, Mapping[str, Any]] = schema
    for step in pulumi_path.replace("[*]", "").split("."):
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", step).lower()
        plural = snake not in level and snake.endswith("s") and snake[:-1] in level
        if plural and not re.search(r"\bMaxItems:\s*1\b", level[snake[:-1]]["attributes"]):
            snake = snake[:-1]
        parts.append(snake)
        level = level.get(snake, {}).get("schema", {})
    return ".".join(parts)


def _yandex_facts() -> list[Fact]:
    force_new = CatalogValue(
        "replacements.YANDEX_NODE_GROUP_FORCE_NEW + YANDEX_NODE_GROUP_FORCE_NEW_BLOCKS",
        (*replace.YANDEX_NODE_GROUP_FORCE_NEW, *replace.YANDEX_NODE_GROUP_FORCE_NEW_BLOCKS),
    )
    node_group = "yandex/resource_yandex_kubernetes_node_group.go"

    def replaced(texts: Sequence[str]) -> str | None:
        schema = terraform_schema(Go(texts[0]).body("resourceYandexKubernetesNodeGroup"))
        ours = CatalogValue(force_new.symbol, {_terraform_path(path, schema) for path in force_new.value})
        return _compare_sets(_force_new_paths(schema), "the fields with ForceNew: true", ours)

    def effects(texts: Sequence[str]) -> str | None:
        body = Go(texts[0]).body("toAPI")
        cases = [_go_string(case) for case in re.findall(rf"\bcase\s+({_GO_STRING})\s*:", body)]
        return _compare_sets(cases, "the effects toAPI accepts", _catalog(kubernetes, "TAINT_EFFECTS")[0])

    def form(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        body = go.body("parseTaint")
        outer = re.search(
            rf"(\w+)\s*:=\s*strings\.Split\(st,\s*({_GO_STRING})\)\s*\n\s*if\s+len\(\1\)\s*!=\s*(\d+)", body
        )
        inner = re.search(
            rf"(\w+)\s*:=\s*strings\.Split\(\w+\[0\],\s*({_GO_STRING})\)\s*\n\s*if\s+len\(\1\)\s*!=\s*(\d+)", body
        )
        if outer is None or inner is None:
            return "parseTaint no longer splits '<key>=<value>' from ':<effect>' with two exact-count splits"
        allowed = {_go_string(case) for case in re.findall(rf"\bcase\s+({_GO_STRING})\s*:", go.body("toAPI"))}
        colon, parts = _go_string(outer.group(2)), int(outer.group(3))
        equals, kv_parts = _go_string(inner.group(2)), int(inner.group(3))

        def yandex_accepts(text: str) -> bool:
            split = text.split(colon)
            return len(split) == parts and split[-1] in allowed and len(split[0].split(equals)) == kv_parts

        def catalog_accepts(text: str) -> bool:
            try:
                kubernetes.parse_taint(text, value_required=True)
            except kubernetes.TaintFormatError:
                return False
            return True

        probes = (
            "nvidia.com/gpu=true:NoSchedule",
            "nvidia.com/gpu=:NoSchedule",
            "nvidia.com/gpu:NoSchedule",
            "a=b=c:NoSchedule",
            "a=b:c:NoSchedule",
            "a=b:NoExecute",
            "a=b:Sometimes",
            "a=b",
        )
        wrong = [
            f"{p!r}: Yandex {'accepts' if yandex_accepts(p) else 'refuses'}"
            for p in probes
            if yandex_accepts(p) != catalog_accepts(p)
        ]
        return f"parse_taint(value_required=True) differs: {', '.join(wrong)}" if wrong else None

    return [
        Fact(
            "yandex-node-group-force-new",
            "exactly these node-group inputs replace the group when they change",
            (force_new,),
            (Source(YANDEX_PROVIDER_SOURCE, node_group, "resourceYandexKubernetesNodeGroup Schema ForceNew"),),
            replaced,
        ),
        Fact(
            "yandex-taint-effects",
            "a node-group taint's effect is one of these",
            _catalog(kubernetes, "TAINT_EFFECTS"),
            (Source(YANDEX_PROVIDER_SOURCE, node_group, "toAPI"),),
            effects,
        ),
        Fact(
            "yandex-taint-form",
            "a node-group taint is key=value:Effect with the '=' mandatory (parse_taint with value_required)",
            (CatalogValue("kubernetes.parse_taint", kubernetes.parse_taint),),
            (Source(YANDEX_PROVIDER_SOURCE, node_group, "parseTaint toAPI"),),
            form,
        ),
    ]


# -- pulumi-kubernetes --------------------------------------------------------------------------------------
def _properties(expression: str, go: Go) -> list[str]:
    """The paths a ``properties`` expression of ``diff.go`` lists: literals, variables, ``append``, helper calls."""
    expression = expression.strip().rstrip(",").strip()
    if expression.endswith("..."):
        expression = expression[:-3].strip()
    if expression.startswith("properties{"):
        return [_go_string(literal) for literal in re.findall(_GO_STRING, expression)]
    if expression.startswith("append("):
        return [path for argument in _arguments(expression[len("append(") : -1]) for path in _properties(argument, go)]
    call = re.fullmatch(r"(\w+)\((.*)\)", expression, re.S)
    if call:
        prefixes = [_go_string(literal) for literal in re.findall(_GO_STRING, call.group(2))]
        suffixes = [
            _go_string(literal) for literal in re.findall(rf"\w+\s*\+\s*({_GO_STRING})", go.body(call.group(1)))
        ]
        return [prefix + suffix for prefix in prefixes for suffix in suffixes]
    return _properties(_variable(go, expression), go)


def _variable(go: Go, name: str) -> str:
    """The expression a package-level ``var <name> = ...`` is set to."""
    variable = re.search(rf"^var\s+{re.escape(name)}\s*=\s*", go.code, re.M)
    if variable is None:
        raise LookupError(f"no variable {name}")
    return _balanced(go.code, variable.end())


def _arguments(text: str) -> list[str]:
    """Top-level comma-separated arguments."""
    arguments, depth, start = [], 0, 0
    for match in re.finditer(rf"{_GO_STRING}|[(){{}}\[\],]", text):
        token = match.group(0)
        if token in "({[":
            depth += 1
        elif token in ")}]":
            depth -= 1
        elif token == "," and depth == 0:
            arguments.append(text[start : match.start()])
            start = match.end()
    arguments.append(text[start:])
    return [argument for argument in (a.strip() for a in arguments) if argument]


def _balanced(code: str, start: int) -> str:
    """The expression starting at ``start`` up to the end of its brackets (``append(...)``, ``T{...}``)."""
    for match in re.finditer(rf"{_GO_STRING}|[({{]", code[start:]):
        if match.group(0) in "({":
            break
    else:
        raise ValueError("no bracketed expression")
    opening = start + match.start()
    closer = {"(": ")", "{": "}"}[code[opening]]
    depth = 0
    for token in re.finditer(rf"{_GO_STRING}|[(){{}}]", code[opening:]):
        if token.group(0) in "({":
            depth += 1
        elif token.group(0) in ")}":
            depth -= 1
            if depth == 0 and token.group(0) == closer:
                return code[start : opening + token.end()]
    raise ValueError("unbalanced expression")


def _minimal(paths: Iterable[str]) -> set[str]:
    """Paths without the leading dot, less those under another (``spec.selector`` covers ``spec.selector.x``)."""
    cleaned = {path.lstrip(".") for path in paths}
    return {p for p in cleaned if not any(p != q and p.startswith(q + ".") for q in cleaned)}


def _force_new_table(go: Go) -> dict[str, dict[str, list[str]]]:
    """``forceNew`` of ``diff.go``: ``<group or core>/<Kind>`` -> version -> paths, as the program sees them.

    A Secret or a ConfigMap is immutable in the provider the program configures (``enableSecretMutable`` and
    ``enableConfigMapMutable`` unset), so the paths of ``forceNewProperties``'s branches for them are theirs.
    """
    table: dict[str, dict[str, list[str]]] = {}
    groups = _variable(go, "forceNew")
    for group, versions in _map_entries(groups[groups.index("{") + 1 : -1]):
        if group == "":
            continue  # core again, under its legacy name
        if re.fullmatch(r"\w+", versions):
            versions = _variable(go, versions)
        for version, kinds in _map_entries(versions[versions.index("{") + 1 : -1]):
            for kind, expression in _map_entries(kinds[kinds.index("{") + 1 : -1]):
                table.setdefault(f"{group}/{kind}", {})[version] = _properties(expression, go)
    body = go.body("forceNewProperties")
    for kind, test in (("core/Secret", "IsSecret"), ("core/ConfigMap", "IsConfigMap")):
        branch = re.search(
            rf"clients\.{test}\(obj\)[^{{]*\{{\s*props\s*=\s*append\(props,\s*(properties\{{[^}}]*\}})", body
        )
        if branch is None:
            raise LookupError(f"forceNewProperties has no {test} branch")
        table.setdefault(kind, {})["v1"] = _properties(branch.group(1), go)
    return table


def _map_entries(inner: str) -> list[tuple[str, str]]:
    """``"key": value`` entries of a Go map literal's inside."""
    entries = []
    for argument in _arguments(inner):
        match = re.fullmatch(rf"({_GO_STRING})\s*:\s*(.*)", argument, re.S)
        if match:
            entries.append((_go_string(match.group(1)), match.group(2).strip()))
    return entries


def _pulumi_facts() -> list[Fact]:
    annotations = "provider/pkg/metadata/annotations.go"
    diff = "provider/pkg/provider/diff.go"

    def metadata(texts: Sequence[str]) -> str | None:
        go = Go(texts[0])
        call = re.search(rf"metadataForceNewProperties\(({_GO_STRING})\)", go.body("forceNewProperties"))
        if call is None:
            return "forceNewProperties no longer adds metadataForceNewProperties of the object's metadata"
        found = _properties(f"metadataForceNewProperties({call.group(1)})", go)
        return _compare_sets(
            _minimal(found), "the metadata paths", _catalog(replace, "KUBERNETES_METADATA_FORCE_NEW")[0]
        )

    def kinds(texts: Sequence[str]) -> str | None:
        table = _force_new_table(Go(texts[0]))
        problems = []
        for kind, paths in replace.KUBERNETES_FORCE_NEW.items():
            upstream = table.get(kind)
            if upstream is None:
                problems.append(f"{kind}: not in forceNew")
                continue
            wanted = replace.KUBERNETES_FORCE_NEW_VERSIONS.get(kind)
            if wanted is not None and set(wanted) != set(upstream):
                problems.append(f"{kind}: forceNew lists versions {sorted(upstream)}, the catalog {sorted(wanted)}")
            for version, found in upstream.items():
                theirs, ours = _minimal(found), _minimal(paths)
                if theirs != ours:
                    problems.append(
                        f"{kind} {version}: forceNew has {sorted(theirs - ours)} more, {sorted(ours - theirs)} fewer"
                    )
        return "; ".join(problems) or None

    return [
        _go_const_fact(
            "pulumi-patch-force-annotation",
            "a Patch resource with this annotation forces its server-side apply",
            _catalog(names, "PATCH_FORCE_ANNOTATION"),
            PULUMI_KUBERNETES_SOURCE,
            annotations,
            "AnnotationPatchForce",
        ),
        _go_const_fact(
            "pulumi-patch-field-manager-annotation",
            "a Patch resource applies as the field manager this annotation names",
            _catalog(names, "PATCH_FIELD_MANAGER_ANNOTATION"),
            PULUMI_KUBERNETES_SOURCE,
            annotations,
            "AnnotationPatchFieldManager",
        ),
        Fact(
            "pulumi-metadata-force-new",
            "a new name or namespace replaces every Kubernetes object",
            _catalog(replace, "KUBERNETES_METADATA_FORCE_NEW"),
            (Source(PULUMI_KUBERNETES_SOURCE, diff, "forceNewProperties metadataForceNewProperties"),),
            metadata,
        ),
        Fact(
            "pulumi-kind-force-new",
            "for each kind the catalog lists, exactly these input paths replace the object (immutable Secrets and "
            "ConfigMaps)",
            _catalog(replace, "KUBERNETES_FORCE_NEW", "KUBERNETES_FORCE_NEW_VERSIONS"),
            (Source(PULUMI_KUBERNETES_SOURCE, diff, "forceNew forceNewProperties"),),
            kinds,
        ),
    ]


# -- the grammars config values are checked by (issue #39) -----------------------------------------------------
_MIG_CONFIG_TYPES = "pkg/types/mig_config.go"
_MIG_SPEC = "api/spec/v1/spec.go"
_OBJECT_CONTROLS = "controllers/object_controls.go"


def _grammar_facts() -> list[Fact]:
    """Where a receiver's rule for a config value is in a pinned tree, the rule is checked against it there."""

    def all_zero_counts(texts: Sequence[str]) -> str | None:
        body = Go(texts[0]).body("AssertValidFormat", "MigConfig")
        if not re.search(r"if\s+len\(m\)\s*==\s*0\s*\{\s*return\s+nil", body):
            return "AssertValidFormat no longer accepts an empty map (MIG on, no instances)"
        if "all counts for all MigProfiles are 0" not in texts[0] or not re.search(r"if\s+v\s*>\s*0", body):
            return "AssertValidFormat no longer refuses a map whose counts are all 0"
        if not re.search(r"devices\.AssertValidFormat\(\)", Go(texts[1]).body("UnmarshalJSON", "MigConfigSpec")):
            return "MigConfigSpec.UnmarshalJSON no longer checks mig-devices with AssertValidFormat"
        return None

    def rolling_update(texts: Sequence[str]) -> str | None:
        body = Go(texts[0]).body("applyUpdateStrategyConfig")
        if "MaxSurge" in body:
            return "applyUpdateStrategyConfig now sets maxSurge: a maxUnavailable of 0 may be valid again"
        if not re.search(r"RollingUpdateDaemonSet\{\s*MaxUnavailable:\s*&intOrString\s*\}", body):
            return "applyUpdateStrategyConfig no longer writes daemonsets.rollingUpdate.maxUnavailable alone"
        if not re.search(r"strconv\.ParseInt\([^,]+MaxUnavailable,\s*10,\s*32\)", body):
            return "applyUpdateStrategyConfig no longer reads a count with strconv.ParseInt(value, 10, 32)"
        if not re.search(r'strings\.HasSuffix\([^,]+MaxUnavailable,\s*"%"\)', body):
            return "applyUpdateStrategyConfig no longer keeps a value ending in % as a percentage"
        return None

    def metrics_volume(texts: Sequence[str]) -> str | None:
        code = Go(texts[0]).code
        mount = re.search(
            r'MetricsConfig\.Name != ""\s*\{\s*metricsConfigVolMount := corev1\.VolumeMount\{Name: "([^"]+)"', code
        )
        if mount is None:
            return "TransformDCGMExporter no longer mounts the metrics ConfigMap under a volume name of its own"
        if not re.search(r"Name:\s*config\.DCGMExporter\.MetricsConfig\.Name", code):
            return "the metrics ConfigMap's name is no longer only the ConfigMap volume source's name"
        return None

    return [
        Fact(
            "mig-parted-all-zero-counts",
            "mig-parted refuses a mig-devices map whose counts are all 0 (an empty map is MIG on, no instances); "
            "the config refuses such a custom layout at its key",
            _catalog(mig_parted, "ALL_ZERO_COUNTS_RULE"),
            (
                Source(MIG_PARTED_SOURCE, _MIG_CONFIG_TYPES, "MigConfig.AssertValidFormat"),
                Source(MIG_PARTED_SOURCE, _MIG_SPEC, "MigConfigSpec.UnmarshalJSON"),
            ),
            all_zero_counts,
        ),
        Fact(
            "operator-daemonset-max-unavailable",
            "the operator writes daemonsets.rollingUpdate.maxUnavailable into its operand DaemonSets with no maxSurge "
            "(a count read with ParseInt(v, 10, 32), a percentage kept): 0 in any spelling never proceeds",
            _catalog(gpu_operator_operands, "MAX_UNAVAILABLE_RULE"),
            (Source(GPU_OPERATOR_SOURCE, _OBJECT_CONTROLS, "applyUpdateStrategyConfig"),),
            rolling_update,
        ),
        Fact(
            "operator-metrics-config-map-volume",
            "the operator mounts the dcgm-exporter metrics ConfigMap under a volume name of its own, so "
            "observability.metrics.configMapName is only a ConfigMap name (a DNS subdomain, dots allowed)",
            _catalog(kubernetes, "SUBDOMAIN_NAME_RULE"),
            (Source(GPU_OPERATOR_SOURCE, _OBJECT_CONTROLS, "TransformDCGMExporter metricsConfigVolMount"),),
            metrics_volume,
        ),
    ]


#: Every fact, in the order of the docs table.
FACTS: Final[tuple[Fact, ...]] = (
    *_driver_facts(),
    *_upgrade_facts(),
    *_pauser_facts(),
    *_mig_facts(),
    *_device_plugin_facts(),
    *_crd_facts(),
    *_yandex_facts(),
    *_pulumi_facts(),
    *_grammar_facts(),
)


def fact(name: str) -> Fact:
    """The registered fact ``name``."""
    for candidate in FACTS:
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def check_all(root: Path = ROOT, facts: Iterable[Fact] = FACTS) -> list[Failure]:
    """Every fact that does not hold against the trees under ``root``'s ``.upstream/``: what a pin bump broke."""
    return [failure for failure in (each.verify(root) for each in facts) if failure is not None]


def render_markdown(facts: Iterable[Fact] = FACTS) -> str:
    """``docs/upstream-facts.md``: one row per fact, generated so that it cannot drift from the registry."""

    def cell(*pieces: str) -> str:
        escaped = (
            p.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|") for p in pieces
        )
        return "<br>".join(escaped)

    lines = [
        "# Facts about other systems, checked against their pinned source",
        "",
        "Generated from `components/catalog/upstream_facts.py` by `python -m components.catalog.upstream_facts "
        "--markdown > docs/upstream-facts.md`; `tests/catalog/test_upstream_facts.py` fails when this file and the "
        "registry differ. Each fact is checked by `test_fact_holds[<fact>]` in that file, which reads the named file "
        "of the pinned source under `.upstream/` (`make upstream`).",
        "",
        "After bumping a pin in `components/catalog/upstream.py` (and `make upstream`), list every fact that broke, "
        "each with the file and symbol to read in the new tag:",
        "",
        "```",
        "python -m components.catalog.upstream_facts",
        "python -m pytest tests/catalog/test_upstream_facts.py",
        "```",
        "",
        "| fact | catalog symbol | upstream file and symbol | test |",
        "| --- | --- | --- | --- |",
    ]
    for each in facts:
        catalog = cell(*(f"`{value.symbol}`" for value in each.catalog))
        sources = cell(*(f"{s.artifact.name} {s.artifact.version} `{s.path}` `{s.symbol}`" for s in each.sources))
        lines.append(f"| `{each.name}`: {cell(each.claim)} | {catalog} | {sources} | `test_fact_holds[{each.name}]` |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """List the facts that no longer hold (exit 1 if any), or print the docs table."""
    parser = argparse.ArgumentParser(prog="python -m components.catalog.upstream_facts", description=__doc__)
    parser.add_argument("--root", type=Path, default=ROOT, help="project folder (its .upstream/ is read)")
    parser.add_argument("--markdown", action="store_true", help=f"print the table of {DOCS_PATH}")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(render_markdown())
        return 0
    failures = check_all(args.root)
    for failure in failures:
        print(failure)
    print(f"{len(FACTS) - len(failures)} of {len(FACTS)} facts hold", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
