"""The rollout controller's decisions for one node, split by concern (as k8s-operator-libs splits ``pkg/upgrade``).

``components.node_agent.agent.controller.decide`` is the entry: it dispatches each node to its state's handler.
"""
