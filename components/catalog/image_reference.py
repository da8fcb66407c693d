"""Container image references, by the grammar the kubelet parses them with: distribution/reference.

The API server takes any non-blank ``image`` (k8s.io/kubernetes ``pkg/apis/core/validation`` validateContainers
only refuses surrounding whitespace); the kubelet parses it when it starts the container (k8s.io/kubernetes
``pkg/util/parsers`` ParseImageName -> github.com/distribution/reference ``ParseNormalizedNamed``) and a reference
it cannot parse leaves the pod in ``InvalidImageName``: a smoke or proof Job that never runs. So a reference is
checked here by that grammar, before anything is created.

Source: github.com/distribution/reference v0.6.0 (the module Kubernetes 1.31 and later vendor), ``regexp.go``
(the patterns below, copied with their names), ``normalize.go`` ``ParseNormalizedNamed`` and ``splitDockerDomain``
(a first element without ``.`` or ``:`` and other than ``localhost`` is a path, on ``docker.io``), ``reference.go``
``Parse`` (``RepositoryNameTotalLengthMax = 255`` on the path), and github.com/opencontainers/go-digest v1.0.0
``Digest.Validate`` (only the algorithms sha256, sha384 and sha512, their encoded part exactly 64, 96 or 128
lowercase hex characters). Go's ``\\w`` and character classes are ASCII-only, hence ``re.ASCII``.

Pure functions, no I/O; the policy pack reads the same parser (``policies/gpu_policies/workloads.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

#: The grammar's source, for messages.
SOURCE: Final = "github.com/distribution/reference v0.6.0 ParseNormalizedNamed, as the kubelet parses images"

_ALPHANUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_DOMAIN_NAME_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_OPTIONAL_PORT = r"(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9A-Fa-f]{32,}"
_IDENTIFIER = r"[a-f0-9]{64}"
_IPV6 = r"\[(?:[a-fA-F0-9:]+)\]"
_DOMAIN_NAME = _DOMAIN_NAME_COMPONENT + r"(?:\." + _DOMAIN_NAME_COMPONENT + r")*"
_HOST = r"(?:" + _DOMAIN_NAME + r"|" + _IPV6 + r")"
_DOMAIN_AND_PORT = _HOST + _OPTIONAL_PORT
_PATH_COMPONENT = _ALPHANUMERIC + r"(?:" + _SEPARATOR + _ALPHANUMERIC + r")*"
_REMOTE_NAME = _PATH_COMPONENT + r"(?:/" + _PATH_COMPONENT + r")*"
_NAME = r"(?:" + _DOMAIN_AND_PORT + r"/)?" + _REMOTE_NAME

_REFERENCE = re.compile(r"(" + _NAME + r")(?::(" + _TAG + r"))?(?:@(" + _DIGEST + r"))?\Z", re.ASCII)
_ANCHORED_NAME = re.compile(r"(?:(" + _DOMAIN_AND_PORT + r")/)?(" + _REMOTE_NAME + r")\Z", re.ASCII)
_ANCHORED_IDENTIFIER = re.compile(_IDENTIFIER + r"\Z", re.ASCII)

#: reference.go ``RepositoryNameTotalLengthMax``.
REPOSITORY_NAME_MAX: Final = 255
#: go-digest v1.0.0 ``algorithm.go``: the available algorithms and the length of their hex encoding.
DIGEST_HEX_LENGTHS: Final = {"sha256": 64, "sha384": 96, "sha512": 128}
#: normalize.go: ``defaultDomain``, ``legacyDefaultDomain``, ``officialRepoPrefix``, ``localhost``.
DEFAULT_DOMAIN: Final = "docker.io"
_LEGACY_DEFAULT_DOMAIN: Final = "index.docker.io"
_OFFICIAL_REPO_PREFIX: Final = "library/"
_LOCALHOST: Final = "localhost"


class ImageReferenceError(ValueError):
    """A reference the kubelet refuses (``InvalidImageName``); the message says which part and why."""


@dataclass(frozen=True)
class ImageReference:
    """A parsed reference: ``domain/path[:tag][@digest]`` with the docker.io defaults filled in."""

    domain: str
    path: str
    tag: str
    digest: str

    @property
    def repository(self) -> str:
        """``domain/path``."""
        return f"{self.domain}/{self.path}"


def _split_docker_domain(name: str) -> tuple[str, str]:
    """normalize.go ``splitDockerDomain`` (v0.6.0)."""
    maybe_domain, slash, maybe_remote = name.partition("/")
    if not slash:
        return DEFAULT_DOMAIN, _OFFICIAL_REPO_PREFIX + name
    if maybe_domain == _LOCALHOST:
        domain, remote = maybe_domain, maybe_remote
    elif maybe_domain == _LEGACY_DEFAULT_DOMAIN:
        domain, remote = DEFAULT_DOMAIN, maybe_remote
    elif any(c in maybe_domain for c in ".:") or maybe_domain.lower() != maybe_domain:
        domain, remote = maybe_domain, maybe_remote
    else:
        domain, remote = DEFAULT_DOMAIN, name
    if domain == DEFAULT_DOMAIN and "/" not in remote:
        remote = _OFFICIAL_REPO_PREFIX + remote
    return domain, remote


def _digest_problem(digest: str) -> str | None:
    """go-digest ``Digest.Validate``: a known algorithm and exactly its number of lowercase hex digits."""
    algorithm, _, encoded = digest.partition(":")
    length = DIGEST_HEX_LENGTHS.get(algorithm)
    if length is None:
        return f"digest algorithm {algorithm!r} is not available; allowed: {', '.join(DIGEST_HEX_LENGTHS)}"
    if len(encoded) != length or not re.fullmatch(r"[a-f0-9]+", encoded):
        return f"a {algorithm} digest is exactly {length} lowercase hex digits, got {len(encoded)} characters"
    return None


def parse_image_reference(reference: str) -> ImageReference:
    """``reference`` as ``ParseNormalizedNamed`` reads it; ``ImageReferenceError`` names what it refuses."""
    if not isinstance(reference, str) or not reference:
        raise ImageReferenceError("an image reference must not be empty")
    if _ANCHORED_IDENTIFIER.match(reference):
        raise ImageReferenceError("a 64-digit hex string is an image id, not a repository name")
    domain, remainder = _split_docker_domain(reference)
    remote = remainder.partition(":")[0]
    if remote.lower() != remote:
        raise ImageReferenceError(f"the repository path {remote!r} must be lowercase")
    match = _REFERENCE.match(f"{domain}/{remainder}")
    if match is None:
        raise ImageReferenceError(_why_not(reference))
    name, tag, digest = match.group(1), match.group(2) or "", match.group(3) or ""
    name_match = _ANCHORED_NAME.match(name)
    path = name_match.group(2) if name_match else name
    if len(path) > REPOSITORY_NAME_MAX:
        raise ImageReferenceError(f"the repository path is {len(path)} characters; at most {REPOSITORY_NAME_MAX}")
    if digest:
        problem = _digest_problem(digest)
        if problem:
            raise ImageReferenceError(problem)
    return ImageReference(
        domain=(name_match.group(1) if name_match else "") or domain, path=path, tag=tag, digest=digest
    )


def _why_not(reference: str) -> str:
    """Which part of a reference the grammar does not match (for the message; the verdict is the regexp's)."""
    name, at, digest = reference.partition("@")
    _, colon, tag = name.rpartition("/")[2].partition(":")
    if any(not c.isprintable() or c.isspace() for c in reference):
        return "it holds a blank or a control character"
    if at and not re.fullmatch(_DIGEST, digest, re.ASCII):
        return f"the digest {digest[:80]!r} is not algorithm:hex (e.g. sha256: and 64 hex digits)"
    if colon and not re.fullmatch(_TAG, tag, re.ASCII):
        return f"the tag {tag[:80]!r} must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
    return (
        "the repository must be [domain[:port]/]path, each path component lowercase letters and digits "
        "separated by '.', '_', '__' or '-'"
    )


def image_reference_problem(reference: str) -> str | None:
    """Why the kubelet cannot pull ``reference`` (``InvalidImageName``), or None."""
    try:
        parse_image_reference(reference)
    except ImageReferenceError as error:
        return f"{reference[:100]!r} is not an image reference the kubelet can pull: {error} ({SOURCE})"
    return None


#: The tag a reference without one means (normalize.go ``TagNameOnly``: ``defaultTag = "latest"``).
DEFAULT_TAG: Final = "latest"


def unpinned_image_problem(reference: str) -> str | None:
    """Why ``reference`` names no fixed image: no tag and no digest (which means :latest), or :latest; else None.

    The platform's own rule for every image it runs (policy ``container-image-tag-pinned``): ``:latest`` moves
    under a running workload, so two nodes can run different code from one manifest. A digest pins the image
    whatever the tag says. Assumes a reference ``parse_image_reference`` accepts.
    """
    try:
        ref = parse_image_reference(reference)
    except ImageReferenceError:
        return None  # the grammar's problem, reported by image_reference_problem
    if ref.digest:
        return None
    if not ref.tag:
        return f"{reference!r} has no tag, which means :{DEFAULT_TAG}; pin a version tag (or a digest)"
    if ref.tag.lower() == DEFAULT_TAG:
        return f"{reference!r}: :{DEFAULT_TAG} moves under a running workload; pin a version tag (or a digest)"
    return None
