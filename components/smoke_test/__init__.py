"""The smoke-test capability owns the GPU smoke test: the ``smokeTest`` config section (``config.py``),
which pools and MIG profiles get a Job (``targets.py``), and the awaited CUDA Jobs themselves
(``component.py``), so a broken node fails ``pulumi up`` instead of the first user's workload.
"""
