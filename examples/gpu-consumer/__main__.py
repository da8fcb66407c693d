"""A consumer of gpu-platform's outputs: one training Job on a named GPU pool.

Everything cluster-specific (kubeconfig, node selector, tolerations, the resource to request) comes
from the platform stack's outputs, so the platform team can move pools, rename taints or change MIG
layouts without breaking this program. Config: ``platformStack`` (org/gpu-platform/<stack>),
``pool`` (a key of the ``gpuPools`` output) and ``image`` (pinned).
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

SUPPORTED_CONTRACT = "1"

config = pulumi.Config()
platform = pulumi.StackReference(config.require("platformStack"))
pool_name = config.require("pool")
image = config.require("image")


def check_contract(version: Any) -> Any:
    """Fail early (and clearly) if the platform's outputs contract moved to a new major version."""
    if str(version) != SUPPORTED_CONTRACT:
        raise pulumi.RunError(
            f"gpu-platform outputs contract {version} is not supported (expected {SUPPORTED_CONTRACT})"
        )
    return version


def pool_of(pools: Any) -> dict[str, Any]:
    """The chosen pool, or a clear error listing the pools that exist."""
    if pool_name not in (pools or {}):
        raise pulumi.RunError(f"pool {pool_name!r} is not a gpu-platform pool; pools: {', '.join(sorted(pools or {}))}")
    return dict(pools[pool_name])


contract = platform.require_output("contractVersion").apply(check_contract)
pool = pulumi.Output.all(contract, platform.require_output("gpuPools")).apply(lambda values: pool_of(values[1]))
provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))

job = k8s.batch.v1.Job(
    "train",
    metadata={"name": "train", "namespace": "default"},
    spec={
        "backoffLimit": 0,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": pool.apply(lambda p: p["scheduling"]["nodeSelector"]),
                "tolerations": pool.apply(lambda p: p["scheduling"]["tolerations"]),
                "containers": [
                    {
                        "name": "train",
                        "image": image,
                        "resources": pool.apply(lambda p: p["podResources"]),
                    }
                ],
            }
        },
    },
    opts=pulumi.ResourceOptions(provider=provider),
)
pulumi.export("gpuResource", pool.apply(lambda p: next(iter(p["podResources"]["limits"]))))
