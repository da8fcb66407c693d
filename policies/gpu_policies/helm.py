"""Helm rules: every release pins one exact chart version and comes from a repository the team trusts.

Why: ``version: "^26.3"`` or an empty version lets ``pulumi up`` install whatever the repository
serves that day, so two runs of the same commit deploy different charts (and the GPU Operator's
values contract is written for one exact version). A chart from an unvetted repository runs
privileged DaemonSets on every GPU node. A local copy of a pinned chart (``gpuOperator.chartPath``, air-gapped
installs) passes both: its content digest is the pin, and the pin names the repository it was published in.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from components.catalog.gpu_operator_chart import CHART_REPO
from components.catalog.upstream import GPU_OPERATOR_CHART, UpstreamArtifact, archive_digest, tree_digest

from .names import HELM_RELEASE_TYPES
from .props import get, text
from .settings import setting, string_list

# Helm (Masterminds semver) reads a partial version such as "26.3" as the range 26.3.x, so an exact pin
# has all three numbers.
_EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def _release_label(args: ResourceValidationArgs) -> str:
    chart = text(args.props.get("chart")) or "(no chart)"
    return f"Helm release {args.name} (chart {chart})"


def version_problem(version: Any) -> str | None:
    """Why ``version`` is not one exact chart version, or None."""
    if not isinstance(version, str) or not version.strip():
        return "pins no chart version, so every deploy takes whatever the repository serves as newest"
    if not _EXACT_VERSION.match(version.strip()):
        return (
            f"version {version!r} is a range, not one version (Helm reads ^, ~, >=, *, x and partial versions "
            "as constraints); pin an exact version such as v26.7.0"
        )
    return None


#: The charts pinned by content digest (components/catalog/upstream.py), and the repository each is published in.
PINNED_CHARTS: tuple[tuple[UpstreamArtifact, str], ...] = ((GPU_OPERATOR_CHART, CHART_REPO),)
#: Where the policy pack lives inside the project (policies/gpu_policies/helm.py): a relative chart path is the
#: project folder's, as the program and the Helm provider read it. The CLI runs a policy pack in its own folder.
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def mirrored_chart(props: Any) -> tuple[UpstreamArtifact, str] | None:
    """The pinned chart (and its repository) a release installs from a local copy, or None.

    A local chart (``chart`` a path, no repository) has no version Helm would look at and no repository; what
    pins it is its content. When the folder or ``.tgz`` at that path has the content digest of a chart the
    catalog pins, it is that chart, mirrored: the same bytes as the one published in the pinned repository
    (``gpuOperator.chartPath``, air-gapped installs; the program's config check refuses any other content).
    """
    if chart_repository(props):
        return None
    chart = text(get(props, "chart"))
    if not chart:
        return None
    path = Path(chart)
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, _PROJECT_ROOT / path]
    found = next((candidate for candidate in candidates if candidate.exists()), None)
    if found is None:
        return None
    for artifact, repository in PINNED_CHARTS:
        try:
            digest = tree_digest(found) if found.is_dir() else archive_digest(found, artifact.strip_prefix)
        except (tarfile.TarError, OSError):
            return None
        if digest == artifact.content_sha256:
            return artifact, repository
    return None


def _validate_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in HELM_RELEASE_TYPES:
        return
    version = args.props.get("version")
    if not (isinstance(version, str) and version.strip()) and mirrored_chart(args.props) is not None:
        return  # a mirrored copy of a pinned chart: its content is the pin
    problem = version_problem(version)
    if problem:
        report(f"{_release_label(args)} {problem}", None)


helm_chart_version_pinned = ResourceValidationPolicy(
    name="helm-chart-version-pinned",
    description="Helm releases pin one exact chart version (no ranges, no empty version).",
    validate=_validate_pinned,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    tags=["helm", "supply-chain"],
)

_REPOSITORY_SCHEMA = PolicyConfigSchema(
    properties={
        "allowedRepositories": {
            "type": "array",
            "items": {"type": "string"},
            "default": [CHART_REPO],
            "description": "Helm repository URLs (or oci:// registry paths) releases may install charts from",
        },
        "allowLocalCharts": {
            "type": "boolean",
            "default": False,
            "description": "allow charts from a path in the repository (no Helm repository at all)",
        },
    }
)


def _normalise(url: str) -> str:
    return url.strip().rstrip("/")


def chart_repository(props: Any) -> str:
    """The repository a release installs from: ``repositoryOpts.repo``, or an OCI chart ref minus its name."""
    repo = text(get(props, "repositoryOpts", "repo"))
    if repo:
        return _normalise(repo)
    chart = text(get(props, "chart"))
    if chart.startswith("oci://"):
        return _normalise(chart).rsplit("/", 1)[0]
    return ""


def _validate_repository(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in HELM_RELEASE_TYPES:
        return
    allowed = [_normalise(url) for url in string_list(setting(args, _REPOSITORY_SCHEMA, "allowedRepositories"))]
    repository = chart_repository(args.props)
    mirrored = mirrored_chart(args.props) if not repository else None
    if mirrored is not None and _normalise(mirrored[1]) in allowed:
        return  # the pinned chart of an allowed repository, mirrored byte for byte
    if not repository:
        if setting(args, _REPOSITORY_SCHEMA, "allowLocalCharts") is True:
            return
        report(
            f"{_release_label(args)} names no repository (repositoryOpts.repo or an oci:// chart); "
            f"install it from one of: {', '.join(allowed) or '(none allowed)'}",
            None,
        )
        return
    if repository not in allowed:
        report(
            f"{_release_label(args)} comes from {repository}, which is not an allowed repository; "
            f"allowed: {', '.join(allowed) or '(none)'} (policy config allowedRepositories)",
            None,
        )


helm_repository_allowed = ResourceValidationPolicy(
    name="helm-repository-allowed",
    description="Helm releases install charts only from allowed repositories.",
    validate=_validate_repository,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=_REPOSITORY_SCHEMA,
    tags=["helm", "supply-chain"],
)

POLICIES = [helm_chart_version_pinned, helm_repository_allowed]
