"""Renders what the program hands to Helm and kustomize, so the policy gate sees the objects themselves.

Why: a ``helm.v3.Release`` renders its chart inside the provider, so no policy (neither this gate
nor ``pulumi preview --policy-pack``, pulumi/pulumi#10055) ever sees the objects it installs; a
``kustomize.v2.Directory`` creates no children under mocks. The offline gate renders both with the
real tools, the way the provider would:

- every ``kubernetes:helm.sh/v3:Release`` whose chart and version are the pinned GPU Operator chart
  (``components.catalog.upstream.GPU_OPERATOR_CHART``, unpacked by ``make upstream``) with
  ``helm template <name> <chart> --namespace <namespace>`` and the release's values (CRDs included
  unless the release skips them, test hooks left out as ``helm install`` leaves them out). A release
  of any other chart is not rendered, and the gate says so (advisory);
- every ``kubernetes:kustomize/v2:Directory`` with ``kubectl kustomize <directory>``. A Directory that
  does not build is a mandatory finding: ``pulumi up`` would fail on it the same way.

Each render that is not in the render cache (``preview.render.cache``: keyed by the tool's version, the
pinned artifacts' digests, the arguments and the values or overlay files) runs once per preview, all of
them at once (separate processes; kustomize over the real Kubeflow tree takes seconds). Helm gets an
empty home of its own per render (no repository cache, no plugins), the values go through a fresh
temporary file. The tools come from ``.tools/bin`` (``make tools``), else from ``PATH``.

Rendered objects keep their tool's order; ``files()`` writes one YAML file per object under
``rendered/<release or Directory>/`` with Secret values and the release's secret values masked.
Limits: a release is rendered from its ``values`` (one that sets ``valueYamlFiles`` or ``postrender`` is
not rendered, and the gate says so); a Directory's ``namespace`` input (a default for objects without
one) is not applied, the program sets none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.catalog.gpu_operator_chart import CHART_NAME
from components.catalog.names import HELM_RELEASE_TYPE as HELM_RELEASE
from components.catalog.names import KUBERNETES_TYPE_PREFIX, KUSTOMIZE_DIRECTORY_TYPE
from components.catalog.upstream import GPU_OPERATOR_CHART, tree_digest
from preview.render.cache import RenderCache, enabled, project_cache
from preview.render.tools import find_tool, pinned_chart_dir
from preview.run.files import dump_yaml, manifest_filename, whole_numbers
from preview.run.registration import SECRET_MASK, Registration, secret_strings
from preview.run.runner import REPO_ROOT, ProgramRun

RENDERED_DIR = "rendered"
TIMEOUT_SECONDS = 300
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~8x faster on the Kubeflow render
_UNKNOWN_MASK = "[unknown]"


@dataclass(frozen=True)
class RenderedObject:
    """One Kubernetes object a release or Directory renders, and the registration it came from."""

    origin: Registration
    manifest: dict[str, Any]
    #: The document as the tool printed it (None when the stream could not be split safely): written
    #: to ``rendered/`` as is when nothing in it needs masking, instead of serialising ``manifest``
    #: again (PyYAML's representer costs seconds on a Kubeflow render of ~600 objects).
    text: str | None = None

    @property
    def type(self) -> str:
        """``kubernetes:<group/version>:<Kind>``, the token pulumi-kubernetes gives the same object."""
        api_version = str(self.manifest.get("apiVersion") or "")
        group_version = api_version if "/" in api_version else f"core/{api_version}"
        return f"{KUBERNETES_TYPE_PREFIX}{group_version}:{self.manifest.get('kind')}"

    @property
    def name(self) -> str:
        """``<namespace>/<name>``, or ``<name>`` for an object without a namespace."""
        metadata = self.manifest.get("metadata") or {}
        namespace, name = metadata.get("namespace"), metadata.get("name") or ""
        return f"{namespace}/{name}" if namespace else str(name)

    @property
    def urn(self) -> str:
        """A URN under the origin's: its type chain extended by the object's type, named ``<origin>:<name>``."""
        prefix, _, origin_name = self.origin.urn.rpartition("::")
        return f"{prefix}${self.type}::{origin_name}:{self.name}"

    @property
    def origin_label(self) -> str:
        """``<type>::<name>`` of the release or Directory."""
        return f"{self.origin.type}::{self.origin.name}"


@dataclass(frozen=True)
class Render:
    """What one release or Directory rendered to, or why it was not rendered."""

    origin: Registration
    command: str  #: the command line, relative to the project (for the reader)
    objects: tuple[RenderedObject, ...] = ()
    problem: str | None = None
    mandatory: bool = False  #: whether ``problem`` fails the gate
    cache: RenderCache | None = None  #: where this render and its files are kept (None: not cached)
    cache_key: str | None = None

    @property
    def origin_label(self) -> str:
        """``<type>::<name>`` of the release or Directory."""
        return f"{self.origin.type}::{self.origin.name}"

    def summary(self) -> str:
        """One line for the verdict table."""
        if self.problem is None:
            return f"{self.origin_label}: {len(self.objects)} objects ({self.command})"
        return f"{self.origin_label}: {'FAILED: ' if self.mandatory else ''}{self.problem}"


@dataclass(frozen=True)
class Rendered:
    """Every render of one preview, in registration order."""

    renders: tuple[Render, ...] = ()

    @property
    def objects(self) -> list[RenderedObject]:
        """Every rendered object, render by render, in each tool's order."""
        return [obj for render in self.renders for obj in render.objects]

    def files(self) -> dict[str, str]:
        """``rendered/<origin name>/<kind>-<namespace>-<name>.yaml`` -> text, secrets masked."""
        files: dict[str, str] = {}
        for render in self.renders:
            files.update(_render_files(render))
        return files


