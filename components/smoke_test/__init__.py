"""The smoke-test capability owns the awaited GPU Jobs: the ``smokeTest`` config section (``config.py``),
which pools and MIG profiles get a smoke Job (``targets.py``), the smoke Jobs themselves (``component.py``), so a
broken node fails ``pulumi up`` instead of the first user's workload. The per-node proof Job of each driver or
MIG step is the proof capability's (``components.proof``).
"""
