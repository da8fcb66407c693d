"""The MIG capability owns MIG as code for a stack: the ``mig`` config section (``config.py``), every
pool's MIG decision and the operator's MIG values (``plan.py``, ``decisions.py``), the demand check and
layouts planned from demand (``demand.py``) against the recorded plan (``recorded.py``,
``mig-plans/<stack>.yaml``), the ``mig`` stack outputs (``outputs.py``) and the stack config the
command line prints for a plan (``plan_yaml.py``). Facts and the planners themselves are the catalog's
(``components.catalog.mig``).
"""
