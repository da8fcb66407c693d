"""The facts of kubeflow/manifests v1.10.2 (commit d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39), one module per topic.

Sources: github.com/kubeflow/manifests, Apache-2.0, tag v1.10.2; each module names the files its facts
come from, paths relative to the repository root. Only this tag is supported: it is the tree pinned
by content digest in ``components.catalog.upstream`` (``KUBEFLOW_MANIFESTS``), and the tests render it.
"""
