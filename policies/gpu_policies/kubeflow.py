"""Kubeflow rules: no credential published in kubeflow/manifests, and Ingresses serve TLS for their hosts.

Why: the upstream example ships a static dex user with password ``12341234``, a public OIDC client
secret and a public oauth2-proxy cookie secret; anyone who has read the repository can sign in or
forge sessions on a cluster that kept them. The values to refuse anywhere are
``components.catalog.kubeflow.v1_10_2.credentials.PUBLIC_DEFAULT_SECRET_VALUES``; a freshly made bcrypt hash
of the default password is refused too (it is a new hash of the same public password). Upstream's
database and object-store credentials (Katib's MySQL root password ``test``, Pipelines' MinIO
``minio``/``minio123``, Pipelines' MySQL ``root`` with an empty password) are too common to refuse by
value alone, so ``PUBLIC_DEFAULT_CREDENTIALS`` names the Secret and key each sits at. These Secrets
come from the rendered kustomize Directory, which only the offline gate renders (and the CLI sees as
the Directory's children). Sign-in over plain HTTP sends the password and the session cookie in
clear text, hence TLS on every host.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import bcrypt
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)
from pulumi_policy.proxy import UnknownValueError

from components.catalog.gpu_quotas import gpu_quota_resource, known_gpu_resources, uncounted_quota_problem
from components.catalog.kubeflow.v1_10_2.credentials import (
    DEFAULT_COOKIE_SECRET,
    DEFAULT_OIDC_CLIENT_SECRET,
    DEFAULT_PASSWORD,
    DEFAULT_PASSWORD_HASH,
    PUBLIC_DEFAULT_CREDENTIALS,
    PUBLIC_DEFAULT_SECRET_VALUES,
)
from components.catalog.kubeflow.v1_10_2.replaced import DEX_PASSWORDS
from components.catalog.names import PROFILE_TYPES

from .names import INGRESS_TYPES, SECRET_TYPES
from .props import get, items, mapping, text
from .settings import setting, string_list

_WHAT: Mapping[str, str] = {
    DEFAULT_PASSWORD_HASH: f"the upstream dex password hash (the public password {DEFAULT_PASSWORD})",
    DEFAULT_OIDC_CLIENT_SECRET: "the OIDC client secret published in kubeflow/manifests",
    DEFAULT_COOKIE_SECRET: "the oauth2-proxy cookie secret published in kubeflow/manifests",
}
_PASSWORD_KEY = next(iter(DEX_PASSWORDS.keys))  # DEX_USER_PASSWORD
_BCRYPT = re.compile(r"^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$")
# kustomize's secretGenerator appends a dash and a 10-character content hash to the name.
_HASH_SUFFIX = re.compile(r"-[a-z0-9]{10}")


@functools.lru_cache(maxsize=64)
def is_hash_of_default_password(value: str) -> bool:
    """A bcrypt hash of the upstream default password (about half a second per new hash: cached)."""
    if not _BCRYPT.match(value):
        return False
    try:
        return bcrypt.checkpw(DEFAULT_PASSWORD.encode(), value.encode())
    except ValueError:
        return False


def _secret_values(props: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(block, key, plain value) from stringData and base64-decoded data; values unknown at preview are skipped.

    An unknown value comes from a computation (a RandomPassword, a config secret), never from a literal,
    so it cannot be a published default.
    """
    for source, encoded in (("stringData", False), ("data", True)):
        try:
            block = mapping(props.get(source))
        except UnknownValueError:
            continue
        for key in list(block):
            try:
                raw = block[key]
            except UnknownValueError:
                continue
            if not isinstance(raw, str):
                continue
            if encoded:
                try:
                    raw = base64.b64decode(raw, validate=True).decode()
                except (binascii.Error, UnicodeDecodeError):
                    continue
            yield source, key, raw


def is_named(name: str, secret: str) -> bool:
    """``name`` is ``secret``, or ``secret`` with the content-hash suffix kustomize appends."""
    return name == secret or (name.startswith(secret) and bool(_HASH_SUFFIX.fullmatch(name[len(secret) :])))


# The public values too short or common to refuse anywhere (``test``, an empty password), checked where
# upstream puts them; the long ones are refused by value wherever they appear (below).
_AT_THEIR_KEYS = tuple(c for c in PUBLIC_DEFAULT_CREDENTIALS if c.value not in PUBLIC_DEFAULT_SECRET_VALUES)


