"""Helm's rule for release names, as Helm 3 checks it before it installs anything.

Source: helm.sh/helm/v3 v3.17.0 ``pkg/chartutil/validate_name.go`` ``ValidateReleaseName``
(https://github.com/helm/helm/blob/v3.17.0/pkg/chartutil/validate_name.go): not empty, at most
``maxReleaseNameLen = 53`` characters ("the length must not be longer than 53": Helm keeps 10 of a
label's 63 for the suffixes charts append), matching ``validName``, a DNS-1123 subdomain pattern. The
provider (pulumi-kubernetes ``helm.v3.Release``) installs through the same Helm library.
"""

from __future__ import annotations

import re
from typing import Final

#: ``maxReleaseNameLen`` of validate_name.go.
MAX_RELEASE_NAME: Final = 53
#: ``validName`` of validate_name.go.
_VALID_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
SOURCE: Final = "Helm 3 ValidateReleaseName"


def release_name_problem(name: str) -> str | None:
    """Why Helm refuses ``name`` as a release name, or None."""
    if name and len(name) <= MAX_RELEASE_NAME and _VALID_NAME.match(name):
        return None
    return (
        f"{name[:80]!r} is not a Helm release name: 1-{MAX_RELEASE_NAME} lowercase letters, digits, '-' and '.', "
        f"starting and ending with a letter or digit ({SOURCE})"
    )
