"""The per-node proof of a driver step: every node of the step's pools runs the declared driver and CUDA on it."""
