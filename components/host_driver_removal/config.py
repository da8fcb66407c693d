"""Config model of the host-driver-removal DaemonSet (``hostDriverRemoval`` in the stack file).

Groups opt in one by one with ``nodeGroups.<name>.hostDriverRemoval: true``; this section only
tunes how the hand-over runs. The default advice stays: recreate the group as ``gpuEnvironment:
runc`` (a replacement with no zero-GPU window) and leave this off.
"""

from __future__ import annotations

from pydantic import Field

from components.base.config_model import ConfigModel

# The script needs bash >= 4.4, GNU coreutils (date -d, timeout), grep, chroot, nsenter (util-linux)
# and kubectl. bitnami/kubectl is Debian-based: util-linux and coreutils are essential packages there.
DEFAULT_IMAGE = "docker.io/bitnami/kubectl:1.31.4"


class HostDriverRemovalConfig(ConfigModel):
    """How the removal runs (the DaemonSet exists only when some group opts in)."""

    namespace: str = "gpu-platform-system"
    image: str = DEFAULT_IMAGE
    dry_run: bool = Field(default=False, description="report what would be done; change nothing")
    allow_reboot: bool = Field(default=True, description="false: write /run/reboot-required for kured instead")
    eviction_timeout_seconds: int = Field(default=300, ge=30)
    lock_ttl_seconds: int = Field(default=1800, ge=300, description="must outlast a reboot")
    halt_rollout_on_failure: bool = True
