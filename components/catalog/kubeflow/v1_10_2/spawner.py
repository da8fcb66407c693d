"""kubeflow/manifests v1.10.2: the notebook spawner's config file and the PodDefault CRD.

Sources: the files named next to each fact (tag v1.10.2), and kubeflow/kubeflow v1.10's
jupyter-web-app backend for how the file is read.
"""

from __future__ import annotations

#: The spawner form's config in the tree. ``applications/jupyter/jupyter-web-app/upstream/base/kustomization.yaml``
#: builds it into the ConfigMap ``config`` (``configMapGenerator``, ``files: [configs/spawner_ui_config.yaml]``),
#: ``namePrefix: jupyter-web-app-``, namespace ``kubeflow``, so the rendered name is
#: ``jupyter-web-app-config-<hash>``; the Deployment mounts it at ``/etc/config``. The jupyter-web-app backend
#: reads ``/etc/config/spawner_ui_config.yaml`` (kubeflow/kubeflow v1.10
#: ``components/crud-web-apps/jupyter/backend/apps/common/utils.py`` ``CONFIGS``) and takes the GPU dropdown from
#: ``spawnerFormDefaults.gpus.value.vendors`` (``limitsKey``: the resource set as the container's limit,
#: ``uiName``: the label; ``form.py`` ``set_notebook_gpus``), the node-affinity dropdown from
#: ``affinityConfig.options`` (``configKey``, ``displayName``, ``affinity``; ``set_notebook_affinity``).
SPAWNER_COMPONENT = "jupyter"  #: the component (COMPONENTS) holding the jupyter-web-app
SPAWNER_CONFIG_PATH = "applications/jupyter/jupyter-web-app/upstream/base/configs/spawner_ui_config.yaml"
SPAWNER_CONFIGMAP = "jupyter-web-app-config"  #: the generator's name after namePrefix, before the hash
SPAWNER_NAMESPACE = "kubeflow"
SPAWNER_CONFIG_KEY = "spawner_ui_config.yaml"  #: the ConfigMap key (the generated file's name)
#: Upstream's NVIDIA entry of ``gpus.value.vendors``, exactly as the v1.10.2 file spells it (6-space indent).
SPAWNER_NVIDIA_VENDOR_TEXT = '      - limitsKey: "nvidia.com/gpu"\n        uiName: "NVIDIA"\n'
#: Upstream's empty ``affinityConfig.options`` with the comment line before it (unique in the v1.10.2 file).
SPAWNER_AFFINITY_OPTIONS_TEXT = "    # the list of available affinity configs in the dropdown\n    options: []\n"

#: The PodDefault CRD (``applications/admission-webhook/upstream/base/crd.yaml``, ``poddefaults.kubeflow.org``,
#: served and stored as v1alpha1). Its spec has ``selector`` (required), ``desc``, ``tolerations``, env,
#: volumes, labels, annotations and the like, but no ``nodeSelector`` and no ``affinity``: a PodDefault can
#: carry a pool's tolerations, not its node selection. The spawner lists a namespace's PodDefaults by
#: ``desc`` and, for each one ticked, sets the label of its ``selector.matchLabels`` to ``"true"`` on the
#: Notebook (``form.py`` ``set_notebook_configurations``), which the admission webhook matches on the pod.
PODDEFAULT_CRD_PATH = "applications/admission-webhook/upstream/base/crd.yaml"
PODDEFAULT_API_VERSION = "kubeflow.org/v1alpha1"
PODDEFAULT_KIND = "PodDefault"
