"""The GPU Operator capability owns the operator's Helm release and the drivers it installs: the
``gpuOperator`` config section (``config.py``) and each pool's ``driver`` key (``pool_config.py``), the
driver plan (owners, groups, canaries: ``drivers.py``), the release's values (``values.py``,
``chart_source.py``), the per-pool ``NVIDIADriver`` objects (``driver_objects.py``, ``nvidia_drivers.py``)
and the release itself (``component.py``). The chart's contract and driver facts are the catalog's.
"""