#: The code that turns rendered objects into files: a files entry of the render cache is keyed by it, so
#: revisions that write files differently (a base preview of ``make diff``) never share one.
_FILES_FORMAT = hashlib.sha256(
    b"".join(path.read_bytes() for path in (Path(__file__), Path(__file__).parents[1] / "run" / "files.py"))
).hexdigest()


def _render_files(render: Render) -> dict[str, str]:
    """One render's files; kept in the render cache beside its objects (the YAML writing costs seconds).

    The entry is keyed by the render and a digest of the secret strings it masks, so a changed secret
    writes the files anew; the stored text is the masked text written to ``build/preview``.
    """
    secrets = sorted(
        (s for s in secret_strings(render.origin.inputs, render.origin.masked_inputs) if len(s) >= 4),
        key=len,
        reverse=True,
    )
    kind = "files-" + hashlib.sha256(json.dumps([_FILES_FORMAT, render.origin.name, secrets]).encode()).hexdigest()[:32]
    if render.cache is not None and render.cache_key is not None:
        stored = render.cache.get(render.cache_key, kind)
        if isinstance(stored, dict):
            return stored
    files: dict[str, str] = {}
    for obj in render.objects:
        manifest = _masked(obj.manifest, secrets) if secrets or obj.manifest.get("kind") == "Secret" else obj.manifest
        name = manifest_filename(manifest, obj.name)
        path = f"{RENDERED_DIR}/{render.origin.name}/{name}"
        if path in files:  # the same kind and name in two API groups
            group = str(manifest.get("apiVersion") or "").split("/")[0].replace(".", "-")
            path = f"{path[: -len('.yaml')]}-{group}.yaml"
        as_printed = obj.text is not None and (manifest is obj.manifest or manifest == obj.manifest)
        if as_printed and obj.text is not None and not any(secret in obj.text for secret in secrets):
            files[path] = obj.text  # nothing to mask, comments included
        else:
            files[path] = dump_yaml(manifest)
    if render.cache is not None and render.cache_key is not None:
        render.cache.put(render.cache_key, kind, files)
    return files


def _masked(manifest: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
    """A copy fit to write: Secret values masked (keys kept), the origin's secret strings masked everywhere."""

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value]
        if isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, SECRET_MASK)
        return value

    copy: dict[str, Any] = scrub(manifest)
    if copy.get("kind") == "Secret":
        for block in ("data", "stringData"):
            if isinstance(copy.get(block), dict):
                copy[block] = {key: SECRET_MASK for key in copy[block]}
    return copy


# ----------------------------------------------------------------------------------------------
# Tools and the pinned chart


