"""The pool labeller: the program's labels on every node a pool's selector picks (an existing cluster's pools).

A controller of its own, beside the rollout controller, for containment: its own ServiceAccount and its own
ValidatingAdmissionPolicy, which allows exactly the label writes of the declared memberships, so neither the rollout
controller nor the labeller can make the other's writes. Standard library only (it ships in the agent's code
ConfigMap and runs on the stock Python image).
"""
