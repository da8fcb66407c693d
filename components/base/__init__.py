"""Building blocks every capability shares: the config model base, problems, Kubernetes argument helpers."""
