"""The bare-metal capability owns hosts the program reaches over SSH: the ``bareMetal`` config section
(``config.py``), host preparation as ordered remote commands per host (``host_preparation.py``, the steps
and their scripts in ``host_prep_steps.py`` and ``scripts/``), and the labels and declared taints the
program sets on each bare-metal Node (``node_labels.py``). What a host needs (driver branches, kernel
arguments, SSH connection fields) is the catalog's.
"""
