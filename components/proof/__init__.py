"""The proof: that every GPU node runs the driver, the MIG layout and CUDA the plan declares, shown by the cluster.

The vocabulary, once (the rules and names are ``components/catalog/proof.py``'s; everything proof-related says
these words in these meanings):

- **declaration**: what one pool's nodes must show (``catalog.proof.PoolProof``): the driver version, the image
  its container starts with and the NVIDIADriver that owns the nodes (where the operator installs the driver), the
  mig-parted config and the exact resources a node then advertises (where the program re-partitions the pool).
- **evidence**: what the cluster's objects say about one node against its pool's declaration, without running
  anything on it: the driver (``driver_evidence``: Ready, owner, exactly one current driver pod of the declared
  image, GPU Feature Discovery's version) and the MIG layout (``mig_evidence``: the config label, mig-manager's
  ``success``, the advertised resources). Each rule answers why the node is not (yet) as declared; ``""`` = it is.
- **CUDA proof**: a pod holding one GPU of the node waits for the declared driver on every GPU and runs the
  vectorAdd sample; it passes when that pod succeeds. Evidence first: a CUDA pod is started only on a node whose
  evidence passes.
- **step**: what one awaited proof Job proves (``catalog.proof.ProofSettings``): a driver step (the canaries,
  then the rest) or, where the hosts own the driver, the MIG step; it passes once one pass finds every node of the
  step's pools with its evidence and a CUDA proof of this run. ``pulumi up`` waits for it before the next step.
- **continuous proof**: the rollout controller's own, between ``pulumi up`` runs: the same evidence rules on every
  GPU node of a declared pool, every reconcile, and a CUDA proof of every node that joins or comes back as a new
  machine (``node_agent/agent/controller/proving.py``).
- **record**: the continuous proof's result on the Node (the ``catalog.proof.PROOF_ANNOTATION`` annotation): the
  evidence's ``result`` and its ``reason``, and under ``cuda`` the CUDA proof of this node's identity (UID, boot).
- **passed / failed**: the evidence's result (every rule held / one did not, with its reason), and a CUDA proof's
  (every smoke pod succeeded / one failed or did not finish in time). A CUDA proof may also be **waiting**
  (wanted, not started: the pool's budget is full or the pool is halted) or **deferred** (started and given back:
  no free device, the operator took the node; tried again later): ``catalog.proof.CudaResult``.

This package, a capability like the others (it imports no other capability):

- ``steps.py``: the settings of each step's proof and each pool's declaration, from the plan (pure);
- ``component.py``: ``GpuProofAccess`` (namespace, RBAC, PriorityClass, the runner's code) and ``GpuProof`` (the
  awaited Job of one step);
- ``job/``: the Job's runner, standard library only (shipped in the Job's code ConfigMap with the catalog modules it
  imports and the node agent's API client).

This file is shipped with the runner: it must stay a docstring (standard library, no imports).
"""
