"""The node agent's shipped code: the rollout controller and the node executors (standard library only)."""
