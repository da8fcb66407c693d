"""Facts about kubeflow/manifests, one folder per supported tag, and the rules that read them.

This package owns what gpu-platform knows about the upstream Kubeflow install it deploys: the
example's layout and components, the credentials it publishes, the objects the generated overlay
replaces, its webhooks, its login path and its notebook spawner (the data of one tag per folder,
``v1_10_2/``, one module per topic), the shapes of those facts (``model``), which tags are supported
(``releases``), which component selections work (``selection``) and which dex users are refused
(``users``). Pure: no Pulumi, no pydantic, no I/O. The overlay generator, the Kubeflow component,
the config checks and the CrossGuard policies all read the facts here, each written once.

Adding a tag is a new folder of data next to ``v1_10_2/`` and its line in ``releases.MANIFESTS_TAGS``,
with the pin in ``components.catalog.upstream``.
"""