def is_pinned_chart(inputs: dict[str, Any], root: Path) -> bool:
    """Whether a release installs the chart we pin: by name and version, or by a path to the pinned copy."""
    chart = str(inputs.get("chart") or "").strip().rstrip("/")
    version = str(inputs.get("version") or "").strip()
    if chart.rsplit("/", 1)[-1] == CHART_NAME and version == GPU_OPERATOR_CHART.version:
        return True
    if chart.endswith(f"/{GPU_OPERATOR_CHART.archive}") or chart == GPU_OPERATOR_CHART.archive:
        return True
    try:
        return bool(chart) and (root / chart).resolve() == (root / GPU_OPERATOR_CHART.path).resolve()
    except OSError:
        return False


# ----------------------------------------------------------------------------------------------
# Rendering


def _has_unknown(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_unknown(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_unknown(item) for item in value)
    return value == _UNKNOWN_MASK


def _relative(text: str, root: Path) -> str:
    """Tool messages without this machine's paths (the report must read the same everywhere)."""
    for base in dict.fromkeys((str(root.resolve()), str(root), str(REPO_ROOT))):
        text = text.replace(base + os.sep, "").replace(base, ".")
    return text


def _error_of(stderr: str, root: Path) -> str:
    """The tool's error lines (kustomize prints dozens of deprecation warnings before them)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    return _relative("; ".join(errors or lines[-1:]) or "no error message", root)


@dataclass
class _Job:
    origin: Registration
    command: list[str]
    shown: str
    values: dict[str, Any] | None = None  # helm: written to a fresh values file
    #: What the render is a function of besides the tool: the arguments without machine paths, and the
    #: values or the overlay files' digest (the render cache's key material).
    arguments: list[str] = dataclasses.field(default_factory=list)
    inputs: str = ""


# A line that starts a YAML document. By the YAML 1.2 spec (``c-forbidden``) such a line cannot occur
# inside a scalar, so a stream splits on it without parsing; a marker with content after it, a
# directive or an end marker (which helm and kustomize do not print) makes the split unsafe.
_DOCUMENT_START = re.compile(r"^---[ \t]*$", re.MULTILINE)
_UNSAFE_SPLIT = re.compile(r"^(?:---[ \t]*\S|\.\.\.|%)", re.MULTILINE)


def split_documents(text: str) -> list[str] | None:
    """The stream's documents as printed, or None when a line the split does not handle occurs."""
    if _UNSAFE_SPLIT.search(text):
        return None
    return [part for part in _DOCUMENT_START.split(text) if part.strip()]


def _objects(origin: Registration, text: str) -> Iterator[RenderedObject]:
    documents = split_documents(text)
    if documents is None:
        for document in yaml.load_all(text, Loader=_LOADER):
            if isinstance(document, dict) and document.get("kind"):
                yield RenderedObject(origin, document)
        return
    for part in documents:
        document = yaml.load(part, Loader=_LOADER)
        if isinstance(document, dict) and document.get("kind"):
            yield RenderedObject(origin, document, part.strip("\n") + "\n")


def _run(job: _Job, root: Path) -> Render:
    with tempfile.TemporaryDirectory(prefix="gpu-platform-render-") as scratch:
        command = list(job.command)
        env = dict(os.environ)
        if job.values is not None:
            values_file = Path(scratch) / "values.json"
            values_file.write_text(json.dumps(job.values, sort_keys=True))
            command += ["--values", str(values_file)]
            # An empty Helm home per render: no repository cache, config or plugin from earlier runs.
            env.update(
                HELM_CACHE_HOME=f"{scratch}/cache",
                HELM_CONFIG_HOME=f"{scratch}/config",
                HELM_DATA_HOME=f"{scratch}/data",
            )
        try:
            done = subprocess.run(
                command, cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
            )
        except subprocess.TimeoutExpired:
            return Render(job.origin, job.shown, problem=f"`{job.shown}` ran over {TIMEOUT_SECONDS} s", mandatory=True)
    if done.returncode != 0:
        problem = f"`{job.shown}` failed: {_error_of(done.stderr, root)}; pulumi up would fail on it the same way"
        return Render(job.origin, job.shown, problem=problem, mandatory=True)
    try:
        objects = tuple(_objects(job.origin, done.stdout))
    except yaml.YAMLError as error:
        return Render(job.origin, job.shown, problem=f"`{job.shown}` printed invalid YAML: {error}", mandatory=True)
    return Render(job.origin, job.shown, objects=objects)


def _release_job(registration: Registration, root: Path) -> _Job | Render:
    inputs = registration.inputs
    chart, version = str(inputs.get("chart") or ""), str(inputs.get("version") or "")
    if not is_pinned_chart(inputs, root):
        return Render(
            registration,
            "",
            problem=f"chart {chart or '(none)'} {version or '(no version)'} is not rendered: only the pinned "
            f"{CHART_NAME} {GPU_OPERATOR_CHART.version} ({GPU_OPERATOR_CHART.path}) is, so only the release's "
            "values are checked",
        )
    if _has_unknown(registration.masked_inputs.get("values")):
        return Render(registration, "", problem="not rendered: some values are only known after `pulumi up`")
    unsupported = [key for key in ("valueYamlFiles", "postrender") if inputs.get(key)]
    if unsupported:
        problem = f"not rendered: the gate renders values only, and the release sets {', '.join(unsupported)}"
        return Render(registration, "", problem=problem)
    chart_dir = pinned_chart_dir(root)
    name = str(inputs.get("name") or registration.name)
    namespace = str(inputs.get("namespace") or "default")
    shown_chart = _relative(str(chart_dir), root)
    command = [find_tool("helm", root), "template", name, str(chart_dir), "--namespace", namespace, "--skip-tests"]
    if inputs.get("skipCrds") is not True:
        command.append("--include-crds")
    shown = f"helm template {name} {shown_chart} --namespace {namespace}"
    values = whole_numbers(inputs.get("values") or {})
    arguments = [shown_chart if part == str(chart_dir) else part for part in command[1:]]
    return _Job(registration, command, shown, values, arguments, json.dumps(values, sort_keys=True))


def _directory_job(registration: Registration, root: Path) -> _Job | Render:
    directory = str(registration.inputs.get("directory") or "")
    shown = f"kubectl kustomize {directory}"
    if not directory or not (root / directory).is_dir():
        problem = f"`{shown}`: the directory {directory or '(none)'} does not exist; pulumi up would fail on it"
        return Render(registration, shown, problem=problem, mandatory=True)
    # The overlay folder's parent holds every stage the Directory may reference; the pinned tree it
    # reaches through ``.upstream`` is in the key by its digest.
    overlay_files = tree_digest((root / directory).parent)
    command = [find_tool("kubectl", root), "kustomize", directory]
    return _Job(registration, command, shown, arguments=command[1:], inputs=overlay_files)


def _cached_run(job: _Job, root: Path, cache: RenderCache | None) -> Render:
    """The job's render from the cache, else run and stored (only a successful render is stored)."""
    key = cache.key(job.command[0], job.arguments, job.inputs) if cache is not None else None
    if cache is None or key is None:
        return _run(job, root)
    stored = cache.get(key, "documents")
    if isinstance(stored, list):
        objects = tuple(RenderedObject(job.origin, manifest, text) for manifest, text in stored)
        return Render(job.origin, job.shown, objects=objects, cache=cache, cache_key=key)
    render = _run(job, root)
    if render.problem is None:
        cache.put(key, "documents", [(obj.manifest, obj.text) for obj in render.objects])
        render = dataclasses.replace(render, cache=cache, cache_key=key)
    return render


def render_registrations(
    registrations: Iterable[Registration], root: Path = REPO_ROOT, cache: RenderCache | None = None
) -> Rendered:
    """Render every release and Directory among ``registrations`` once (``RenderSetupError`` if a tool is missing).

    A render whose key is in ``cache`` (default: the project's render cache, ``preview.render.cache``,
    unless it is turned off) is read from it.
    """
    planned: list[_Job | Render] = []
    for registration in registrations:
        if registration.type == HELM_RELEASE:
            planned.append(_release_job(registration, root))
        elif registration.type == KUSTOMIZE_DIRECTORY_TYPE:
            planned.append(_directory_job(registration, root))
    jobs = [item for item in planned if isinstance(item, _Job)]
    if cache is None and enabled():
        cache = project_cache(REPO_ROOT)
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        done = dict(
            zip((id(job) for job in jobs), pool.map(lambda job: _cached_run(job, root, cache), jobs), strict=True)
        )
    return Rendered(tuple(done[id(item)] if isinstance(item, _Job) else item for item in planned))


def render_program(run: ProgramRun) -> Rendered:
    """Every render of one offline run of the program."""
    return render_registrations(run.registrations, run.root)
