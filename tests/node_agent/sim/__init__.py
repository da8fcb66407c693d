"""A discrete-event world of Kubernetes and the NVIDIA controllers, written from their source."""
