"""The node agent's own code: standard library only, shipped to the nodes in a ConfigMap."""
