"""The render wing of the offline preview: what the program's Helm releases and kustomize Directories render
to, with the real pinned tools (``tools``) on the pinned chart and tree (``rendered``), each render kept by
its inputs (``cache``).
"""
