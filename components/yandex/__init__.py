"""The Yandex capability owns Yandex Cloud resources: the ``nodeGroups`` config section (``config.py``),
GPU node groups (``node_group.py``) and their cloud names (``naming.py``), the managed cluster lookup
(``cluster.py``), and the one import of the Yandex SDK (``sdk.py``), so a bare-metal stack never loads
it. Yandex facts (platforms, GPU environments, version skew, replace-forcing fields) are the catalog's.
"""
