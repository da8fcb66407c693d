"""The cluster capability owns how the program reaches the Kubernetes API: the ``cluster`` config section
(``config.py``: a Yandex managed cluster, or an existing cluster whose kubeconfig is a Pulumi secret) and the one Kubernetes provider every other
component uses (``access.py``).
"""
