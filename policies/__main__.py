"""The gpu-platform policy pack: ``pulumi preview --policy-pack policies``.

The CLI runs this file with ``policies/`` as the working directory (``runpy.run_path``); the rules
read their facts from ``components.catalog`` at the repository root, so the root goes on
``sys.path`` first and the rules are imported as ``policies.gpu_policies``, the name the offline
gate and the tests use too. Everything but the ``PolicyPack`` call lives there: the constructor
starts a gRPC server and never returns, so nothing else may need to import this file.
"""

import sys
from pathlib import Path

_REPO_ROOT = str(Path(__file__).resolve().parent.parent)
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.gpu_policies import ALL_POLICIES  # noqa: E402

PolicyPack(
    name="gpu-platform",
    description="GPU node groups, the NVIDIA GPU Operator, drivers, MIG and Kubeflow: the rules gpu-platform "
    "deploys by.",
    policies=ALL_POLICIES,
    enforcement_level=EnforcementLevel.MANDATORY,
)
