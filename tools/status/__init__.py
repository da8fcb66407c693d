"""``python -m tools.status STACK``: is the fleet in the state the stack declares? (``make status STACK=...``)

``pulumi up`` proves each driver or MIG step on the nodes that exist at that moment; afterwards the fleet moves
on without the program (the autoscaler adds nodes, a node comes back with its image's driver, a label is edited by
hand, mig-manager fails on one GPU, a hand-over ends failed). This tool reads the live cluster through a
kubeconfig, compares every GPU node with the stack's plan, and prints one line per node grouped by pool, or a
versioned JSON document for other teams (``docs/status.schema.json``). docs/operations.md, "Is the fleet as
declared?", says what each verdict means and what to do.

- ``declared``: what the stack declares per pool, from ``components.stack.plan`` run offline;
- ``live``: the cluster, read once with the official Kubernetes client (read only);
- ``verdict``: each node against its pool (pure functions over the API's JSON);
- ``document`` and ``table``: the JSON document and the terminal table.

A tool, not part of the product: nothing in ``components``, ``policies`` or ``preview`` imports it.
"""
