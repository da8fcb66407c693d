"""Kubeflow 1.10 as code: its config section, the generated overlay, and the component that deploys it.

This package owns the ``kubeflow`` section of the stack file and everything made from it: the config
model and the checks of every value by its key (``config``), the overlay generated over the pinned
kubeflow/manifests tree (``spec`` what it installs, ``stages``, ``patches``, ``readme``, ``overlay``
writes the files), the tree's digest check (``checkout``), what Kubeflow offers of the GPU fleet
(``gpus``, ``spawner``), the ComponentResource (``component``) and the password-hash tool. The facts
about kubeflow/manifests it reads live in ``components.catalog.kubeflow``.
"""
