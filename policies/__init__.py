"""The gpu-platform CrossGuard policy pack (``__main__.py``) and its rules (``gpu_policies``).

A package so that the offline gate and the tests import the rules as ``policies.gpu_policies``,
the same name the pack itself uses.
"""