def _validate_secrets(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in SECRET_TYPES:
        return
    metadata = mapping(args.props.get("metadata"))
    name = text(metadata.get("name")) or args.name
    label = f"Secret {text(metadata.get('namespace')) or 'default'}/{name}"
    for source, item, value in _secret_values(args.props):
        key = f"{source}.{item}"
        for credential in _AT_THEIR_KEYS:
            if credential.key == item and credential.value == value and is_named(name, credential.secret):
                state = "empty" if value == "" else "the value published upstream"
                report(
                    f"{label} {key} is {credential.what}, {state} in kubeflow/manifests ({credential.source}); "
                    "replace it with a generated secret and point its consumers at it",
                    None,
                )
        if value in PUBLIC_DEFAULT_SECRET_VALUES:
            what = _WHAT.get(value, "a secret value published in kubeflow/manifests")
            report(f"{label} {key} is {what}; anyone can read it upstream, so generate a new one", None)
        elif key.endswith(f".{_PASSWORD_KEY}") and is_hash_of_default_password(value):
            report(
                f"{label} {key} is a bcrypt hash of the upstream default password {DEFAULT_PASSWORD}; "
                "choose a new password and hash it with `python -m components.kubeflow.hash_password`",
                None,
            )


kubeflow_no_public_credentials = ResourceValidationPolicy(
    name="kubeflow-no-public-credentials",
    description="Secrets do not carry a credential published in kubeflow/manifests (the dex password hash, OIDC "
    "client secret and cookie secret anywhere; Katib's and Pipelines' database and MinIO defaults at their keys).",
    validate=_validate_secrets,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    tags=["kubeflow", "security"],
)

_TLS_SCHEMA = PolicyConfigSchema(
    properties={
        "exemptIngresses": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Ingresses allowed to serve plain HTTP, as namespace/name",
        }
    }
)


def host_covered(host: str, tls_hosts: list[str]) -> bool:
    """An exact TLS host, or a wildcard ``*.example.com`` covering exactly one more label."""
    for candidate in tls_hosts:
        if candidate == host:
            return True
        if candidate.startswith("*.") and "." in host and host.split(".", 1)[1] == candidate[2:]:
            return True
    return False


def _validate_tls(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in INGRESS_TYPES:
        return
    metadata = mapping(args.props.get("metadata"))
    namespace = text(metadata.get("namespace")) or "default"
    name = text(metadata.get("name")) or args.name
    if f"{namespace}/{name}" in string_list(setting(args, _TLS_SCHEMA, "exemptIngresses")):
        return
    spec = mapping(args.props.get("spec"))
    tls = [mapping(entry) for entry in items(spec.get("tls"))]
    label = f"Ingress {namespace}/{name}"
    if not tls:
        if args.resource_type.endswith("Patch") and "tls" not in spec:
            return  # a patch that does not touch TLS keeps the live object's
        report(f"{label} has no spec.tls, so sign-in and session cookies travel in clear text; add TLS", None)
        return
    tls_hosts = [host for entry in tls for host in items(entry.get("hosts")) if isinstance(host, str)]
    hosts = sorted({text(get(rule, "host")) for rule in items(spec.get("rules"))} - {""})
    missing = [host for host in hosts if not host_covered(host, tls_hosts)]
    if missing:
        report(
            f"{label} serves {', '.join(missing)} without a TLS entry for it (spec.tls hosts: "
            f"{', '.join(tls_hosts) or 'none'}); add the host to spec.tls[].hosts",
            None,
        )


ingress_tls = ResourceValidationPolicy(
    name="ingress-tls",
    description="Ingresses (the Kubeflow dashboard's among them) have spec.tls covering every host they serve.",
    validate=_validate_tls,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=_TLS_SCHEMA,
    tags=["kubeflow", "security"],
)

_QUOTA_SCHEMA = PolicyConfigSchema(
    properties={
        "extraGpuResources": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "nvidia.com resources a Profile quota may name beyond the catalog's (e.g. a renamed "
            "time-sliced nvidia.com/gpu.shared)",
        }
    }
)


def _validate_profile_quotas(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in PROFILE_TYPES:
        return
    name = text(get(args.props, "metadata", "name")) or args.name
    try:
        hard = mapping(get(args.props, "spec", "resourceQuotaSpec", "hard"))
    except UnknownValueError:
        return
    extra = set(string_list(setting(args, _QUOTA_SCHEMA, "extraGpuResources")))
    known = known_gpu_resources() | extra
    for key in sorted(hard):
        resource = gpu_quota_resource(key)
        if resource is None:
            continue
        uncounted = uncounted_quota_problem(key)
        if uncounted:
            report(f"Profile {name} quota {key}: {uncounted}", None)
        elif resource not in known:
            report(
                f"Profile {name} quota {key}: {resource} is not a resource NVIDIA's device plugin advertises for any "
                "GPU the catalog knows (nvidia.com/gpu, or nvidia.com/mig-<profile> such as nvidia.com/mig-1g.10gb), "
                "so it caps nothing; fix the name or list it in extraGpuResources",
                None,
            )


kubeflow_profile_gpu_quotas = ResourceValidationPolicy(
    name="kubeflow-profile-gpu-quotas",
    description="A Kubeflow Profile's quota on an NVIDIA resource names one the device plugin can advertise, "
    "as requests.<name> (the only form Kubernetes counts): a misspelt GPU quota caps nothing.",
    validate=_validate_profile_quotas,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=_QUOTA_SCHEMA,
    tags=["kubeflow", "gpu"],
)

POLICIES = [kubeflow_no_public_credentials, ingress_tls, kubeflow_profile_gpu_quotas]
