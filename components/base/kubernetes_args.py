"""Small conversions from the catalog's plain dicts to pulumi-kubernetes argument types."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pulumi_kubernetes as k8s


def toleration_args(tolerations: Iterable[Mapping[str, str]]) -> list[k8s.core.v1.TolerationArgs]:
    """``{"key", "operator", "value"?, "effect"}`` dicts (as the catalog builds them) as TolerationArgs."""
    return [
        k8s.core.v1.TolerationArgs(
            key=t.get("key"), operator=t.get("operator"), value=t.get("value"), effect=t.get("effect")
        )
        for t in tolerations
    ]


def non_root_pod_security(user: int) -> k8s.core.v1.PodSecurityContextArgs:
    """A pod that runs as ``user`` (never root) under the runtime's default seccomp profile: what the restricted
    Pod Security Standard asks of a pod, for the platform's own unprivileged workloads."""
    return k8s.core.v1.PodSecurityContextArgs(
        run_as_non_root=True,
        run_as_user=user,
        run_as_group=user,
        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
    )


def locked_down_container() -> k8s.core.v1.SecurityContextArgs:
    """A container that cannot gain privileges, write its root filesystem or use any capability."""
    return k8s.core.v1.SecurityContextArgs(
        allow_privilege_escalation=False,
        read_only_root_filesystem=True,
        capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
    )


def downward_env(items: Mapping[str, str]) -> list[k8s.core.v1.EnvVarArgs]:
    """Environment variables from the pod's own fields (the downward API), by name: ``{"POD_NAME": "metadata.name"}``."""
    return [
        k8s.core.v1.EnvVarArgs(
            name=name,
            value_from=k8s.core.v1.EnvVarSourceArgs(field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path=path)),
        )
        for name, path in sorted(items.items())
    ]
