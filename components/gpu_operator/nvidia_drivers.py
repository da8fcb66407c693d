"""The ``NVIDIADriver`` resources of one ordering step (the canaries, or the rest).

Used when pools run different drivers (``DriverPlan.per_pool``); the release then has
``driver.nvidiaDriverCRD.enabled`` and no default object (values.py), and the objects come from
``driver_objects``. Nothing awaits their ``status.state`` (it cannot tell an old ``ready`` from a new one:
components.catalog.nvidia_driver); the step's proof Job, which depends on them, proves every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base.aliases import moved_between_steps
from components.catalog import nvidia_driver as crd
from components.catalog.names import GPU_DRIVERS_TYPE


@dataclass(frozen=True)
class GpuDriversArgs:
    """The groups of one ordering step (the canaries, or the rest), their objects, and what comes first."""

    objects: dict[str, dict[str, Any]]  # group name -> nvidia_driver_object(...)
    provider: k8s.Provider
    timeout_seconds: int
    depends_on: list[pulumi.Resource] = field(default_factory=list)


class GpuDrivers(pulumi.ComponentResource):
    """The NVIDIADriver resources of one ordering step (the step's proof Job waits for them)."""

    drivers: dict[str, k8s.apiextensions.CustomResource]

    def __init__(self, name: str, args: GpuDriversArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_DRIVERS_TYPE, name, None, opts)
        self.drivers = {}
        for group, obj in sorted(args.objects.items()):
            self.drivers[group] = k8s.apiextensions.CustomResource(
                f"{name}-{group}",
                api_version=obj["apiVersion"],
                kind=obj["kind"],
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=obj["metadata"]["name"],
                    labels=obj["metadata"]["labels"],
                    annotations=obj["metadata"]["annotations"],
                ),
                spec=obj["spec"],
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=args.provider,
                    depends_on=args.depends_on,
                    # The CRD refuses in-place changes of these (CEL self == oldSelf); a new object is needed.
                    replace_on_changes=[f"spec.{key}" for key in crd.IMMUTABLE_SPEC_FIELDS],
                    delete_before_replace=True,  # the name is fixed, and two objects must not select one node
                    # The same object when its pool becomes the canary or stops being it (components.base.aliases).
                    aliases=moved_between_steps(name, GPU_DRIVERS_TYPE, group, opts.parent if opts else None),
                    custom_timeouts=pulumi.CustomTimeouts(
                        create=f"{args.timeout_seconds}s", update=f"{args.timeout_seconds}s"
                    ),
                ),
            )
        self.register_outputs({"drivers": sorted(self.drivers)})

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a dependent waits for: every NVIDIADriver (never the component, which the SDK expands)."""
        return list(self.drivers.values())
